// Driver: the official RocketMQ 4.9.x Java client signing every request with AclClientRPCHook (ACL accounts).
// Usage: java AclClient produce NAMESRV ACCESS_KEY SECRET_KEY TOPIC COUNT
//        java AclClient consume NAMESRV ACCESS_KEY SECRET_KEY TOPIC GROUP COUNT TIMEOUT_S
//        java AclClient createTopic NAMESRV ACCESS_KEY SECRET_KEY BROKER_ADDR TOPIC
// produce: DefaultMQProducer (no retries: one refusal is one send_error); consume: DefaultMQPushConsumer in
// CLUSTERING from the first offset; createTopic: DefaultMQAdminExt.createAndUpdateTopicConfig (an admin-only
// request). One JSON object per line; the last is {"event":"result","ok":...}; exit 0 when ok.
import com.alibaba.fastjson.JSON;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.remoting.RPCHook;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

public class AclClient {
    static synchronized void emit(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i + 1 < kv.length; i += 2) m.put((String) kv[i], kv[i + 1]);
        System.out.println(JSON.toJSONString(m));
        System.out.flush();
    }

    /** The exception and its causes (the client wraps the broker's refusal in an MQClientException). */
    static String describe(Throwable e) {
        StringBuilder sb = new StringBuilder(e.toString());
        for (Throwable c = e.getCause(); c != null && c != c.getCause(); c = c.getCause()) sb.append(" <- ").append(c);
        return sb.toString();
    }

    public static void main(String[] a) throws Exception {
        String mode = a[0], ns = a[1];
        RPCHook hook = new AclClientRPCHook(new SessionCredentials(a[2], a[3]));
        boolean ok;
        if (mode.equals("produce")) {
            ok = produce(ns, hook, a[4], Integer.parseInt(a[5]));
        } else if (mode.equals("consume")) {
            ok = consume(ns, hook, a[4], a[5], Integer.parseInt(a[6]), Integer.parseInt(a[7]));
        } else {
            ok = createTopic(ns, hook, a[4], a[5]);
        }
        System.exit(ok ? 0 : 1);
    }

    static boolean produce(String ns, RPCHook hook, String topic, int n) throws Exception {
        DefaultMQProducer p = new DefaultMQProducer("PID_acl", hook);
        p.setNamesrvAddr(ns);
        p.setRetryTimesWhenSendFailed(0);
        p.start();
        int ok = 0;
        for (int i = 0; i < n; i++) {
            String body = "acl-" + i;
            try {
                SendResult r = p.send(new Message(topic, "TagA", "k" + i, body.getBytes(StandardCharsets.UTF_8)));
                if (r.getSendStatus() == SendStatus.SEND_OK) ok++;
                emit("event", "sent", "i", i, "status", r.getSendStatus().name());
            } catch (Exception e) {
                emit("event", "send_error", "i", i, "error", describe(e));
            }
        }
        p.shutdown();
        emit("event", "result", "ok", ok == n, "sent_ok", ok, "count", n);
        return ok == n;
    }

    static boolean consume(String ns, RPCHook hook, String topic, String group, int n, int timeout) throws Exception {
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group, hook, new AllocateMessageQueueAveragely());
        c.setNamesrvAddr(ns);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.subscribe(topic, "*");
        CountDownLatch done = new CountDownLatch(n);
        AtomicInteger got = new AtomicInteger();
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                emit("event", "consumed", "n", got.incrementAndGet(), "body", new String(m.getBody(), StandardCharsets.UTF_8));
                done.countDown();
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        emit("event", "consumer_started", "group", group, "topic", topic);
        boolean ok = done.await(timeout, TimeUnit.SECONDS);
        c.shutdown();
        emit("event", "result", "ok", ok, "consumed", got.get(), "expected", n);
        return ok;
    }

    static boolean createTopic(String ns, RPCHook hook, String broker, String topic) throws Exception {
        DefaultMQAdminExt admin = new DefaultMQAdminExt(hook);
        admin.setNamesrvAddr(ns);
        admin.setInstanceName("acl-admin-" + System.nanoTime());
        admin.start();
        boolean ok = true;
        String error = null;
        try {
            admin.createAndUpdateTopicConfig(broker, new TopicConfig(topic, 4, 4, 6));
        } catch (Exception e) {
            ok = false;
            error = describe(e);
        }
        admin.shutdown();
        emit("event", "result", "ok", ok, "error", error);
        return ok;
    }
}
