"""protocol/dispatch.py: deferred request families are loaded on the first look-up of a code the table lacks (once),
handler wrappers reach them too, and a `without` copy never takes its excluded codes."""

from __future__ import annotations

from rocketmq_emulator.protocol import RemotingCommand, RequestCode
from rocketmq_emulator.protocol.dispatch import DispatchTable

SEND, PULL, ADMIN = RequestCode.SEND_MESSAGE, RequestCode.PULL_MESSAGE, RequestCode.GET_BROKER_CONFIG


def answer(req, conn):  # type: ignore[no-untyped-def]
    return RemotingCommand.response_to(req, remark="plain")


def table_with_deferred(loads: list[str]) -> DispatchTable:
    table = DispatchTable("test")
    table.register([SEND, PULL], answer)

    def load(t: DispatchTable) -> None:
        loads.append(t.name)
        t.register([ADMIN, PULL + 1000], answer)
    table.defer(load)
    return table


def test_a_deferred_family_loads_on_the_first_code_not_found_and_only_once():
    loads: list[str] = []
    table = table_with_deferred(loads)
    assert table.get(SEND) is answer and loads == []  # known codes do not load anything
    assert table.get(ADMIN) is answer and loads == ["test"]
    assert table.get(9999) is None and table.get(ADMIN) is answer and loads == ["test"]


def test_an_unknown_code_loads_the_deferred_families_then_is_still_unknown():
    loads: list[str] = []
    table = table_with_deferred(loads)
    assert table.get(9999) is None and loads == ["test"]
    assert table.get(ADMIN) is answer and loads == ["test"]


def test_codes_include_the_deferred_families():
    assert table_with_deferred([]).codes() == {SEND, PULL, ADMIN, PULL + 1000}


def test_wrappers_apply_to_handlers_registered_later_except_skipped_codes():
    table = table_with_deferred([])
    wrapped: list[object] = []

    def wrap(handler):  # type: ignore[no-untyped-def]
        def inner(req, conn):  # type: ignore[no-untyped-def]
            return RemotingCommand.response_to(req, remark="wrapped")
        wrapped.append(handler)
        return inner
    table.wrap_handlers(wrap, skip=(PULL,))
    assert table.get(PULL) is answer
    for code in (SEND, ADMIN, PULL + 1000):
        assert table.get(code)(RemotingCommand.request(code), None).remark == "wrapped"  # type: ignore[misc,arg-type]
    assert len(wrapped) == 3


def test_a_copy_without_codes_never_registers_them_and_loads_its_own_deferred_families():
    loads: list[str] = []
    table = table_with_deferred(loads)
    vip = table.without(PULL, PULL + 1000, name="vip")
    assert vip.get(PULL) is None and loads == ["vip"]  # a miss: the copy loads the families into itself
    assert vip.get(ADMIN) is answer and vip.get(PULL + 1000) is None
    assert vip.codes() == {SEND, ADMIN}
    assert table.get(PULL) is answer and table.get(ADMIN) is answer and loads == ["vip", "test"]
