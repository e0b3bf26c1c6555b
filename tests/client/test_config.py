"""ClientConfig: where a client finds its name server when none is given (as the Java client does)."""

from __future__ import annotations

from rocketmq_emulator.client import ClientConfig


def test_namesrv_defaults_to_the_environment_then_localhost(monkeypatch):
    monkeypatch.setenv("NAMESRV_ADDR", "10.1.2.3:9876;10.1.2.4:9876")
    assert ClientConfig().namesrv_addrs == ["10.1.2.3:9876", "10.1.2.4:9876"]
    assert ClientConfig.resolve(None, namesrv="127.0.0.1:1").namesrv_addrs == ["127.0.0.1:1"]
    monkeypatch.setenv("NAMESRV_ADDR", "")
    assert ClientConfig().namesrv_addrs == ["127.0.0.1:9876"]
    monkeypatch.delenv("NAMESRV_ADDR")
    assert ClientConfig().namesrv_addrs == ["127.0.0.1:9876"]
