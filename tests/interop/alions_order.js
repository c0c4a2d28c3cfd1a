// ali-ons (the pure-JS RocketMQ 4.x client): ordered production and the two message models.
//   node alions_order.js produce-sharded NAMESRV TOPIC KEYS PER_KEY
//       KEYS is comma-separated; PER_KEY rounds, each sending "<key>:<seq>" for every key
//       with msg.shardingKey = key (ali-ons picks the queue by md5 of the key) -> one JSON
//       line per send result
//   node alions_order.js consume NAMESRV TOPIC GROUP clustering|broadcasting INSTANCE
//       push consumer from the first offset -> {ready}, then one JSON line per message;
//       broadcasting keeps its offsets in $HOME/.rocketmq_offsets_node (persistent: true)
// The consumer runs until stdin closes (the test decides when it has seen enough), then
// closes cleanly (offsets persisted, unregistered) and exits 0.
'use strict';

const path = require('path');

const nodeDir = process.env.ALIONS_NODE_DIR;
const ons = require(path.join(nodeDir, 'node_modules', 'ali-ons'));
const httpclient = {}; // only used for Aliyun's address server, which nameSrv bypasses
const silent = { info() {}, warn() {}, debug() {}, error() {} };

function out(obj) { process.stdout.write(JSON.stringify(obj) + '\n'); }

function stdinClosed() {
  return new Promise(resolve => {
    process.stdin.on('end', resolve);
    process.stdin.on('close', resolve);
    process.stdin.resume();
  });
}

async function produceSharded(nameSrv, topic, keys, perKey) {
  const producer = new ons.Producer({
    nameSrv, httpclient, logger: silent, producerGroup: 'alions-order-pg' });
  await producer.ready();
  for (let seq = 0; seq < perKey; seq++) {
    for (const key of keys) {
      const msg = new ons.Message(topic, 'TagO', `${key}:${seq}`);
      msg.shardingKey = key;
      const r = await producer.send(msg);
      out({ key, seq, status: r.sendStatus, queueId: r.messageQueue.queueId,
        queueOffset: r.queueOffset });
    }
  }
  await producer.close();
}

async function consume(nameSrv, topic, group, model, instanceName) {
  const consumer = new ons.Consumer({
    nameSrv, httpclient, logger: silent, consumerGroup: group, instanceName,
    isBroadcast: model === 'broadcasting', persistent: true,
    consumeFromWhere: 'CONSUME_FROM_FIRST_OFFSET', rebalanceInterval: 1000,
  });
  consumer.on('error', err => out({ error: String(err && err.message || err) }));
  consumer.subscribe(topic, '*', async msg => {
    out({ body: msg.body.toString(), shardingKey: msg.shardingKey || null,
      queueId: msg.queueId, queueOffset: msg.queueOffset, at: Date.now() });
  });
  const closed = stdinClosed();
  await consumer.ready();
  out({ ready: true, clientId: consumer._mqClient.clientId });
  await closed;
  await consumer.close();
}

async function main() {
  const [ mode, nameSrv, topic, a, b, c ] = process.argv.slice(2);
  if (mode === 'produce-sharded') await produceSharded(nameSrv, topic, a.split(','), Number(b));
  else if (mode === 'consume') await consume(nameSrv, topic, a, b, c);
  else throw new Error(`unknown mode ${mode}`);
}

main().then(() => process.exit(0), err => {
  process.stderr.write(`ali-ons failed: ${err.stack || err}\n`);
  process.exit(1);
});
