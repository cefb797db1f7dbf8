# SPDX-License-Identifier: LGPL-2.1-or-later
"""What the pipeline tests share: gst-launch-1.0 with this build's plugin,
and a stream cut in two, its second part resumed from a snapshot by a new
process."""
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
PLUGINS = os.environ.get('TXL_PLUGIN_DIR', os.path.join(HERE, '..', '..', 'build', 'plugins'))
ENV = dict(os.environ, GST_PLUGIN_PATH=PLUGINS)


def run(args, timeout=300):
    """Runs args with the plugin on the path: (exit status, stderr + stdout)."""
    p = subprocess.run(args, capture_output=True, env=ENV, timeout=timeout)
    return p.returncode, p.stderr.decode() + p.stdout.decode()


def through(src, blocksize, model, element, out, snap=None, sink=''):
    """gst-launch-1.0 -q arguments for filesrc (src, in blocks of
    blocksize) ! txltokenizer ! ELEMENT ! txlsink location=out SINK, element
    and sink being their properties as text; with snap, the element's
    snapshot-location."""
    if snap:
        element += ' snapshot-location=%s' % snap
    return (['gst-launch-1.0', '-q', 'filesrc', 'location=' + src, 'blocksize=%d' % blocksize, '!',
             'txltokenizer', 'model=' + model, '!'] + element.split() +
            ['!', 'txlsink', 'location=' + out] + sink.split())


def whole_run(tmp, data, launch, run=run):
    """data written to tmp/all.txt and run through launch(src, whole) once,
    uninterrupted: (src, whole, exit status, messages)."""
    src, whole = os.path.join(tmp, 'all.txt'), os.path.join(tmp, 'whole.jsonl')
    with open(src, 'wb') as f:
        f.write(data)
    rc, err = run(launch(src, whole))
    return src, whole, rc, err


def cut_and_resume(data, cut, launch, tmp, **second):
    """data[:cut] through launch(a, out, snap), which leaves a snapshot at its
    end, then data[cut:] through launch(b, out, snap, extra='hold-at-eos=false',
    **second) in a new process.  Returns (both ran, the output, their
    messages)."""
    a, b = os.path.join(tmp, 'a.txt'), os.path.join(tmp, 'b.txt')
    out, snap = os.path.join(tmp, 'out.jsonl'), os.path.join(tmp, 's.snap')
    with open(a, 'wb') as f:
        f.write(data[:cut])
    with open(b, 'wb') as f:
        f.write(data[cut:])
    for p in (snap, out):
        if os.path.exists(p):
            os.remove(p)
    rc1, e1 = run(launch(a, out, snap))
    rc2, e2 = run(launch(b, out, snap, extra='hold-at-eos=false', **second))
    got = open(out, 'rb').read() if os.path.exists(out) else b''
    return rc1 == 0 and rc2 == 0, got, 'rc %d/%d %s' % (rc1, rc2, (e1 + e2)[-600:])
