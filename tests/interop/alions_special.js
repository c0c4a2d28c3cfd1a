// ali-ons (the pure-JS RocketMQ 4.x client) exercising mq's special message paths.
//   node alions_special.js delay NAMESRV TOPIC LEVEL
//       one message with delayTimeLevel=LEVEL, keys, tags and a user property -> one JSON line
//   node alions_special.js retry NAMESRV TOPIC GROUP MAX_RECONSUME
//       push consumer that fails every delivery (ACTION_RETRY, then throwing) -> one JSON line
//       per delivery
//   node alions_special.js sql NAMESRV TOPIC GROUP EXPRESSION
//       push consumer with a SQL92 subscription -> one JSON line per message or error
// The consumers run until stdin closes (the test decides when it has seen enough), then
// close cleanly (offsets persisted, unregistered) and exit 0.
'use strict';

const path = require('path');

const nodeDir = process.env.ALIONS_NODE_DIR;
const ons = require(path.join(nodeDir, 'node_modules', 'ali-ons'));
const httpclient = {}; // only used for Aliyun's address server, which nameSrv bypasses
const silent = { info() {}, warn() {}, debug() {}, error() {} };
const util = require('util');
// A consumer's own warnings and errors as JSON lines ({log, text}): ali-ons handles most
// failures itself (a request that times out closes its connection, a failed pull is
// retried) and reports only some through 'error'; these lines say what came before one.
const noted = {
  info() {}, debug() {},
  warn(...args) { out({ log: 'warn', at: Date.now(), text: util.format(...args) }); },
  error(...args) { out({ log: 'error', at: Date.now(), text: util.format(...args) }); },
};

function out(obj) { process.stdout.write(JSON.stringify(obj) + '\n'); }

function describe(msg) {
  return {
    body: msg.body.toString(), topic: msg.topic, tags: msg.tags, keys: msg.keys,
    reconsumeTimes: msg.reconsumeTimes, msgId: msg.msgId, queueId: msg.queueId,
    retryTopic: msg.retryTopic || null, originMsgId: msg.originMessageId || null,
    props: msg.properties, at: Date.now(),
  };
}

function stdinClosed() {
  return new Promise(resolve => {
    process.stdin.on('end', resolve);
    process.stdin.on('close', resolve);
    process.stdin.resume();
  });
}

async function delay(nameSrv, topic, level) {
  const producer = new ons.Producer({ nameSrv, httpclient, logger: silent, producerGroup: 'alions-delay-pg' });
  await producer.ready();
  const msg = new ons.Message(topic, 'TagD', 'ons-delayed');
  msg.keys = [ 'ons-dk1', 'ons-dk2' ];
  msg.properties.color = 'blue';
  msg.delayTimeLevel = level; // sets the DELAY property
  const sentAt = Date.now();
  const r = await producer.send(msg);
  out({ status: r.sendStatus, msgId: r.msgId, queueId: r.messageQueue.queueId, sentAt });
  await producer.close();
}

async function runConsumer(options, topic, expression, handler) {
  const consumer = new ons.Consumer(Object.assign({
    nameSrv: options.nameSrv, httpclient, logger: noted,
    consumeFromWhere: 'CONSUME_FROM_FIRST_OFFSET', rebalanceInterval: 1000,
    // the default (3 s) would dominate each retry round trip; errors are reported anyway
    pullTimeDelayMillsWhenException: 200,
  }, options));
  consumer.on('error', err => out({ error: String(err && err.message || err), name: err && err.name }));
  consumer.subscribe(topic, expression, handler);
  const closed = stdinClosed();
  await consumer.ready();
  out({ ready: true });
  await closed;
  // ali-ons' close() does not wait for a rebalance in flight (every second here): that
  // round's offset reads then fail on the closed connection. Mark where closing starts so
  // the test can tell those from errors while it ran.
  out({ closing: true });
  await consumer.close();
}

async function retry(nameSrv, topic, group, maxReconsumeTimes) {
  // ali-ons wraps the handler of %RETRY% messages as `await handler(msg)` and drops its
  // return value, so ACTION_RETRY only fails a first delivery; a retried one must throw.
  await runConsumer({ nameSrv, consumerGroup: group, maxReconsumeTimes }, topic, '*', async msg => {
    out(describe(msg));
    if (msg.reconsumeTimes === 0) return ons.Consumer.ACTION_RETRY;
    throw new Error(`fail again ${msg.reconsumeTimes}`);
  });
}

async function sql(nameSrv, topic, group, expression) {
  await runConsumer({ nameSrv, consumerGroup: group },
    topic, { expressionType: 'SQL92', subString: expression }, async msg => { out(describe(msg)); });
}

async function main() {
  const [ mode, nameSrv, topic, a, b ] = process.argv.slice(2);
  if (mode === 'delay') await delay(nameSrv, topic, Number(a));
  else if (mode === 'retry') await retry(nameSrv, topic, a, Number(b));
  else if (mode === 'sql') await sql(nameSrv, topic, a, b);
  else throw new Error(`unknown mode ${mode}`);
}

main().then(() => process.exit(0), err => {
  process.stderr.write(`ali-ons failed: ${err.stack || err}\n`);
  process.exit(1);
});
