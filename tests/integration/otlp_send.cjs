// SPDX-License-Identifier: LGPL-2.1-or-later
// Sends N log records to txld with the OpenTelemetry JS SDK's OTLP/HTTP log
// exporter (test_ingest.py): node otlp_send.cjs URL json|proto N [TOKEN].
// The packages come from NODE_PATH (a cache outside the source tree).
// Prints one JSON line: the export results' codes (0: success).
'use strict';
const { logs } = require('@opentelemetry/api-logs');
const { LoggerProvider, BatchLogRecordProcessor } = require('@opentelemetry/sdk-logs');
const { resourceFromAttributes } = require('@opentelemetry/resources');

const [url, encoding, count, token] = process.argv.slice(2);
const Exporter = encoding === 'proto'
  ? require('@opentelemetry/exporter-logs-otlp-proto').OTLPLogExporter
  : require('@opentelemetry/exporter-logs-otlp-http').OTLPLogExporter;
const inner = new Exporter({ url, headers: token ? { Authorization: 'Bearer ' + token } : {} });
const codes = [];
const exporter = {  // the real exporter, with its results kept
  export(records, done) {
    inner.export(records, (r) => { codes.push(r.code); done(r); });
  },
  shutdown() { return inner.shutdown(); },
  forceFlush() { return inner.forceFlush ? inner.forceFlush() : Promise.resolve(); },
};
const provider = new LoggerProvider({
  resource: resourceFromAttributes({ 'service.name': 'shop-' + encoding, 'host.name': 'web-7' }),
  // options with the exporter in them (sdk-logs 0.200 on), or (exporter, options) before
  processors: [BatchLogRecordProcessor.length >= 2
    ? new BatchLogRecordProcessor(exporter, { maxExportBatchSize: 50, scheduledDelayMillis: 50 })
    : new BatchLogRecordProcessor({ exporter, maxExportBatchSize: 50, scheduledDelayMillis: 50 })],
});
const logger = provider.getLogger('txl-test');
const n = parseInt(count, 10);
for (let i = 0; i < n; i++) {
  logger.emit({
    body: `${encoding} record ${i} user ${i % 7} logged in from 10.0.${i % 5}.${i % 250}`,
    severityText: i % 10 === 0 ? 'WARN' : 'INFO',
    severityNumber: i % 10 === 0 ? 13 : 9,
    timestamp: new Date(Date.UTC(2026, 0, 2, 3, 4, 5) + i),
    attributes: { 'session.id': 'sess-' + (i % 3) },
  });
}
provider.forceFlush().then(() => provider.shutdown()).then(() => {
  console.log(JSON.stringify({ codes }));
}, (e) => { console.log(JSON.stringify({ codes, error: String(e), stack: e.stack })); process.exit(1); });
