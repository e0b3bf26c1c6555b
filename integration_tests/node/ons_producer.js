'use strict';
// Sends --count messages with ali-ons's producer (the pinned version in package.json) for
// integration_tests/test_ali_ons.py, one at a time, bodies `<prefix><i>`. One JSON line on standard output per
// message sent: {"event": "sent", "ts": ms, "msgId", "queueId", "queueOffset", "body", "sendStatus"}, then
// {"event": "done"}; any failure exits with status 2 after {"event": "error", "message"}.
//
// node ons_producer.js --namesrv 127.0.0.1:9876 --topic T --count 10 [--tag TagA] [--prefix m-] [--group G]

const util = require('util');
const { Producer, Message } = require('ali-ons');

function parseArgs(argv) {
  // node's own parser (util.parseArgs): unknown options and missing values are errors
  const { values } = util.parseArgs({ args: argv, strict: true, options: {
    namesrv: { type: 'string' },
    topic: { type: 'string' },
    tag: { type: 'string', default: 'TagA' },
    prefix: { type: 'string', default: 'm-' },
    count: { type: 'string', default: '10' },
    group: { type: 'string', default: 'ons-emulator-producer' },
  } });
  for (const name of [ 'namesrv', 'topic' ]) {
    if (!values[name]) throw new Error(`--${name} is required`);
  }
  values.count = Number(values.count);
  return values;
}

function emit(event) {
  process.stdout.write(JSON.stringify(Object.assign({ event: event.event, ts: Date.now() }, event)) + '\n');
}

function logLine(level) {
  return (...args) => process.stderr.write(`${Date.now()} ${level} ${util.format(...args).replace(/\n/g, '\\n')}\n`);
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const producer = new Producer({
    httpclient: { request() { throw new Error('no http: nameSrv is given'); } },
    nameSrv: args.namesrv,
    accessKeyId: 'emulator-access-key',
    accessKeySecret: 'emulator-secret-key',
    producerGroup: args.group,
    logger: { debug() {}, info: logLine('INFO'), warn: logLine('WARN'), error: logLine('ERROR') },
  });
  producer.on('error', err => emit({ event: 'error', message: String(err && err.message || err) }));
  await producer.ready();
  for (let i = 0; i < args.count; i++) {
    const body = `${args.prefix}${i}`;
    const msg = new Message(args.topic, args.tag, body);
    msg.keys = [ body ];
    const result = await producer.send(msg);
    emit({
      event: 'sent',
      msgId: result.msgId,
      queueId: Number(result.messageQueue.queueId),
      queueOffset: result.queueOffset,
      body,
      sendStatus: result.sendStatus,
    });
  }
  emit({ event: 'done' });
  await producer.close();
  process.exit(0);
}

main().catch(err => {
  emit({ event: 'error', message: `fatal: ${err && err.stack || err}` });
  process.exit(2);
});
