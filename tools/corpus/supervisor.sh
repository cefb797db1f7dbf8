#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Supervisor (Debian package supervisor), supervisord with its own
# configuration on a unix socket and an authenticated XML-RPC/HTTP server on
# loopback, managing queue workers, a web app (python3 -m http.server), cron
# like jobs, a process group, a stdin-driven console and event listeners;
# its own log (supervisord.log) at loglevel info, with a phase at debug.
# Clients are supervisorctl, python3 xmlrpc.client and curl.
# HELD OUT (third set): never trained on (collect.sh --held-out-3).
# Traffic: supervisorctl status, start, stop, restart, signal, pid, tail,
# clear, avail, reread, update, add and remove; programs added, changed and
# removed in the configuration; groups started and stopped; XML-RPC calls
# (getState, getAllProcessInfo, start/stopProcessGroup, sendProcessStdin,
# sendRemoteCommEvent, readLog, tails); the web interface; a log reopen,
# reloads (into debug level and back) and a clean shutdown.
# Faults: workers that crash, exit with unexpected codes or die by signal,
# programs that exit at once (BACKOFF, then FATAL), a command that does not
# exist, one that is not executable, a wrong working directory, a user that
# cannot run its command, a daemon that ignores SIGTERM (SIGKILLed after
# stopwaitsecs), event listeners that reject events, break the protocol,
# fall behind (buffer overflow) or die, wrong credentials, bad and malformed
# XML-RPC calls, configuration typos on reread, a SIGHUP restart and a
# second supervisord started on the same socket and port.
. "$(dirname "$0")/common.sh"
ensure_pkg supervisor curl
P=18901        # supervisord's inet_http_server
WEBP=18910     # the supervised web app
RANDOM=18901
PY=/usr/bin/python3
B=$WORK/bin
R=$WORK/run
C=$WORK/conf.d
SOCK=$WORK/supervisor.sock
mkdir -p "$B" "$R" "$C" "$WORK/childlogs" "$WORK/www/static" "$WORK/private" "$WORK/spool"
: > "$R/hooks.seen"
chmod 777 "$R" "$WORK/spool"
chmod 700 "$WORK/private"

# --- the supervised programs ----------------------------------------------
# Each program seeds its own choices from its name and how often it has been
# started, so that a run repeats the same story.
cat > "$B/seed.sh" <<'SH'
# sourced: counts starts of this process, seeds RANDOM from name and count
name=${SUPERVISOR_PROCESS_NAME:-$(basename "$0" .sh)}
cf=$TXL_RUN/$name.starts
n=$(( $(cat "$cf" 2>/dev/null || echo 0) + 1 )); echo $n > "$cf"
h=$(printf '%s' "$name" | cksum | cut -d' ' -f1)
RANDOM=$(( (h % 9000) + n * 131 ))
SH

cat > "$B/queue_worker.sh" <<'SH'
#!/bin/bash
# queue consumer: takes jobs, now and then loses its broker or crashes
. "$(dirname "$0")/seed.sh"
echo "[$name] connected to amqp://guest@127.0.0.1:5672/ queue=${QUEUE:-default} (start $n)"
jobs=$(( RANDOM % 14 + 3 ))
for i in $(seq 1 $jobs); do
    sleep 0.$(( RANDOM % 8 + 2 ))
    echo "[$name] job $(( RANDOM * 7 + i )) done in $(( RANDOM % 900 + 15 ))ms"
done
case $(( RANDOM % 9 )) in
    0|1) echo "[$name] queue drained, exiting"; exit 0 ;;
    2) echo "[$name] broker connection lost: [Errno 104] Connection reset by peer" >&2; exit 3 ;;
    3) echo "[$name] temporary failure, retry later" >&2; exit 75 ;;
    4) echo "[$name] job handler segfaulted" >&2; kill -SEGV $$ ;;
    5) echo "[$name] assertion failed: buf->len <= buf->cap" >&2; kill -ABRT $$ ;;
    6) echo "[$name] out of memory" >&2; exit 137 ;;
    *) echo "[$name] unhandled exception in job, aborting" >&2; exit 1 ;;
esac
sleep 1
SH

