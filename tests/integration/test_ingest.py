# SPDX-License-Identifier: LGPL-2.1-or-later
"""txld's HTTP ingest (docs/ingest.md) with plain HTTP from Python.

- NDJSON as Vector's http sink sends it, a JSON array as Fluent Bit's http
  output (format json) sends it, and text/plain: every line scored exactly
  once, with its fields;
- OTLP/HTTP protobuf written by hand (the resource after its logs, a body
  that is not UTF-8) and OTLP/JSON gzip-compressed: fields from the
  resource and the record, severity by number, the session attribute;
- the bearer token (401 without it, or with another), 413 for a body over
  --ingest-max-body and for gzip that inflates past it, 415, 400 for a
  malformed request (which adds nothing), 404s;
- Content-Encoding zstd and deflate (zlib, and bare deflate) for NDJSON and
  both OTLP encodings; a zstd or deflate bomb gets 413 without growing
  txld's memory past the limit; corrupt or cut short bodies 400;
- OTLP partial success: records without a body or with bytes of their
  own that are not protobuf are refused one by one, the rest scored, and
  the answer is 200 with partial_success in the request's encoding;
- back-pressure: a pipeline held up by `identity sleep-time` with a tiny
  ingest-max-queue answers 429 with Retry-After; a pipeline backing off
  after an error answers 503 with Retry-After;
- /metrics counts the answers, and every ingested line is in the latency
  histogram (the buffers carry their arrival)."""
import gzip
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import zlib

from checks import check, tally
from ingest_util import (MODEL, _varint, finish, get, pb_len, pb_request, pb_str_any, peak_rss, post,
                         scored, scoring_conf, start_txld, wait_for, zstd_compress)

TOKEN = 's3cret-token-for-tests'
MAX_BODY = 200000


def vector_batch(start, n):
    """NDJSON as Vector's http sink (codec json, newline framing) writes it."""
    return ''.join(json.dumps({'message': 'vector line %d user %d logged in' % (i, i % 5),
                               'host': 'vec-%d' % (i % 2), 'timestamp': '2026-11-25T10:00:%02dZ' % (i % 60),
                               'source_type': 'file'}) + '\n'
                   for i in range(start, start + n)).encode()


def main():
    tmp = tempfile.mkdtemp(prefix='txl-ingest-')
    out_lines = os.path.join(tmp, 'lines.jsonl')
    out_otlp = os.path.join(tmp, 'otlp.jsonl')
    with open(os.path.join(tmp, 'token'), 'w') as f:
        f.write(TOKEN + '\n')
    confs = {
        'lines.conf': scoring_conf('lines', out_lines, 'ingest = true\n'),
        'otlp.conf': scoring_conf('otlp', out_otlp, 'otlp = true\notlp-session = session.id\n'
                                  'ingest-token-file = %s\n' % os.path.join(tmp, 'token')),
        'enc.conf': scoring_conf('enc', os.path.join(tmp, 'enc.jsonl'), 'ingest = true\n'),
        # scored into txljson: txld counts its lines from its signals
        'json.conf': '[pipeline]\nlaunch = appsrc name=ingest ! txltokenizer model={m} ! txlmodel model={m} '
                     'flush-on-newline=true ! txljson ! fakesink\nsnapshot = none\ningest = true\n'
                     .format(m=MODEL),
        # takes lines and scores none: for large bodies
        'sink.conf': '[pipeline]\nlaunch = appsrc name=ingest ! fakesink\nsnapshot = none\ningest = true\n',
        # held up: each buffer waits 5 s in identity, the queue takes 1000 bytes
        'slow.conf': '[pipeline]\nlaunch = appsrc name=ingest ! identity sleep-time=5000000 ! '
                     'fakesink\nsnapshot = none\ningest = true\ningest-max-queue = 1000\n',
        # fails at start (no such file) and backs off for a minute
        'down.conf': '[pipeline]\nlaunch = appsrc name=ingest ! fakesink filesrc '
                     'location=/nonexistent/txl ! fakesink\nsnapshot = none\ningest = true\n'
                     'restart-delay = 60\n',
        # a token "file" that is a FIFO: refused at once, nothing blocks
        'fifo.conf': scoring_conf('fifo', os.path.join(tmp, 'fifo.jsonl'),
                                  'ingest = true\ningest-token-file = %s\n' % os.path.join(tmp, 'fifo')),
        'closed.conf': '[pipeline]\nlaunch = fakesrc num-buffers=1 ! fakesink\nsnapshot = none\n'
                       'restart = never\n',
    }
    os.mkfifo(os.path.join(tmp, 'fifo'))
    proc, base = start_txld(tmp, confs, ['--ingest-max-body', str(MAX_BODY)])
    try:
        run(tmp, base, out_lines, out_otlp)
        run_encodings(base, os.path.join(tmp, 'enc.jsonl'), proc.pid)
        run_partial(base, os.path.join(tmp, 'enc.jsonl'))
    finally:
        finish(proc, tmp)
    run_stop_while_scoring()


