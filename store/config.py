"""MessageStoreConfig: the store's settings, named after RocketMQ's `MessageStoreConfig` properties in snake_case.

Defaults are RocketMQ 4.9.x defaults (reference §8.2-§8.7, §9.3) unless marked *emulator*:

* ``total_physical_memory_size`` (*emulator*): the RAM size the "on disk" rule of §9.3/§9.7 uses
  (a message is "on disk" when commitlog max offset - its offset > RAM x ``access_message_in_memory_max_ratio``
  %). ``None`` (default) = unlimited, i.e. every message counts as "in memory", which makes pull batch sizes and
  QUERY_CONSUMER_OFFSET deterministic instead of depending on the machine.
* ``correct_min_offset_across_files`` (*emulator*): ``False`` = the 4.x rule of §8.4 (only the first consume-queue
  file is searched when the min logical offset is corrected; unchanged if nothing in it qualifies); ``True`` =
  the 5.x rule (search every file; if nothing qualifies the min becomes the max offset).
* ``preallocate_mapped_file`` (*emulator*): reserve the blocks of every new mapped file (``posix_fallocate``) so a
  full disk is reported when a file is created (CREATE_MAPEDFILE_FAILED) instead of killing the process with
  SIGBUS on a write into the mapping.
* ``store_host`` / ``store_port`` (*emulator*, brokerIP1 + listen port in RocketMQ): written into every record's
  STOREHOST and into offset message ids.

Frozen: the broker builds it from its settings (broker/settings.py, the one parser of RocketMQ's key names) and
hands a new one to `MessageStore.reconfigure` when a setting changes at run time.
"""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass, field

from rocketmq_emulator.protocol.topics import DEFAULT_MESSAGE_DELAY_LEVEL


class FlushDiskType(enum.Enum):
    ASYNC_FLUSH = "ASYNC_FLUSH"
    SYNC_FLUSH = "SYNC_FLUSH"


class BrokerRole(enum.Enum):
    """4.9.8's brokerRole: a master (ASYNC: a put is answered once stored; SYNC: once a slave has it too) or a
    SLAVE, whose commitlog is a copy of its master's (store/replication.py) and which refuses puts."""
    ASYNC_MASTER = "ASYNC_MASTER"
    SYNC_MASTER = "SYNC_MASTER"
    SLAVE = "SLAVE"


def _default_root() -> str:
    return os.path.join(os.path.expanduser("~"), "store")


@dataclass(frozen=True, slots=True)
class MessageStoreConfig:
    store_path_root_dir: str = field(default_factory=_default_root)
    store_path_commit_log: str | None = None  # default <root>/commitlog
    mapped_file_size_commit_log: int = 1024 * 1024 * 1024
    mapped_file_size_consume_queue: int = 300_000 * 20
    max_message_size: int = 4 * 1024 * 1024

    flush_disk_type: FlushDiskType = FlushDiskType.ASYNC_FLUSH
    flush_interval_commit_log: int = 500  # ms, async flush period
    flush_interval_consume_queue: int = 1000  # ms; also writes the checkpoint
    check_crc_on_recover: bool = True
    #: after a crash, a bad record followed by valid ones: False (default) refuses to start; True cuts them (after
    #: copying them aside to <root>/recovery-cut-<offset>.bin, with an ERROR naming how many messages are lost)
    recovery_cut_invalid_records: bool = False

    # retention (§8.5)
    file_reserved_time: int = 72  # hours
    delete_when: str = "04"
    disk_max_used_space_ratio: int = 75  # percent
    disk_space_warning_level_ratio: int = 90  # percent; above: store not writable
    disk_space_clean_forcibly_ratio: int = 85  # percent; above: delete without waiting for expiry
    clean_file_forcibly_enable: bool = True
    delete_file_batch_max: int = 10
    clean_resource_interval: int = 10_000  # ms, how often the broker should call clean_expired_files

    # pull (§9.3)
    max_transfer_bytes_on_message_in_memory: int = 256 * 1024
    max_transfer_count_on_message_in_memory: int = 32
    max_transfer_bytes_on_message_in_disk: int = 64 * 1024
    max_transfer_count_on_message_in_disk: int = 8
    access_message_in_memory_max_ratio: int = 40
    max_filter_message_count: int = 16_000  # bytes of consume-queue units scanned at most per pull
    total_physical_memory_size: int | None = None

    # key index (§8.7)
    message_index_enable: bool = True
    max_hash_slot_num: int = 5_000_000
    max_index_num: int = 5_000_000 * 4
    max_msgs_num_batch: int = 64  # QUERY_MESSAGE: max results

    # schedule topic: delivery time = store time + delay of the level (used when recovery re-dispatches)
    message_delay_level: str = DEFAULT_MESSAGE_DELAY_LEVEL

    # master-slave replication (4.9.8's HA service; store/replication.py, broker/ha/)
    broker_role: BrokerRole = BrokerRole.ASYNC_MASTER
    #: a master's HA port (None: the broker port + 1, as 4.9.8's BrokerStartup sets it; a free one when the broker
    #: port is 0); a broker started again keeps the one it had
    ha_listen_port: int | None = None
    ha_send_heartbeat_interval: int = 5000  # ms: a master's heartbeat to an idle slave, a slave's offset report
    ha_housekeeping_interval: int = 20_000  # ms: a connection silent this long is closed
    ha_transfer_batch_size: int = 32 * 1024  # bytes of commitlog per transfer, at most
    ha_slave_fallbehind_max: int = 256 * 1024 * 1024  # bytes: a slave further behind is not "ok" (SYNC_MASTER)
    sync_flush_timeout: int = 5000  # ms: SYNC_FLUSH's wait for the disk
    slave_timeout: int = 3000  # ms: SYNC_MASTER's wait for a slave's ack (then FLUSH_SLAVE_TIMEOUT)

    correct_min_offset_across_files: bool = False
    preallocate_mapped_file: bool = True
    store_host: str = "127.0.0.1"
    store_port: int = 10911

    # -- paths ---------------------------------------------------------------------------------------
    @property
    def commit_log_dir(self) -> str:
        return self.store_path_commit_log or os.path.join(self.store_path_root_dir, "commitlog")

    @property
    def consume_queue_dir(self) -> str:
        return os.path.join(self.store_path_root_dir, "consumequeue")

    @property
    def index_dir(self) -> str:
        return os.path.join(self.store_path_root_dir, "index")

    @property
    def checkpoint_path(self) -> str:
        return os.path.join(self.store_path_root_dir, "checkpoint")

    @property
    def format_path(self) -> str:
        """The store's format version (store/format.py)."""
        return os.path.join(self.store_path_root_dir, "storeFormat.json")

    @property
    def abort_path(self) -> str:
        return os.path.join(self.store_path_root_dir, "abort")

    @property
    def lock_path(self) -> str:
        return os.path.join(self.store_path_root_dir, "lock")