cat > "$B/task_runner.sh" <<'SH'
#!/bin/bash
# short batch tasks: each run is one task, restarted by supervisord
. "$(dirname "$0")/seed.sh"
t=$(( RANDOM % 30 + 3 ))
echo "task $name#$n: rendering invoice batch $(( RANDOM % 500 ))"
sleep $(( t / 10 )).$(( t % 10 ))
if [ $(( RANDOM % 7 )) = 0 ]; then
    echo "task $name#$n: template missing: invoice_v$(( RANDOM % 4 )).tmpl" >&2
    exit 2
fi
echo "task $name#$n: done"
exit 0
SH

cat > "$B/healthcheck.sh" <<'SH'
#!/bin/bash
# probes the web app, then exits; supervisord runs it again
. "$(dirname "$0")/seed.sh"
sleep 1.$(( RANDOM % 9 ))
if ! curl -s -f -o /dev/null -m 3 "http://127.0.0.1:$WEBP/${PROBE:-}"; then
    echo "healthcheck: http://127.0.0.1:$WEBP/${PROBE:-} failed" >&2
    exit 1
fi
sleep 0.$(( RANDOM % 9 ))
exit 0
SH

cat > "$B/mailer.py" <<'PY'
#!/usr/bin/python3
"""outgoing mail relay worker: crashes with a traceback now and then"""
import os, random, sys, time
name = os.environ.get("SUPERVISOR_PROCESS_NAME", "mailer")
cf = os.path.join(os.environ["TXL_RUN"], name + ".starts")
n = int(open(cf).read()) + 1 if os.path.exists(cf) else 1
open(cf, "w").write(str(n))
random.seed(n * 17)
print(f"{name}: relay worker starting (start {n})", flush=True)
def deliver(i):
    if random.random() < 0.09:
        raise ConnectionRefusedError(111, "Connection refused: smtp.internal:25")
    if random.random() < 0.03:
        raise KeyError("X-Campaign-Id")
    print(f"{name}: delivered message <{random.randrange(10**8)}@mail.internal>", flush=True)
for i in range(1000):
    time.sleep(random.choice([0.3, 0.5, 0.8, 1.2]))
    deliver(i)
PY

cat > "$B/cron_sync.sh" <<'SH'
#!/bin/bash
# a cron-like job: syncs, sleeps until the next slot, exits to be re-run
. "$(dirname "$0")/seed.sh"
echo "cron_sync run $n: syncing ${SYNC_TARGET:-inventory} from upstream"
sleep ${INTERVAL:-6}
if [ $(( n % 5 )) = 0 ]; then echo "cron_sync: upstream timed out" >&2; exit 4; fi
exit 0
SH

cat > "$B/logrotate_job.sh" <<'SH'
#!/bin/bash
# run on demand by the operator (autostart=false)
. "$(dirname "$0")/seed.sh"
echo "rotating logs in /var/log/app (run $n)"
sleep 1.$(( RANDOM % 9 ))
case $(( n % 4 )) in
    3) echo "error: skipping /var/log/app/*.log because parent directory has insecure permissions" >&2; exit 1 ;;
esac
exit 0
SH

cat > "$B/legacy_daemon.sh" <<'SH'
#!/bin/bash
# an old daemon that ignores SIGTERM (only SIGKILL stops it)
trap '' TERM
trap 'echo "legacy_daemon: reloading tables"' HUP
echo "legacy_daemon: listening on /tmp/legacy.sock"
while :; do sleep 1; done
SH

cat > "$B/graceful.py" <<'PY'
#!/usr/bin/python3
"""a well-behaved daemon: finishes in-flight work on SIGTERM/SIGQUIT"""
import os, signal, sys, time
name = os.environ.get("SUPERVISOR_PROCESS_NAME", "graceful")
stop = False
def handler(sig, frame):
    global stop
    stop = True
    print(f"{name}: caught {signal.Signals(sig).name}, draining", flush=True)
signal.signal(signal.SIGTERM, handler)
signal.signal(signal.SIGQUIT, handler)
signal.signal(signal.SIGUSR1, lambda s, f: print(f"{name}: dumping stats", flush=True))
print(f"{name}: ready", flush=True)
while not stop:
    time.sleep(0.2)
