# SPDX-License-Identifier: LGPL-2.1-or-later
"""Alert delivery retries (docs/alerts.md): txld flags every line of a
three-line file (threshold 0) and sends each to a webhook.

- a receiver that answers 503 twice, then 200: every alert arrives once,
  after two retries each (1 s, then 2 s later);
- a receiver that answers 503 with Retry-After: 3, 429 with an HTTP-date
  5 s ahead, 500 with Retry-After: 6, then 200: each retry waits as long
  as it was told (the lower bounds only: the machine may be loaded);
- a receiver whose Retry-After is garbage, negative or a date in the past:
  the fixed 1, 2, 4 s schedule (tests/unit/test_txld_alert.c has the
  parser's edges, the 60 s bound among them);
- a receiver that answers 400: one try each, counted as failed;
- no receiver at all (connection refused): the first try and three
  retries (1, 2, 4 s), then failed;
- /metrics: txld_pipeline_alerts_{sent,retries,failed}_total add up,
  nothing dropped."""
import http.server
import json
import os
import sys
import tempfile
import threading
import time
from email.utils import formatdate

from checks import check
from ingest_util import MODEL, ROOT, finish, get, start_txld, wait_for

sys.path.insert(0, os.path.join(ROOT, 'tools'))
from freeport import free_port  # noqa: E402

LINES = 3


class Receiver(http.server.BaseHTTPRequestHandler):
    """Answers each request with the next status of its server's plan (the
    last one from then on), and keeps the bodies of the 2xx ones and the
    time of every try.  A step of the plan is a status or (status,
    Retry-After), the latter a string or a function that makes one."""

    def do_POST(self):
        n = int(self.headers.get('Content-Length', 0))
        body = json.loads(self.rfile.read(n))
        srv = self.server
        with srv.lock:
            key = body.get('line')
            k = srv.tries.get(key, 0)
            srv.tries[key] = k + 1
            srv.times.setdefault(key, []).append(time.monotonic())
            step = srv.plan[min(k, len(srv.plan) - 1)]
            status, after = step if isinstance(step, tuple) else (step, None)
            if 200 <= status < 300:
                srv.got.append(body)
        self.send_response(status)
        if after is not None:
            self.send_header('Retry-After', after() if callable(after) else after)
        self.send_header('Content-Length', '0')
        self.end_headers()

    def log_message(self, *args):
        pass


def receiver(plan):
    """A webhook on loopback whose answer to each alert (by its line
    number) follows plan: its nth try gets plan[n]."""
    srv = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Receiver)
    srv.plan, srv.tries, srv.got, srv.lock = plan, {}, [], threading.Lock()
    srv.times = {}
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, 'http://127.0.0.1:%d/hook' % srv.server_address[1]


def conf(log, hook):
    return ('[pipeline]\nlaunch = filesrc location=%s ! txltokenizer model=%s ! txlmodel model=%s '
            '! txlsink location=/dev/null threshold-mode=fixed threshold=0.0\n'
            'restart = never\nsnapshot = none\nwebhook = %s\n' % (log, MODEL, MODEL, hook))


def main():
    tmp = tempfile.mkdtemp(prefix='txl-alert-retry-')
    log = os.path.join(tmp, 'app.log')
    with open(log, 'w') as f:
        for i in range(LINES):
            f.write('job %d finished in %d ms\n' % (i, 10 + i))
    flaky, flaky_url = receiver([503, 503, 200])
    told, told_url = receiver([(503, '3'), (429, lambda: formatdate(time.time() + 5, usegmt=True)),
                               (500, '6'), 200])
    junk, junk_url = receiver([(503, 'soon'), (503, '-5'), (429, 'Thu, 01 Jan 1970 00:00:00 GMT'), 200])
    bad, bad_url = receiver([400])
    dead_url = 'http://127.0.0.1:%d/hook' % free_port()  # nothing listens
    started = time.monotonic()
    proc, base = start_txld(tmp, {'flaky.conf': conf(log, flaky_url), 'bad.conf': conf(log, bad_url),
                                  'dead.conf': conf(log, dead_url), 'told.conf': conf(log, told_url),
                                  'junk.conf': conf(log, junk_url)})
    try:
        run(base, flaky, bad, started)
        retry_after(base, told, junk)
        check('nothing dropped', all(value(base, 'txld_pipeline_alerts_dropped_total', p) == 0
                                     for p in ('flaky', 'bad', 'dead', 'told', 'junk')))
    finally:
        finish(proc, tmp)


