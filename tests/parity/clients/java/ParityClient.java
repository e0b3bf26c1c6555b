// Driver of the parity tier's client scenarios (tests/parity/clients/scenarios.toml): what the project's other
// Java drivers (integration_tests/java/src) do not do, with the official RocketMQ 4.9.8 Java client.
// Usage:
//   java ParityClient produce-orderly NAMESRV TOPIC GROUP COUNT SHARDS
//       message i (body "order-i", tag TagO, key "k<i>") to queue (i % SHARDS) of the topic (MessageQueueSelector)
//   java ParityClient consume NAMESRV TOPIC GROUP EXPECT TIMEOUT_S orderly|concurrently FAIL MAX_RECONSUME LINGER_S
//       CONSUME_FROM_FIRST_OFFSET push consumer; FAIL: "none", "always" (RECONSUME_LATER every time) or a body
//       whose first delivery fails (orderly: SUSPEND_CURRENT_QUEUE_A_MOMENT); MAX_RECONSUME: setMaxReconsumeTimes
//       (-1: the client's default); ends after EXPECT deliveries (then 1 s, at the earliest LINGER_S after its
//       start) or at the timeout, committing its offsets synchronously before shutdown (the client's own persist
//       at shutdown is oneway and was seen lost against the real broker)
// Output: one JSON object per line; each delivery as "consumed" with every property of the message.
import com.alibaba.fastjson.JSON;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.consumer.store.OffsetStore;
import org.apache.rocketmq.client.consumer.store.ReadOffsetType;
import org.apache.rocketmq.client.consumer.store.RemoteBrokerOffsetStore;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

public class ParityClient {
    static synchronized void emit(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i + 1 < kv.length; i += 2) m.put((String) kv[i], kv[i + 1]);
        System.out.println(JSON.toJSONString(m));
        System.out.flush();
    }

    public static void main(String[] a) throws Exception {
        if (a[0].equals("produce-orderly")) System.exit(produceOrderly(a));
        System.exit(consume(a));
    }

    static int produceOrderly(String[] a) throws Exception {
        String ns = a[1], topic = a[2], group = a[3];
        int n = Integer.parseInt(a[4]), shards = Integer.parseInt(a[5]);
        DefaultMQProducer p = new DefaultMQProducer(group);
        p.setNamesrvAddr(ns);
        p.start();
        emit("event", "start", "client", "java-4.9.8", "topic", topic, "count", n);
        int ok = 0;
        for (int i = 0; i < n; i++) {
            String body = "order-" + i;
            SendResult r = p.send(new Message(topic, "TagO", "k" + i, body.getBytes(StandardCharsets.UTF_8)),
                (List<MessageQueue> mqs, Message msg, Object arg) -> mqs.get((Integer) arg % mqs.size()), i % shards);
            ok++;
            emit("event", "sent", "i", i, "body", body, "status", r.getSendStatus().name(), "msgId", r.getMsgId(),
                "offsetMsgId", r.getOffsetMsgId(), "queueId", r.getMessageQueue().getQueueId(),
                "queueOffset", r.getQueueOffset());
        }
        p.shutdown();
        emit("event", "result", "ok", ok == n, "sent_ok", ok, "count", n);
        return ok == n ? 0 : 1;
    }

    static void report(MessageExt m, int n) {
        emit("event", "consumed", "n", n, "body", new String(m.getBody(), StandardCharsets.UTF_8), "topic", m.getTopic(),
            "tags", m.getTags(), "keys", m.getKeys(), "msgId", m.getMsgId(), "queueId", m.getQueueId(),
            "queueOffset", m.getQueueOffset(), "reconsumeTimes", m.getReconsumeTimes(),
            "properties", new TreeMap<>(m.getProperties()));
    }

    static int consume(String[] a) throws Exception {
        String ns = a[1], topic = a[2], group = a[3];
        int expect = Integer.parseInt(a[4]), timeout = Integer.parseInt(a[5]);
        boolean orderly = a[6].equals("orderly");
        String fail = a[7];
        int maxReconsume = Integer.parseInt(a[8]), linger = Integer.parseInt(a[9]);
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group);
        c.setNamesrvAddr(ns);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.subscribe(topic, "*");
        if (maxReconsume >= 0) c.setMaxReconsumeTimes(maxReconsume);
        c.setSuspendCurrentQueueTimeMillis(500);
        c.setAwaitTerminationMillisWhenShutdown(3000);
        CountDownLatch done = new CountDownLatch(expect);
        AtomicInteger got = new AtomicInteger();
        Map<String, Boolean> failedOnce = new ConcurrentHashMap<>();
        if (orderly) {
            c.registerMessageListener((MessageListenerOrderly) (msgs, ctx) -> {
                for (MessageExt m : msgs) {
                    report(m, got.incrementAndGet());
                    done.countDown();
                    String body = new String(m.getBody(), StandardCharsets.UTF_8);
                    if (fail.equals("always") || (body.equals(fail) && failedOnce.putIfAbsent(body, true) == null))
                        return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT;
                }
                return ConsumeOrderlyStatus.SUCCESS;
            });
        } else {
            c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                for (MessageExt m : msgs) {
                    report(m, got.incrementAndGet());
                    done.countDown();
                    String body = new String(m.getBody(), StandardCharsets.UTF_8);
                    if (fail.equals("always") || (body.equals(fail) && failedOnce.putIfAbsent(body, true) == null))
                        return ConsumeConcurrentlyStatus.RECONSUME_LATER;
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
        }
        long started = System.currentTimeMillis();
        c.start();
        emit("event", "consumer_started", "client", "java-4.9.8", "group", group, "topic", topic,
            "orderly", orderly);
        boolean ok = done.await(timeout, TimeUnit.SECONDS);
        emit("event", "all_consumed", "ok", ok, "consumed", got.get());
        long left = started + linger * 1000L - System.currentTimeMillis();
        Thread.sleep(Math.max(left, 1000)); // the last listener calls' results (offsets, send-backs) are in
        // the client's persist at shutdown is oneway (seen lost against the real broker): commit first, synchronously
        OffsetStore store = c.getDefaultMQPushConsumerImpl().getOffsetStore();
        for (MessageQueue mq : c.getDefaultMQPushConsumerImpl().getRebalanceImpl().getProcessQueueTable().keySet()) {
            long offset = store.readOffset(mq, ReadOffsetType.READ_FROM_MEMORY);
            if (offset >= 0) ((RemoteBrokerOffsetStore) store).updateConsumeOffsetToBroker(mq, offset, false);
        }
        c.shutdown();
        emit("event", "result", "ok", ok, "consumed", got.get(), "expected", expect);
        return ok ? 0 : 1;
    }
}
