"""The broker's and the name server's configuration at run time: GET_BROKER_CONFIG / UPDATE_BROKER_CONFIG and
GET_NAMESRV_CONFIG / UPDATE_NAMESRV_CONFIG (mqadmin getBrokerConfig, updateBrokerConfig, getNamesrvConfig,
updateNamesrvConfig), as 4.9.8's `Configuration` does it:

* the answer to a get is a properties text (`key=value` lines) of every key 4.9.8 reports (broker/config_keys.py)
  plus this emulator's own, with the running values;
* an update changes only keys that exist (any other key is ignored, as 4.9.8's `mergeIfExist` does), bumps the
  data version and writes the whole configuration to the config file (`<store>/config/broker.properties`,
  `<store>/namesrv/namesrv.properties`); keys in the black list are refused with NO_PERMISSION;
* unlike 4.9.8, a value that does not parse as the key's type (`defaultTopicQueueNums=abc`) is refused with
  SYSTEM_ERROR naming the key, and nothing of that update is applied (4.9.8 answers success and drops it; so
  does a broker with compat 4.9, which also reports 4.9.8's keys only).

Keys fall in three groups: LIVE ones take effect at once (the broker reads them on each request, or a hook
here passes them on); NEXT_START ones are recorded and reported now and used from the next start (names,
ports, paths, file sizes: what the running process cannot change under its clients); every other 4.9.8 key is
stored and reported only. Keys changed at run time are listed on the config file's first line (a comment, so
the file stays a plain properties file) and re-applied at the next start, over the start-up configuration, as
on 4.9.8 where updateBrokerConfig rewrites the broker's config file.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from rocketmq_emulator.protocol import BrokerError, PermName, ResponseCode
from rocketmq_emulator.protocol.admin_bodies import DataVersion

from ..config import BrokerConfig, Compat, parse_properties
from ..config_keys import (BROKER_ALWAYS_BLACKLISTED, BROKER_KEYS, NAMESRV_ALWAYS_BLACKLISTED, NAMESRV_KEYS,
                          NOT_4_9_KEYS, value_problem)
from ..settings import SETTINGS, SettingError, current, parse_value, text_of, updated
from ..state.config_file import write_config_file

if TYPE_CHECKING:
    from .broker_state import BrokerState

log = logging.getLogger("rocketmq_emulator.config")

UPDATED_MARK = "#updated at run time: "


def rocketmq_home() -> str:
    """rocketmqHome as a broker reports it: ROCKETMQ_HOME, else this emulator's own installation folder."""
    return os.environ.get("ROCKETMQ_HOME") or str(Path(__file__).resolve().parents[1])

#: take effect at once
LIVE = ("autoCreateTopicEnable", "autoCreateSubscriptionGroup", "brokerPermission", "flushConsumerOffsetInterval",
        "longPollingEnable", "shortPollingTimeMills", "notifyConsumerIdsChangedEnable", "maxMessageSize",
        "fileReservedTime", "deleteWhen", "diskMaxUsedSpaceRatio", "flushIntervalCommitLog", "newGroupOffset",
        "useServerSideResetOffset", "enableBroadcastOffsetStore", "broadcastOffsetExpireSecond", "slaveReadEnable",
        "registerNameServerPeriod", "slaveSynchronizePeriod", "slaveTimeout", "haSlaveFallbehindMax")
#: modelled by this emulator, used from the next start
NEXT_START = ("brokerName", "brokerClusterName", "listenPort", "brokerIP1", "storePathRootDir",
              "mappedFileSizeCommitLog", "mappedFileSizeConsumeQueue", "defaultTopicQueueNums", "messageDelayLevel",
              "regionId", "traceOn", "offsetDurability", "vipChannelEnabled")
#: 4.9.8 never applies an update to these (enum fields): the update succeeds and the value stays
UNCHANGEABLE = ("flushDiskType", "brokerRole")


#: the kind of a key this emulator models: its value goes through the settings' parser (broker/settings.py)
SETTING = "setting"


