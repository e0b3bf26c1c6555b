"""The per-broker cores: what a broker does, whichever front asks (remoting handlers, the gRPC endpoint, the
dashboard). The send and consume cores, POP, transactions, delayed and timed delivery, held pulls, filters, the
calls a broker makes of its clients (`broker2client.py`), the read model the fronts read, and the Protocols a
front takes of its broker (`broker_context.py`, `broker_state.py`).

Cores import the state below them (`broker/state/`), the store and the protocol, and the configuration
(`broker/config.py`, `settings.py`, `config_keys.py`, `clock.py`); never a front, the controller or the process
level (tests/test_layering.py)."""
