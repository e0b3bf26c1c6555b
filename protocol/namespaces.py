"""Namespaces: a resource `ns%Name` (a topic or group name with its namespace before a `%`), as RocketMQ's
NamespaceUtil reads and writes them. A 4.x client with `setNamespace("ns")` (or a name server address of an
`MQ_INST_...` instance) sends `ns%Orders` and `ns%billing` (retry topic `%RETRY%ns%billing`); the broker keeps them
as plain names, and admin tools can group resources by the namespace.

    wrap_namespace("ns", "Orders")            # 'ns%Orders'
    wrap_namespace("ns", "%RETRY%billing")    # '%RETRY%ns%billing'
    without_namespace("%DLQ%ns%billing")      # '%DLQ%billing'
    namespace_of("ns%Orders")                 # 'ns'
"""

from __future__ import annotations

from .topics import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX, is_system_group, is_system_topic

SEPARATOR = "%"


def _system(resource: str) -> bool:
    return is_system_topic(resource) or is_system_group(resource)


def _prefix(resource: str) -> str:
    if resource.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return RETRY_GROUP_TOPIC_PREFIX
    if resource.startswith(DLQ_GROUP_TOPIC_PREFIX):
        return DLQ_GROUP_TOPIC_PREFIX
    return ""


def without_retry_and_dlq(resource: str) -> str:
    return resource[len(_prefix(resource)):]


def namespace_of(resource: str) -> str:
    """The namespace of a resource name ("" when it has none, or is a system topic or group)."""
    if not resource or _system(resource):
        return ""
    bare = without_retry_and_dlq(resource)
    index = bare.find(SEPARATOR)
    return bare[:index] if index > 0 else ""


def without_namespace(resource: str) -> str:
    """The name as a client of the namespace knows it (its retry or DLQ prefix kept)."""
    if not resource or _system(resource):
        return resource
    bare = without_retry_and_dlq(resource)
    index = bare.find(SEPARATOR)
    return _prefix(resource) + bare[index + 1:] if index > 0 else resource


def wrap_namespace(namespace: str | None, resource: str) -> str:
    """`resource` in `namespace` (unchanged without a namespace, for a system resource, or when already in it)."""
    if not namespace or not resource or _system(resource) or \
            without_retry_and_dlq(resource).startswith(namespace + SEPARATOR):
        return resource
    return _prefix(resource) + namespace + SEPARATOR + without_retry_and_dlq(resource)