def run_stop_while_scoring():
    """SIGTERM while a pipeline scores one 1.5 MB line (about a million
    tokens: minutes of work on two cores): txld stops within a minute, with
    its snapshot written.  The tokenizer hands the line on in buffers of
    1,024 tokens, and the scorer sees the stop between two of them; one
    buffer for the whole line held the stop until every token was scored."""
    tmp = tempfile.mkdtemp(prefix='txl-ingest-stop-')
    snap = os.path.join(tmp, 'big.snap')
    conf = scoring_conf('big', os.path.join(tmp, 'big.jsonl'), 'ingest = true\n').replace(
        'snapshot = none', 'snapshot = ' + snap)
    proc, base = start_txld(tmp, {'big.conf': conf})
    try:
        wait_for(lambda: json.loads(get(base + '/pipelines/big'))['state'] == 'running', 30)
        rnd = random.Random(7)
        words = ' '.join(''.join(rnd.choice('abcdefghijklmnopqrstuvwxyz') for _ in range(rnd.randint(2, 9)))
                         for _ in range(250000))[:1500000]
        st = post(base + '/pipelines/big/lines', words.encode() + b'\n')[0]
        time.sleep(2)  # the line is in the pipeline, its scoring begun
        t0 = time.monotonic()
        proc.terminate()
        try:
            rc = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
        took = time.monotonic() - t0
        log = open(os.path.join(tmp, 'txld.log'), errors='replace').read()
        check('SIGTERM while scoring a 1.5 MB line: txld stops within a minute, status 0, its snapshot '
              'written', st == 200 and rc == 0 and took < 60 and os.path.exists(snap) and
              'snapshot' in log, (st, rc, round(took, 1), log[-600:]))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if tally():
        sys.exit(1)
    shutil.rmtree(tmp)


def run_lines(base, out_lines):
    url = base + '/pipelines/lines/lines'
    statuses = [post(url, vector_batch(i, 50), {'Content-Type': 'application/x-ndjson'})[0]
                for i in range(0, 200, 50)]
    # Fluent Bit's http output, format json: an array of records
    fb = json.dumps([{'date': 1764064800.5 + i, 'log': 'fluent line %d disk ok' % i, 'host': 'fb-1'}
                     for i in range(30)]).encode()
    statuses.append(post(url, fb, {'Content-Type': 'application/json'})[0])
    plain = ''.join('plain line %d cron ran\n' % i for i in range(20)).rstrip('\n').encode()
    statuses.append(post(url, plain, {'Content-Type': 'text/plain'})[0])
    check('NDJSON, JSON array and text/plain requests: 200', statuses == [200] * 6, statuses)
    rows = wait_for(lambda: len(scored(out_lines)) >= 250 and scored(out_lines), 60) or []
    texts = [r['text'] for r in rows]
    want = (['vector line %d user %d logged in' % (i, i % 5) for i in range(200)] +
            ['fluent line %d disk ok' % i for i in range(30)] +
            ['plain line %d cron ran' % i for i in range(20)])
    check('every posted line scored exactly once, in order', texts == want,
          (len(texts), [t for t in texts if t not in want][:3]))
    check('Vector NDJSON fields: host and time',
          all(r.get('fields') == {'host': 'vec-%d' % (i % 2), 'time': '2026-11-25T10:00:%02dZ' % (i % 60)}
              for i, r in enumerate(rows[:200])), rows[0])
    check('Fluent Bit array: host, and the message from "log"',
          all(r.get('fields', {}).get('host') == 'fb-1' for r in rows[200:230]), rows[200])


