"""Spark tools (the only package that imports pyspark; `pip install 'rocketmq-emulator[spark]'`): the `rocketmq`
data source, `seed_topic` / `read_topic`, and the job behind `rocketmq-emulator seed` (seed_job.py; its command
line is cli/seed.py). README "Spark".

The names below load pyspark on first use, so that `rocketmq-emulator seed -h`, its argument errors and its
checks of the target need neither pyspark nor a JVM."""

from __future__ import annotations

from typing import Any

_EXPORTS = {"RocketMQDataSource": "datasource", "RocketMQSourceError": "datasource", "SeedError": "seed",
            "SeedReport": "seed", "generate": "seed", "read_topic": "seed", "register": "seed",
            "seed_topic": "seed", "session": "seed", "write_topic": "seed"}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'rocketmq_emulator.spark_tools' has no attribute {name!r}")
    import importlib
    return getattr(importlib.import_module(f".{module}", __name__), name)