def _kind(key: str) -> str | None:
    if key in SETTINGS and SETTINGS[key].scope != "process":
        return SETTING
    if key in BROKER_KEYS:
        return BROKER_KEYS[key][0]
    return {"brokerIP2": "str", "haListenPort": "int", "namesrvAddr": "str"}.get(key)


def check_value(key: str, kind: str, text: str) -> None:
    """A modelled key's value through the one parser, a key only reported as 4.9.8 types it."""
    if kind == SETTING:
        try:
            parse_value(key, text)
            return
        except SettingError as exc:
            problem = str(exc)
    else:
        why = value_problem(kind, text)
        if why is None:
            return
        problem = f"invalid value for {key}: {why}"
    raise BrokerError(ResponseCode.SYSTEM_ERROR, f"{problem}; nothing of this update was applied")


class RuntimeConfiguration:
    """What both sides share: the properties text, the checked update, the config file."""

    def __init__(self, path: Path, blacklisted: tuple[str, ...]) -> None:
        self.path = path
        self.blacklisted = blacklisted
        self.stored: dict[str, str] = {}  # keys reported only, and NEXT_START ones changed at run time
        self.updated: list[str] = []  # keys changed at run time, in the order first changed
        self.data_version = DataVersion(counter=0)

    # -- what a subclass provides -------------------------------------------------------------------
    def kind(self, key: str) -> str | None:
        raise NotImplementedError

    def running(self) -> dict[str, str]:
        """Every key with its value (defaults, then the running values)."""
        raise NotImplementedError

    def set_running(self, key: str, text: str) -> bool:
        """Apply a modelled key at once; False: not modelled here (stored and reported)."""
        return False

    def black_list(self) -> set[str]:
        return set(self.blacklisted)

    def lenient(self) -> bool:
        """Whether a value that does not parse is dropped, the rest applied (4.9.8), or refuses the update."""
        return False

    # -- shared -------------------------------------------------------------------------------------
    def properties(self) -> dict[str, str]:
        props = self.running()
        props.update(self.stored)
        return props

    def properties_text(self) -> str:
        """4.9.8's MixAll.properties2String layout: `key=value` lines."""
        return "".join(f"{k}={v}\n" for k, v in self.properties().items())

    def update(self, body: bytes | None) -> list[str]:
        """An UPDATE_*_CONFIG body; returns the keys applied. Raises BrokerError (nothing applied) on a black-
        listed key or a bad value."""
        if not body:
            return []
        try:
            props = parse_properties(body.decode("utf-8"))
        except UnicodeDecodeError:
            raise BrokerError(ResponseCode.SYSTEM_ERROR, "string2Properties error: the body is not UTF-8") from None
        if self.black_list() & set(props):
            raise BrokerError(ResponseCode.NO_PERMISSION, "Can not update config in black list.")
        known = {}
        for key, text in props.items():
            kind = self.kind(key)
            if kind is None:
                log.warning("config update: unknown key %r ignored (as 4.9.8 does)", key)
                continue
            if self.lenient():  # 4.9.8 answers success and drops a value it cannot parse
                try:
                    check_value(key, kind, text)
                except BrokerError as exc:
                    log.warning("config update: %s; ignored (as 4.9.8 does)", exc.remark.split(";")[0])
                    continue
            else:
                check_value(key, kind, text)
            known[key] = text.strip()
        accepted = list(known)
        for key in [k for k in known if k in UNCHANGEABLE]:
            log.warning("config update: %s cannot change at run time (4.9.8 keeps it too)", key)
            del known[key]
        self.apply(known)
        self.updated.extend(k for k in known if k not in self.updated)
        self.data_version = self.data_version.next_version()
        self.persist()
        return accepted

    def apply(self, values: dict[str, str]) -> None:
        """Checked values: the modelled ones set (`set_running`), the others stored and reported."""
        for key, text in values.items():
            if not self.set_running(key, text):
                self.stored[key] = text

    def persist(self) -> None:
        header = f"{UPDATED_MARK}{','.join(self.updated)}\n" if self.updated else ""
        write_config_file(self.path, (header + self.properties_text()).encode("utf-8"))

    def load_updates(self) -> None:
        """At start: re-apply the keys a previous run changed (listed on the file's first line)."""
        try:
            text = self.path.read_text("utf-8")
        except (FileNotFoundError, UnicodeDecodeError):
            return
        except OSError as exc:
            log.warning("%s unreadable (%s); run-time config changes not restored", self.path, exc)
            return
        first = text.split("\n", 1)[0]
        if not first.startswith(UPDATED_MARK):
            return
        props = parse_properties(text)
        restored: dict[str, str] = {}
        for key in (k.strip() for k in first[len(UPDATED_MARK):].split(",")):
            kind = self.kind(key)
            value = props.get(key)
            if kind is None or value is None:
                continue
            try:
                check_value(key, kind, value)
            except BrokerError as exc:
                log.warning("%s: %s", self.path, exc.remark)
                continue
            restored[key] = value
        self.apply(restored)
        self.updated.extend(restored)
        if self.updated:
            log.info("%s: restored run-time config changes of %s", self.path, ", ".join(self.updated))


