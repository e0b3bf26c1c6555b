"""The broker's consumer-admin requests (`broker/handlers/consumer_admin.py`) with a raw client, against the
live clients of `world` (see `java_world.py`): CONSUME_MESSAGE_DIRECTLY relayed to a client, CLONE_GROUP_OFFSET,
GET_ALL_PRODUCER_INFO, and bad input. (GET_CONSUMER_RUNNING_INFO through mqadmin: `test_java_client.py`.)
"""

from __future__ import annotations

import re

from rocketmq_emulator.protocol import RemotingCommand, RequestCode, ResponseCode, fastjson

from .java_world import (COUNT, CPP_PRODUCER, JAVA_PRODUCER, OFFLINE_ID, PY_GROUP, PY_PRODUCER, TOPIC,
                         raw_request)


def test_consume_message_directly_is_relayed_with_the_stored_message(world):
    """CONSUME_MESSAGE_DIRECTLY (309): the broker puts the stored message in the body and relays it to the
    named client, whose handler consumes it; an offline client id is "not online"."""
    emu, first = world["emu"], world["sent"][0]
    got: list = world["py_got"]
    before = len(got)

    def ask(client_id: str) -> RemotingCommand:
        return raw_request(emu, RequestCode.CONSUME_MESSAGE_DIRECTLY,
                           {"consumerGroup": PY_GROUP, "clientId": client_id, "msgId": first["offsetMsgId"]})
    response = ask(world["ids"][PY_GROUP][0])
    assert response.code == ResponseCode.SUCCESS, response.remark
    result = fastjson.loads(response.body)
    assert result["consumeResult"] == "CR_SUCCESS" and result["order"] is False, result
    assert got[before:] == [first["body"]]
    offline = ask(OFFLINE_ID)
    assert offline.code == ResponseCode.SYSTEM_ERROR
    assert offline.remark == f"The Consumer <{PY_GROUP}> <{OFFLINE_ID}> not online"


def test_clone_group_offset_request_copies_the_committed_offsets(world):
    """CLONE_GROUP_OFFSET (the admin API's cloneGroupOffset; mqadmin's command copies through
    UPDATE_CONSUMER_OFFSET instead)."""
    emu = world["emu"]
    offsets = emu.broker.consumer_offset_manager
    source = emu.call(lambda: offsets.query_offsets_of_group(PY_GROUP, TOPIC))  # PyGroup is idle: they stay put
    assert sum(source.values()) == COUNT
    response = raw_request(emu, RequestCode.CLONE_GROUP_OFFSET,
                           {"srcGroup": PY_GROUP, "destGroup": "RawClone", "topic": TOPIC, "offline": "false"})
    assert response.code == ResponseCode.SUCCESS, response.remark
    assert emu.call(lambda: offsets.query_offsets_of_group("RawClone", TOPIC)) == source


def test_bad_relay_and_clone_requests_get_error_codes(world):
    emu = world["emu"]
    client_id = world["ids"][PY_GROUP][0]
    no_client = raw_request(emu, RequestCode.GET_CONSUMER_RUNNING_INFO, {"consumerGroup": PY_GROUP})
    assert no_client.code == ResponseCode.SYSTEM_ERROR and "clientId" in no_client.remark
    no_group = raw_request(emu, RequestCode.CLONE_GROUP_OFFSET, {"destGroup": "X", "topic": TOPIC})
    assert no_group.code == ResponseCode.SYSTEM_ERROR and "srcGroup" in no_group.remark
    for msg_id in ("not-hex", "7F000001000000000FFFFFFFFFFFFFFF"):  # garbage; past the end of the commitlog
        answer = raw_request(emu, RequestCode.CONSUME_MESSAGE_DIRECTLY,
                             {"consumerGroup": PY_GROUP, "clientId": client_id, "msgId": msg_id})
        # relayed without a message, as 4.9.8 does; the client says so
        assert answer.code == ResponseCode.SYSTEM_ERROR and answer.remark == "no message in the request body"
    # the broker is fine: a good request still works
    assert raw_request(emu, RequestCode.GET_CONSUMER_RUNNING_INFO,
                       {"consumerGroup": PY_GROUP, "clientId": client_id}).code == ResponseCode.SUCCESS


def test_all_producer_info_lists_every_group(world):
    """GET_ALL_PRODUCER_INFO (mqadmin `producer`), read with a raw client: 4.9.8's mqadmin cannot decode it."""
    response = raw_request(world["emu"], RequestCode.GET_ALL_PRODUCER_INFO, {})
    assert response.code == ResponseCode.SUCCESS
    data = fastjson.loads(response.body)["data"]
    for group, language in ((JAVA_PRODUCER, "JAVA"), (CPP_PRODUCER, "CPP"), (PY_PRODUCER, "PYTHON")):
        (info,) = data[group]
        assert info["language"] == language and re.fullmatch(r"/127\.0\.0\.1:\d+", info["remoteIP"]), info
        assert info["version"] > 0 and info["lastUpdateTimestamp"] > world["begin_ms"], info
