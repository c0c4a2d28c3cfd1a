import java.util.TreeMap;
import org.apache.rocketmq.common.protocol.body.Connection;
import org.apache.rocketmq.common.protocol.body.ConsumerConnection;
import org.apache.rocketmq.common.protocol.body.ConsumerRunningInfo;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * What mqadmin's consumerStatus does (a class 4.9.8 ships but does not register): for
 * each member of group G, GET_CONSUMER_RUNNING_INFO through the broker, decoded into the
 * Java ConsumerRunningInfo and printed with its formatString(), then mqadmin's analyses.
 * Prints "MEMBER <clientId>", the formatted info, "SAME_SUBSCRIPTION <true|false>" and
 * "PROCESS_QUEUE <analyzeProcessQueue's text, or OK>".
 * Usage: RunningInfoProbe NAMESRV G [jstack]
 */
public class RunningInfoProbe {
    public static void main(String[] args) throws Exception {
        DefaultMQAdminExt admin = new DefaultMQAdminExt();
        admin.setNamesrvAddr(args[0]);
        admin.setInstanceName("running-info-probe");
        admin.start();
        try {
            boolean jstack = args.length > 2 && args[2].equals("jstack");
            ConsumerConnection cc = admin.examineConsumerConnectionInfo(args[1]);
            TreeMap<String, ConsumerRunningInfo> table = new TreeMap<String, ConsumerRunningInfo>();
            for (Connection conn : cc.getConnectionSet()) {
                ConsumerRunningInfo info = admin.getConsumerRunningInfo(args[1], conn.getClientId(), jstack);
                table.put(conn.getClientId(), info);
                System.out.println("MEMBER " + conn.getClientId());
                System.out.println(info.formatString());
            }
            System.out.println("SAME_SUBSCRIPTION " + ConsumerRunningInfo.analyzeSubscription(table));
            for (String clientId : table.keySet()) {
                String found = ConsumerRunningInfo.analyzeProcessQueue(clientId, table.get(clientId));
                System.out.println("PROCESS_QUEUE " + (found.isEmpty() ? "OK" : found));
            }
        } finally {
            admin.shutdown();
        }
    }
}