# --------------------------------------------------------------------------------------------------
# the broker
# --------------------------------------------------------------------------------------------------
class BrokerConfiguration(RuntimeConfiguration):
    """Holds the broker's current config (`BrokerController.config` reads it here: one holder, no stale copies);
    an update of modelled keys builds a new frozen config through the settings' parser and swaps it here."""

    def __init__(self, config: BrokerConfig, config_dir: Path, namesrv_addr: Callable[[], str] = lambda: "",
                 listen_port: Callable[[], int] | None = None) -> None:
        super().__init__(config_dir / "broker.properties", BROKER_ALWAYS_BLACKLISTED)
        self.config = config
        self.namesrv_addr = namesrv_addr
        self.listen_port = listen_port or (lambda: self.config.listen_port)
        #: set once the broker is built (`BrokerController.config_changed`): from then on only LIVE keys apply,
        #: and each update is passed to it
        self.on_change: Callable[[BrokerConfig, list[str]], None] | None = None

    def kind(self, key: str) -> str | None:
        return _kind(key)

    def black_list(self) -> set[str]:
        return set(self.blacklisted) | set(filter(None, self.properties().get("configBlackList", "").split(";")))

    def running(self) -> dict[str, str]:
        c = self.config
        props = {k: default for k, (_, default) in BROKER_KEYS.items()}
        for key, s in SETTINGS.items():
            value = None if s.scope == "process" else current(c, key)
            if value is not None:
                props[key] = text_of(value)
        if c.compat is Compat.V4_9:  # the emulator's own settings and 5.x's are not 4.9.8 keys
            props = {k: v for k, v in props.items() if k not in NOT_4_9_KEYS}
        port = self.listen_port()
        root = Path(c.store.store_path_root_dir).resolve()
        props.update(brokerIP2=c.broker_ip1, namesrvAddr=self.namesrv_addr(), listenPort=str(port),
                     haListenPort=str(port + 1), storePathRootDir=str(root),
                     storePathCommitLog=str(root / "commitlog"), rocketmqHome=rocketmq_home())
        return props

    def lenient(self) -> bool:
        return self.config.compat is Compat.V4_9

    def apply(self, values: dict[str, str]) -> None:
        """Before the broker is built (a previous run's updates) every modelled key applies; afterwards LIVE ones
        do, NEXT_START ones are stored and reported, used from the next start."""
        now = {k: v for k, v in values.items() if _kind(k) == SETTING and (k in LIVE or self.on_change is None)}
        self.stored.update((k, v) for k, v in values.items() if k not in now)
        if not now:
            return
        old, self.config = self.config, updated(self.config, now)
        for key in now:
            self.stored.pop(key, None)
        if self.on_change is not None:
            self.on_change(old, list(now))


