# SPDX-License-Identifier: LGPL-2.1-or-later
"""Alerts end to end on loopback: txld scores a log with an injected
anomaly and sends it to Debian's prometheus-alertmanager (API v2) and to a
webhook; Debian's prometheus scrapes txld's /metrics, and an alert rule
over them fires into the same Alertmanager.  Also /healthz, /readyz, the
score histogram, process metrics and build_info, and an end of input that
is not counted as a restart.  A txlsessions pipeline's flagged session
reaches Alertmanager, the webhook, the metrics and the output file; a burst
of one kind of line is one alert, its other lines counted as repeats.  Exits 77 (skipped) without the two
programs (tools/install-deps.sh installs them)."""
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import urllib.request

from checks import SESSION_KEY, check, tally, tool_env, wait_for, write_session_log

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, '..', '..')
MODEL = os.path.abspath(os.path.join(ROOT, 'models', 'default.gguf'))
TXLD = os.environ.get('TXLD_BIN', os.path.join(ROOT, 'build', 'tools', 'txld'))
PLUGINS = os.environ.get('TXL_PLUGIN_DIR', os.path.join(ROOT, 'build', 'plugins'))
sys.path.insert(0, os.path.join(ROOT, 'tools'))
import loggen  # noqa: E402
from freeport import free_port  # noqa: E402


ANOMALY = 'qzx9 ☃ ###### 0xdeadbeef ~~ \\\\ ]]] zzzzqqq vvvv !!!'


def get(url, timeout=5):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError as e:
        return 0, str(e)


class Hook(http.server.BaseHTTPRequestHandler):
    got = []

    def do_POST(self):
        n = int(self.headers.get('Content-Length', 0))
        Hook.got.append(json.loads(self.rfile.read(n)))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


def start(args, log):
    return subprocess.Popen(args, stdout=open(log, 'wb'), stderr=subprocess.STDOUT, env=tool_env())


def main():
    am_bin, prom_bin = shutil.which('prometheus-alertmanager'), shutil.which('prometheus')
    if not am_bin or not prom_bin:
        print('SKIP: prometheus-alertmanager and prometheus are not installed')
        sys.exit(77)
    tmp = tempfile.mkdtemp(prefix='txl-alerts-')
    procs = []
    try:
        return run(tmp, am_bin, prom_bin, procs)
    finally:
        for p in procs:
            p.terminate()
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


def write_sessions_conf(tmp, conf, g, am, hook_port):
    """A txlsessions pipeline: twelve sessions of normal lines, one of the
    anomaly (flagged at session-threshold 3.5), one more normal; its lines
    are not flagged (txlsink's threshold 100)."""
    slog = os.path.join(tmp, 'sessions.log')
    write_session_log(slog, g, 12, 6, ANOMALY, after=1)
    with open(os.path.join(conf, 'sessions.conf'), 'w') as f:
        f.write('[pipeline]\nlaunch = filesrc location=%s ! txltokenizer model=%s ! txlsessions model=%s '
                'session-key=%s session-threshold=3.5 ! txlsink location=/dev/null '
                'threshold-mode=fixed threshold=100\nrestart = never\nsnapshot = none\n'
                'alertmanager = %s\nwebhook = http://127.0.0.1:%d/hook\noutput = sessions.jsonl\n'
                % (slog, MODEL, MODEL, SESSION_KEY, am, hook_port))


BURST = 'qvarkd[%d]: zxqv kpfw jjgh %d vvrt qqzm wxkl-%d pfzq zzkv wq%d xjjk'


def write_burst_conf(tmp, conf, am, hook_port):
    """A pipeline with the stream's own rule (the default) over 800 normal
    lines and a burst of 15 lines of one kind they never hold."""
    blog = os.path.join(tmp, 'burst.log')
    g = loggen.Gen(5, loggen.START)
    with open(blog, 'w') as f:
        for _ in range(800):
            f.write(g.normal() + '\n')
        for i in range(15):
            f.write('Nov  3 08:20:%02d web-01 %s\n' % (i, BURST % (3100 + i, 917000 + 31 * i,
                                                                  i % 4 + 1, 7 * i)))
    with open(os.path.join(conf, 'burst.conf'), 'w') as f:
        f.write('[pipeline]\nlaunch = filesrc location=%s ! txltokenizer model=%s ! txlmodel model=%s '
                '! txlsink location=/dev/null\nrestart = never\nsnapshot = none\n'
                'alertmanager = %s\nwebhook = http://127.0.0.1:%d/hook\n' % (blog, MODEL, MODEL, am,
                                                                             hook_port))


