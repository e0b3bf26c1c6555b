"""Queue allocation strategies of a clustering consumer group (reference §10.3). Every member computes the
same split from the same sorted inputs, so no coordination is needed."""

from __future__ import annotations

from typing import Protocol, Sequence

from rocketmq_emulator.protocol.bodies import MessageQueue


class AllocateStrategy(Protocol):
    name: str

    def allocate(self, group: str, client_id: str, mqs: Sequence[MessageQueue],
                 cids: Sequence[str]) -> list[MessageQueue]: ...


class AllocateMessageQueueAveragely:
    """Contiguous blocks: with 8 queues and 3 consumers, 3 + 3 + 2 (the Java default)."""

    name = "AVG"

    def allocate(self, group: str, client_id: str, mqs: Sequence[MessageQueue],
                 cids: Sequence[str]) -> list[MessageQueue]:
        if client_id not in cids or not mqs:
            return []
        n, c, i = len(mqs), len(cids), list(cids).index(client_id)
        mod = n % c
        if n <= c:
            size = 1
        elif mod > 0 and i < mod:
            size = n // c + 1
        else:
            size = n // c
        start = i * size if mod > 0 and i < mod else i * size + mod
        return [mqs[(start + k) % n] for k in range(min(size, n - start))]


class AllocateMessageQueueAveragelyByCircle:
    """Round robin: consumer i gets queues i, i + c, i + 2c, ..."""

    name = "AVG_BY_CIRCLE"

    def allocate(self, group: str, client_id: str, mqs: Sequence[MessageQueue],
                 cids: Sequence[str]) -> list[MessageQueue]:
        if client_id not in cids:
            return []
        i = list(cids).index(client_id)
        return list(mqs[i::len(cids)])


STRATEGIES: dict[str, type[AllocateStrategy]] = {"averagely": AllocateMessageQueueAveragely,
                               "by_circle": AllocateMessageQueueAveragelyByCircle}


def strategy(value: str | AllocateStrategy) -> AllocateStrategy:
    if isinstance(value, str):
        try:
            return STRATEGIES[value.lower()]()
        except KeyError:
            from .errors import InvalidArgumentError
            raise InvalidArgumentError(f"unknown allocation strategy {value!r}; use one of {sorted(STRATEGIES)} or "
                                       f"an object with an allocate() method") from None
    return value
