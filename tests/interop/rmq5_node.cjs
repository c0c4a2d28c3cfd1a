// The official RocketMQ 5 Node.js SDK (npm rocketmq-client-nodejs, over @grpc/grpc-js)
// against mq's gRPC access point: the producer examples of apache/rocketmq-clients'
// nodejs/examples (Producer.cjs, ProducerFifoMessageExample.ts) and its consumer examples
// (SimpleConsumer.cjs, PushConsumerQuickStart.ts) with their logic kept and only the
// endpoint changed (and the push consumer ending when stdin closes: the example runs
// forever). One JSON object per stdout line for each send receipt, each message acked
// or consumed; any failure exits non-zero.
//
//   node rmq5_node.cjs normal ENDPOINT TOPIC
//   node rmq5_node.cjs fifo ENDPOINT TOPIC
//   node rmq5_node.cjs recall ENDPOINT TOPIC   (a message due in 2 s, then recalled)
//   node rmq5_node.cjs simple ENDPOINT TOPIC GROUP
//   node rmq5_node.cjs push ENDPOINT TOPIC GROUP
//
// RMQ5_NODE_DIR names the folder whose node_modules hold the SDK (the test installs it).
'use strict';

const path = require('path');
const { Producer, SimpleConsumer, PushConsumer, ConsumeResult } = require(
  path.join(process.env.RMQ5_NODE_DIR, 'node_modules', 'rocketmq-client-nodejs'));

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

// A delay message (deliveryTimestamp), then Producer.recallMessage with its receipt's
// recall handle.
async function recall(producer, topic) {
  const due = new Date(Date.now() + 2000);
  const res = await producer.send({
    topic, tag: 'nodejs-delay', body: Buffer.from('recalled'), deliveryTimestamp: due,
  });
  receipt(res, { due: due.getTime() });
  const recalled = await producer.recallMessage(topic, res.recallHandle);
  emit({ recalled: recalled.messageId });
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

function described(message) {
  return {
    topic: message.topic,
    tag: message.tag,
    body: message.body.toString(),
    messageGroup: message.messageGroup,
    deliveryAttempt: message.deliveryAttempt,
  };
}

// SimpleConsumer.cjs: one receive of up to 20 messages with tag nodejs-demo, each acked.
async function simple(endpoints, topic, consumerGroup) {
  const simpleConsumer = new SimpleConsumer({
    consumerGroup,
    endpoints,
    subscriptions: new Map().set(topic, 'nodejs-demo'),
  });
  await simpleConsumer.startup();
  try {
    const messages = await simpleConsumer.receive(20);
    for (const message of messages) {
      await simpleConsumer.ack(message);
      emit({ acked: message.messageId, ...described(message) });
    }
  } finally {
    await simpleConsumer.shutdown();
  }
}

// PushConsumerQuickStart.ts: every message of the topic to a listener answering SUCCESS.
async function push(endpoints, topic, consumerGroup) {
  const pushConsumer = new PushConsumer({
    namespace: '',
    endpoints,
    consumerGroup,
    subscriptions: new Map([[ topic, '*' ]]),
    messageListener: {
      async consume(messageView) {
        emit({ consumed: messageView.messageId, ...described(messageView) });
        return ConsumeResult.SUCCESS;
      },
    },
  });
  await pushConsumer.startup();
  try {
    emit({ started: consumerGroup });
    process.stdin.resume();
    await new Promise((resolve) => process.stdin.on('end', resolve));
  } finally {
    await pushConsumer.shutdown();
  }
}

async function main() {
  const [command, endpoints, topic, group] = process.argv.slice(2);
  if (command === 'simple') {
    return simple(endpoints, topic, group);
  }
  if (command === 'push') {
    return push(endpoints, topic, group);
  }
  const producer = new Producer({ endpoints, maxAttempts: 3 });
  await producer.startup();
  try {
    if (command === 'normal') {
      await normal(producer, topic);
    } else if (command === 'fifo') {
      await fifo(producer, topic);
    } else if (command === 'recall') {
      await recall(producer, topic);
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
