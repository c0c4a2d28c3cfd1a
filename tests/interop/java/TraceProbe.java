import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyContext;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * The RocketMQ 4.9.8 Java client with message trace on (enableMsgTrace): sends one
 * message to TOPIC (tag TagJ, key jkey-1) as group java-trace-pg, consumes it as push
 * group java-trace-cg, and prints "MSGID <msgId> <offsetMsgId> <status>" and
 * "CONSUMED <true|false>". Shutting down flushes both clients' trace records.
 * Usage: TraceProbe NAMESRV TOPIC
 */
public class TraceProbe {
    public static void main(String[] args) throws Exception {
        String ns = args[0], topic = args[1];
        DefaultMQProducer producer = new DefaultMQProducer("java-trace-pg", true);
        producer.setNamesrvAddr(ns);
        producer.start();
        Message msg = new Message(topic, "TagJ", "jkey-1", "from java".getBytes("UTF-8"));
        SendResult r = producer.send(msg);
        System.out.println("MSGID " + r.getMsgId() + " " + r.getOffsetMsgId() + " " + r.getSendStatus());
        final CountDownLatch got = new CountDownLatch(1);
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer("java-trace-cg", true);
        consumer.setNamesrvAddr(ns);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener(new MessageListenerConcurrently() {
            public ConsumeConcurrentlyStatus consumeMessage(List<MessageExt> msgs, ConsumeConcurrentlyContext c) {
                got.countDown();
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            }
        });
        consumer.start();
        boolean ok = got.await(30, TimeUnit.SECONDS);
        Thread.sleep(1500);
        System.out.println("CONSUMED " + ok);
        consumer.shutdown();
        producer.shutdown();
    }
}
