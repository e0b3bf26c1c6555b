"""Subscription groups (reference §6.3, §9.16): auto-created on first use; `config/subscriptionGroup.json`."""

from __future__ import annotations

from pathlib import Path

from rocketmq_emulator.protocol.admin_bodies import DataVersion, SubscriptionGroupConfig, SubscriptionGroupWrapper
from rocketmq_emulator.protocol.topics import TOOL_GROUPS, is_system_group

from .config_file import load_config_file, write_config_file


class SubscriptionGroupManager:
    def __init__(self, config_dir: Path, *, auto_create: bool) -> None:
        self.path = config_dir / "subscriptionGroup.json"
        self.auto_create = auto_create
        self.table: dict[str, SubscriptionGroupConfig] = {g: SubscriptionGroupConfig(group_name=g) for g in TOOL_GROUPS}
        self.data_version = DataVersion(counter=0)

    def load(self) -> None:
        wrapper = load_config_file(self.path, SubscriptionGroupWrapper.decode)
        if wrapper is not None:
            self.table.update(wrapper.subscription_group_table)
            self.data_version = wrapper.data_version

    def persist(self) -> None:
        write_config_file(self.path, SubscriptionGroupWrapper(subscription_group_table=dict(self.table),
                                                              data_version=self.data_version).encode(pretty=True))

    def find(self, group: str) -> SubscriptionGroupConfig | None:
        """The group's config, auto-created (and persisted) when allowed."""
        cfg = self.table.get(group)
        if cfg is None and (self.auto_create or is_system_group(group)):
            cfg = self.table[group] = SubscriptionGroupConfig(group_name=group)
            self.data_version = self.data_version.next_version()
            self.persist()
        return cfg

    def update(self, cfg: SubscriptionGroupConfig) -> None:
        self.update_many([cfg])

    def update_many(self, cfgs: list[SubscriptionGroupConfig]) -> None:
        """Create or change groups with one version step and one write of subscriptionGroup.json."""
        if not cfgs:
            return
        for cfg in cfgs:
            self.table[cfg.group_name] = cfg
        self.data_version = self.data_version.next_version()
        self.persist()

    def delete(self, group: str) -> bool:
        if self.table.pop(group, None) is None:
            return False
        self.data_version = self.data_version.next_version()
        self.persist()
        return True
