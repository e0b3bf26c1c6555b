"""The broker's handlers without sockets: `harness` is a real broker on a real store in the test's temporary
directory, answering requests fed to it as frames (testing/broker_harness.py). A test that needs other settings
makes its own: `async with BrokerHarness(tmp_path, longPollingEnable=False) as broker:`."""

from __future__ import annotations

import pytest

from rocketmq_emulator.testing.broker_harness import BrokerHarness


@pytest.fixture
async def harness(tmp_path):
    async with BrokerHarness(tmp_path / "store") as broker:
        yield broker