def run_otlp(base, out_otlp):
    auth = {'Authorization': 'Bearer ' + TOKEN}
    proto = {'Content-Type': 'application/x-protobuf'}
    recs = [{'body': 'pb record %d payment accepted' % i, 'time': 1764064800000000000 + i * 1000,
             'severity_number': 9 if i % 4 else 17, 'attrs': {'session.id': 'cart-%d' % (i % 3)}}
            for i in range(40)]
    recs.append({'body': b'caf\xe9 latin-1 bytes \xff\xfe', 'severity': 'notice'})
    body = pb_request({'service.name': 'pay', 'host.name': 'pb-host', 'session.id': 'res-sess'}, recs)
    st, h, b = post(base + '/v1/logs', body, proto)
    check('OTLP without the token: 401 with WWW-Authenticate', st == 401 and 'Bearer' in
          h.get('WWW-Authenticate', ''), (st, h))
    st, _, _ = post(base + '/v1/logs', body, dict(proto, Authorization='Bearer wrong'))
    check('OTLP with another token: 401', st == 401, st)
    st, h, b = post(base + '/v1/logs', body, dict(proto, **auth))
    check('OTLP protobuf with the token: 200, an empty protobuf answer',
          st == 200 and b == b'' and h.get('Content-Type') == 'application/x-protobuf', (st, h, b))
    st, _, b = post(base + '/v1/logs', body[:-3], dict(proto, **auth))
    check('a truncated protobuf request: 400 (and nothing of it queued)', st == 400, (st, b))
    js = {'resourceLogs': [{'resource': {'attributes': [
        {'key': 'service.name', 'value': {'stringValue': 'jsvc'}}]},
        'scopeLogs': [{'scope': {'name': 'x'}, 'logRecords': [
            {'timeUnixNano': str(1764064800000000000 + i), 'severityText': 'DEBUG',
             'body': {'stringValue': 'json record %d cache warm' % i}} for i in range(10)] + [
            {'body': {'kvlistValue': {'values': [{'key': 'k', 'value': {'intValue': '7'}}]}}}]}]}]}
    st, h, b = post(base + '/pipelines/otlp/v1/logs', gzip.compress(json.dumps(js).encode()),
                    dict(auth, **{'Content-Type': 'application/json', 'Content-Encoding': 'gzip'}))
    check('OTLP/JSON, gzip, to /pipelines/NAME/v1/logs: 200 {}', st == 200 and b.strip() == b'{}', (st, b))
    st, _, _ = post(base + '/v1/logs', b'{}', dict(auth, **{'Content-Type': 'text/plain'}))
    check('OTLP with another Content-Type: 415', st == 415, st)
    rows = wait_for(lambda: len(scored(out_otlp)) >= 52 and scored(out_otlp), 60) or []
    texts = [r['text'] for r in rows]
    want = (['pb record %d payment accepted' % i for i in range(40)] + ['caf\ufffd latin-1 bytes \ufffd\ufffd'] +
            ['json record %d cache warm' % i for i in range(10)] + ['{"k":7}'])
    check('every OTLP record scored exactly once (the bytes that are not UTF-8 kept)', texts == want,
          texts[38:43])
    f0 = rows[0].get('fields', {}) if rows else {}
    check('protobuf fields: app, host, severity by number, time, the record\'s session',
          f0 == {'app': 'pay', 'host': 'pb-host', 'severity': 'ERROR',
                 'time': '2025-11-25T10:00:00.000000000Z', 'session': 'cart-0'}, f0)
    f40 = rows[40].get('fields', {}) if len(rows) > 40 else {}
    check('severityText as it is; the resource\'s session when the record has none',
          f40 == {'app': 'pay', 'host': 'pb-host', 'severity': 'notice', 'session': 'res-sess'}, f40)
    f41 = rows[41].get('fields', {}) if len(rows) > 41 else {}
    check('JSON fields', f41 == {'app': 'jsvc', 'severity': 'DEBUG',
                                 'time': '2025-11-25T10:00:00.000000000Z'}, f41)


