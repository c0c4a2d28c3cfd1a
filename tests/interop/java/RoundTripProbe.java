import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyContext;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyContext;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * The RocketMQ 4.9.8 Java client's everyday paths against one broker: N sync sends
 * (keys rk-i, tags TagA/TagB), N/10 batches of 10 (keys bk-i), N sends to queue 0 in
 * order (keys ok-i, through a queue selector), then a concurrent push consumer
 * (group G, "TagA || TagB") and an orderly one (group G-order) from the first offset.
 * Prints "SENT <ok> <fail>", "CONSUMED <distinct keys> of <expected>", "ORDERED <true|false>
 * <count>" and the msg id of send 0 as "FIRST <msgId> <offsetMsgId>".
 * Usage: RoundTripProbe NAMESRV TOPIC N G
 */
public class RoundTripProbe {
    public static void main(String[] args) throws Exception {
        String ns = args[0], topic = args[1], group = args[3];
        int n = Integer.parseInt(args[2]);
        DefaultMQProducer producer = new DefaultMQProducer("java-rt-pg");
        producer.setNamesrvAddr(ns);
        producer.start();
        int ok = 0, fail = 0;
        for (int i = 0; i < n; i++) {
            Message m = new Message(topic, i % 2 == 0 ? "TagA" : "TagB", "rk-" + i, ("r" + i).getBytes("UTF-8"));
            SendResult r = producer.send(m);
            if (r.getSendStatus() == SendStatus.SEND_OK) ok++; else fail++;
            if (i == 0) System.out.println("FIRST " + r.getMsgId() + " " + r.getOffsetMsgId());
        }
        for (int b = 0; b < n / 10; b++) {
            List<Message> batch = new ArrayList<Message>();
            for (int j = 0; j < 10; j++) {
                int i = b * 10 + j;
                batch.add(new Message(topic, "TagA", "bk-" + i, ("b" + i).getBytes("UTF-8")));
            }
            SendResult r = producer.send(batch);
            if (r.getSendStatus() == SendStatus.SEND_OK) ok += 10; else fail += 10;
        }
        String orderTopic = topic + "-order";
        for (int i = 0; i < n; i++) {
            Message m = new Message(orderTopic, "TagO", "ok-" + i, Integer.toString(i).getBytes("UTF-8"));
            SendResult r = producer.send(m, (mqs, msg, arg) -> mqs.get(0), null);
            if (r.getSendStatus() == SendStatus.SEND_OK) ok++; else fail++;
        }
        System.out.println("SENT " + ok + " " + fail);

        final Set<String> keys = ConcurrentHashMap.newKeySet();
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(ns);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "TagA || TagB");
        consumer.registerMessageListener(new MessageListenerConcurrently() {
            public ConsumeConcurrentlyStatus consumeMessage(List<MessageExt> msgs, ConsumeConcurrentlyContext c) {
                for (MessageExt m : msgs) keys.add(m.getKeys());
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            }
        });
        final List<Integer> seen = new ArrayList<Integer>();
        DefaultMQPushConsumer orderly = new DefaultMQPushConsumer(group + "-order");
        orderly.setNamesrvAddr(ns);
        orderly.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        orderly.subscribe(orderTopic, "*");
        orderly.registerMessageListener(new MessageListenerOrderly() {
            public ConsumeOrderlyStatus consumeMessage(List<MessageExt> msgs, ConsumeOrderlyContext c) {
                synchronized (seen) {
                    for (MessageExt m : msgs) seen.add(Integer.parseInt(new String(m.getBody())));
                }
                return ConsumeOrderlyStatus.SUCCESS;
            }
        });
        consumer.start();
        orderly.start();
        int expected = n + (n / 10) * 10;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (System.nanoTime() < deadline) {
            int got;
            synchronized (seen) { got = seen.size(); }
            if (keys.size() >= expected && got >= n) break;
            Thread.sleep(100);
        }
        boolean inOrder = true;
        synchronized (seen) {
            for (int i = 0; i < seen.size(); i++) if (seen.get(i) != i) { inOrder = false; break; }
            System.out.println("ORDERED " + inOrder + " " + seen.size());
        }
        System.out.println("CONSUMED " + keys.size() + " of " + expected);
        consumer.shutdown();
        orderly.shutdown();
        producer.shutdown();
    }
}
