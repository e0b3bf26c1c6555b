"""Start/stop plumbing shared by Producer, PushConsumer, PullConsumer and Admin: `async with`, and a clear
error when one is used before it is started."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from .errors import ClientStateError

if TYPE_CHECKING:
    from .instance import ClientInstance

U = TypeVar("U", bound="InstanceUser")


class InstanceUser:
    """Something that holds a client instance while started. Subclasses define `start()`, `stop()` and
    `_what()` (how the error message names it) and set `self._instance`."""

    _instance: ClientInstance | None

    def _what(self) -> str:
        raise NotImplementedError

    async def start(self: U) -> U:
        raise NotImplementedError

    async def stop(self) -> None:
        raise NotImplementedError

    async def __aenter__(self: U) -> U:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def instance(self) -> ClientInstance:
        if self._instance is None:
            raise ClientStateError(f"{self._what()} is not started; use `async with` or await start()")
        return self._instance
