// The official RocketMQ 5 Node.js SDK (npm rocketmq-client-nodejs, over @grpc/grpc-js)
// against mq's gRPC access point: the producer examples of apache/rocketmq-clients'
// nodejs/examples (Producer.cjs, ProducerFifoMessageExample.ts) with their logic kept and
// only the endpoint changed. One JSON object per stdout line for each send receipt; any
// failure exits non-zero.
//
//   node rmq5_node.cjs normal ENDPOINT TOPIC
//   node rmq5_node.cjs fifo ENDPOINT TOPIC
//
// RMQ5_NODE_DIR names the folder whose node_modules hold the SDK (the test installs it).
'use strict';

const path = require('path');
const { Producer } = require(path.join(process.env.RMQ5_NODE_DIR, 'node_modules', 'rocketmq-client-nodejs'));

function emit(fields) {
  process.stdout.write(JSON.stringify(fields) + '\n');
}

function receipt(res, extra) {
  emit({ messageId: res.messageId, offset: String(res.offset), ...extra });
}

// Producer.cjs: one message with a tag and a JSON body.
async function normal(producer, topic) {
  const res = await producer.send({
    topic,
    tag: 'nodejs-demo',
    body: Buffer.from(JSON.stringify({
      hello: 'rocketmq-client-nodejs world 😄',
      now: Date(),
    })),
  });
  receipt(res, {});
}

// ProducerFifoMessageExample.ts: three message groups, each a sequence of steps.
async function fifo(producer, topic) {
  const groups = [
    ['Order-001', [{ action: 'CREATE' }, { action: 'PAY' }, { action: 'SHIP' }, { action: 'COMPLETE' }]],
    ['Order-002', [{ action: 'CREATE' }, { action: 'PAY' }, { action: 'CANCEL' }]],
    ['Account-Alice', [{ type: 'DEPOSIT' }, { type: 'WITHDRAW' }, { type: 'TRANSFER' }]],
  ];
  for (const [messageGroup, messages] of groups) {
    for (let i = 0; i < messages.length; i++) {
      const res = await producer.send({
        topic,
        tag: 'fifo-message',
        body: Buffer.from(JSON.stringify({ sequence: i + 1, messageGroup, ...messages[i] })),
        messageGroup,
      });
      receipt(res, { messageGroup, sequence: i + 1 });
    }
  }
}

async function main() {
  const [command, endpoints, topic] = process.argv.slice(2);
  const producer = new Producer({ endpoints, maxAttempts: 3 });
  await producer.startup();
  try {
    if (command === 'normal') {
      await normal(producer, topic);
    } else if (command === 'fifo') {
      await fifo(producer, topic);
    } else {
      throw new Error(`unknown command ${command}`);
    }
  } finally {
    await producer.shutdown();
  }
}

main().then(() => process.exit(0), (err) => {
  console.error(err);
  process.exit(1);
});