def run_limits(base):
    big = b'x' * (MAX_BODY + 1)
    st, _, b = post(base + '/pipelines/lines/lines', big, {'Content-Type': 'text/plain'})
    check('a body over --ingest-max-body: 413', st == 413 and b'--ingest-max-body' in b, (st, b))
    bomb = gzip.compress(b'a' * (MAX_BODY * 5))
    st, _, b = post(base + '/pipelines/lines/lines', bomb,
                    {'Content-Type': 'text/plain', 'Content-Encoding': 'gzip'})
    check('gzip that inflates past the limit: 413', st == 413, (st, b, len(bomb)))
    st, _, _ = post(base + '/pipelines/lines/lines', b'x\n', {'Content-Encoding': 'br'})
    check('another Content-Encoding: 415', st == 415, st)
    st, _, _ = post(base + '/pipelines/closed/lines', b'x\n')
    check('a pipeline without ingest = true: 404', st == 404, st)
    st, _, b = post(base + '/pipelines/fifo/lines', b'x\n', {'Authorization': 'Bearer x'})
    check('a token file that is a FIFO: 401 at once', st == 401 and b'cannot be read' in b, (st, b))
    st, _, _ = post(base + '/pipelines/nosuch/lines', b'x\n')
    check('no such pipeline: 404', st == 404, st)
    chunk = b'held up line of some length\n' * 22  # 616 bytes
    answers = [post(base + '/pipelines/slow/lines', chunk)]
    # the first is taken (and held 5 s in identity): the queue is empty
    wait_for(lambda: 'txld_ingest_queued_bytes{pipeline="slow"} 0\n' in get(base + '/metrics'), 10)
    answers += [post(base + '/pipelines/slow/lines', chunk) for _ in range(2)]
    st3, h3, _ = answers[2]
    check('behind (queue over ingest-max-queue): 429 with Retry-After',
          [a[0] for a in answers[:2]] == [200, 200] and st3 == 429 and h3.get('Retry-After') == '1',
          [(a[0], a[1].get('Retry-After')) for a in answers])
    wait_for(lambda: json.loads(get(base + '/pipelines/down'))['state'] == 'backoff', 30)
    st, h, _ = post(base + '/pipelines/down/lines', b'x\n')
    check('a pipeline backing off: 503 with Retry-After', st == 503 and
          int(h.get('Retry-After', '0')) >= 30, (st, h.get('Retry-After')))


def run(tmp, base, out_lines, out_otlp):
    wait_for(lambda: json.loads(get(base + '/pipelines/lines'))['state'] == 'running', 30)
    st = post(base + '/pipelines/json/lines', b''.join(b'txljson line %d\n' % i for i in range(7)))[0]
    run_lines(base, out_lines)
    run_otlp(base, out_otlp)
    run_limits(base)
    m = get(base + '/metrics')

    def latency_count(p):
        key = 'txld_pipeline_line_latency_seconds_count{pipeline="%s"} ' % p
        return [float(l.split()[-1]) for l in m.splitlines() if l.startswith(key)]

    def latency_sum(p):
        key = 'txld_pipeline_line_latency_seconds_sum{pipeline="%s"} ' % p
        return [float(l.split()[-1]) for l in m.splitlines() if l.startswith(key)]
    # plausible, not fast: a sanitised build on a loaded machine takes
    # seconds a line, a clock mix-up would give decades (no timed checks)
    check('latency histogram: every ingested line (HTTP and OTLP), each under 10 minutes',
          latency_count('lines') == [250] and latency_count('otlp') == [52] and
          0 < latency_sum('lines')[0] < 250 * 600,
          (latency_count('lines'), latency_count('otlp'), latency_sum('lines')))
    check('a pipeline ending in txljson: its lines counted and timed (its line-scored signal)',
          st == 200 and 'txld_pipeline_lines_total{pipeline="json"} 7\n' in m and latency_count('json') == [7],
          (st, [l for l in m.splitlines() if 'pipeline="json"' in l and 'lines_total' in l]))
    check('/metrics: ingest answers and lines counted',
          'txld_ingest_requests_total{pipeline="otlp",code="401"} 2' in m and
          'txld_ingest_requests_total{pipeline="slow",code="429"} 1' in m and
          'txld_ingest_lines_total{pipeline="lines"} 250' in m,
          [l for l in m.splitlines() if l.startswith('txld_ingest')])