time.sleep(1.5)
print(f"{name}: stopped cleanly", flush=True)
sys.exit(0)
PY

cat > "$B/console.py" <<'PY'
#!/usr/bin/python3
"""a console program driven over its stdin (sendProcessStdin)"""
import sys
print("console: awaiting commands on stdin", flush=True)
for line in sys.stdin:
    cmd = line.strip()
    if cmd == "quit":
        print("console: bye", flush=True); sys.exit(0)
    if cmd == "crash":
        print("console: fatal: state corrupted", file=sys.stderr, flush=True); sys.exit(70)
    if cmd.startswith("flush"):
        print(f"console: flushed {len(cmd) * 3} entries", flush=True)
    else:
        print(f"console: unknown command {cmd!r}", file=sys.stderr, flush=True)
PY

cat > "$B/gateway.sh" <<'SH'
#!/bin/bash
# exits at once: its configuration file is missing
echo "api_gateway: cannot open config $2: No such file or directory" >&2
exit 78
SH

cat > "$B/pipeline.sh" <<'SH'
#!/bin/bash
# a stage of the ingest -> transform -> export pipeline
. "$(dirname "$0")/seed.sh"
stage=$1
trap 'echo "$stage: re-reading stage config"' HUP
trap 'echo "$stage: flushing batch and exiting"; exit 0' TERM
echo "$stage: stage up (start $n)"
i=0
while :; do
    sleep 0.$(( RANDOM % 9 + 1 )) & wait $!
    i=$((i + 1))
    echo "$stage: batch $i, $(( RANDOM % 400 )) records"
    if [ "$stage" = transform ] && [ $i -ge $(( RANDOM % 40 + 25 )) ]; then
        echo "transform: schema mismatch in batch $i: column 'amount' is not numeric" >&2
        exit 65
    fi
done
SH

cat > "$B/thumbnailer.sh" <<'SH'
#!/bin/bash
echo "thumbnailer: started"
SH
chmod 644 "$B/thumbnailer.sh"   # forgot chmod +x

cat > "$WORK/private/indexer.sh" <<'SH'
#!/bin/bash
while :; do sleep 2; echo indexed; done
SH

# event listeners (supervisor's eventlistener protocol on stdin/stdout)
cat > "$B/evproto.py" <<'PY'
"""supervisor's eventlistener protocol: READY, then each event's header
line and body; the listener answers RESULT itself"""
import sys
def events():
    while True:
        sys.stdout.write("READY\n"); sys.stdout.flush()
        line = sys.stdin.readline()
        if not line:
            return
        headers = dict(x.split(":", 1) for x in line.split())
        yield headers, sys.stdin.read(int(headers["len"]))
PY
cat > "$B/alerts.py" <<'PY'
#!/usr/bin/python3
"""crashmail-like listener: acks events, rejects some, dies after a while"""
import os, sys
from evproto import events
name = os.environ.get("SUPERVISOR_PROCESS_NAME", "alerts")
cf = os.path.join(os.environ["TXL_RUN"], name + ".starts")
n = int(open(cf).read()) + 1 if os.path.exists(cf) else 1
open(cf, "w").write(str(n))
limit = 25 + (n * 13) % 30
def log(m):
    sys.stderr.write(m + "\n"); sys.stderr.flush()
count = 0
for headers, body in events():
    count += 1
    ev = headers["eventname"]
    if count % 9 == 0:   # the mail relay refused it: supervisord sends it again
        log(f"alerts: could not page on-call for {ev}: {body[:60]}")
        sys.stdout.write("RESULT 4\nFAIL"); sys.stdout.flush()
    else:
        sys.stdout.write("RESULT 2\nOK"); sys.stdout.flush()
    if count >= limit:
        log("alerts: smtp session broke, exiting")
        sys.exit(1)
PY

cat > "$B/watchdog.py" <<'PY'
#!/usr/bin/python3
"""a slow listener: takes its time over every event (its pool falls behind)"""
import sys, time
from evproto import events
for headers, body in events():
    time.sleep(0.5)
    sys.stdout.write("RESULT 2\nOK"); sys.stdout.flush()
PY

