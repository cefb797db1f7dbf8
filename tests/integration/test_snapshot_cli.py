# SPDX-License-Identifier: LGPL-2.1-or-later
"""Snapshots across processes: `txl score --ids --save-snapshot` on a prefix,
then `--load-snapshot` on the rest in a new process, prints exactly what one
uninterrupted run prints, at several cut points (mid-segment included);
corrupt and other-model snapshots are refused.  In text mode too, cut
mid-line and inside a UTF-8 character."""
import os
import random
import subprocess
import sys
import tempfile

from checks import check, tally

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'reference'))
import hf_checkpoint  # noqa: E402

TXL = os.environ.get('TXL_BIN', os.path.join(os.path.dirname(__file__), '..', '..', 'build', 'tools', 'txl'))


def run(args, stdin=b''):
    p = subprocess.run([TXL] + args, input=stdin, capture_output=True, timeout=120)
    return p.returncode, p.stdout, p.stderr.decode()


def main():
    tmp = tempfile.mkdtemp(prefix='txl-snap-')
    models = []
    for seed, extra in ((1, dict(same_length=False)), (2, dict(same_length=True, clamp_len=4, pre_lnorm=True))):
        cfg = hf_checkpoint.make_config(vocab_size=120, mem_len=9, **extra)
        d = os.path.join(tmp, 'm%d' % seed)
        hf_checkpoint.make_checkpoint(d, cfg, seed=seed)
        path = os.path.join(tmp, 'm%d.gguf' % seed)
        rc, _, err = run(['convert', '--hf', d, '-o', path])
        check('convert %d' % seed, rc == 0, err)
        models.append(path)
    r = random.Random(5)
    ids = [r.randrange(120) for _ in range(97)]
    snap = os.path.join(tmp, 's.snap')
    for model in models:
        for memory in ('kv', 'hidden'):
            rc, full, err = run(['score', '-m', model, '--ids', '--segment', '6', '--memory', memory],
                                ' '.join(map(str, ids)).encode())
            for cut in (1, 2, 6, 7, 31, 96):
                rc1, p1, e1 = run(['score', '-m', model, '--ids', '--segment', '6', '--memory', memory,
                                   '--save-snapshot', snap], ' '.join(map(str, ids[:cut])).encode())
                rc2, p2, e2 = run(['score', '-m', model, '--ids', '--load-snapshot', snap],
                                  ' '.join(map(str, ids[cut:])).encode())
                check('%s %s cut %d: resumed in a new process, bit-identical' % (os.path.basename(model), memory, cut),
                      rc1 == rc2 == 0 and p1 + p2 == full, (e1 + e2)[-300:])
    rc, out, err = run(['snapshot', 'info', snap])
    import json
    info = json.loads(out) if rc == 0 else {}
    check('snapshot info: header and checksum', rc == 0 and info.get('checksum') == 'ok'
          and info.get('tokens_seen') == 96 and info.get('segment') == 6, err)
    with open(snap, 'rb') as f:
        blob = f.read()
    bad = os.path.join(tmp, 'bad.snap')
    with open(bad, 'wb') as f:
        f.write(blob[:len(blob) - 10])
    rc, _, err = run(['score', '-m', models[1], '--ids', '--load-snapshot', bad], b'1 2')
    check('truncated snapshot refused', rc == 1 and 'checksum' in err, err[-200:])
    rc, _, err = run(['snapshot', 'info', bad])
    check('snapshot info: a bad file exits 1', rc == 1 and 'checksum' in err, err[-200:])
    flipped = bytearray(blob)
    flipped[len(blob) // 2] ^= 4
    with open(bad, 'wb') as f:
        f.write(bytes(flipped))
    rc, _, err = run(['score', '-m', models[1], '--ids', '--load-snapshot', bad], b'1 2')
    check('bit-flipped snapshot refused', rc == 1 and 'corrupt' in err, err[-200:])
    rc, _, err = run(['score', '-m', models[0], '--ids', '--load-snapshot', snap], b'1 2')
    check('snapshot of another model refused', rc == 1 and 'another model' in err, err[-200:])
    rc, _, err = run(['score', '-m', models[1], '--ids', '--segment', '4', '--load-snapshot', snap], b'1 2')
    check('options that a snapshot fixes are refused with it', rc == 2 and '--segment' in err, err[-200:])
    text_mode(tmp, snap)
    ids_save_fails(models[0], snap)
    sys.exit(1 if tally() else 0)


def text_mode(tmp, snap):
    """Text through the bundled model's BPE tokenizer with field masking: cut
    mid-line, mid-field and inside multi-byte UTF-8 characters."""
    model = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'models', 'default.gguf')
    r = random.Random(7)
    lines = []
    for i in range(40):
        lines.append('2026-11-22 07:%02d:%02d INFO worker-%d: Größe %d überschritten ☃ for blk_%d from 10.0.%d.%d'
                     % (i, r.randrange(60), r.randrange(9), r.randrange(10**6), r.randrange(10**9),
                        r.randrange(255), r.randrange(255)))
    text = ('\n'.join(lines) + '\npartial last line €').encode()
    opts = ['--segment', '16']
    rc, full, err = run(['score', '-m', model] + opts, text)
    check('text: uninterrupted run', rc == 0 and full.count(b'\n') == 41, err[-300:])
    utf8_inner = [i for i, b in enumerate(text) if 0x80 <= b < 0xC0][:3]
    cuts = [1, 5, 17, text.index(b'\n') + 1, text.index(b'blk_') + 6, len(text) // 2, len(text) - 2] + utf8_inner
    for cut in cuts:
        rc1, p1, e1 = run(['score', '-m', model, '--save-snapshot', snap] + opts, text[:cut])
        rc2, p2, e2 = run(['score', '-m', model, '--load-snapshot', snap], text[cut:])
        check('text cut at byte %d (%s): resumed in a new process, identical lines'
              % (cut, 'inside a UTF-8 character' if cut in utf8_inner else 'mid-line'),
              rc1 == rc2 == 0 and p1 + p2 == full, (e1 + e2)[-300:])
    rc, _, err = run(['score', '-m', model, '--ids', '--load-snapshot', snap], b'1 2')
    check('a text snapshot is not continued as ids', rc == 1 and 'without --ids' in err, err[-200:])
    rc, _, _ = run(['score', '-m', model, '--ids', '--save-snapshot', snap], b'1 2 3')
    rc, _, err = run(['score', '-m', model, '--load-snapshot', snap], b'hello')
    check('an id snapshot is not continued as text', rc == 1 and 'with --ids' in err, err[-200:])

    # the snapshot fails at the end after the start's check passed (a
    # directory put in its place; a full disk is the same): the run fails,
    # and the lines it would have kept in it are printed, not lost
    gone = os.path.join(tmp, 'gone.snap')
    p = subprocess.Popen([TXL, 'score', '-m', model, '--save-snapshot', gone] + opts + ['-'],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    half = text.rindex(b'\n', 0, len(text) // 2) + 1
    p.stdin.write(text[:half])
    p.stdin.flush()
    first = b''
    while not first.endswith(b'\n'):  # a line printed: the start's check is behind
        first += os.read(p.stdout.fileno(), 1) or b'\n'
    os.mkdir(gone)
    out, err = p.communicate(text[half:], timeout=120)
    os.rmdir(gone)
    check('text: the snapshot fails at the end: exit 1, a message, all %d lines printed' % full.count(b'\n'),
          p.returncode == 1 and first + out == full and b'the stream ended instead' in err, err.decode()[-300:])


def ids_save_fails(model, snap):
    """--ids: the snapshot fails at the end; the pending tokens are scored."""
    r = random.Random(3)
    ids = ' '.join(str(r.randrange(120)) for _ in range(40000)).encode()
    rc, want, err = run(['score', '-m', model, '--ids'], ids)
    gone = snap + '.gone'
    p = subprocess.Popen([TXL, 'score', '-m', model, '--ids', '--save-snapshot', gone, '-'],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    cut = ids.index(b' ', 100000)
    # more than a pipe holds: the write returns once txl reads, past its check
    p.stdin.write(ids[:cut])
    p.stdin.flush()
    os.mkdir(gone)
    out, err = p.communicate(ids[cut:], timeout=120)
    os.rmdir(gone)
    check('ids: the snapshot fails at the end: exit 1, a message, all %d tokens printed' % want.count(b'\n'),
          rc == 0 and p.returncode == 1 and out == want and b'the stream ended instead' in err,
          err.decode()[-300:])

if __name__ == '__main__':
    main()