def value(base, name, pipeline):
    for line in get(base + '/metrics').splitlines():
        if line.startswith(name + '{pipeline="%s"}' % pipeline):
            return float(line.rsplit(' ', 1)[1])
    return None


def counts(base, p):
    """(sent, retries, failed) of pipeline p."""
    return tuple(value(base, 'txld_pipeline_alerts_%s_total' % k, p) for k in ('sent', 'retries', 'failed'))


def run(base, flaky, bad, started):
    wait_for(lambda: counts(base, 'flaky') == (LINES, 2 * LINES, 0), 40)
    check('503, 503, 200: every alert arrives once, after two retries',
          len(flaky.got) == LINES and len({b['line'] for b in flaky.got}) == LINES and
          all(n == 3 for n in flaky.tries.values()) and counts(base, 'flaky') == (LINES, 2 * LINES, 0),
          (flaky.tries, [b['line'] for b in flaky.got], counts(base, 'flaky')))
    check('the retries waited (1 s, then 2 s)', time.monotonic() - started >= 3)
    wait_for(lambda: counts(base, 'bad') == (0, 0, LINES), 20)
    check('400: one try each, failed, never retried',
          counts(base, 'bad') == (0, 0, LINES) and bad.tries and all(n == 1 for n in bad.tries.values()) and
          len(bad.tries) == LINES, (bad.tries, counts(base, 'bad')))
    wait_for(lambda: counts(base, 'dead') == (0, 3 * LINES, LINES), 40)
    check('connection refused: three retries (1, 2, 4 s), then failed',
          counts(base, 'dead') == (0, 3 * LINES, LINES), counts(base, 'dead'))
    m = get(base + '/metrics')
    check('/metrics documents the retries counter',
          '# TYPE txld_pipeline_alerts_retries_total counter' in m)


def gaps(srv):
    """Seconds between an alert's tries, by its line, as the receiver saw them."""
    with srv.lock:
        return {k: [round(b - a, 2) for a, b in zip(t, t[1:])] for k, t in srv.times.items()}


def retry_after(base, told, junk):
    """Lower bounds only (a loaded machine is slow, never fast); without
    Retry-After the waits would be 1, 2 and 4 s."""
    def delivered(srv, p):
        return (counts(base, p) == (LINES, 3 * LINES, 0) and len(srv.got) == LINES and
                len(srv.tries) == LINES and all(n == 4 for n in srv.tries.values()))
    wait_for(lambda: delivered(told, 'told'), 60)
    g = gaps(told)
    check('Retry-After honoured: 503 + 3 s, 429 + an HTTP-date 5 s ahead, 500 + 6 s, then 200',
          delivered(told, 'told') and
          all(d[0] >= 2.9 and d[1] >= 3.9 and d[2] >= 5.9 for d in g.values()),
          (g, told.tries, counts(base, 'told')))
    wait_for(lambda: delivered(junk, 'junk'), 60)
    g = gaps(junk)
    check('Retry-After garbage, negative or in the past: the fixed 1, 2, 4 s',
          delivered(junk, 'junk') and
          all(d[0] >= 0.9 and d[1] >= 1.9 and d[2] >= 3.9 and max(d) < 30 for d in g.values()),
          (g, junk.tries, counts(base, 'junk')))

if __name__ == '__main__':
    if not os.path.exists(MODEL):
        print('SKIP: no bundled model')
        sys.exit(77)
    main()
