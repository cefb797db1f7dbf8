# SPDX-License-Identifier: LGPL-2.1-or-later
"""What the integration tests share: one PASS or FAIL line per check (the
detail only when it fails) and the tally that decides the exit status."""

import os
import subprocess
import time

results = []


def check(name, cond, detail=''):
    """cond, after printing its line (flushed: long tests show progress)."""
    results.append(bool(cond))
    print(('PASS ' if cond else 'FAIL ') + name + ('' if cond else '  ' + str(detail)),
          flush=True)
    return cond


def tally():
    """Prints how many checks passed and failed; returns the number failed."""
    failed = results.count(False)
    print('%d passed, %d failed' % (len(results) - failed, failed))
    return failed


def wait_for(cond, seconds=10, step=0.1):
    """cond's first true value within seconds, else its last value."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(step)
    return cond()


def tiny_byte_model(txl, tmp, lines):
    """A one-layer byte model trained briefly on lines (a few seconds): a
    start for tests of learning on the stream.  Returns its path, checked."""
    train = os.path.join(tmp, 'train.log')
    with open(train, 'w') as f:
        f.write('\n'.join(lines) + '\n')
    model = os.path.join(tmp, 'm.gguf')
    p = subprocess.run([txl, 'train', '-o', model, '--tokenizer', 'byte', '--layers', '1', '--d-model', '32',
                        '--heads', '2', '--d-head', '16', '--d-inner', '64', '--mem-len', '32', '--segment', '32',
                        '--batch', '4', '--steps', '40', '--lr', '3e-3', '--eval-every', '0',
                        '--checkpoint-every', '0', train], capture_output=True, timeout=300)
    check('a small byte model to start from', p.returncode == 0, p.stderr)
    return model
