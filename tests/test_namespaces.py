"""protocol/namespaces.py against RocketMQ's NamespaceUtil (5.3.3, remoting/protocol/NamespaceUtil.java): the cases
its own unit tests and the proxy's converter rely on."""

from __future__ import annotations

import pytest

from rocketmq_emulator.protocol.namespaces import namespace_of, without_namespace, wrap_namespace


@pytest.mark.parametrize("namespace, name, wrapped", [
    ("ns", "Orders", "ns%Orders"),
    ("ns", "%RETRY%billing", "%RETRY%ns%billing"),
    ("ns", "%DLQ%billing", "%DLQ%ns%billing"),
    ("ns", "ns%Orders", "ns%Orders"),            # already in it
    ("ns", "%RETRY%ns%billing", "%RETRY%ns%billing"),
    ("", "Orders", "Orders"), (None, "Orders", "Orders"),
    ("ns", "TBW102", "TBW102"),                  # a system topic stays as it is
    ("ns", "RMQ_SYS_TRACE_TOPIC", "RMQ_SYS_TRACE_TOPIC"),
    ("ns", "CID_RMQ_SYS_TRACE", "CID_RMQ_SYS_TRACE"),  # a system group too
    ("MQ_INST_1_a", "other%Orders", "MQ_INST_1_a%other%Orders"),
])
def test_wrap(namespace, name, wrapped):
    assert wrap_namespace(namespace, name) == wrapped


@pytest.mark.parametrize("name, namespace, bare", [
    ("ns%Orders", "ns", "Orders"),
    ("%RETRY%ns%billing", "ns", "%RETRY%billing"),
    ("%DLQ%ns%billing", "ns", "%DLQ%billing"),
    ("Orders", "", "Orders"),
    ("%RETRY%billing", "", "%RETRY%billing"),
    ("a%b%c", "a", "b%c"),                        # the first % separates
    ("%Orders", "", "%Orders"),                   # nothing before the %: no namespace
    ("SCHEDULE_TOPIC_XXXX", "", "SCHEDULE_TOPIC_XXXX"),
    ("", "", ""),
])
def test_namespace_of_and_without(name, namespace, bare):
    assert namespace_of(name) == namespace
    assert without_namespace(name) == bare
