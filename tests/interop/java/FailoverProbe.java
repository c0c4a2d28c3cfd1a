import java.io.File;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
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
 * The RocketMQ 4.9.8 Java client across a controller-mode failover, as an application
 * would run it: nothing configured for the failover.
 *
 * FailoverProbe produce NAMESRV TOPIC STOPFILE
 *   sends "java-<i>" one after another (sync, group java-failover-pg) until STOPFILE
 *   exists; one line per send: "SENT <i> <status> <brokerName> <offsetMsgId>" or
 *   "FAILED <i> <exception class> <first line of its message>".
 * FailoverProbe consume NAMESRV TOPIC GROUP STOPFILE
 *   a push consumer from the first offset; "GOT <body>" per message (flushed at once)
 *   until STOPFILE exists.
 */
public class FailoverProbe {
    public static void main(String[] args) throws Exception {
        String mode = args[0], ns = args[1], topic = args[2];
        if (mode.equals("produce")) {
            produce(ns, topic, new File(args[3]));
        } else {
            consume(ns, topic, args[3], new File(args[4]));
        }
    }

    static void produce(String ns, String topic, File stop) throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer("java-failover-pg");
        producer.setNamesrvAddr(ns);
        producer.setSendMsgTimeout(3000);
        producer.start();
        for (int i = 0; !stop.exists(); i++) {
            Message msg = new Message(topic, "TagJ", "jk-" + i, ("java-" + i).getBytes("UTF-8"));
            try {
                SendResult r = producer.send(msg);
                System.out.println("SENT " + i + " " + r.getSendStatus() + " "
                    + r.getMessageQueue().getBrokerName() + " " + r.getOffsetMsgId());
            } catch (Exception e) {
                String why = String.valueOf(e.getMessage()).split("\n")[0];
                System.out.println("FAILED " + i + " " + e.getClass().getSimpleName() + " " + why);
                Thread.sleep(100);
            }
            System.out.flush();
        }
        producer.shutdown();
    }

    static void consume(String ns, String topic, String group, File stop) throws Exception {
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(ns);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener(new MessageListenerConcurrently() {
            public ConsumeConcurrentlyStatus consumeMessage(List<MessageExt> msgs, ConsumeConcurrentlyContext c) {
                synchronized (System.out) {
                    for (MessageExt m : msgs) {
                        System.out.println("GOT " + new String(m.getBody()));
                    }
                    System.out.flush();
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            }
        });
        consumer.start();
        while (!stop.exists()) {
            Thread.sleep(100);
        }
        consumer.shutdown();
    }
}