def _set_auto_create_topic(b: BrokerState) -> None:
    b.topic_config_manager.auto_create_topic_enable = b.config.auto_create_topic_enable


def _set_auto_create_group(b: BrokerState) -> None:
    b.subscription_group_manager.auto_create = b.config.auto_create_subscription_group


def _set_broker_permission(b: BrokerState) -> None:
    """4.9.8: the next registration carries the broker's permission as every topic's perm (when it lacks read
    or write), under a new data version so that the name server takes it."""
    tcm = b.topic_config_manager
    tcm.data_version = tcm.data_version.next_version()
    b.register_with_namesrv()


def _set_broadcast_expiry(b: BrokerState) -> None:
    b.broadcast_offsets.expire_s = b.config.broadcast_offset_expire_second


#: what a LIVE key's change tells the broker's collaborators that keep their own copy; the store is given its
#: new config by `BrokerController.config_changed`; every other LIVE key is read from `broker.config` on each use
#: (flushConsumerOffsetInterval: the offset timer; longPollingEnable, shortPollingTimeMills,
#: notifyConsumerIdsChangedEnable, newGroupOffset, useServerSideResetOffset, enableBroadcastOffsetStore)
LIVE_HOOKS: dict[str, Callable[[BrokerState], None]] = {
    "autoCreateTopicEnable": _set_auto_create_topic,
    "autoCreateSubscriptionGroup": _set_auto_create_group,
    "brokerPermission": _set_broker_permission,
    "broadcastOffsetExpireSecond": _set_broadcast_expiry,
}


def registered_perm(config: BrokerConfig, perm: int) -> int:
    """A topic's perm as the broker registers it (the name server's routes, and the gRPC front's): when the broker's
    own permission lacks read or write, 5.x registers the topic's perm AND the broker's, 4.9.8 the broker's in
    place of the topic's (so a write-only topic on a read-only broker is readable there)."""
    bp = config.broker_permission
    if bp & PermName.READ and bp & PermName.WRITE:
        return perm
    return bp if config.compat is Compat.V4_9 else perm & bp


# --------------------------------------------------------------------------------------------------
# the name server
# --------------------------------------------------------------------------------------------------
class NamesrvConfiguration(RuntimeConfiguration):
    """NamesrvConfig + NettyServerConfig; `orderMessageEnable` takes effect at once (routes carry the topic's
    ORDER_TOPIC_CONFIG only when it is true, as on 4.9.8)."""

    def __init__(self, config_dir: Path | None, port: Callable[[], int]) -> None:
        path = (config_dir or Path(".")) / "namesrv.properties"
        super().__init__(path, NAMESRV_ALWAYS_BLACKLISTED)
        self.config_dir = config_dir
        self.port = port
        self.order_message_enable = False

    def kind(self, key: str) -> str | None:
        return NAMESRV_KEYS[key][0] if key in NAMESRV_KEYS else ("int" if key == "listenPort" else None)

    def black_list(self) -> set[str]:
        return set(self.blacklisted) | set(filter(None, self.properties().get("configBlackList", "").split(";")))

    def running(self) -> dict[str, str]:
        props = {k: default for k, (_, default) in NAMESRV_KEYS.items()}
        if self.config_dir is not None:
            props["kvConfigPath"] = str((self.config_dir / "kvConfig.json").resolve())
            props["configStorePath"] = str(self.path.resolve())
        props["orderMessageEnable"] = text_of(self.order_message_enable)
        props["listenPort"] = str(self.port())
        props["rocketmqHome"] = rocketmq_home()
        return props

    def set_running(self, key: str, text: str) -> bool:
        if key == "orderMessageEnable":
            self.order_message_enable = text.lower() == "true"
            return True
        return False

    def persist(self) -> None:
        if self.config_dir is not None:  # a name server with no store directory keeps changes in memory
            super().persist()