def run_encodings(base, out, pid):
    lines, otlp = base + '/pipelines/enc/lines', base + '/pipelines/enc/v1/logs'
    nd = {'Content-Type': 'application/x-ndjson'}

    def batch(tag, n):
        return ''.join(json.dumps({'message': '%s line %d sent' % (tag, i)}) + '\n' for i in range(n)).encode()
    raw_deflate = zlib.compressobj(wbits=-15)
    sent = [
        post(lines, zstd_compress(batch('zstd', 20)), dict(nd, **{'Content-Encoding': 'zstd'})),
        post(lines, zlib.compress(batch('zlib', 10)), dict(nd, **{'Content-Encoding': 'deflate'})),
        post(lines, raw_deflate.compress(batch('raw', 5)) + raw_deflate.flush(),
             dict(nd, **{'Content-Encoding': 'Deflate'})),
        post(otlp, zstd_compress(pb_request({'service.name': 'z'}, [
            {'body': 'otlp zstd record %d' % i} for i in range(8)])),
            {'Content-Type': 'application/x-protobuf', 'Content-Encoding': 'zstd'}),
        post(otlp, zlib.compress(json.dumps({'resourceLogs': [{'scopeLogs': [{'logRecords': [
            {'body': {'stringValue': 'otlp deflate record %d' % i}} for i in range(4)]}]}]}).encode()),
            {'Content-Type': 'application/json', 'Content-Encoding': 'deflate'}),
    ]
    check('zstd and deflate (zlib and bare) NDJSON and OTLP bodies: 200',
          [a[0] for a in sent] == [200] * 5 and json.loads(sent[0][2])['lines'] == 20,
          [(a[0], a[2][:100]) for a in sent])
    want = (['zstd line %d sent' % i for i in range(20)] + ['zlib line %d sent' % i for i in range(10)] +
            ['raw line %d sent' % i for i in range(5)] + ['otlp zstd record %d' % i for i in range(8)] +
            ['otlp deflate record %d' % i for i in range(4)])
    rows = wait_for(lambda: len(scored(out)) >= len(want) and scored(out), 60) or []
    check('every decompressed line scored once, in order', [r['text'] for r in rows] == want,
          [r['text'] for r in rows][:5])
    before = peak_rss(pid)
    bomb = zstd_compress(bytes(128 << 20), 3)
    st, _, b = post(lines, bomb, {'Content-Encoding': 'zstd'})
    grew = peak_rss(pid) - before
    check('a zstd bomb (%d bytes to 128 MiB): 413, txld\'s peak memory grew < 24 MiB' % len(bomb),
          st == 413 and b'--ingest-max-body' in b and grew < 24 << 20, (st, b, grew))
    st, _, b = post(lines, zlib.compress(bytes(64 << 20), 9), {'Content-Encoding': 'deflate'})
    check('a deflate bomb: 413', st == 413, (st, b))
    # a frame that ends just as the decoder's 64 KiB step is full
    exact = b''.join(b'%063d\n' % i for i in range(2048))
    st, _, b = post(base + '/pipelines/sink/lines', zstd_compress(exact), {'Content-Encoding': 'zstd'})
    check('zstd decoding to exactly 128 KiB: 200, every line', st == 200 and json.loads(b)['lines'] == 2048,
          (st, b))
    good = zstd_compress(batch('cut', 50))
    answers = [post(lines, good[:-4], {'Content-Encoding': 'zstd'})[0],
               post(lines, b'\x28\xb5\x2f\xfd' + b'\xff' * 40, {'Content-Encoding': 'zstd'})[0],
               post(lines, zlib.compress(batch('cut', 50))[:-6], {'Content-Encoding': 'deflate'})[0],
               post(lines, b'x\n', {'Content-Encoding': 'compress'})[0]]
    check('zstd cut short, corrupt zstd, deflate cut short: 400; compress: 415',
          answers == [400, 400, 400, 415], answers)
    # an empty body under each encoding (found by fuzz_decompress: no data
    # pointer to offset) is cut short
    empty = [post(lines, b'', {'Content-Encoding': e})[0] for e in ('gzip', 'deflate', 'zstd')]
    check('an empty gzip, deflate or zstd body: 400', empty == [400, 400, 400], empty)
    m = get(base + '/metrics')
    check('/metrics: the 413s and 400s of decoding counted',
          'txld_ingest_requests_total{pipeline="enc",code="413"} 2' in m and
          'txld_ingest_requests_total{pipeline="enc",code="400"} 6' in m,
          [l for l in m.splitlines() if 'pipeline="enc"' in l and l.startswith('txld_ingest')])


