// ali-ons (the pure-JS RocketMQ client) as a producer or a push consumer against mq.
//   node alions_clients.js produce NAMESRV TOPIC COUNT   -> one JSON line per send result
//   node alions_clients.js consume NAMESRV TOPIC GROUP COUNT -> one JSON line per message
//   node alions_clients.js produce-try NAMESRV TOPIC COUNT -> a send error is a JSON line too
// ALIONS_ACCESS_KEY / ALIONS_SECRET_KEY: sign requests (plain ACL) with these keys.
'use strict';

const path = require('path');

const nodeDir = process.env.ALIONS_NODE_DIR;
const ons = require(path.join(nodeDir, 'node_modules', 'ali-ons'));
const httpclient = {}; // only used for Aliyun's address server, which nameSrv bypasses
const silent = { info() {}, warn() {}, debug() {}, error(e) { process.stderr.write(`${e}\n`); } };

function out(obj) { process.stdout.write(JSON.stringify(obj) + '\n'); }

const credentials = process.env.ALIONS_ACCESS_KEY
  ? { accessKeyId: process.env.ALIONS_ACCESS_KEY, accessKeySecret: process.env.ALIONS_SECRET_KEY }
  : {};

async function produce(nameSrv, topic, count) {
  const producer = new ons.Producer({
    nameSrv, httpclient, logger: silent, producerGroup: 'alions-pg', ...credentials });
  await producer.ready();
  for (let i = 0; i < count; i++) {
    const msg = new ons.Message(topic, i % 2 ? 'TagB' : 'TagA', `ons-body-${i}`);
    msg.keys = [ `ons-k${i}` ];
    const r = await producer.send(msg);
    out({ status: r.sendStatus, msgId: r.msgId, queueId: r.messageQueue.queueId, queueOffset: r.queueOffset });
  }
  await producer.close();
}

async function consume(nameSrv, topic, group, count) {
  const consumer = new ons.Consumer({
    nameSrv, httpclient, logger: silent, consumerGroup: group,
    consumeFromWhere: 'CONSUME_FROM_FIRST_OFFSET', rebalanceInterval: 1000, ...credentials,
  });
  let seen = 0;
  const done = new Promise(resolve => {
    consumer.subscribe(topic, '*', async msg => {
      out({ body: msg.body.toString(), tags: msg.tags, keys: msg.keys, queueId: msg.queueId,
        queueOffset: msg.queueOffset, msgId: msg.msgId, props: msg.properties });
      seen += 1;
      if (seen >= count) resolve();
    });
  });
  consumer.on('error', err => process.stderr.write(`consumer error: ${err}\n`));
  await consumer.ready();
  await done;
  await consumer.close();
}

async function produceTry(nameSrv, topic, count) {
  const producer = new ons.Producer({
    nameSrv, httpclient, logger: silent, producerGroup: 'alions-pg', ...credentials });
  producer.on('error', () => {});
  await producer.ready();
  for (let i = 0; i < count; i++) {
    try {
      const r = await producer.send(new ons.Message(topic, 'TagA', `ons-body-${i}`));
      out({ status: r.sendStatus, queueOffset: r.queueOffset });
    } catch (err) {
      out({ error: String(err.message || err), code: err.code === undefined ? null : err.code });
    }
  }
  await producer.close().catch(() => {}); // unregistering is refused too with a wrong key
}

async function main() {
  const [ mode, nameSrv, topic, a, b ] = process.argv.slice(2);
  if (mode === 'produce') await produce(nameSrv, topic, Number(a));
  else if (mode === 'produce-try') await produceTry(nameSrv, topic, Number(a));
  else await consume(nameSrv, topic, a, Number(b));
}

main().then(() => process.exit(0), err => {
  process.stderr.write(`ali-ons failed: ${err.stack || err}\n`);
  process.exit(1);
});