cat > "$B/hooks.py" <<'PY'
#!/usr/bin/python3
"""deploy hooks listener: on a malformed remote command it breaks the protocol"""
import os, sys
from evproto import events
for headers, body in events():
    seen = os.path.join(os.environ["TXL_RUN"], "hooks.seen")
    if ("garbage" in body or "chatty" in body) and headers["serial"] in open(seen).read().split():
        body = "again"   # a redelivered event: handled normally this time
    with open(seen, "a") as f:
        f.write(headers["serial"] + "\n")
    if "garbage" in body:
        sys.stdout.write("RESULT two\nOK"); sys.stdout.flush()
    elif "chatty" in body:
        sys.stdout.write("deploy hook running\n"); sys.stdout.flush()
    else:
        sys.stdout.write("RESULT 2\nOK"); sys.stdout.flush()
PY
chmod 755 "$B"/*.py "$B"/queue_worker.sh "$B"/task_runner.sh "$B"/cron_sync.sh \
    "$B"/logrotate_job.sh "$B"/legacy_daemon.sh "$B"/healthcheck.sh "$B"/gateway.sh "$B"/pipeline.sh \
    "$WORK/private/indexer.sh"
chmod 755 "$B"
for f in index.html about.html static/app.js static/style.css robots.txt; do
    echo "<p>$f</p>" > "$WORK/www/$f"
done
chmod -R a+rX "$WORK/www"

# --- configuration ------------------------------------------------------
write_main() {  # write_main LOGLEVEL
    cat > "$WORK/supervisord.conf" <<CFG
; supervisor config file (txl corpus, loopback only)

[unix_http_server]
file=$SOCK
chmod=0700

[inet_http_server]
port=127.0.0.1:$P
username=ops
password=Sup3rvise!

[supervisord]
logfile=$WORK/supervisord.log
logfile_maxbytes=50MB
logfile_backups=10
loglevel=$1
pidfile=$WORK/supervisord.pid
childlogdir=$WORK/childlogs
identifier=txl-supervisor
minfds=1024
minprocs=200
environment=TXL_RUN="$R",TXL_SUPERVISOR_RUN="1"

[rpcinterface:supervisor]
supervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface

[supervisorctl]
serverurl=unix://$SOCK

[include]
files = conf.d/*.conf
CFG
}
write_main info

cat > "$C/web.conf" <<CFG
[program:web]
command=$PY -m http.server $WEBP --bind 127.0.0.1
directory=$WORK/www
user=nobody
autostart=true
autorestart=true
startsecs=2
stopsignal=INT
stopwaitsecs=5
priority=100
CFG

cat > "$C/workers.conf" <<CFG
[program:queue_worker]
command=$B/queue_worker.sh
process_name=%(program_name)s_%(process_num)02d
numprocs=4
autostart=true
autorestart=unexpected
exitcodes=0
startsecs=2
startretries=3
stopwaitsecs=5
environment=QUEUE="default"

[program:task_runner]
command=$B/task_runner.sh
process_name=%(program_name)s_%(process_num)d
numprocs=5
autostart=true
autorestart=true
exitcodes=0
startsecs=1
startretries=5

[program:healthcheck]
command=$B/healthcheck.sh
process_name=%(program_name)s_%(process_num)d
numprocs=2
autostart=true
autorestart=true
startsecs=1
startretries=10
environment=WEBP="$WEBP"

[program:mailer]
command=$PY $B/mailer.py
autostart=true
autorestart=true
startsecs=3
startretries=4
redirect_stderr=true

[program:cron_sync]
command=$B/cron_sync.sh
autostart=true
autorestart=true
startsecs=0
environment=SYNC_TARGET="inventory",INTERVAL="6"

[program:logrotate_job]
command=$B/logrotate_job.sh
autostart=false
autorestart=false
startsecs=0
exitcodes=0

[program:legacy_daemon]
command=$B/legacy_daemon.sh
autostart=true
autorestart=true
startsecs=1
stopwaitsecs=3

[program:scheduler]
command=$PY $B/graceful.py
autostart=true
autorestart=true
stopsignal=QUIT
stopwaitsecs=10

[program:console]
command=$PY $B/console.py
autostart=true
autorestart=unexpected
exitcodes=0
startsecs=1
CFG

cat > "$C/broken.conf" <<CFG
[program:api_gateway]
command=$B/gateway.sh --config /etc/gateway/gateway.yml
autostart=true
autorestart=true
startsecs=3
startretries=3

[program:reporter]
command=/usr/local/bin/report-gen --daily
autostart=true
startretries=2

[program:uploader]
command=$PY -c "import time; time.sleep(3600)"
directory=/srv/uploads
autostart=true
startretries=2

[program:indexer]
command=$WORK/private/indexer.sh
user=nobody
autostart=true
startretries=2

[program:thumbnailer]
command=$B/thumbnailer.sh
autostart=true
startretries=1
CFG

# stage NAME PRIORITY [SETTING...]: one program of the pipeline group
stage() {
    printf '\n[program:%s]\ncommand=%s/pipeline.sh %s\nautostart=true\n' "$1" "$B" "$1"
    printf 'autorestart=true\n'
    for l in "${@:3}"; do printf '%s\n' "$l"; done
    printf 'priority=%s\nstopwaitsecs=4\n' "$2"
}
{
    printf '[group:pipeline]\nprograms=ingest,transform,export\npriority=200\n'
    stage ingest 10
    stage transform 20 exitcodes=0 startsecs=2
    stage export 30
} > "$C/pipeline.conf"

cat > "$C/listeners.conf" <<CFG
[eventlistener:alerts]
command=$PY $B/alerts.py
events=PROCESS_STATE_EXITED,PROCESS_STATE_FATAL,REMOTE_COMMUNICATION
autostart=true
autorestart=true
buffer_size=50

[eventlistener:watchdog]
command=$PY $B/watchdog.py
events=PROCESS_STATE_STOPPED,TICK_5
buffer_size=8
autorestart=true

[eventlistener:hooks]
command=$PY $B/hooks.py
events=PROCESS_GROUP_ADDED,PROCESS_GROUP_REMOVED,SUPERVISOR_STATE_CHANGE,REMOTE_COMMUNICATION
autorestart=true
CFG

# --- clients ------------------------------------------------------------
cat > "$B/rpc.py" <<'PY'
#!/usr/bin/python3
"""XML-RPC client for the inet_http_server: rpc.py USER PASS METHOD [ARGS...]
(args: ints stay ints, true/false are booleans)"""
import os, socket, sys, xmlrpc.client
socket.setdefaulttimeout(20)
user, pw, method, *args = sys.argv[1:]
def conv(a):
    if a.lstrip("-").isdigit(): return int(a)
    return {"true": True, "false": False}.get(a, a)
p = xmlrpc.client.ServerProxy(f"http://{user}:{pw}@127.0.0.1:{os.environ['TXL_P']}/RPC2")
try:
    f = p
    for part in method.split("."):
        f = getattr(f, part)
    r = f(*[conv(a) for a in args])
    print(repr(r)[:200])
except Exception as e:
    print("error:", e)
PY
chmod 755 "$B/rpc.py"
export TXL_P=$P
CTL="supervisorctl -c $WORK/supervisord.conf"
ctl() { timeout 40 $CTL "$@" >/dev/null 2>&1 || true; }
rpc() { timeout 40 $PY "$B/rpc.py" ops 'Sup3rvise!' "$@" >/dev/null 2>&1 || true; }
rpc_as() { timeout 20 $PY "$B/rpc.py" "$@" >/dev/null 2>&1 || true; }
xml() {  # xml BODY: raw POST to /RPC2
    curl -s -o /dev/null -m 10 -u 'ops:Sup3rvise!' -H 'Content-Type: text/xml' \
        --data-binary "$1" "http://127.0.0.1:$P/RPC2" || true
}

# --- supervisord ----------------------------------------------------------
start_sup() {
    bg supervisord -n -c "$WORK/supervisord.conf" >/dev/null 2>&1
    SPID=$LASTPID
    wait_port $P
    i=0; while [ ! -S "$SOCK" ] && [ $i -lt 20 ]; do sleep 0.5; i=$((i + 1)); done
}
# make sure nothing of ours outlives the run, even on an error
stop_all() {
    if [ -n "${SPID:-}" ] && kill -0 "$SPID" 2>/dev/null; then
        kill "$SPID" 2>/dev/null || true
        i=0; while kill -0 "$SPID" 2>/dev/null && [ $i -lt 40 ]; do sleep 0.5; i=$((i + 1)); done
    fi
    for e in /proc/[0-9]*/environ; do
        if grep -qa 'TXL_SUPERVISOR_RUN=1' "$e" 2>/dev/null; then
            p=${e#/proc/}; p=${p%/environ}
            [ "$p" != $$ ] && kill -9 "$p" 2>/dev/null || true
        fi
    done
    cleanup
}
trap stop_all EXIT
start_sup
say "traffic"
sleep 4

