import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;

/**
 * A RocketMQ 4.9.8 push consumer that stays up: group G on TOPIC from the first offset,
 * printing "STARTED <clientId>" once running and "CONSUMED <n>" after each message, until
 * stdin closes (or SECONDS pass). Tools ask it for its running info and hand it messages.
 * Usage: StayingConsumer NAMESRV TOPIC G SECONDS
 */
public class StayingConsumer {
    public static void main(String[] args) throws Exception {
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(args[2]);
        consumer.setNamesrvAddr(args[0]);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(args[1], "*");
        final AtomicInteger seen = new AtomicInteger();
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            System.out.println("CONSUMED " + seen.addAndGet(msgs.size()));
            System.out.flush();
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        System.out.println("STARTED " + consumer.getDefaultMQPushConsumerImpl().getmQClientFactory().getClientId());
        System.out.flush();
        long end = System.currentTimeMillis() + Long.parseLong(args[3]) * 1000;
        while (System.currentTimeMillis() < end && System.in.read() != -1) {
            Thread.sleep(100);
        }
        consumer.shutdown();
    }
}
