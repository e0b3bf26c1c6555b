"""What Apache RocketMQ 4.9.8 puts in a remark when a request fails inside the JVM (the one home of these texts).

4.9.8 answers a request whose processing throws with SYSTEM_ERROR and `RemotingHelper.exceptionSimpleDesc(e)`:
the exception's `toString()`, a comma, and its first stack frame. The texts below are what the real broker answered
on the JDK these machines run it on (OpenJDK 17: its helpful NullPointerException messages name the null value),
recorded by the parity corpus (`tests/parity/snapshots`) or, for the SQL92 parser and fastjson, derived from their
code and checked against the real classes (`tests/test_java_texts.py`).

They are used only with `--compat 4.9`: errors carry them as `ProtocolError.java` / `BrokerError.java`, and a server
started with `java_remarks=True` answers them instead of the emulator's own words (which say what is wrong and where;
the default mode keeps those). A failure whose Java text is not known here keeps the emulator's words in both modes.
"""

from __future__ import annotations


def exception_desc(exception: str, frame: str) -> str:
    """`RemotingHelper.exceptionSimpleDesc`: "<exception's toString>, <first stack frame>"."""
    return f"{exception}, {frame}"


def _npe(message: str, frame: str) -> str:
    return exception_desc(f"java.lang.NullPointerException: {message}", frame)


#: a JSON body decoded from no body (`new String(null, UTF_8)` in RemotingSerializable.decode)
NULL_BODY = _npe('Cannot read the array length because "bytes" is null',
                 "java.base/java.lang.String.<init>(String.java:1387)")
#: SEND_BATCH_MESSAGE with no body (DefaultMessageStore.checkMessages reads the batch's length)
NULL_BATCH_BODY = _npe('Cannot read the array length because the return value of '
                       '"org.apache.rocketmq.common.message.MessageExtBatch.getBody()" is null',
                       "org.apache.rocketmq.store.DefaultMessageStore.checkMessages(DefaultMessageStore.java:391)")
#: a batch body that ends inside an int or short field (ByteBuffer.getInt/getShort)
BUFFER_UNDERFLOW = exception_desc("java.nio.BufferUnderflowException",
                                  "java.base/java.nio.Buffer.nextGetIndex(Buffer.java:707)")
#: a lookup of a null key: DELETE_SUBSCRIPTIONGROUP without groupName (remove) and GET_TOPIC_STATS_INFO without
#: topic (get) reach a ConcurrentHashMap with it
NULL_KEY_REMOVE = _npe('Cannot invoke "Object.hashCode()" because "key" is null',
                       "java.base/java.util.concurrent.ConcurrentHashMap.replaceNode(ConcurrentHashMap.java:1111)")
NULL_KEY_GET = _npe('Cannot invoke "Object.hashCode()" because "key" is null',
                    "java.base/java.util.concurrent.ConcurrentHashMap.get(ConcurrentHashMap.java:936)")

#: the ACL requests on a broker without ACL: 4.9.8 has no access validator and answers its *FAILED code with the
#: NullPointerException's message only (`response.setRemark(e.getMessage())`), by request code name
ACL_VALIDATOR_MISSING = {
    "UPDATE_AND_CREATE_ACL_CONFIG": 'Cannot invoke "org.apache.rocketmq.acl.AccessValidator.updateAccessConfig('
                                    'org.apache.rocketmq.common.PlainAccessConfig)" because "<local6>" is null',
    "DELETE_ACL_CONFIG": 'Cannot invoke "org.apache.rocketmq.acl.AccessValidator.deleteAccessConfig(String)" '
                         'because "<local6>" is null',
    "UPDATE_GLOBAL_WHITE_ADDRS_CONFIG": 'Cannot invoke "org.apache.rocketmq.acl.AccessValidator.'
                                        'updateGlobalWhiteAddrsConfig(java.util.List, String)" because "<local5>" '
                                        'is null',
}


def number_format(value: str) -> str:
    """Integer.parseInt / Long.parseLong of a header value that is not a number."""
    return exception_desc(f'java.lang.NumberFormatException: For input string: "{value}"',
                          "java.base/java.lang.NumberFormatException.forInputString(NumberFormatException.java:67)")


def number_format_message(value: str) -> str:
    """The same exception's toString alone (the SQL92 parser wraps it: MQFilterException(cause))."""
    return f'java.lang.NumberFormatException: For input string: "{value}"'


def negative_limit(size: int) -> str:
    """VIEW_MESSAGE_BY_ID at an offset inside a record: the four bytes there, read as the record's size, are
    negative, and `ByteBuffer.limit(size)` refuses them."""
    return exception_desc(f"java.lang.IllegalArgumentException: newLimit < 0: ({size} < 0)",
                          "java.base/java.nio.Buffer.createLimitException(Buffer.java:395)")


def topic_filter_type_invalid(value: str) -> str:
    """CreateTopicRequestHeader.checkFields of an unknown topicFilterType."""
    return exception_desc(f"org.apache.rocketmq.remoting.exception.RemotingCommandException: topicFilterType = "
                          f"[{value}] value invalid",
                          "org.apache.rocketmq.common.protocol.header.CreateTopicRequestHeader.checkFields("
                          "CreateTopicRequestHeader.java:50)")


def fastjson_not_match(expected: str, found: str, pos: int, text: str) -> str:
    """fastjson's JSONLexerBase.nextTokenWithChar: a character other than the one it expects (a field name not
    followed by ':'); `info()` is JSONScanner's: position, line, column (its own count) and the whole text."""
    line, column = 1, 1
    for ch in text[:pos]:
        if ch == "\n":
            column = 1
            line += 1
        column += 1
    info = f"pos {pos}, line {line}, column {column}{text if len(text) < 65535 else text[:65535]}"
    return exception_desc(f"com.alibaba.fastjson.JSONException: not match {expected} - {found}, info : {info}",
                          "com.alibaba.fastjson.parser.JSONLexerBase.nextTokenWithChar(JSONLexerBase.java:395)")
