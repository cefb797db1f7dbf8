# SPDX-License-Identifier: LGPL-2.1-or-later
"""The txl command line: clear errors and exit codes on bad input, and the
text scoring output (per-line JSON) staying consistent with --ids."""
import json
import math
import os
import random
import stat
import struct
import subprocess
import sys
import tempfile
import time

from checks import check, tally

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'reference'))
import hf_checkpoint  # noqa: E402

TXL = os.environ.get('TXL_BIN', os.path.join(os.path.dirname(__file__), '..', '..', 'build', 'tools', 'txl'))


def run(args, stdin=b''):
    p = subprocess.run([TXL] + args, input=stdin, capture_output=True, timeout=120)
    return p.returncode, p.stdout.decode('utf-8', 'replace'), p.stderr.decode('utf-8', 'replace')


def expect_fail(name, args, stdin, code, needle):
    rc, out, err = run(args, stdin)
    check(name, rc == code and needle in err, 'rc=%d stderr=%r' % (rc, err[-300:]))


def main():
    tmp = tempfile.mkdtemp(prefix='txl-cli-')
    words = hf_checkpoint.SMALL_WORDS
    word_dir = os.path.join(tmp, 'word')
    cfg = hf_checkpoint.make_word_checkpoint(word_dir, 5)
    wm = os.path.join(tmp, 'word.gguf')
    rc, _, err = run(['convert', '--hf', word_dir, '-o', wm])
    check('convert word model', rc == 0, err)
    none_dir = os.path.join(tmp, 'none')
    hf_checkpoint.make_checkpoint(none_dir, cfg, seed=6)
    nm = os.path.join(tmp, 'none.gguf')
    rc, _, err = run(['convert', '--hf', none_dir, '-o', nm])
    check('convert id-only model', rc == 0, err)
    V = cfg['vocab_size']

    # --ids errors
    # a model that is a FIFO or a device: refused at once (opening a FIFO
    # used to wait for a writer for ever)
    fifo = os.path.join(tmp, 'model.fifo')
    os.mkfifo(fifo)
    try:
        expect_fail('model is a FIFO', ['score', '-m', fifo, '--ids'], b'1 2', 1, 'not a regular file')
    except subprocess.TimeoutExpired:
        check('model is a FIFO', False, 'txl score hung on the FIFO')
    expect_fail('model is a device', ['score', '-m', '/dev/zero', '--ids'], b'1 2', 1, 'not a regular file')
    expect_fail('id out of range', ['score', '-m', nm, '--ids'], b'1 2 %d 3' % V, 1, 'outside the vocabulary')
    expect_fail('negative id', ['score', '-m', nm, '--ids'], b'1 -2 3', 1, 'not a valid token id')
    expect_fail('non-numeric id', ['score', '-m', nm, '--ids'], b'1 2x 3', 1, "'2x'")
    expect_fail('huge id', ['score', '-m', nm, '--ids'], b'1 99999999999999999999999 3', 1, 'out of range')
    expect_fail('empty input', ['score', '-m', nm, '--ids'], b'  \n ', 1, 'no token ids')
    expect_fail('a NUL byte inside an id', ['score', '-m', nm, '--ids'], b'5\x007 9', 1, 'not a token id')
    expect_fail('single id', ['score', '-m', nm, '--ids'], b'3', 1, 'only one token')
    expect_fail('unreadable input', ['score', '-m', nm, '--ids', os.path.join(tmp, 'nope.txt')], b'', 1, 'cannot open')
    expect_fail('missing model', ['score', '-m', os.path.join(tmp, 'nope.gguf'), '--ids'], b'1 2', 1, 'nope.gguf')
    expect_fail('text on an id-only model', ['score', '-m', nm], b'the cat\n', 1, '--ids')
    expect_fail('bad --same-length', ['score', '-m', nm, '--ids', '--same-length', '2'], b'1 2', 2, 'same-length')
    expect_fail('bad --memory', ['score', '-m', nm, '--ids', '--memory', 'disk'], b'1 2', 2, 'memory')
    expect_fail('same_length without memory', ['score', '-m', nm, '--ids', '--mem-len', '0', '--same-length', '1'],
                b'1 2 3', 1, 'mem_len')
    with open(nm, 'rb') as f:
        blob = f.read()
    cut = os.path.join(tmp, 'cut.gguf')
    with open(cut, 'wb') as f:
        f.write(blob[:len(blob) // 2])
    expect_fail('truncated model', ['score', '-m', cut, '--ids'], b'1 2', 1, 'cut.gguf')
    rc, _, _ = run([])
    check('no command: usage, exit 2', rc == 2)
    rc, _, err = run(['frobnicate'])
    check('unknown command: exit 2', rc == 2 and 'frobnicate' in err)
    rc, out, _ = run(['info', nm])
    check('info prints JSON', rc == 0 and json.loads(out)['n_token'] == V)

    # --ids output: one object per token from the second on, positions 1..n-1
    ids = [random.Random(1).randrange(V) for _ in range(23)]
    rc, out, err = run(['score', '-m', nm, '--ids'], ' '.join(map(str, ids)).encode())
    rows = [json.loads(l) for l in out.splitlines()]
    check('--ids rows', rc == 0 and [r['pos'] for r in rows] == list(range(1, 23))
          and [r['token'] for r in rows] == ids[1:]
          and all(r['logprob'] < 0 for r in rows), err)

    # text: per-line JSON; totals agree with the summary; file == stdin
    text = b'the cat sat on the mat\nthe dog ran\n\nzebra cat\na cat sat'
    path = os.path.join(tmp, 'in.txt')
    with open(path, 'wb') as f:
        f.write(text)
    rc, out_file, err = run(['score', '-m', wm, path])
    lines = [json.loads(l) for l in out_file.splitlines()]
    check('text: one object per line', rc == 0 and [l['line'] for l in lines] == [1, 2, 3, 4, 5], err)
    # words + <eos> per line, minus the stream's first token
    check('text: token counts', [l['tokens'] for l in lines] == [6, 4, 1, 3, 4], str([l['tokens'] for l in lines]))
    check('text: bytes', [l['bytes'] for l in lines] == [23, 12, 1, 10, 9], str([l['bytes'] for l in lines]))
    tot = sum(l['nll'] * l['tokens'] for l in lines)
    n = sum(l['tokens'] for l in lines)
    summary = float(err.split('mean NLL ')[1].split()[0])
    check('text: summary mean NLL', abs(tot / n - summary) < 1e-3, '%g vs %g' % (tot / n, summary))
    check('text: ppl = exp(nll)', all(abs(math.log(l['ppl']) - l['nll']) < 1e-4 for l in lines))
    # bits per normalised byte: a word (<unk> for zebra) and one separator,
    # <eos> one byte; the stream's first word is not scored
    # (lib/anomaly/lines.h); the worst part is never below the mean
    check('text: bpb', all(abs(l['bpb'] - l['nll'] * l['tokens'] / math.log(2) / l['norm_bytes']) < 1e-4 for l in lines))
    check('text: norm_bytes', [l['norm_bytes'] for l in lines] == [20, 13, 1, 11, 11], str([l['norm_bytes'] for l in lines]))
    check('text: worst >= bpb', all(l['worst'] >= l['bpb'] for l in lines))
    rc, out_stdin, _ = run(['score', '-m', wm, '-'], text)
    check('text: stdin == file', out_stdin == out_file)
    # the same text as ids gives the same log-probs
    vocab = ['<eos>', '<unk>'] + words
    tok = []
    for line in text.decode().split('\n'):
        tok += [vocab.index(w) if w in vocab else 1 for w in line.split()] + [0]
    rc, out_ids, _ = run(['score', '-m', wm, '--ids'], ' '.join(map(str, tok)).encode())
    lp = [json.loads(l)['logprob'] for l in out_ids.splitlines()]
    check('text == ids', abs(-sum(lp) - tot) < 1e-3, '%g vs %g' % (-sum(lp), tot))

    # binary junk, NULs, invalid UTF-8, a 2 MB line: valid JSON out, no crash
    junk = bytes(random.Random(2).randrange(256) for _ in range(20000)) + b'\x00\xff\xfe' + b'cat ' * 500000
    rc, out, err = run(['score', '-m', wm, '-'], junk)
    ok = rc == 0
    try:
        for l in out.splitlines():
            json.loads(l)
    except ValueError:
        ok = False
    check('binary junk and a huge line', ok, err[-300:])

    # generate: deterministic for a seed, greedy = top-k 1, --stop, errors
    g = ['generate', '-m', wm, '-p', 'the cat', '-n', '30', '--stop-at-eos', '0']
    r1, o1, e1 = run(g + ['--seed', '5'])
    r2, o2, _ = run(g + ['--seed', '5'])
    r3, o3, _ = run(g + ['--seed', '6'])
    check('generate: same seed, same text', r1 == r2 == 0 and o1 == o2 and len(o1.split()) > 0, e1[-300:])
    check('generate: another seed, other text', r3 == 0 and o3 != o1)
    _, og, _ = run(g + ['--temperature', '0'])
    _, ok1, _ = run(g + ['--top-k', '1', '--seed', '9'])
    check('generate: temperature 0 = top-k 1 (greedy)', og == ok1 and len(og) > 0)
    word = o1.split()[1] if len(o1.split()) > 1 else o1.split()[0]
    rs, os_, _ = run(g + ['--seed', '5', '--stop', word])
    check('generate: --stop ends the text at the string', rs == 0 and os_.rstrip('\n').endswith(word)
          and len(os_) <= len(o1), repr(os_[-60:]))
    # <eos> (a line end in a word vocabulary) ends the continuation, unwritten
    eos_ok = True
    for seed in ('1', '2', '3'):
        re_, oe, _ = run(['generate', '-m', wm, '-p', 'the cat', '-n', '300', '--seed', seed])
        eos_ok = eos_ok and re_ == 0 and '\n' not in oe.rstrip('\n')
    check('generate: stops at <eos> by default', eos_ok)
    expect_fail('generate: id-only model', ['generate', '-m', nm], b'', 1, 'no tokenizer')
    expect_fail('generate: bad top-p', ['generate', '-m', wm, '--top-p', '0'], b'', 1, 'top-p')

    hostile_models(tmp)
    bad_values(tmp, wm)

    sys.exit(1 if tally() else 0)


def bad_values(tmp, wm):
    """Values no command may take silently: non-finite numbers, sizes past
    their bounds, an output that is not a regular file (a device or FIFO
    renamed over would be replaced by a file), conflicting labels."""
    txt = os.path.join(tmp, 'w.txt')
    with open(txt, 'w') as f:
        f.write('the cat sat on the mat\nthe dog ran\n' * 40)
    fifo = os.path.join(tmp, 'fifo')
    os.mkfifo(fifo)
    folder = os.path.join(tmp, 'folder')
    os.mkdir(folder)
    expect_fail('score: --flag-bpb nan', ['score', '-m', wm, '--flag-bpb', 'nan', txt], b'', 2, 'flag-bpb')
    expect_fail('score: --learn-warmup 0', ['score', '-m', wm, '--learn', '--learn-warmup', '0', txt],
                b'', 2, 'learn-warmup')
    expect_fail('score: --learn-model a folder', ['score', '-m', wm, '--learn', '--learn-model', folder, txt],
                b'', 2, 'not a regular file')
    expect_fail('score: --save-snapshot a FIFO', ['score', '-m', wm, '--save-snapshot', fifo, txt],
                b'', 1, 'not a regular file')
    expect_fail('bench: --peak-size past its bound', ['bench', '-m', wm, '--peak-size', '2147483647'],
                b'', 2, 'peak-size')
    expect_fail('snapshot bench: --after past its bound', ['snapshot', 'bench', '-m', wm, '--after',
                                                          '2147483647'], b'', 2, 'after')
    expect_fail('generate: --top-k -1', ['generate', '-m', wm, '--top-k', '-1'], b'', 2, 'top-k')
    expect_fail('generate: --prompt and --prompt-file', ['generate', '-m', wm, '-p', 'the', '--prompt-file',
                                                        txt], b'', 2, 'not both')
    expect_fail('generate: --prompt-file a FIFO', ['generate', '-m', wm, '--prompt-file', fifo], b'', 1,
                'fifo')
    out = os.path.join(tmp, 'cal.gguf')
    expect_fail('calibrate: a nan threshold', ['calibrate', '--session-threshold', 'nan', '-o', out, wm],
                b'', 2, 'nan')
    expect_fail('calibrate: --key-group -1', ['calibrate', '--session-key', 'x', '--key-group', '-1',
                                             '-o', out, wm], b'', 2, 'key-group')
    expect_fail('calibrate: -o a FIFO', ['calibrate', '--line-threshold', '2', '-o', fifo, wm],
                b'', 1, 'not a regular file')
    check('a refused output is left as it was', stat.S_ISFIFO(os.stat(fifo).st_mode) and
          not os.path.exists(out) and os.listdir(tmp).count('fifo') == 1)
    tiny = ['--steps', '2', '--layers', '1', '--d-model', '16', '--heads', '2', '--d-head', '8',
            '--d-inner', '16', '--batch', '2', '--segment', '8', '--tokenizer', 'byte']
    t0 = time.monotonic()
    rc, _, err = run(['train'] + tiny + ['--steps', '100000', '-o', fifo, txt])
    check('train: -o a FIFO refused before the first step', rc == 1 and 'not a regular file' in err
          and time.monotonic() - t0 < 60 and not os.path.exists(fifo + '.train'), (rc, err[-300:]))
    log = os.path.join(tmp, 'e.log')
    with open(log, 'w') as f:
        f.write('blk_1 a\nblk_2 b\n')
    lab = os.path.join(tmp, 'e.csv')
    with open(lab, 'w') as f:
        f.write('blk_1,Normal\nblk_2,Normal\nblk_1,Anomaly\n')
    expect_fail('eval: a key labelled both ways', ['eval', log, '-l', lab, '-o', os.path.join(tmp, 'ev')],
                b'', 1, 'both normal and anomalous')
    expect_fail('eval: --margin nan', ['eval', log, '-l', lab, '-o', os.path.join(tmp, 'ev'), '--margin',
                                       'nan'], b'', 2, 'margin')


def run_measured(args, stdin=b'', env=None):
    """Runs txl; returns (rc, stderr, peak RSS of that process in MB)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.Popen([TXL] + args, stdin=subprocess.PIPE, stdout=out, stderr=err,
                             env=dict(os.environ, **(env or {})))
        # a refusing txl may exit before reading its input: the write, or
        # the flush that close() makes, then meets a closed pipe
        for step in (lambda: p.stdin.write(stdin), p.stdin.close):
            try:
                step()
            except BrokenPipeError:
                pass
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        return p.returncode, err.read().decode('utf-8', 'replace'), usage.ru_maxrss / 1024.0


def hostile_models(tmp):
    """Issue 12: a model file under 1 MB whose declared lengths are "in
    range" but imply gigabytes, and weights that are not finite.  On main
    the 470 KB model below took `txl score` to 1.5 GB resident in 11 s."""
    env = {'TXL_MEMORY_LIMIT': ''}
    for name, mem_len, tgt_len, clamp in (('huge-mem', 1 << 20, 4, 0), ('huge-clamp', 1 << 20, 4, 1 << 20),
                                          ('long-seg', 200, 16000, 0), ('both', 600000, 400, 1000)):
        cfg = hf_checkpoint.make_config(vocab_size=10, d_model=64, d_embed=64, n_head=4, d_head=16,
                                        d_inner=64, n_layer=4, mem_len=mem_len, tgt_len=tgt_len,
                                        clamp_len=clamp, same_length=False, cutoffs=[])
        d = os.path.join(tmp, name)
        hf_checkpoint.make_checkpoint(d, cfg, seed=3)
        m = d + '.gguf'
        rc, err, _ = run_measured(['convert', '--hf', d, '-o', m], b'', env)
        check('convert %s: refused, no file written' % name,
              rc == 1 and 'would be refused' in err and 'TXL_MEMORY_LIMIT' in err
              and not os.path.exists(m), err[-300:])
        # written with the limit raised, as a hostile file could be by anyone
        rc, err, _ = run_measured(['convert', '--hf', d, '-o', m], b'', {'TXL_MEMORY_LIMIT': '64G'})
        check('convert %s' % name, rc == 0 and os.path.getsize(m) < (1 << 20), err)
        for cmd in (['score', '-m', m, '--ids'], ['info', m]):
            rc, err, rss = run_measured(cmd, b'1 2 3 4 5 6 7 8\n', env)
            check('%s %s: refused, naming txl.mem_len and TXL_MEMORY_LIMIT' % (cmd[0], name),
                  rc == 1 and 'txl.mem_len = %d' % mem_len in err and 'TXL_MEMORY_LIMIT' in err
                  and os.path.basename(m) in err, err[-400:])
            check('%s %s: peak RSS %.0f MB < 300 MB' % (cmd[0], name, rss), rss < 300)
        if name == 'huge-mem':
            rc, err, _ = run_measured(['info', m], b'', {'TXL_MEMORY_LIMIT': '8G'})
            check('TXL_MEMORY_LIMIT=8G lets the model load', rc == 0, err[-300:])
            rc, err, _ = run_measured(['info', m], b'', {'TXL_MEMORY_LIMIT': 'lots'})
            check('a malformed TXL_MEMORY_LIMIT is an error', rc == 1 and "TXL_MEMORY_LIMIT='lots'" in err,
                  err[-300:])

    # a sane model, and lengths asked for on the command line
    cfg = hf_checkpoint.make_config(vocab_size=10, d_model=32, d_embed=32, n_head=4, d_head=8, d_inner=64,
                                    n_layer=2, mem_len=8, tgt_len=4, same_length=False, cutoffs=[])
    d = os.path.join(tmp, 'finite')
    W = hf_checkpoint.make_checkpoint(d, cfg, seed=4)
    m = d + '.gguf'
    rc, _, err = run(['convert', '--hf', d, '-o', m])
    check('convert a small model', rc == 0, err)
    rc, err, rss = run_measured(['score', '-m', m, '--ids', '--mem-len', '1000000'], b'1 2 3 4\n', env)
    check('--mem-len 1000000: refused with the limit (%.0f MB)' % rss,
          rc == 1 and 'mem_len 1000000' in err and 'TXL_MEMORY_LIMIT' in err and rss < 300, err[-300:])

    # one flipped exponent bit (inf), or a NaN, in one weight
    blob = open(m, 'rb').read()
    hf_name = 'transformer.layers.1.pos_ff.CoreNet.0.weight'
    for bad, word in ((float('inf'), 'inf'), (float('nan'), 'NaN')):
        want = W[hf_name].astype('float32').reshape(-1)
        old = want[7].tobytes()
        check('weight bytes found once', blob.count(old) == 1)
        bm = os.path.join(tmp, 'bad-%s.gguf' % word)
        with open(bm, 'wb') as f:
            f.write(blob.replace(old, struct.pack('<f', bad)))
        for cmd in (['score', '-m', bm, '--ids'], ['info', bm]):
            rc, _, err = run(cmd, b'1 2 3 4 5\n')
            check('%s: %s weight refused' % (cmd[0], word),
                  rc == 1 and "tensor 'blk.1.ffn_up.weight' holds %s at index 7" % word in err, err[-300:])


if __name__ == '__main__':
    main()
