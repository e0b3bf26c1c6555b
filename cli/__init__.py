"""The `rocketmq-emulator` command line, the layer above `broker`, `client` and `spark_tools` (as RocketMQ's
`tools` module holds mqadmin): one argparse tree, every command run in this process, each command's module
imported only when it is the one chosen.

* `main`: the entry point and the tree (`rocketmq-emulator`, `python -m rocketmq_emulator.cli`).
* `serve`: the name server and broker(s), flags and `ROCKETMQ_EMULATOR_*` variables to a BrokerConfig.
* `trace`: print a saved wire trace.
* `client_commands` (with `admin_commands`): `admin <command>`, `produce`, `consume`, `health`.
* `seed`: Spark seeding's arguments (the job is spark_tools/seed_job.py).
* `args`: the one-line parser, checked argument types and exit statuses every command uses; `version`.
"""
