// Driver: transactional messages with the official RocketMQ 4.9.x Java client (TransactionMQProducer).
// Usage: java TxProduce NAMESRV TOPIC GROUP COUNT EXECUTE CHECK [LINGER_S=0]
//   EXECUTE: what executeLocalTransaction answers for message i: commit | rollback | unknown | alternate (even i
//            commit, odd i rollback)
//   CHECK:   what checkLocalTransaction answers: commit | rollback | unknown | alternate (by the body's index)
//   LINGER_S: stay up that long after the sends, answering the broker's check-backs ("checked" events)
// Bodies are "tx-<i>". Output: one JSON object per line; "sent" per message (msgId, status, localState).
import com.alibaba.fastjson.JSON;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.client.producer.TransactionSendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

public class TxProduce {
    static synchronized void emit(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i + 1 < kv.length; i += 2) m.put((String) kv[i], kv[i + 1]);
        System.out.println(JSON.toJSONString(m));
        System.out.flush();
    }

    static LocalTransactionState decide(String rule, String body) {
        int i = Integer.parseInt(body.substring(body.indexOf('-') + 1));
        switch (rule) {
            case "commit": return LocalTransactionState.COMMIT_MESSAGE;
            case "rollback": return LocalTransactionState.ROLLBACK_MESSAGE;
            case "alternate": return i % 2 == 0 ? LocalTransactionState.COMMIT_MESSAGE : LocalTransactionState.ROLLBACK_MESSAGE;
            default: return LocalTransactionState.UNKNOW;
        }
    }

    public static void main(String[] a) throws Exception {
        String ns = a[0], topic = a[1], group = a[2];
        int n = Integer.parseInt(a[3]);
        final String execute = a[4], check = a[5];
        int linger = a.length > 6 ? Integer.parseInt(a[6]) : 0;
        TransactionMQProducer p = new TransactionMQProducer(group);
        p.setNamesrvAddr(ns);
        p.setTransactionListener(new TransactionListener() {
            public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                return decide(execute, new String(msg.getBody(), StandardCharsets.UTF_8));
            }

            public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                String body = new String(msg.getBody(), StandardCharsets.UTF_8);
                LocalTransactionState s = decide(check, body);
                emit("event", "checked", "body", body, "msgId", msg.getMsgId(), "topic", msg.getTopic(),
                    "answer", s.name(), "checkTimes", msg.getProperty("TRANSACTION_CHECK_TIMES"));
                return s;
            }
        });
        p.start();
        emit("event", "start", "group", group);
        int ok = 0;
        for (int i = 0; i < n; i++) {
            String body = "tx-" + i;
            try {
                TransactionSendResult r = p.sendMessageInTransaction(
                    new Message(topic, "TagTx", "key-" + i, body.getBytes(StandardCharsets.UTF_8)), null);
                ok++;
                emit("event", "sent", "i", i, "body", body, "status", r.getSendStatus().name(), "msgId", r.getMsgId(),
                    "offsetMsgId", r.getOffsetMsgId(), "localState", r.getLocalTransactionState().name());
            } catch (Exception e) {
                emit("event", "send_error", "i", i, "error", e.toString());
            }
        }
        emit("event", "sent_all", "sent_ok", ok);
        if (linger > 0) Thread.sleep(linger * 1000L);
        p.shutdown();
        emit("event", "result", "ok", ok == n, "sent_ok", ok);
        System.exit(ok == n ? 0 : 1);
    }
}
