"""The push consumers' receipt handles renewed as the 5.3.3 proxy renews them (broker/grpc/renewal.py), on a broker
without sockets: the clock is moved (BrokerClock.advance) and a scan run by hand."""

from __future__ import annotations

import pytest

pytest.importorskip("grpc", reason="the [grpc] extra: the renewal lives in the gRPC front")

from rocketmq_emulator.broker.core.pop.service import PopRequest  # noqa: E402
from rocketmq_emulator.broker.core.read_model import BrokerFront, ReadModel  # noqa: E402
from rocketmq_emulator.broker.grpc.renewal import (INVISIBLE_WHEN_CLEAR_MS, RENEW_POLICY_MS, Held,  # noqa: E402
                                                   ReceiptRenewal)
from rocketmq_emulator.protocol import ResponseCode  # noqa: E402
from rocketmq_emulator.testing.broker_harness import BrokerHarness  # noqa: E402


async def _held(harness: BrokerHarness) -> tuple[BrokerFront, Held]:
    assert (await harness.send("Orders", b"slow work", queue_id=0)).code == ResponseCode.SUCCESS
    front = BrokerFront(ReadModel(harness.broker), harness.broker)
    result = await harness.broker.pop_service.pop(PopRequest("G", "Orders", 60_000, queue_id=0, max_msgs=1, init_mode=0))
    [popped] = result.messages
    h = popped.handle
    return front, Held(front, "G", "Orders", h.encode(), h.pop_time, h.pop_time + h.invisible_time, 0)


async def test_a_held_message_is_renewed_before_it_turns_visible_and_acked_by_its_latest_handle(tmp_path):
    async with BrokerHarness(tmp_path / "store") as harness:
        front, held = await _held(harness)
        first = held.handle
        renewal = ReceiptRenewal(lambda client: True)
        renewal.add("c1", "G", "msg-1", held)
        clock, pop = harness.broker.clock, harness.broker.pop_service
        assert renewal.scan() == 0  # 60 s left: not yet
        clock.advance(52)  # 8 s left: within the 10 s ahead
        assert renewal.scan() == 1 and held.renew_times == 1
        assert held.next_visible_ms - clock.now_ms() == pytest.approx(RENEW_POLICY_MS[0], abs=50)
        clock.advance(55)
        assert renewal.scan() == 1 and held.renew_times == 2
        assert held.next_visible_ms - clock.now_ms() == pytest.approx(RENEW_POLICY_MS[1], abs=50)
        assert pop.inflight() == 1 and pop.revive(clock.now_ms() + 170_000) == 0  # not due: still held
        taken = renewal.take("c1", "G", "msg-1")
        assert taken is held and held.handle != first
        assert not pop.ack("G", "Orders", first)  # the client's first handle was superseded ...
        assert pop.ack("G", "Orders", held.handle)  # ... the proxy acks with the latest
        assert pop.inflight() == 0 and renewal.scan() == 0


async def test_a_gone_client_releases_its_messages_in_a_second(tmp_path):
    async with BrokerHarness(tmp_path / "store") as harness:
        front, held = await _held(harness)
        clients = {"c1"}
        renewal = ReceiptRenewal(lambda client: client in clients)
        renewal.add("c1", "G", "msg-1", held)
        clients.clear()  # NotifyClientTermination, or silence past the channel expiry
        renewal.scan()
        # (+1: a change in the pop's own millisecond gets the next one, which tells the handles apart)
        assert held.next_visible_ms - harness.broker.clock.now_ms() <= INVISIBLE_WHEN_CLEAR_MS + 1
        assert renewal.held == {}
        assert harness.broker.pop_service.revive(harness.broker.clock.now_ms() + 1500) == 1  # back to the group
