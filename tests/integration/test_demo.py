# SPDX-License-Identifier: LGPL-2.1-or-later
"""The README's first command, after its install step: tools/demo.sh, on a
real log the project ships (data/corpus/system.log: this kind of machine's
kernel, dpkg and apt logs) instead of the machine's own dpkg.log, so that
its input is the same everywhere.  It must run the pipeline it prints,
write one JSON line per input line in order, mark the warm-up, and flag
what it says it flags: at least 3 of the 5 lines it puts in (the README
promises that what departs is flagged) with at most 1% of the other judged
lines."""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, '..', '..'))
sys.path.insert(0, HERE)
from checks import SLOW, check, finish  # noqa: E402

BUILD = os.environ.get('TXL_BUILD_ROOT', os.path.join(ROOT, 'build'))


def main():
    tmp = tempfile.mkdtemp(prefix='txl-demo-')
    log = os.path.join(tmp, 'system.log')
    with open(log, 'wb') as f:
        subprocess.run(['zstd', '-q', '-dc', os.path.join(ROOT, 'data', 'corpus', 'system.log.zst')],
                       stdout=f, check=True)
    env = dict(os.environ, TXL_BUILD_DIR=BUILD, TXL_NUM_THREADS='2')
    # its own process group: a timeout stops the pipeline it started too,
    # which would otherwise go on writing into the build folder's demo/
    p = subprocess.Popen([os.path.join(ROOT, 'tools', 'demo.sh'), log], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    try:
        out, err = p.communicate(timeout=280 * SLOW)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        err += '\n(timed out)'
    check('demo.sh runs', p.returncode == 0, err[-2000:])
    if p.returncode != 0:
        return finish(tmp)
    check('it prints the pipeline it runs', 'gst-launch-1.0 filesrc location=' in out and
          'txlmodel model=models/default.gguf learn=true learn-warmup=1000' in out, out[:400])
    demo = os.path.join(BUILD, 'demo')
    with open(os.path.join(demo, 'scores.jsonl')) as f:
        recs = [json.loads(line) for line in f]
    with open(os.path.join(demo, 'injected.txt')) as f:
        put_in = {int(x) for x in f.read().split()}
    check('one JSON line per input line, in order: 3,000 lines and 5 put in',
          [r['line'] for r in recs] == list(range(1, 3006)) and len(put_in) == 5, len(recs))
    warm = [r['line'] for r in recs if r['warmup']]
    check('the learning warm-up (1,000 lines) and the threshold\'s first 50 lines are marked '
          'warm-up, nothing after them', warm == list(range(1, len(warm) + 1)) and
          1050 <= len(warm) <= 1060, len(warm))
    flagged = {r['line'] for r in recs if r['flag']}
    m = re.search(r'(\d+) lines: (\d+) warm-up, (\d+) flagged', out)
    found = re.search(r'put in: (\d+) of 5 found', out)
    check('its summary counts what the JSON holds',
          m and found and (int(m.group(1)), int(m.group(2)), int(m.group(3)), int(found.group(1))) ==
          (len(recs), len(warm), len(flagged), len(flagged & put_in)), out[-600:])
    judged_normal = len(recs) - len(warm) - len(put_in)
    false_alarms = len(flagged - put_in)
    check('at least 3 of the 5 lines put in are flagged (%d)' % len(flagged & put_in),
          len(flagged & put_in) >= 3, sorted(flagged & put_in))
    check('at most 1%% of the other judged lines are flagged (%d of %d)' % (false_alarms, judged_normal),
          false_alarms <= 0.01 * judged_normal, sorted(flagged - put_in))
    return finish(tmp)


if __name__ == '__main__':
    sys.exit(main())
