"""Test support, in one place: what the project's tests, integration tests and benchmarks share with the pytest
plugin that users install (README "pytest plugin").

A layer above `broker/` and `client/` (tests/test_layering.py): nothing below imports it. Modules, each imported
only where it is used:

* `ports`: free loopback ports (`free_port`, `free_broker_port` with the broker's VIP port).
* `waits`: bounded polling (`wait_for` for async code, `wait_until` for sync code, `wait_until_quiet` for a
  file that stops growing).
* `emulator_process`: `launch_emulator()`, the emulator in a subprocess on free ports (`RocketMQBroker`: its
  addresses, clients and faults).
* `emulator_thread`: `EmulatorThread`, the emulator in this process on its own event-loop thread.
* `broker_harness`: `BrokerHarness`, a broker with no sockets (a real store and managers, never started) whose
  handlers get request frames by hand, for unit tests of the broker's rules (tests/broker/test_handler_*.py).
* `pytest_plugin` (with `pytest_trace`): the fixtures, registered by the `pytest11` entry point.
"""
