# SPDX-License-Identifier: LGPL-2.1-or-later
"""Alert delivery retries (docs/alerts.md): txld flags every line of a
three-line file (threshold 0) and sends each to a webhook.

- a receiver that answers 503 twice, then 200: every alert arrives once,
  after two retries each (1 s, then 2 s later);
- a receiver that answers 400: one try each, counted as failed;
- no receiver at all (connection refused): the first try and three
  retries (1, 2, 4 s), then failed;
- /metrics: txld_pipeline_alerts_{sent,retries,failed}_total add up."""
import http.server
import json
import os
import sys
import tempfile
import threading
import time

from checks import check
from ingest_util import MODEL, ROOT, finish, get, start_txld, wait_for

sys.path.insert(0, os.path.join(ROOT, 'tools'))
from freeport import free_port  # noqa: E402

LINES = 3


class Receiver(http.server.BaseHTTPRequestHandler):
    """Answers each request with the next status of its server's plan (the
    last one from then on), and keeps the bodies of the 2xx ones."""

    def do_POST(self):
        n = int(self.headers.get('Content-Length', 0))
        body = json.loads(self.rfile.read(n))
        srv = self.server
        with srv.lock:
            key = body.get('line')
            k = srv.tries.get(key, 0)
            srv.tries[key] = k + 1
            status = srv.plan[min(k, len(srv.plan) - 1)]
            if 200 <= status < 300:
                srv.got.append(body)
        self.send_response(status)
        self.send_header('Content-Length', '0')
        self.end_headers()

    def log_message(self, *args):
        pass


def receiver(plan):
    """A webhook on loopback whose answer to each alert (by its line
    number) follows plan: its nth try gets plan[n]."""
    srv = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Receiver)
    srv.plan, srv.tries, srv.got, srv.lock = plan, {}, [], threading.Lock()
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
    bad, bad_url = receiver([400])
    dead_url = 'http://127.0.0.1:%d/hook' % free_port()  # nothing listens
    started = time.monotonic()
    proc, base = start_txld(tmp, {'flaky.conf': conf(log, flaky_url), 'bad.conf': conf(log, bad_url),
                                  'dead.conf': conf(log, dead_url)})
    try:
        run(base, flaky, bad, started)
    finally:
        finish(proc, tmp)


def run(base, flaky, bad, started):
    def value(name, pipeline):
        for line in get(base + '/metrics').splitlines():
            if line.startswith(name + '{pipeline="%s"}' % pipeline):
                return float(line.rsplit(' ', 1)[1])
        return None

    def counts(p):
        return tuple(value('txld_pipeline_alerts_%s_total' % k, p) for k in ('sent', 'retries', 'failed'))
    wait_for(lambda: counts('flaky') == (LINES, 2 * LINES, 0), 40)
    check('503, 503, 200: every alert arrives once, after two retries',
          len(flaky.got) == LINES and len({b['line'] for b in flaky.got}) == LINES and
          all(n == 3 for n in flaky.tries.values()) and counts('flaky') == (LINES, 2 * LINES, 0),
          (flaky.tries, [b['line'] for b in flaky.got], counts('flaky')))
    check('the retries waited (1 s, then 2 s)', time.monotonic() - started >= 3)
    wait_for(lambda: counts('bad') == (0, 0, LINES), 20)
    check('400: one try each, failed, never retried',
          counts('bad') == (0, 0, LINES) and bad.tries and all(n == 1 for n in bad.tries.values()) and
          len(bad.tries) == LINES, (bad.tries, counts('bad')))
    wait_for(lambda: counts('dead') == (0, 3 * LINES, LINES), 40)
    check('connection refused: three retries (1, 2, 4 s), then failed',
          counts('dead') == (0, 3 * LINES, LINES), counts('dead'))
    check('nothing dropped', all(value('txld_pipeline_alerts_dropped_total', p) == 0
                                 for p in ('flaky', 'bad', 'dead')))
    m = get(base + '/metrics')
    check('/metrics documents the retries counter',
          '# TYPE txld_pipeline_alerts_retries_total counter' in m)


if __name__ == '__main__':
    if not os.path.exists(MODEL):
        print('SKIP: no bundled model')
        sys.exit(77)
    main()
