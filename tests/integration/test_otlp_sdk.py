# SPDX-License-Identifier: LGPL-2.1-or-later
"""txld against a real OTLP client: the OpenTelemetry JS SDK's log
exporters, @opentelemetry/exporter-logs-otlp-proto (protobuf) to POST
/v1/logs and @opentelemetry/exporter-logs-otlp-http (JSON) to POST
/pipelines/NAME/v1/logs, both with a bearer token, through the SDK's
BatchLogRecordProcessor (batches of 50).  Every record sent in each
encoding is scored exactly once, with app, host, severity, time and
session from the resource and record.

The npm packages (pinned versions) are installed into TXL_NPM_DIR (under
the build folder; never the source tree) when missing; without node, npm
or the registry the test prints SKIP and exits 77."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

from checks import check, tally
from ingest_util import HERE, ROOT, MODEL, finish, scored, scoring_conf, start_txld, wait_for

PACKAGES = ['@opentelemetry/api-logs@0.223.1', '@opentelemetry/sdk-logs@0.223.1',
            '@opentelemetry/exporter-logs-otlp-http@0.223.1',
            '@opentelemetry/exporter-logs-otlp-proto@0.223.1', '@opentelemetry/resources@2.12.1']
N = 300
TOKEN = 'sdk-token-1234'


def skip(why):
    print('SKIP: ' + why, flush=True)
    sys.exit(77)


def npm_modules():
    """node_modules holding the SDK, installed when missing."""
    prefix = os.environ.get('TXL_NPM_DIR', os.path.join(ROOT, 'build', 'npm-otel'))
    modules = os.path.join(prefix, 'node_modules')
    marker = os.path.join(prefix, 'installed-' + '-'.join(p.rsplit('@', 1)[1] for p in PACKAGES[:1] + PACKAGES[-1:]))
    if os.path.exists(marker):
        return modules
    if not shutil.which('node') or not shutil.which('npm'):
        skip('node or npm is not installed')
    try:
        ping = subprocess.run(['npm', 'ping', '--fetch-retries=0', '--fetch-timeout=15000'],
                              capture_output=True, timeout=60).returncode
    except subprocess.TimeoutExpired:
        ping = 1
    if ping != 0:
        skip('npm cannot reach the registry')
    os.makedirs(prefix, exist_ok=True)
    try:
        p = subprocess.run(['npm', 'install', '--prefix', prefix, '--no-audit', '--no-fund',
                            '--no-package-lock', '--fetch-retries=1'] + PACKAGES,
                           capture_output=True, timeout=240)
    except subprocess.TimeoutExpired:
        p = None
    if p is None or p.returncode != 0:
        check('npm install of the OpenTelemetry JS SDK', False, p.stderr[-2000:] if p else 'timeout')
        sys.exit(tally() and 1)
    open(marker, 'w').close()
    return modules


def send(modules, url, encoding, token):
    env = dict(os.environ, NODE_PATH=modules)
    p = subprocess.run(['node', os.path.join(HERE, 'otlp_send.cjs'), url, encoding, str(N), token],
                       capture_output=True, text=True, timeout=120, env=env)
    try:
        return json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {'error': p.stdout + p.stderr}


def check_encoding(rows, encoding):
    mine = [r for r in rows if r['text'].startswith(encoding + ' record ')]
    want = ['%s record %d user %d logged in from 10.0.%d.%d' % (encoding, i, i % 7, i % 5, i % 250)
            for i in range(N)]
    check('%s: %d records sent, each scored exactly once' % (encoding, N),
          sorted(r['text'] for r in mine) == sorted(want), (len(mine), N))
    by_text = {r['text']: r.get('fields', {}) for r in mine}
    bad = [t for i, t in enumerate(want)
           if by_text.get(t) != {'app': 'shop-' + encoding, 'host': 'web-7',
                                 'severity': 'WARN' if i % 10 == 0 else 'INFO',
                                 'time': '2026-01-02T03:04:05.%03d000000Z' % i,
                                 'session': 'sess-%d' % (i % 3)}]
    check('%s: every record\'s fields (app, host, severity, time, session)' % encoding, not bad,
          [(t, by_text.get(t)) for t in bad[:2]])
    return len(mine)


def main():
    modules = npm_modules()
    tmp = tempfile.mkdtemp(prefix='txl-otlp-sdk-')
    out = os.path.join(tmp, 'out.jsonl')
    with open(os.path.join(tmp, 'token'), 'w') as f:
        f.write(TOKEN)
    conf = scoring_conf('otel', out, 'otlp = true\notlp-session = session.id\n'
                        'ingest-token-file = %s\n' % os.path.join(tmp, 'token'))
    proc, base = start_txld(tmp, {'otel.conf': conf})
    try:
        r = send(modules, base + '/v1/logs', 'proto', TOKEN)
        check('exporter-logs-otlp-proto: every export succeeded', r.get('codes') and
              set(r['codes']) == {0} and 'error' not in r, r)
        r = send(modules, base + '/pipelines/otel/v1/logs', 'json', TOKEN)
        check('exporter-logs-otlp-http (JSON): every export succeeded', r.get('codes') and
              set(r['codes']) == {0} and 'error' not in r, r)
        r = send(modules, base + '/v1/logs', 'proto', 'not-the-token')
        check('without the right token the exporter fails (401)', r.get('codes') and 0 not in r['codes'], r)
        rows = wait_for(lambda: len(scored(out)) >= 2 * N and scored(out), 90) or []
        counts = [check_encoding(rows, e) for e in ('proto', 'json')]
        print('records sent/scored: proto %d/%d, json %d/%d' % (N, counts[0], N, counts[1]))
        check('nothing else scored', len(rows) == 2 * N, len(rows))
    finally:
        finish(proc, tmp)


if __name__ == '__main__':
    if not os.path.exists(MODEL):
        skip('no bundled model')
    main()
