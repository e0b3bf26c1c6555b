"""Filter rules of PULL_MESSAGE and CHECK_CLIENT_CONFIG as the real 4.9.8 broker answers them (parity scenarios
pull_sql92 and pull_group_subscription): a pull's own SQL92 expression that does not compile filters nothing, a
heartbeat subscription of tags without hash codes matches nothing, CHECK_CLIENT_CONFIG of a bad expression is
SUBSCRIPTION_PARSE_FAILED."""

from __future__ import annotations

from rocketmq_emulator.protocol import PullSysFlag, RequestCode, ResponseCode
from rocketmq_emulator.protocol.bodies import (CheckClientRequestBody, ConsumerData, HeartbeatData,
                                               SubscriptionData)
from rocketmq_emulator.protocol.headers import PullMessageRequestHeader
from rocketmq_emulator.protocol.message import decode_messages
from rocketmq_emulator.testing.broker_harness import BrokerHarness

R = ResponseCode


def pull_header(group: str, sub: str | None, expression_type: str = "TAG") -> PullMessageRequestHeader:
    flag = PullSysFlag.SUBSCRIPTION if sub is not None else PullSysFlag(0)
    return PullMessageRequestHeader(consumer_group=group, topic="T", queue_id=0, queue_offset=0, max_msg_nums=32,
                                    sys_flag=int(flag), commit_offset=0, suspend_timeout_millis=0,
                                    subscription=sub, sub_version=0, expression_type=expression_type)


async def test_a_bad_sql92_expression_of_the_pull_filters_nothing(tmp_path):
    async with BrokerHarness(tmp_path / "store", enablePropertyFilter=True) as broker:
        for body in (b"a", b"b"):
            assert (await broker.send("T", body)).code == R.SUCCESS
        r = await broker.ask(RequestCode.PULL_MESSAGE, pull_header("G", "a >>> 1", "SQL92"))
        assert r.code == R.SUCCESS and [m.body for m in decode_messages(r.body)] == [b"a", b"b"]
        check = CheckClientRequestBody(client_id="c", group="G", subscription_data=SubscriptionData(
            topic="T", sub_string="a >>> 1", expression_type="SQL92"))
        r = await broker.ask(RequestCode.CHECK_CLIENT_CONFIG, body=check.encode())
        assert r.code == R.SUBSCRIPTION_PARSE_FAILED


async def test_a_heartbeat_subscription_of_tags_without_codes_matches_nothing(harness):
    assert (await harness.send("T", b"b", tags="B")).code == R.SUCCESS
    data = HeartbeatData(client_id=harness.client.client_id, consumer_data_set=[ConsumerData(
        group_name="G", subscription_data_set=[SubscriptionData(topic="T", sub_string="B", tags_set=["B"])])])
    assert (await harness.client.ask(RequestCode.HEART_BEAT, body=data.encode())).code == R.SUCCESS
    r = await harness.ask(RequestCode.PULL_MESSAGE, pull_header("G", None))
    assert (r.code, r.remark) == (R.PULL_RETRY_IMMEDIATELY, "NO_MATCHED_MESSAGE")
