# SPDX-License-Identifier: LGPL-2.1-or-later
"""`txl score --learn` (docs/learning.md) on a small model trained here:
warm-up lines are marked and never flagged, the adapted weights take over
right after the warm-up, two runs print the same bytes, a run cut anywhere
(before, at and after the warm-up) and continued from its snapshot in a new
process prints exactly the uninterrupted run, the adapted model file loads
and scores the stream's lines better than the model it started from, and a
snapshot is continued only the way it was written (with or without
--learn); --learn-warmup-seconds ends the warm-up at the line that arrives
that long after the first, read from a pipe."""
import json
import os
import select
import subprocess
import tempfile
import time

from checks import check, sshd_lines, tally, tiny_byte_model

TXL = os.environ.get('TXL_BIN', os.path.join(os.path.dirname(__file__), '..', '..', 'build', 'tools', 'txl'))


def run(args, stdin=None):
    p = subprocess.run([TXL] + args, input=stdin, capture_output=True, timeout=300)
    return p.returncode, p.stdout, p.stderr.decode()


def records(out):
    return [json.loads(l) for l in out.decode().splitlines()]


def main():
    tmp = tempfile.mkdtemp(prefix='txl-learn-')
    model = tiny_byte_model(TXL, tmp, sshd_lines(200, 1))
    lines = sshd_lines(300, 2)
    lines[250] = 'kernel: BUG: unable to handle page fault at ffff8880deadbeef ' + 'x' * 40
    text = ('\n'.join(lines) + '\n').encode()
    args = ['score', '-m', model, '--learn', '--learn-warmup', '150']
    rc, full, err = run(args, text)
    check('--learn runs', rc == 0, err)
    recs = records(full) if rc == 0 else []
    check('one record per line', len(recs) == 300, len(recs))
    warm = [r['line'] for r in recs if r['warmup']]
    check('the first 150 lines are warm-up, then the recent scores fill (50 lines)',
          warm == list(range(1, 151 + 50)) or warm == list(range(1, 152 + 50)), warm[-5:])
    check('warm-up lines are never flagged', not any(r['flag'] for r in recs if r['warmup']))
    check('the round lands after line 150', 'learnt round 1 after line 150 ' in err, err)
    rc2, again, _ = run(args, text)
    check('two runs print the same bytes', rc2 == 0 and again == full)
    flagged = [r['line'] for r in recs if r['flag']]
    check('the injected kernel line is flagged', 251 in flagged, flagged)
    check('few other lines are flagged', len(flagged) <= 6, flagged)
    check('a judged run says nothing of the warm-up', 'ended in the warm-up' not in err, err)
    rc, _, err = run(args, ('\n'.join(lines[:100]) + '\n').encode())
    check('an input that ends in the warm-up says no line was judged',
          rc == 0 and 'ended in the warm-up: none of its 100 lines was judged' in err
          and 'learning needs 150 lines' in err, err)

    snap = os.path.join(tmp, 's.snap')
    for cut in (5, len(text) // 3, len(text) // 2, len(text) * 2 // 3, len(text) - 3):
        rc1, p1, e1 = run(args + ['--save-snapshot', snap], text[:cut])
        rc2, p2, e2 = run(args + ['--load-snapshot', snap], text[cut:])
        check('cut at byte %d: continued in a new process, byte for byte' % cut,
              rc1 == rc2 == 0 and p1 + p2 == full, e1 + e2)
    rc, _, err = run(['score', '-m', model, '--load-snapshot', snap], b'')
    check('a --learn snapshot is refused without --learn', rc != 0 and 'with --learn' in err, err)
    run(['score', '-m', model, '--save-snapshot', snap], text[:500])
    rc, _, err = run(args + ['--load-snapshot', snap], b'')
    check('a snapshot without learning is refused with --learn', rc != 0 and 'without --learn' in err, err)

    adapted = os.path.join(tmp, 'adapted.gguf')
    rc, _, err = run(args + ['--learn-model', adapted], text)
    check('--learn-model writes the adapted model', rc == 0 and os.path.exists(adapted), err)
    later = ('\n'.join(sshd_lines(300, 3)[100:]) + '\n').encode()
    rc_a, out_a, _ = run(['score', '-m', adapted], later)
    rc_b, out_b, _ = run(['score', '-m', model], later)
    if rc_a == rc_b == 0:
        bpb_a = sum(r['bpb'] for r in records(out_a)) / 200
        bpb_b = sum(r['bpb'] for r in records(out_b)) / 200
        check('the adapted model scores new lines of the stream better (%.3f < %.3f bits/byte)'
              % (bpb_a, bpb_b), bpb_a < 0.9 * bpb_b)
    else:
        check('the adapted model loads', False)
    rc, _, err = run(['score', '-m', model, '--learn-warmup', '5'], text)
    check('--learn-warmup without --learn is refused', rc == 2, err)
    rc, _, err = run(['score', '-m', model, '--learn', '--ids'], b'1 2 3')
    check('--learn with --ids is refused', rc == 2, err)
    rc, _, err = run(['score', '-m', model, '--learn-warmup-seconds', '5'], text)
    check('--learn-warmup-seconds without --learn is refused', rc == 2, err)
    rc, _, err = run(['score', '-m', model, '--learn', '--learn-warmup-seconds', '-1'], text)
    check('--learn-warmup-seconds below 0 is refused', rc == 2, err)

    # a pipe: 40 lines, 3 s of nothing, 260 more; with 2 s the warm-up ends
    # at line 41, the first to arrive after the silence (not at 150 lines)
    p = subprocess.Popen([TXL] + args + ['--learn-warmup-seconds', '2'], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    cut = sum(len(l) + 1 for l in lines[:40])
    p.stdin.write(text[:cut])
    p.stdin.flush()
    t0 = time.time()
    # what a pipe brings is scored and printed while the pipe stays open
    early = b''
    while time.time() - t0 < 3:
        if select.select([p.stdout], [], [], max(0.0, 3 - (time.time() - t0)))[0]:
            got = os.read(p.stdout.fileno(), 1 << 20)
            if not got:
                break
            early += got
    out, err = p.communicate(text[cut:], timeout=300)
    out, err = early + out, err.decode()
    check('a pipe\'s lines are printed before it ends (not a 64 KiB chunk at a time)',
          early.count(b'\n') >= 20, early[:200])
    check('--learn-warmup-seconds 2 on a pipe: the round lands after line 41, the first after 3 s '
          'of silence', p.returncode == 0 and 'learnt round 1 after line 41 ' in err, err)
    warm = [r['line'] for r in records(out) if r['warmup']]
    check('--learn-warmup-seconds: lines 1 to 41 and the 50 that fill the recent scores are warm-up',
          warm[:91] == list(range(1, 92)), warm[:5] + warm[-5:])
    # a snapshot taken while warming up by time continues only with the same
    # warm-up, and tells why otherwise
    timed = os.path.join(tmp, 'timed.snap')
    rc1, _, e1 = run(args + ['--learn-warmup-seconds', '2', '--save-snapshot', timed], text[:cut])
    rc2, _, e2 = run(args + ['--load-snapshot', timed], text[cut:])
    rc3, _, e3 = run(args + ['--learn-warmup-seconds', '2', '--load-snapshot', timed], text[cut:])
    check('a snapshot warming up by time is refused without --learn-warmup-seconds, naming it',
          rc1 == 0 and rc2 != 0 and 'seconds' in e2, (e1 + e2)[-300:])
    check('... and continues with it', rc3 == 0, e3[-300:])
    return 1 if tally() else 0


if __name__ == '__main__':
    raise SystemExit(main())
