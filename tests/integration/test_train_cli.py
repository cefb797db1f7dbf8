# SPDX-License-Identifier: LGPL-2.1-or-later
"""txl train from the command line: it learns, --resume continues bit for
bit (also after Ctrl-C), and bad input gets a clear error."""
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from checks import check, tally, write_text

TXL = os.environ.get('TXL_BIN', os.path.join(os.path.dirname(__file__), '..', '..', 'build', 'tools', 'txl'))
SMALL = ['--layers', '2', '--d-model', '32', '--heads', '2', '--d-head', '16',
         '--d-inner', '64', '--mem-len', '16', '--segment', '16', '--batch', '4',
         '--warmup', '5', '--dropout', '0.1', '--dropatt', '0.1',
         '--eval-every', '0', '--eval-tokens', '2000', '--log-every', '1000']


def run(args, timeout=120):
    p = subprocess.run([TXL] + args, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def text(seed, lines):
    r = random.Random(seed)
    subj = ['the cat', 'a dog', 'the server', 'node 7', 'my friend']
    verb = ['sat on', 'looked at', 'restarted', 'called', 'found']
    obj = ['the mat', 'a log file', 'the disk', 'an old map', 'the door']
    return ''.join('%s %s %s %d\n' % (r.choice(subj), r.choice(verb), r.choice(obj), r.randrange(100))
                   for _ in range(lines))


def same_file(a, b):
    with open(a, 'rb') as f, open(b, 'rb') as g:
        return f.read() == g.read()


def main():
    tmp = tempfile.mkdtemp(prefix='txl-train-')
    data = os.path.join(tmp, 'data.txt')
    with open(data, 'w') as f:
        f.write(text(1, 1500))
    other = os.path.join(tmp, 'other.txt')
    with open(other, 'w') as f:
        f.write(text(2, 1500))

    # it learns: validation loss well below the uniform 5.55 nats
    m0 = os.path.join(tmp, 'learn.gguf')
    rc, _, err = run(['train', '-o', m0, '--steps', '400', '--lr', '3e-3'] + SMALL + [data])
    vals = [float(l.split(': ')[1].split()[0]) for l in err.splitlines() if l.startswith('validation')]
    check('trains and validates', rc == 0 and len(vals) == 1 and vals[0] < 2.5, err[-400:])
    rc, out, err = run(['score', '-m', m0, data])
    check('txl score reads the trained model', rc == 0 and json.loads(out.splitlines()[0])['tokens'] > 0, err[-300:])

    for name, extra in (('byte', []), ('bpe+normalize', ['--tokenizer', 'bpe', '--vocab', '300', '--normalize'])):
        a = os.path.join(tmp, 'a-%s.gguf' % name[:3])
        b = os.path.join(tmp, 'b-%s.gguf' % name[:3])
        args = ['--steps', '30'] + SMALL + extra + [data]
        rc1, _, e1 = run(['train', '-o', a] + args)
        rc2, _, e2 = run(['train', '-o', b, '--stop-after', '13'] + args)
        rc3, _, e3 = run(['train', '-o', b, '--resume'] + args)
        check('%s: resume after step 13 is bit-identical' % name,
              rc1 == rc2 == rc3 == 0 and same_file(a, b), (e1 + e2 + e3)[-600:])

    # Ctrl-C: exit 130 with a checkpoint; resuming ends where a straight run does
    a = os.path.join(tmp, 'a-byt.gguf')
    c = os.path.join(tmp, 'c.gguf')
    args = ['--steps', '30'] + SMALL + [data]
    slow = args[:]
    p = subprocess.Popen([TXL, 'train', '-o', c, '--log-every', '1'] + slow, stderr=subprocess.PIPE, text=True)
    line = p.stderr.readline()          # the parameter summary
    line = p.stderr.readline()          # step 1
    p.send_signal(signal.SIGINT)
    rest = p.communicate(timeout=60)[1]
    interrupted = p.returncode == 130 and os.path.exists(c + '.train')
    finished = p.returncode == 0      # it may have finished before the signal
    check('Ctrl-C writes a checkpoint and exits 130', interrupted or finished, '%d %s' % (p.returncode, rest[-300:]))
    rc, _, e = run(['train', '-o', c, '--resume'] + args)
    check('resume after Ctrl-C matches the straight run', rc == 0 and same_file(a, c), e[-300:])

    # fine-tuning a BPE model keeps its vocabulary: the token ids the
    # weights were trained on (a new vocabulary learned on the new text
    # would give them other meanings)
    base, tuned = os.path.join(tmp, 'base.gguf'), os.path.join(tmp, 'tuned.gguf')
    logs = os.path.join(tmp, 'logs.txt')
    with open(logs, 'w') as f:
        f.write(''.join('kernel: usb %d-%d: new device number %d\n' % (i % 3, i % 7, i)
                        for i in range(600)))
    BPE = ['--tokenizer', 'bpe', '--vocab', '300', '--normalize']
    rc, _, err = run(['train', '-o', base, '--steps', '20'] + BPE + SMALL + [data])
    rc2, _, err2 = run(['train', '-o', tuned, '--init', base, '--steps', '20'] + BPE + SMALL + [logs])

    def info(m):
        return json.loads(run(['info', m])[1])
    check('--init with bpe: the init model\'s vocabulary', rc == 0 and rc2 == 0 and
          info(tuned)['vocab_id'] == info(base)['vocab_id'], (err[-300:], err2[-300:]))

    def bpb(m):
        recs = [json.loads(l) for l in run(['score', '-m', m, logs])[1].splitlines()]
        return sum(r['bpb'] for r in recs) / len(recs)
    check('--init with bpe: fine-tuning learns the new text', rc2 == 0 and bpb(tuned) < 0.8 * bpb(base),
          rc2 == 0 and (bpb(base), bpb(tuned)))
    rc3, _, err3 = run(['train', '-o', tuned, '--init', a, '--steps', '5'] + BPE + SMALL + [logs])
    check('--init with bpe from a byte model: refused', rc3 != 0 and 'no BPE vocabulary' in err3,
          err3[-300:])

    # refusals
    empty = write_text(os.path.join(tmp, 'empty.txt'))
    tiny = write_text(os.path.join(tmp, 'tiny.txt'), 'hello\nworld\n')
    out = os.path.join(tmp, 'x.gguf')
    cases = [
        ('empty data', ['train', '-o', out] + SMALL + [empty], 'empty'),
        ('unreadable data', ['train', '-o', out] + SMALL + [os.path.join(tmp, 'nope.txt')], 'nope.txt'),
        ('too little data', ['train', '-o', out] + SMALL + [tiny], 'too'),
        ('unknown tokenizer', ['train', '-o', out, '--tokenizer', 'sentencepiece'] + SMALL + [data], 'sentencepiece'),
        ('normalize without bpe', ['train', '-o', out, '--normalize'] + SMALL + [data], 'bpe'),
        ('bad option value', ['train', '-o', out, '--lr', '-1'] + SMALL + [data], '--lr'),
        ('no output', ['train'] + SMALL + [data], '-o MODEL'),
        ('resume without a checkpoint', ['train', '-o', out, '--resume'] + SMALL + [data], out),
        ('resume on other data', ['train', '-o', a, '--resume', '--steps', '30'] + SMALL + [other], 'other training data'),
        ('resume with other options', ['train', '-o', a, '--resume', '--steps', '31'] + SMALL + [data], 'options'),
    ]
    for name, args, needle in cases:
        rc, _, err = run(args)
        check(name, rc != 0 and needle in err, 'rc=%d %r' % (rc, err[-300:]))

    shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(1 if tally() else 0)


if __name__ == '__main__':
    main()
