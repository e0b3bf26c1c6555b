"""SQL92 property filters: RocketMQ's filter grammar and 4.9.8's evaluation rules (broker/core/filter/sql92.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rocketmq_emulator.broker.core.filter.consumer_filter import ConsumerFilterManager, compile_record_filter
from rocketmq_emulator.broker.core.filter.sql92 import SQL92Error, compile_sql92
from rocketmq_emulator.protocol.message import MessageExt

MSG = {"a": "7", "b": "2.5", "region": "eu", "TAGS": "TagA", "flag": "true", "name": "it's", "neg": "-3"}


@pytest.mark.parametrize("expression, expected", [
    ("a > 5", True), ("a >= 7", True), ("a < 7", False), ("a <= 7.0", True), ("a = 7", True), ("a <> 7", False),
    ("b > 2.0", True), ("b = 2.5", True),
    # as upstream, a string compared with a long literal must parse as a long: "2.5" does not (no match)
    ("b > 2", None), ("neg < -2", True), ("neg = -3", True), ("a > +5", True),
    ("a BETWEEN 1 AND 7", True), ("a BETWEEN 8 AND 9", False), ("a NOT BETWEEN 8 AND 9", True),
    ("region IN ('eu', 'us')", True), ("region NOT IN ('eu')", False), ("region = 'eu'", True),
    ("TAGS = 'TagA'", True), ("tags = 'TagA'", None),  # property names are case-sensitive
    ("name = 'it''s'", True), ("flag = TRUE", True), ("flag = FALSE", False),
    ("missing IS NULL", True), ("a IS NULL", False), ("a IS NOT NULL", True), ("missing IS NOT NULL", False),
    ("a > 5 AND region IN ('eu') AND TAGS <> 'TagB'", True),
    ("a > 5 and (region = 'us' or b < 3.0)", True), ("NOT (a > 5)", False), ("not (a > 5)", False),
    ("a = 5 OR a = 7", True), ("a = 5 OR a = 6", False),
    # three-valued logic: a missing property makes a comparison unknown, which never matches
    ("missing > 1", None), ("missing = 'x'", None), ("NOT (missing > 1)", None), ("missing IN ('x')", None),
    ("missing > 1 AND a > 100", False), ("missing > 1 OR a > 5", True), ("missing > 1 OR a > 100", None),
    # strings that are no numbers make a numeric comparison fail (no match), as upstream's NumberFormatException
    ("region > 1", None), ("a > b", True), ("region > b", None),
    # a bare property is a condition only for a boolean value, which a property never has
    ("flag", False), ("missing", None), ("a > 5 AND flag", False),
    ("a = 7L", True), ("a > .5", True), ("a > 5E0", True), ("a > 6.", True),
])
def test_evaluation(expression, expected):
    assert compile_sql92(expression).evaluate(MSG) is expected
    assert compile_sql92(expression).matches(MSG) is (expected is True)


@pytest.mark.parametrize("expression, message", [
    ("", "empty"),
    ("a >", "the expression ends too soon (after column 3)"),
    ("*", "unexpected character '*' at column 1"),
    ("a = 'eu", "the string that starts at column 5 is not closed (add a ')"),
    ("a > 1\n  AND", "the expression ends too soon (after line 2, column 5)"),
    ("a == 1", "unexpected '=' at column 4"),
    ("a > 5 AND", "the expression ends too soon (after column 9)"),
    ("a NOT 5", "unexpected 'NOT' at column 3"),
    ("a IN (1, 2)", "unexpected '1' at column 7"),
    ("a # 1", "unexpected character '#' at column 3"),
    ("a = NULL", "use IS NULL"),
    ("5 AND a > 1", "will not result in a boolean value: 5"),
    ("'x'", "will not result in a boolean value"),
    ("a > 'x'", "value 'x' cannot be compared"),
    ("a BETWEEN 5 AND 1", "the low value must not be above the high one"),
    ("1 IN ('a')", "IN needs a property on its left"),
    ("TRUE = 5", "cannot be compared with"),
    # NOT binds tighter than a comparison (as in RocketMQ's grammar): NOT a > 5 is (NOT a) > 5, refused
    ("NOT a > 5", "a condition cannot be compared"),
    ("a > 99999999999999999999", "out of the long range"),
])
def test_bad_expressions_are_refused_with_the_parsers_message(expression, message):
    with pytest.raises(SQL92Error) as info:
        compile_sql92(expression)
    assert message in str(info.value)


def test_keywords_are_case_insensitive_and_words_containing_them_are_properties():
    assert compile_sql92("notes = 'x' AnD android = 'y' oR island IS nOt NuLL").matches(
        {"notes": "x", "android": "y"})


def test_the_record_filter_reads_a_stored_records_properties():
    record = MessageExt(topic="T", body=b"x" * 100, properties={"a": "7", "TAGS": "TagA"}).encode()
    assert compile_record_filter("a > 5 AND TAGS = 'TagA'")(record) is True
    assert compile_record_filter("a > 7")(record) is False


def test_the_filter_manager_compiles_once_per_subscription_version():
    manager = ConsumerFilterManager()
    first = manager.register("g", "T", "a > 1", 100)
    assert manager.register("g", "T", "a > 1", 100) is first  # same version: not compiled again
    assert manager.register("g", "T", "a > 1", 99) is first
    newer = manager.register("g", "T", "a > 2", 101)
    assert newer is not first and manager.get("T", "g") is newer and newer.record_filter is not None
    bad = manager.register("g", "T", "a >> 2", 102)
    assert bad.record_filter is None and "unexpected '>'" in (bad.error or "")
    assert callable(manager.build("a > 1")) and manager.build("a > 1") is manager.build("a > 1")
    assert isinstance(manager.build("a >"), str)


@pytest.mark.parametrize("expression, same_as", [
    ("a > 5 )", "a > 5"), ("(a > 5))", "a > 5"), ("a > 5 b", "a > 5"), ("region = 'eu' garbage", "region = 'eu'"),
    ("a > 6.5.5", "a > 6.5"), ("a > --5", "a > 5"),  # `--5` without a newline is no comment: two minus signs
    ("a > 100 -- a comment\n OR a < 10", "a > 100 OR a < 10"),  # a comment to the end of a line is skipped
])
def test_the_parser_reads_the_longest_whole_expression_and_ignores_the_rest_as_4_9_8(expression, same_as):
    for message in (MSG, {"a": "5.5"}, {"a": "101"}, {"region": "us", "a": "1"}):
        assert compile_sql92(expression).evaluate(message) is compile_sql92(same_as).evaluate(message)


def _recorded_texts() -> list[dict[str, str | None]]:
    """What 4.9.8's SelectorParser answered for each expression on this JDK (sql92_java_texts.json says how)."""
    return json.loads((Path(__file__).parent / "sql92_java_texts.json").read_text())["expressions"]


@pytest.mark.parametrize("row", _recorded_texts(), ids=lambda row: repr(row["expression"]))
def test_accepted_and_refused_as_the_real_parser_with_its_exception_text(row):
    """`SQL92Error.java` is what `--compat 4.9` answers CHECK_CLIENT_CONFIG with: the real parser's text."""
    try:
        compile_sql92(row["expression"])
    except SQL92Error as exc:
        assert row["java"] is not None, f"4.9.8 accepts {row['expression']!r}; the emulator refused: {exc}"
        assert exc.java == row["java"]
    else:
        assert row["java"] is None, f"4.9.8 refuses {row['expression']!r}; the emulator accepted it"
