# SPDX-License-Identifier: LGPL-2.1-or-later
"""Driver for test_txljson.py, run with the GStreamer bindings: the
line-scored and session-scored signals of a txljson and of a txlsink
behind the same scorer, and the latency txljson's lines get from a live
source.  Prints one JSON object.  Arguments: MODEL INPUT."""
import json
import sys
import time

import gi
gi.require_version('Gst', '1.0')
from gi.repository import Gst  # noqa: E402

NONE = Gst.CLOCK_TIME_NONE


def signals(desc):
    """(line texts, session keys) that the element named e emitted."""
    p = Gst.parse_launch(desc)
    e = p.get_by_name('e')
    lines, sessions = [], []
    e.connect('line-scored', lambda el, st: lines.append(st.get_value('text')))
    e.connect('session-scored', lambda el, st: sessions.append(st.get_value('key')))
    p.set_state(Gst.State.PLAYING)
    m = p.get_bus().timed_pop_filtered(120 * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR)
    p.set_state(Gst.State.NULL)
    ok = m is not None and m.type == Gst.MessageType.EOS
    return (lines, sessions) if ok else (None, None)


def live_latencies(model, n):
    """The latency of each of n lines pushed, timestamped with their
    arrival, into a live appsrc before txljson."""
    p = Gst.parse_launch('appsrc name=src is-live=true format=time caps=text/x-raw,format=utf8 ! '
                         'txltokenizer model=%s ! txlmodel model=%s flush-on-newline=true ! '
                         'txljson name=e ! fakesink' % (model, model))
    src, e = p.get_by_name('src'), p.get_by_name('e')
    got = []
    e.connect('line-scored', lambda el, st: got.append(st.get_value('latency')))
    p.set_state(Gst.State.PLAYING)
    p.get_state(10 * Gst.SECOND)
    for i in range(n):
        buf = Gst.Buffer.new_wrapped(b'live line %d arrived\n' % i)
        clock = src.get_clock()
        buf.pts = clock.get_time() - src.get_base_time() if clock else NONE
        src.emit('push-buffer', buf)
        time.sleep(0.05)
    t = time.time()
    while len(got) < n and time.time() - t < 30:
        time.sleep(0.05)
    p.set_state(Gst.State.NULL)
    return got


def main():
    Gst.init(None)
    model, src = sys.argv[1], sys.argv[2]
    head = 'filesrc location=%s ! txltokenizer model=%s ! txlsessions model=%s session-key=web-0[0-9] ! ' % (
        src, model, model)
    jl, js = signals(head + 'txljson name=e ! fakesink')
    sl, ss = signals(head + 'txlsink name=e location=/dev/null')
    print(json.dumps({'json_lines': jl, 'json_sessions': js, 'sink_lines': sl, 'sink_sessions': ss,
                      'latencies': live_latencies(model, 5)}))


if __name__ == '__main__':
    main()