PROGS=(web queue_worker:queue_worker_00 queue_worker:queue_worker_01 queue_worker:queue_worker_02
       queue_worker:queue_worker_03 task_runner:task_runner_0 mailer cron_sync legacy_daemon
       scheduler console pipeline:ingest pipeline:transform pipeline:export alerts watchdog hooks
       api_gateway reporter uploader indexer thumbnailer logrotate_job nosuchprog)
GRPS=(queue_worker task_runner pipeline mailer web scheduler legacy_daemon)
# one operator action, picked by the seed
action() {
    p=${PROGS[$((RANDOM % ${#PROGS[@]}))]}
    g=${GRPS[$((RANDOM % ${#GRPS[@]}))]}
    case $((RANDOM % 32)) in
        0|1) ctl status ;;
        2) ctl status "$g:*" ;;
        3) ctl restart "$p" ;;
        4) ctl stop "$p"; sleep 0.5; ctl start "$p" ;;
        5) ctl start queue_worker:* ;;
        6) ctl start logrotate_job ;;
        7) ctl signal USR1 "queue_worker:queue_worker_0$((RANDOM % 4))" ;;
        8) ctl signal HUP pipeline:* ; ctl signal HUP legacy_daemon ;;
        9) ctl signal USR1 scheduler; ctl signal TERM "task_runner:task_runner_$((RANDOM % 5))" ;;
        10) ctl pid "$p"; ctl pid all; ctl pid ;;
        11) ctl tail "$p"; ctl tail -2000 "$p" stderr ;;
        12) ctl clear "$p" ;;
        13) ctl avail; ctl version ;;
        14) ctl stop pipeline:*; sleep 1; ctl start pipeline:* ;;
        15) ctl restart "$g:*" ;;
        16) rpc supervisor.getState; rpc supervisor.getAllProcessInfo; rpc supervisor.getPID ;;
        17) rpc supervisor.stopProcessGroup "$g"; rpc supervisor.startProcessGroup "$g" ;;
        18) rpc supervisor.sendProcessStdin console "flush cache $RANDOM
