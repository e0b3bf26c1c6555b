"""The test controls of brokers, by name (`broker-a`, its slave `broker-a/1`): stop, start, kill (as a crash) and
pause (it answers nothing) — the name server's emulator requests STOP_BROKER, START_BROKER, KILL_BROKER and
PAUSE_BROKER (`admin stopBroker`, `startBroker`, `killBroker`, `pauseBroker`) and the dashboard's buttons, answered
by the Emulator (brokers in this process) or by `serve --processes`' supervisor (cli/cluster.py)."""

from __future__ import annotations

from typing import Protocol

from rocketmq_emulator.protocol import BrokerError, RemotingCommand, ResponseCode
from rocketmq_emulator.protocol.emulator_requests import BrokerLifecycleRequestHeader, EmulatorRequestCode
from rocketmq_emulator.protocol.transport import DispatchTable, RemotingConnection


class BrokerControls(Protocol):
    """The test controls of brokers (`broker-a`, its slave `broker-a/1`): the Emulator's, in one process, and
    the supervisor's of `serve --processes`."""

    async def stop_broker(self, name: str, route_delay: float = 0.0) -> None: ...

    async def start_broker(self, name: str) -> None: ...

    async def kill_broker(self, name: str) -> None: ...

    def pause_broker(self, name: str, paused: bool = True) -> None: ...


_DONE = {"kill": "killed", "pause": "paused", "resume": "resumed", "stop": "stopped", "start": "started"}


async def control_broker(target: BrokerControls, name: str, what: str, route_delay: float = 0.0) -> str:
    """Kill, pause, resume, stop or start broker `name`; what was done ("killed", ...)."""
    if what == "kill":
        await target.kill_broker(name)
    elif what in ("pause", "resume"):
        target.pause_broker(name, what == "pause")
    elif what == "stop":
        await target.stop_broker(name, route_delay)
    elif what == "start":
        await target.start_broker(name)
    else:
        raise BrokerError(ResponseCode.SYSTEM_ERROR, f"no broker control {what!r} (kill, pause, resume, stop, start)")
    return _DONE[what]


def register_broker_controls(table: DispatchTable, target: BrokerControls) -> None:
    """The name server's emulator requests STOP_BROKER, START_BROKER, KILL_BROKER and PAUSE_BROKER (`admin
    stopBroker`, `startBroker`, `killBroker`, `pauseBroker`), answered by `target`."""
    whats = {EmulatorRequestCode.STOP_BROKER: "stop", EmulatorRequestCode.START_BROKER: "start",
             EmulatorRequestCode.KILL_BROKER: "kill"}

    async def control(req: RemotingCommand, conn: RemotingConnection) -> RemotingCommand:
        h = BrokerLifecycleRequestHeader.from_ext(req.ext_fields)
        what = whats.get(EmulatorRequestCode(req.code)) or ("pause" if h.paused else "resume")
        done = await control_broker(target, h.broker_name, what, h.route_delay_millis / 1000)
        return RemotingCommand.response_to(req, remark=f"{h.broker_name} {done}")
    table.register([*whats, EmulatorRequestCode.PAUSE_BROKER], control)