def check_burst(value):
    """The burst: one alert at the webhook, the other lines counted as
    repeats, not as anomalies."""
    def burst(name):
        return value(name, 'burst')
    wait_for(lambda: burst('txld_pipeline_ends_total') == 1, 120)
    wait_for(lambda: any('zxqv kpfw' in h.get('text', '') for h in Hook.got), 30)
    hits = [h for h in Hook.got if 'zxqv kpfw' in h.get('text', '')]
    check('a burst of one kind is one alert, its other 14 lines repeats',
          len(hits) == 1 and burst('txld_pipeline_repeats_total') == 14 and
          burst('txld_pipeline_anomalies_total') >= 1,
          (len(hits), burst('txld_pipeline_repeats_total'), burst('txld_pipeline_anomalies_total')))


def check_sessions(tmp, am_alert, value):
    """The flagged session: its own alert, the webhook's session object,
    counted, and every session in the output file."""
    got = wait_for(lambda: am_alert('TxlAnomalousSession'), 30)
    check('Alertmanager holds the flagged session, its key a label',
          got and len(got) == 1 and got[0]['labels'].get('pipeline') == 'sessions' and
          got[0]['labels'].get('session') == 'sid=S99' and
          got[0]['annotations'].get('lines') == '3' and
          float(got[0]['annotations'].get('level', 0)) > 1 and
          'sid=S99: 3 lines' in got[0]['annotations'].get('summary', ''), got)
    wait_for(lambda: any('session' in h for h in Hook.got), 30)
    hit = [h['session'] for h in Hook.got if 'session' in h]
    check('the webhook got the flagged session as txlsink writes it',
          len(hit) == 1 and hit[0]['session'] == 'sid=S99' and hit[0]['flag'] and
          hit[0]['lines'] == 3 and hit[0]['level'] > 1 and hit[0]['threshold'] == 3.5,
          Hook.got[-2:])

    def sess(name):
        return value(name, 'sessions')
    check('sessions and flagged sessions counted',
          sess('txld_pipeline_sessions_total') == 14 and
          sess('txld_pipeline_session_anomalies_total') == 1 and
          sess('txld_pipeline_anomalies_total') == 0,
          (sess('txld_pipeline_sessions_total'), sess('txld_pipeline_session_anomalies_total')))
    with open(os.path.join(tmp, 'state', 'sessions.jsonl')) as f:
        out = [json.loads(l) for l in f if l.startswith('{"session"')]
    check('the output file holds every session, with its time',
          len(out) == 14 and [o['session'] for o in out if o['flag']] == ['sid=S99'] and
          all(o['time'] > 1e9 and o['level'] is not None for o in out), out[-2:])


