# SPDX-License-Identifier: LGPL-2.1-or-later
"""kill -9 while snapshots are being written never loses the snapshot:
after every kill, the file at the path is a whole, valid snapshot (the
previous one or the new one), and the stream keeps advancing."""
import json
import os
import random
import select
import signal
import subprocess
import sys
import tempfile
import time

TXL = os.environ['TXL_BIN']
STRESS = os.environ['SNAPSHOT_STRESS']
MODEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'models', 'default.gguf')


def main():
    tmp = tempfile.mkdtemp(prefix='txl-kill-')
    snap = os.path.join(tmp, 's.snap')
    r = random.Random(7)
    seen, ok, checks, kills = -1, 0, 0, 25
    for k in range(kills):
        p = subprocess.Popen([STRESS, MODEL, snap], stdout=subprocess.PIPE)
        # the kill lands at a random moment after the first save of this run
        # (loading the model takes longer under a sanitizer or a busy machine,
        # and a kill during the load tests nothing)
        ready, _, _ = select.select([p.stdout], [], [], 60)
        if ready:
            p.stdout.readline()
        time.sleep(r.uniform(0.0, 0.1))
        p.send_signal(signal.SIGKILL)
        p.wait()
        p.stdout.close()
        if not os.path.exists(snap):
            continue  # killed before the first save ever finished
        checks += 1
        info = subprocess.run([TXL, 'snapshot', 'info', snap], capture_output=True, text=True)
        if info.returncode != 0:
            print('FAIL kill %d: the snapshot is broken: %s' % (k, info.stderr.strip()))
            continue
        n = json.loads(info.stdout)['tokens_seen']
        if n < seen:
            print('FAIL kill %d: the stream went back from %d to %d tokens' % (k, seen, n))
            continue
        ok += 1
        seen = n
    for name in os.listdir(tmp):  # temporaries a kill left behind
        os.remove(os.path.join(tmp, name))
    os.rmdir(tmp)
    passed = ok == checks and checks >= kills - 3 and seen > 0
    print('%s %d kills, %d snapshots checked whole, the stream resumed each time '
          'and reached %d tokens' % ('PASS' if passed else 'FAIL', kills, checks, seen))
    print('%d passed, %d failed' % (1 if passed else 0, 0 if passed else 1))
    sys.exit(0 if passed else 1)


if __name__ == '__main__':
    main()