" ;;
        19) rpc supervisor.sendProcessStdin console "crash
"; sleep 1; ctl start console ;;
        20) rpc supervisor.readLog -4000 0; rpc supervisor.tailProcessStdoutLog mailer 0 2000
            rpc supervisor.readProcessStderrLog "queue_worker:queue_worker_0$((RANDOM % 4))" 0 500 ;;
        21) rpc supervisor.sendRemoteCommEvent deploy "release $RANDOM rolled out" ;;
        22) rpc system.listMethods; rpc system.methodHelp supervisor.startProcess
            rpc system.multicall '[]' ;;
        23) rpc supervisor.startProcess api_gateway true; rpc supervisor.startProcess reporter true ;;
        24) rpc supervisor.frobnicate; rpc supervisor.startProcess; rpc supervisor.stopProcess nosuch
            rpc supervisor.signalProcess web SIGBOGUS; rpc supervisor.readLog 0 -5 ;;
        25) rpc_as ops wrongpass supervisor.getState
            rpc_as admin admin supervisor.getAllProcessInfo
            timeout 10 supervisorctl -s "http://127.0.0.1:$P" -u ops -p guess status >/dev/null 2>&1 || true ;;
        26) xml '<?xml version="1.0"?><methodCall><methodName>supervisor.getState</methodName><params>'
            xml 'this is not xml'
            xml '<?xml version="1.0"?><methodCall><params></params></methodCall>'
            xml '<?xml version="1.0"?><methodCall><methodName>supervisor.startProcess</methodName><params><param><value><array><data/></array></value></param></params></methodCall>' ;;
        27) # the web interface
            curl -s -o /dev/null -m 10 -u 'ops:Sup3rvise!' "http://127.0.0.1:$P/" || true
            curl -s -o /dev/null -m 10 -u 'ops:Sup3rvise!' "http://127.0.0.1:$P/tail.html?processname=mailer" || true
            curl -s -o /dev/null -m 10 -u 'ops:Sup3rvise!' "http://127.0.0.1:$P/index.html?processname=cron_sync&action=restart" || true
            curl -s -o /dev/null -m 10 "http://127.0.0.1:$P/" || true
            curl -s -o /dev/null -m 10 -u 'ops:Sup3rvise!' "http://127.0.0.1:$P/logtail/nosuch" || true ;;
        28) ctl restart alerts ;;
        29) ctl stop legacy_daemon; ctl start legacy_daemon ;;
        *) ctl start all ;;
    esac
}
# the faults every phase sees once
faults() {
    ctl start thumbnailer; ctl start indexer; ctl start uploader
    rpc supervisor.sendRemoteCommEvent deploy "chatty hook $1"; sleep 1; ctl restart hooks
    rpc supervisor.sendRemoteCommEvent deploy "garbage $1"; sleep 1; ctl restart hooks
    rpc_as ops wrongpass supervisor.getState
    xml 'this is not xml'
    ctl stop legacy_daemon; ctl start legacy_daemon
    rpc supervisor.startProcess api_gateway true
}
# clients of the web app
web() {
    for _ in $(seq 1 $((RANDOM % 5 + 1))); do
        case $((RANDOM % 5)) in
            0) u=/missing.php ;; 1) u=/static/app.js ;; 2) u=/about.html ;; *) u=/ ;;
        esac
        curl -s -o /dev/null -m 5 "http://127.0.0.1:$WEBP$u" || true
    done
}
round() {
    for _ in $(seq 1 "$1"); do
        action
        web
        sleep 0.$((RANDOM % 6 + 2))
    done
}