def run(tmp, am_bin, prom_bin, procs):
    am_port, hook_port, prom_port = free_port(), free_port(), free_port()
    with open(os.path.join(tmp, 'am.yml'), 'w') as f:
        f.write('route:\n  receiver: none\n  group_wait: 0s\nreceivers:\n  - name: none\n')
    procs.append(start([am_bin, '--config.file=' + os.path.join(tmp, 'am.yml'),
                        '--storage.path=' + os.path.join(tmp, 'am-data'),
                        '--web.listen-address=127.0.0.1:%d' % am_port,
                        '--cluster.listen-address='], os.path.join(tmp, 'am.log')))
    am = 'http://127.0.0.1:%d' % am_port
    if not check('alertmanager starts', wait_for(lambda: get(am + '/-/ready')[0] == 200, 60),
                 open(os.path.join(tmp, 'am.log')).read()[-500:]):
        return tally()
    hook = http.server.HTTPServer(('127.0.0.1', hook_port), Hook)
    threading.Thread(target=hook.serve_forever, daemon=True).start()

    # the log: JSON lines of one host and app, the anomaly last
    g = loggen.Gen(5, loggen.START)
    log = os.path.join(tmp, 'app.log')
    with open(log, 'w') as f:
        for _ in range(150):
            f.write(json.dumps({'msg': g.normal(), 'host': 'web-1', 'app': 'shop'}) + '\n')
        f.write(json.dumps({'msg': ANOMALY, 'host': 'web-1', 'app': 'shop'}) + '\n')
    conf = os.path.join(tmp, 'conf')
    os.makedirs(conf)
    with open(os.path.join(conf, 'shop.conf'), 'w') as f:
        f.write('[pipeline]\nlaunch = filesrc location=%s ! txltokenizer model=%s ! txlmodel model=%s '
                '! txlsink location=/dev/null threshold-mode=fixed threshold=6.0\n'
                'restart = never\nsnapshot = none\nalertmanager = %s\n'
                'webhook = http://127.0.0.1:%d/hook\n' % (log, MODEL, MODEL, am, hook_port))
    write_sessions_conf(tmp, conf, g, am, hook_port)
    write_burst_conf(tmp, conf, am, hook_port)
    sys_port = free_port()
    with open(os.path.join(conf, 'live.conf'), 'w') as f:
        f.write('[pipeline]\nlaunch = txlsyslogsrc port=%d ! txltokenizer model=%s ! txlmodel model=%s '
                'flush-on-newline=true ! txlsink location=/dev/null\nsnapshot = none\n'
                % (sys_port, MODEL, MODEL))
    with open(os.path.join(conf, 'broken.conf'), 'w') as f:
        f.write('[pipeline]\nlaunch = txlnosuchelement\nrestart = never\n')
    portfile = os.path.join(tmp, 'port')
    # the OpenBLAS kernel (TXL_CPU): build_info must name the one it runs
    env = dict(os.environ, GST_PLUGIN_PATH=PLUGINS, TXL_NUM_THREADS='1', TXL_CPU='generic')
    procs.append(subprocess.Popen([TXLD, '--config', conf, '--state-dir', os.path.join(tmp, 'state'),
                                   '--port', '0', '--port-file', portfile],
                                  stdout=open(os.path.join(tmp, 'txld.log'), 'wb'),
                                  stderr=subprocess.STDOUT, env=env))
    wait_for(lambda: os.path.exists(portfile) and open(portfile).read().strip(), 30)
    txld = 'http://127.0.0.1:%s' % open(portfile).read().strip()
    check('/healthz answers ok', get(txld + '/healthz') == (200, 'ok\n'))

    def metrics():
        return get(txld + '/metrics')[1]

    def value(name, pipeline='shop'):
        for l in metrics().splitlines():
            if l.startswith(name + '{pipeline="%s"}' % pipeline):
                return float(l.rsplit(' ', 1)[1])
        return None
    wait_for(lambda: value('txld_pipeline_ends_total') == 1, 60)
    check('the end of the file is an end, not a restart',
          value('txld_pipeline_ends_total') == 1 and value('txld_pipeline_restarts_total') == 0,
          (value('txld_pipeline_ends_total'), value('txld_pipeline_restarts_total')))
    status, body = get(txld + '/readyz')
    check('/readyz: 503 naming the broken pipeline only (one ended by its restart policy is ready)',
          status == 503 and 'broken: failed' in body and 'shop' not in body and 'live' not in body,
          (status, body))
    m = metrics()
    check('build_info (with the kernel TXL_CPU chose) and process metrics',
          'txld_build_info{version="' in m and ',kernel="generic"} 1' in m and
          'process_cpu_seconds_total' in m and 'process_open_fds' in m and
          'process_start_time_seconds' in m, m[-300:])
    check('the score histogram counts every line',
          'txld_pipeline_line_score_bits_per_byte_bucket{pipeline="shop",le="+Inf"} 151' in m and
          'txld_pipeline_line_score_bits_per_byte_count{pipeline="shop"} 151' in m)

    # a live pipeline: syslog clients come and go, lines get their latency
    import socket
    for i in range(10):
        c = socket.create_connection(('127.0.0.1', sys_port), timeout=10)
        c.sendall(b'<13>1 - h1 app - - - client %d says hello\n' % i)
        c.close()

    def live(name):
        return value(name, 'live')
    wait_for(lambda: live('txld_pipeline_line_latency_seconds_count') == 10, 30)
    check('latency histogram: every live line, each scored within seconds',
          live('txld_pipeline_line_latency_seconds_count') == 10 and
          0 < live('txld_pipeline_line_latency_seconds_sum') < 10 * 5,
          (live('txld_pipeline_line_latency_seconds_count'),
           live('txld_pipeline_line_latency_seconds_sum'), live('txld_pipeline_lines_total'),
           get(txld + '/pipelines/live')[1][:600]))
    check('ten clients hanging up: no restart, no end',
          live('txld_pipeline_restarts_total') == 0 and live('txld_pipeline_ends_total') == 0 and
          live('txld_pipeline_up') == 1)

    # the anomaly in Alertmanager, with its labels, and at the webhook
    def am_alert(name):
        status, body = get(am + '/api/v2/alerts')
        alerts = json.loads(body) if status == 200 else []
        return [a for a in alerts if a['labels'].get('alertname') == name]
    got = wait_for(lambda: [a for a in am_alert('TxlAnomaly') if a['labels'].get('pipeline') == 'shop'], 30)
    check('Alertmanager holds the anomaly', got and
          got[0]['labels'].get('host') == 'web-1' and got[0]['labels'].get('app') == 'shop' and
          ANOMALY[:10] in got[0]['annotations'].get('summary', ''), got)
    wait_for(lambda: any(ANOMALY[:10] in h.get('text', '') for h in Hook.got), 30)
    hit = [h for h in Hook.got if ANOMALY[:10] in h.get('text', '')]
    check('the webhook got the anomaly with its fields', hit and hit[0]['pipeline'] == 'shop' and
          hit[0]['fields'] == {'host': 'web-1', 'app': 'shop'} and hit[0]['worst'] > 6.0, Hook.got[:2])
    check_sessions(tmp, am_alert, value)
    check_burst(value)
    sent = value('txld_pipeline_alerts_sent_total')
    check('alerts counted as sent', sent is not None and sent >= 2 and
          value('txld_pipeline_alerts_failed_total') == 0, sent)

    # Prometheus scrapes txld; a rule over its metrics fires into Alertmanager
    with open(os.path.join(tmp, 'rules.yml'), 'w') as f:
        f.write('groups:\n  - name: txl\n    rules:\n      - alert: TxldLinesFlagged\n'
                '        expr: txld_pipeline_anomalies_total > 0\n')
    with open(os.path.join(tmp, 'prom.yml'), 'w') as f:
        f.write('global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n'
                'rule_files:\n  - %s\n' % os.path.join(tmp, 'rules.yml') +
                'alerting:\n  alertmanagers:\n    - static_configs:\n        - targets: ["127.0.0.1:%d"]\n'
                % am_port +
                'scrape_configs:\n  - job_name: txld\n    static_configs:\n      - targets: ["%s"]\n'
                % txld.split('//')[1])
    procs.append(start([prom_bin, '--config.file=' + os.path.join(tmp, 'prom.yml'),
                        '--storage.tsdb.path=' + os.path.join(tmp, 'prom-data'),
                        '--web.listen-address=127.0.0.1:%d' % prom_port],
                       os.path.join(tmp, 'prom.log')))
    prom = 'http://127.0.0.1:%d' % prom_port

    def firing():
        status, body = get(prom + '/api/v1/alerts')
        alerts = json.loads(body)['data']['alerts'] if status == 200 else []
        return [a for a in alerts if a['labels'].get('alertname') == 'TxldLinesFlagged'
                and a['state'] == 'firing']
    f = wait_for(firing, 90)
    check('Prometheus scrapes txld and its rule fires',
          f and any(a['labels'].get('pipeline') == 'shop' for a in f),
          open(os.path.join(tmp, 'prom.log')).read()[-500:])
    check('the rule\'s alert reaches Alertmanager', wait_for(lambda: am_alert('TxldLinesFlagged'), 60))
    failed = tally()
    if not failed:
        shutil.rmtree(tmp, ignore_errors=True)
    return failed


if __name__ == '__main__':
    sys.exit(1 if main() else 0)
