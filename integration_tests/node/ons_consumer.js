'use strict';
// A clustering (or broadcasting) push consumer of ali-ons (the pinned version in package.json) for
// integration_tests/test_ali_ons.py. One JSON line on standard output per event:
//   {"event": "started", ...}      the consumer is initialised and subscribed
//   {"event": "received", "ts": ms, "msgId", "topic", "tags", "queueId", "queueOffset", "body", "reconsumeTimes"}
//   {"event": "error", "ts": ms, "message"}   an error ali-ons emitted (it goes on after most of them)
//   {"event": "closed", "ts": ms}  after SIGTERM/SIGINT or --timeout: the consumer was closed (offsets persisted)
// ali-ons's own log (every pull it sends and its result, offset updates, rebalances) goes to standard error,
// one line each, prefixed with the time in ms.
//
// node ons_consumer.js --namesrv 127.0.0.1:9876 --topic T --group G [--tag '*'] [--timeout 120]
//                      [--from first|last] [--broadcast]

const util = require('util');
const { Consumer } = require('ali-ons');

function parseArgs(argv) {
  // node's own parser (util.parseArgs): unknown options and missing values are errors
  const { values } = util.parseArgs({ args: argv, strict: true, options: {
    namesrv: { type: 'string' },
    topic: { type: 'string' },
    group: { type: 'string' },
    tag: { type: 'string', default: '*' },
    timeout: { type: 'string', default: '120' },
    from: { type: 'string', default: 'first' },
    broadcast: { type: 'boolean', default: false },
  } });
  for (const name of [ 'namesrv', 'topic', 'group' ]) {
    if (!values[name]) throw new Error(`--${name} is required`);
  }
  values.timeout = Number(values.timeout);
  return values;
}

function emit(event) {
  process.stdout.write(JSON.stringify(Object.assign({ event: event.event, ts: Date.now() }, event)) + '\n');
}

function logLine(level) {
  return (...args) => {
    const text = args.map(a => (a instanceof Error ? a.stack || String(a) : a));
    process.stderr.write(`${Date.now()} ${level} ${util.format(...text).replace(/\n/g, '\\n')}\n`);
  };
}

const logger = { debug() {}, info: logLine('INFO'), warn: logLine('WARN'), error: logLine('ERROR') };

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const consumer = new Consumer({
    // ali-ons asks for an http client to fetch name server addresses from `onsAddr`; with `nameSrv` it is unused
    httpclient: { request() { throw new Error('no http: nameSrv is given'); } },
    nameSrv: args.namesrv,
    // ali-ons signs every request with these (AccessKey/Signature/OnsChannel fields); the emulator ignores them
    accessKeyId: 'emulator-access-key',
    accessKeySecret: 'emulator-secret-key',
    consumerGroup: args.group,
    isBroadcast: args.broadcast,
    consumeFromWhere: args.from === 'last' ? 'CONSUME_FROM_LAST_OFFSET' : 'CONSUME_FROM_FIRST_OFFSET',
    logger,
  });
  consumer.on('error', err => emit({ event: 'error', message: String(err && err.message || err) }));

  let closing = null;
  const close = reason => {
    if (!closing) {
      closing = (async () => {
        try {
          await consumer.close();
        } catch (err) {
          emit({ event: 'error', message: `close: ${err && err.message || err}` });
        }
        emit({ event: 'closed', reason });
        process.exit(0);
      })();
    }
    return closing;
  };
  process.on('SIGTERM', () => close('SIGTERM'));
  process.on('SIGINT', () => close('SIGINT'));
  setTimeout(() => close('timeout'), args.timeout * 1000).unref();

  consumer.subscribe(args.topic, args.tag, async msg => {
    emit({
      event: 'received',
      msgId: msg.msgId,
      topic: msg.topic,
      tags: msg.tags,
      queueId: msg.queueId,
      queueOffset: Number(msg.queueOffset),
      body: msg.body.toString(),
      reconsumeTimes: msg.reconsumeTimes,
    });
  });
  await consumer.ready();
  emit({ event: 'started', clientId: consumer.clientId, group: args.group, topic: args.topic, tag: args.tag });
}

main().catch(err => {
  emit({ event: 'error', message: `fatal: ${err && err.stack || err}` });
  process.exit(2);
});
