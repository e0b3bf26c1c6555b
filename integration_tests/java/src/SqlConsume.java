// Driver: a push consumer with a SQL92 property filter (MessageSelector.bySql), official RocketMQ 4.9.x Java client.
// Usage: java SqlConsume NAMESRV TOPIC GROUP SQL [SECONDS=30] [EXPECTED=-1]
// Consumes from the first offset for SECONDS (or until EXPECTED messages came); event "received" per message
// (body and user properties), "start_error" when start() fails (an expression the broker refuses).
// Output: one JSON object per line.
import com.alibaba.fastjson.JSON;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.MessageSelector;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;

public class SqlConsume {
    static synchronized void emit(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i + 1 < kv.length; i += 2) m.put((String) kv[i], kv[i + 1]);
        System.out.println(JSON.toJSONString(m));
        System.out.flush();
    }

    public static void main(String[] a) throws Exception {
        String ns = a[0], topic = a[1], group = a[2], sql = a[3];
        int seconds = a.length > 4 ? Integer.parseInt(a[4]) : 30;
        int expected = a.length > 5 ? Integer.parseInt(a[5]) : -1;
        final CountDownLatch done = new CountDownLatch(expected > 0 ? expected : Integer.MAX_VALUE);
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group);
        c.setNamesrvAddr(ns);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        try {
            c.subscribe(topic, MessageSelector.bySql(sql));
            c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                for (MessageExt m : msgs) {
                    emit("event", "received", "body", new String(m.getBody(), StandardCharsets.UTF_8),
                        "properties", m.getProperties());
                    done.countDown();
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            c.start();
        } catch (Exception e) {
            emit("event", "start_error", "error", e.toString());
            System.exit(2);
        }
        emit("event", "consumer_started", "sql", sql);
        done.await(seconds, TimeUnit.SECONDS);
        c.shutdown();
        emit("event", "result", "ok", true);
        System.exit(0);
    }
}
