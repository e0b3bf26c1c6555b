// Driver: request-reply with the official RocketMQ 4.9.x Java client.
// Usage: java RequestReply NAMESRV request TOPIC COUNT [TIMEOUT_MS=3000] [GROUP=PID_java_requester]
//          DefaultMQProducer.request(msg, timeout) COUNT times, bodies "req-<i>"; event "reply" per answer,
//          "request_error" per failure (RequestTimeoutException included).
//        java RequestReply NAMESRV reply TOPIC [GROUP=CID_java_replier] [SECONDS=60]
//          a push consumer of TOPIC (CONSUME_FROM_FIRST_OFFSET) that answers every request with
//          MessageUtil.createReplyMessage(msg, "reply-to-" + body) sent by its own producer; event "replied".
// Output: one JSON object per line.
import com.alibaba.fastjson.JSON;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.utils.MessageUtil;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

public class RequestReply {
    static synchronized void emit(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i + 1 < kv.length; i += 2) m.put((String) kv[i], kv[i + 1]);
        System.out.println(JSON.toJSONString(m));
        System.out.flush();
    }

    public static void main(String[] a) throws Exception {
        String ns = a[0], mode = a[1], topic = a[2];
        if (mode.equals("request")) request(ns, topic, Integer.parseInt(a[3]),
            a.length > 4 ? Long.parseLong(a[4]) : 3000, a.length > 5 ? a[5] : "PID_java_requester");
        else reply(ns, topic, a.length > 3 ? a[3] : "CID_java_replier", a.length > 4 ? Integer.parseInt(a[4]) : 60);
    }

    static void request(String ns, String topic, int n, long timeout, String group) throws Exception {
        DefaultMQProducer p = new DefaultMQProducer(group);
        p.setNamesrvAddr(ns);
        p.start();
        emit("event", "start", "mode", "request", "clientId", p.buildMQClientId());
        int ok = 0;
        for (int i = 0; i < n; i++) {
            String body = "req-" + i;
            try {
                Message r = p.request(new Message(topic, "", body.getBytes(StandardCharsets.UTF_8)), timeout);
                ok++;
                emit("event", "reply", "i", i, "body", new String(r.getBody(), StandardCharsets.UTF_8),
                    "topic", r.getTopic(), "correlationId", r.getProperty("CORRELATION_ID"));
            } catch (Exception e) {
                emit("event", "request_error", "i", i, "error", e.toString());
            }
        }
        p.shutdown();
        emit("event", "result", "ok", ok == n, "replies", ok, "count", n);
        System.exit(ok == n ? 0 : 1);
    }

    static void reply(String ns, String topic, String group, int seconds) throws Exception {
        final DefaultMQProducer replier = new DefaultMQProducer(group + "_producer");
        replier.setNamesrvAddr(ns);
        replier.start();
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group);
        c.setNamesrvAddr(ns);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                String body = new String(m.getBody(), StandardCharsets.UTF_8);
                try {
                    Message reply = MessageUtil.createReplyMessage(m, ("reply-to-" + body).getBytes(StandardCharsets.UTF_8));
                    SendResult r = replier.send(reply, 3000);
                    emit("event", "replied", "body", body, "status", r.getSendStatus().name(), "topic", reply.getTopic());
                } catch (Exception e) {
                    emit("event", "reply_error", "body", body, "error", e.toString());
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        emit("event", "consumer_started", "mode", "reply");
        Thread.sleep(seconds * 1000L);
        c.shutdown();
        replier.shutdown();
        emit("event", "result", "ok", true);
    }
}
