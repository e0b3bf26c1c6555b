"""The parity tier: scenarios kept as data (`tests/parity/corpus/*.toml`), run against the real Apache RocketMQ
broker to record its answers (`python -m rocketmq_emulator.testing.parity record`) and against the emulator to
compare (`tests/parity/`).

- `corpus.py`: a scenario file -> `Scenario` (steps with placeholders), and the placeholder rules;
- `remoting.py`: runs a scenario's steps over real TCP against a name server and a broker; what came back, as data;
- `normalise.py`: what differs between two fresh real brokers (ids, times, ports, ...) made equal, each rule with
  its reason;
- `compare.py`: two recordings -> differences (step, request, field, real value, emulator value), and the list
  of deliberate differences of the default mode;
- `real.py`: the real brokers of `../shared/realbroker*` started and stopped;
- `__main__.py`: the `record`, `replay` and `check` commands.
"""
