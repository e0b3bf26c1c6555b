"""What a broker keeps: topic and subscription-group configs, consumer offsets (clustering and broadcasting, with
their durable journal and history), connected clients, queue locks, statistics, and RocketMQ's config-file
routine they all write through.

State imports only the store, the protocol and the configuration (`broker/config.py`, `settings.py`,
`config_keys.py`, `clock.py`): never a core, a front, the controller or the process level
(tests/test_layering.py)."""