round 9
faults 1
# a new program appears in the configuration
cat > "$C/billing.conf" <<CFG
[program:billing]
command=$B/queue_worker.sh
process_name=billing_%(process_num)d
numprocs=2
autostart=true
autorestart=unexpected
exitcodes=0,75
startsecs=2
environment=QUEUE="billing"
CFG
ctl reread; ctl update
round 8
# a typo in a new file: reread refuses it
cat > "$C/zz-search.conf" <<CFG
[program:search]
command=$B/queue_worker.sh
autorestart=sometimes
numprocs=2
CFG
ctl reread; ctl update
cat > "$C/zz-search.conf" <<CFG
[program:search
command=$B/queue_worker.sh
CFG
ctl reread
cat > "$C/zz-search.conf" <<CFG
[program:search]
command=$B/queue_worker.sh
user=searchd
CFG
ctl reread; ctl avail
rm -f "$C/zz-search.conf"
round 6
# cron_sync changes its target; the group is restarted by update
sed -i 's/SYNC_TARGET="inventory",INTERVAL="6"/SYNC_TARGET="pricing",INTERVAL="4"/' "$C/workers.conf"
ctl reread; ctl update cron_sync
# remove and re-add by hand
ctl stop billing:*; ctl remove billing; ctl avail; ctl add billing; ctl start billing:*
round 6
# a second supervisord started by mistake: socket and port are taken
timeout 15 supervisord -n -c "$WORK/supervisord.conf" >/dev/null 2>&1 || true
round 5
# logrotate asks for a log reopen
kill -USR2 "$SPID"
round 5
# SIGHUP: supervisord restarts with everything under it
kill -HUP "$SPID"
sleep 8
round 9
faults 2
# a debugging session at loglevel debug
write_main debug
ctl reload
sleep 3
round 5
rm -f "$C/billing.conf"
ctl reread; ctl update
round 1
write_main info
ctl reload
sleep 5
round 6
faults 3
round 6
faults 4
ctl stop all
ctl status
ctl start all
round 6
# shutdown
ctl shutdown
i=0; while kill -0 "$SPID" 2>/dev/null && [ $i -lt 60 ]; do sleep 0.5; i=$((i + 1)); done
emit supervisor "$WORK/supervisord.log"