def pb_fields(data):
    """The fields of a protobuf message: [(number, int or bytes)]."""
    out, i = [], 0

    def varint():
        nonlocal i
        v = shift = 0
        while True:
            b = data[i]
            i += 1
            v |= (b & 0x7f) << shift
            shift += 7
            if not b & 0x80:
                return v
    while i < len(data):
        tag = varint()
        if tag & 7 == 0:
            out.append((tag >> 3, varint()))
        elif tag & 7 == 2:
            n = varint()
            out.append((tag >> 3, data[i:i + n]))
            i += n
        else:
            raise ValueError('wire type %d' % (tag & 7))
    return out


def run_partial(base, out):
    url = base + '/pipelines/enc/v1/logs'
    before = len(scored(out))

    def good(i):
        return pb_len(2, pb_len(5, pb_str_any('partial pb record %d' % i)))
    nobody = pb_len(2, _varint(2 << 3) + _varint(9))  # a severity, no body
    # a body, then a severity number with the wire type of a fixed64
    bad = pb_len(2, pb_len(5, pb_str_any('never seen')) + _varint(2 << 3 | 1) + bytes(8))
    req = pb_len(1, pb_len(2, good(0) + nobody + good(1) + bad + good(2)))
    st, h, b = post(url, req, {'Content-Type': 'application/x-protobuf'})
    try:
        ps = dict(pb_fields(dict(pb_fields(b))[1]))
    except (KeyError, IndexError, ValueError):
        ps = {}
    check('OTLP protobuf, 2 of 5 records refused: 200, partial_success {rejected_log_records: 2, '
          'error_message}', st == 200 and h.get('Content-Type') == 'application/x-protobuf' and
          ps.get(1) == 2 and b'without a body' in ps.get(2, b''), (st, b))
    js = {'resourceLogs': [{'scopeLogs': [{'logRecords': [
        {'body': {'stringValue': 'partial json record 0'}}, {'severityText': 'INFO'}, 'junk',
        {'body': {'stringValue': ''}}, {'body': {'stringValue': 'partial json record 1'}}]}]}]}
    st, _, b = post(url, json.dumps(js).encode(), {'Content-Type': 'application/json'})
    got = json.loads(b) if st == 200 else {}
    check('OTLP/JSON, 3 of 5 refused: 200, partialSuccess {rejectedLogRecords: "3", errorMessage}',
          st == 200 and got.get('partialSuccess', {}).get('rejectedLogRecords') == '3' and
          'without a body' in got['partialSuccess'].get('errorMessage', ''), (st, b))
    st, _, b = post(url, pb_request({}, [{'body': 'partial none refused'}]),
                    {'Content-Type': 'application/x-protobuf'})
    check('nothing refused: the empty answer as before', st == 200 and b == b'', (st, b))
    want = ['partial pb record %d' % i for i in range(3)] + ['partial json record %d' % i for i in range(2)]
    want.append('partial none refused')
    rows = wait_for(lambda: len(scored(out)) >= before + len(want) and scored(out), 60) or []
    check('the records taken are scored, those refused are not',
          [r['text'] for r in rows[before:]] == want, [r['text'] for r in rows[before:]])
    m = get(base + '/metrics')
    check('/metrics: txld_ingest_rejected_records_total',
          'txld_ingest_rejected_records_total{pipeline="enc"} 5' in m,
          [l for l in m.splitlines() if l.startswith('txld_ingest_rejected')])


if __name__ == '__main__':
    if not os.path.exists(MODEL):
        print('SKIP: no bundled model')
        sys.exit(77)
    main()
