# SPDX-License-Identifier: LGPL-2.1-or-later
"""txlsessions snapshots across processes, with gst-launch-1.0 and the
bundled model: an interleaved HDFS-like log cut anywhere (mid-line,
inside a UTF-8 character, between sessions), saved at end of stream by
txlsessions (hold-at-eos) and continued by a new process that restores
it, gives the txlsink JSON output (line scores and session results, in
order) that one uninterrupted run gives, byte for byte.  Evictions
(max-sessions), idle timeouts on the log clock and the end marker are on.
A txlmodel snapshot is refused by txlsessions and the other way round."""
import os
import random
import sys
import tempfile

from checks import check, tally
from gstlaunch import cut_and_resume, run, through, whole_run

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, '..', '..', 'models', 'default.gguf')


SESS = ('txlsessions model=%s segment=24 max-sessions=5 session-end-marker=true '
        'session-idle-after=40,90 session-threshold=2.5' % MODEL)


def launch(src, out, snap=None, extra='', element=SESS):
    return through(src, 613, MODEL, element + ' ' + extra, out, snap)


def log_text():
    r = random.Random(17)
    blocks = ['blk_%s%d' % (r.choice(['', '-']), r.randrange(10 ** 17, 10 ** 18))
              for _ in range(14)]
    t = 0
    lines = []
    for i in range(170):
        t += r.choice([0, 1, 1, 2, 5, 30])
        hh, mm, ss = 20 + t // 3600, (t // 60) % 60, t % 60
        ts = '081109 %02d%02d%02d %d' % (hh, mm, ss, r.randrange(100, 999))
        b = blocks[min(int(r.expovariate(0.35)), len(blocks) - 1)]
        kind = r.random()
        if kind < 0.4:
            msg = 'INFO dfs.DataNode$DataXceiver: Receiving block %s src: /10.250.%d.%d:%d' % (
                b, r.randrange(255), r.randrange(255), r.randrange(30000, 60000))
        elif kind < 0.7:
            msg = 'INFO dfs.DataNode$PacketResponder: PacketResponder %d for block %s terminating' % (
                r.randrange(3), b)
        elif kind < 0.9:
            msg = 'INFO dfs.FSNamesystem: BLOCK* NameSystem.addStoredBlock: blockMap updated: %s size %d' % (
                b, r.randrange(1000, 67108864))
        else:
            msg = 'WARN dfs.DataNode: no block here, größe überschritten ☃ %d' % r.randrange(99)
        lines.append(ts + ' ' + msg)
    return ('\n'.join(lines) + '\nunterminated ' + blocks[0] + ' é').encode()


def main():
    tmp = tempfile.mkdtemp(prefix='txl-sesssnap-')
    data = log_text()
    src, whole, rc, err = whole_run(tmp, data, launch)
    ref = open(whole, 'rb').read()
    n_sess = ref.count(b'"session"')
    check('uninterrupted run', rc == 0 and ref.count(b'\n') > 171 and n_sess > 10,
          err[-400:])
    check('evictions and idle endings happen',
          b'"reason": "evicted"' in ref and b'"reason": "idle"' in ref)
    inside = [i for i, b in enumerate(data) if 0x80 <= b < 0xC0]
    nls = [i for i, b in enumerate(data) if b == 10]
    cuts = [1, nls[0] + 1, nls[3] + 20, len(data) // 3, inside[0], nls[90] + 1,
            2 * len(data) // 3, len(data) - 1]
    snap = os.path.join(tmp, 's.snap')
    for cut in cuts:
        ok, got, msg = cut_and_resume(data, cut, launch, tmp)
        check('cut at byte %d: resumed output identical' % cut, ok and got == ref,
              '%d vs %d bytes, %s' % (len(got), len(ref), msg))
    # three processes: cut twice
    parts = [data[:len(data) // 4], data[len(data) // 4:len(data) // 2], data[len(data) // 2:]]
    out = os.path.join(tmp, 'out3.jsonl')
    os.remove(snap)
    ok = True
    for i, part in enumerate(parts):
        p = os.path.join(tmp, 'p%d.txt' % i)
        open(p, 'wb').write(part)
        rc, e = run(launch(p, out, snap, extra='hold-at-eos=false' if i == 2 else ''))
        ok = ok and rc == 0
    check('three processes: output identical', ok and open(out, 'rb').read() == ref)
    # the other kind of snapshot is refused, with a message saying why
    msnap = os.path.join(tmp, 'm.snap')
    rc, e = run(launch(os.path.join(tmp, 'p0.txt'), os.path.join(tmp, 'm.jsonl'), msnap,
                       element='txlmodel model=%s' % MODEL))
    rc2, e2 = run(launch(os.path.join(tmp, 'p1.txt'), os.path.join(tmp, 'x.jsonl'), msnap))
    check('txlsessions refuses a txlmodel snapshot',
          rc == 0 and rc2 != 0 and 'not a txlsessions snapshot' in e2, e2[-300:])
    rc3, e3 = run(launch(os.path.join(tmp, 'p1.txt'), os.path.join(tmp, 'x.jsonl'), snap,
                         element='txlmodel model=%s' % MODEL))
    check('txlmodel refuses a txlsessions snapshot',
          rc3 != 0 and 'txlsessions snapshot' in e3, e3[-300:])
    # other session settings are refused too
    rc4, e4 = run(launch(os.path.join(tmp, 'p1.txt'), os.path.join(tmp, 'x.jsonl'), snap,
                         element=SESS.replace('segment=24', 'segment=20')))
    check('other settings refused', rc4 != 0 and 'other session settings' in e4, e4[-300:])
    return 1 if tally() else 0


if __name__ == '__main__':
    sys.exit(main())
