"""SQL92 property filters: RocketMQ's filter-module grammar (a JMS selector subset), parsed as its JavaCC parser
parses it (`selector_parser.py`) and compiled into a Python function over a message's properties.

    expr = compile_sql92("a > 5 AND region IN ('eu', 'us')")   # SQL92Error with the parser's message if bad
    expr.matches({"a": "7", "region": "eu"})                      # True

Grammar (keywords case-insensitive): `OR`, `AND`, `NOT`; `=`, `<>`, `IS [NOT] NULL`; `>`, `>=`, `<`, `<=`,
`[NOT] BETWEEN x AND y`, `prop [NOT] IN ('a', 'b')`; unary `+`/`-`; parentheses; literals: strings `'it''s'`,
longs `42` / `42L`, doubles `1.5`, `.5`, `5E3`, `TRUE`, `FALSE`, `NULL`; identifiers `[a-zA-Z_$][a-zA-Z0-9_$]*`
are message properties (`TAGS`, `KEYS` and user properties alike).

Evaluation follows 4.9.8's (SQL three-valued logic: a comparison with a missing property is unknown, and an
unknown result does not match):
* property values are strings; a string compared with a number is parsed as that number (`a > 5` with a = "7"),
  two strings by `>`/`<` are compared as doubles, by `=`/`<>` as text; a string that does not parse makes the
  message not match;
* a boolean compared with a number, or a number with a boolean, compares as "less" (Java's -1);
* `AND`/`OR`/`NOT` as SQL: FALSE AND unknown is FALSE, TRUE OR unknown is TRUE, NOT unknown is unknown;
* a bare property used as a condition (`a AND b`) is true only if its value is a boolean, which a property never
  is: so it never matches (as upstream's boolean cast).
Checks made when the expression is compiled, as upstream's parser makes them: `IN` needs a property on its
left; `>`-like operators take no string, boolean or NULL literal; `=` takes no NULL literal (use `IS NULL`);
a BETWEEN of two constants needs low <= high; a condition must be boolean (`5 AND a > 1` is refused).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from rocketmq_emulator.protocol.java_texts import number_format_message

from .selector_parser import SelectorSyntaxError, java_text, parse_selector

Value = Any  # str (a property), int (long), float (double), bool, or None (missing / unknown)
Evaluator = Callable[[Mapping[str, str]], Value]

class SQL92Error(ValueError):
    """An expression that does not parse or compile; the message is the parser's, `java` what 4.9.8 answers (None
    where that text is not known)."""

    def __init__(self, message: str, java: str | None = None) -> None:
        super().__init__(message)
        self.java = java


class _Unknown(Exception):
    """An evaluation that cannot be made (a string that is not a number): the message does not match."""


class Sql92Expression:
    """A compiled expression: `matches(properties)` (a dict of the message's properties)."""

    __slots__ = ("text", "_evaluate")

    def __init__(self, text: str, evaluate: Evaluator) -> None:
        self.text = text
        self._evaluate = evaluate

    def evaluate(self, properties: Mapping[str, str]) -> Value:
        """TRUE, FALSE or None (unknown); raises nothing: an evaluation error is None."""
        try:
            return self._evaluate(properties)
        except (_Unknown, ValueError, TypeError, OverflowError):
            return None

    def matches(self, properties: Mapping[str, str]) -> bool:
        return self.evaluate(properties) is True

    def __repr__(self) -> str:
        return f"Sql92Expression({self.text!r})"


def compile_sql92(text: str) -> Sql92Expression:
    """Parse and compile; SQL92Error (with the parser's message, and 4.9.8's text as `.java`) when the expression
    is not valid. As 4.9.8's parser, it reads the longest prefix that is a whole expression and ignores the rest."""
    if text is None or not text.strip():
        raise SQL92Error("the SQL92 expression is empty", _java_parse_error(text or ""))
    try:
        tree = parse_selector(text)
    except SelectorSyntaxError as exc:
        raise SQL92Error(f"invalid SQL92 expression {text!r}: {exc}", exc.java) from None
    try:
        condition = _as_condition(_Compiler().build(tree))
    except SQL92Error as exc:
        raise SQL92Error(f"invalid SQL92 expression {text!r}: {exc}", exc.java) from None
    return Sql92Expression(text, condition.fn)


def _java_parse_error(text: str) -> str | None:
    try:
        parse_selector(text)
    except SelectorSyntaxError as exc:
        return exc.java
    return None


# -- compiled nodes -----------------------------------------------------------------------------------
class _Node:
    """A compiled sub-expression: its function, whether it is boolean (a condition), and its constant value if it
    is a literal (`constant` True)."""

    __slots__ = ("fn", "boolean", "constant", "value", "prop", "java")

    def __init__(self, fn: Evaluator, *, boolean: bool = False, constant: bool = False, value: Value = None,
                 prop: str | None = None) -> None:
        self.fn, self.boolean, self.constant, self.value, self.prop = fn, boolean, constant, value, prop
        self.java: str | None = None  # how 4.9.8's Expression.toString writes it, where known


def _const(value: Value, *, boolean: bool = False) -> _Node:
    return _Node(lambda _p: value, boolean=boolean, constant=True, value=value)


def _as_condition(node: _Node) -> _Node:
    if node.boolean:
        return node
    if node.prop is not None:  # a bare property: true only for a boolean value, which a property never has
        fn = node.fn
        return _Node(lambda p: None if fn(p) is None else False, boolean=True)
    raise SQL92Error(f"the expression will not result in a boolean value: {_show(node)}",
                     _java_error("ParseException", "Expression will not result in a boolean value: {}", node))


def _java_show(node: _Node) -> str | None:
    return node.java


def _java_error(exception: str, template: str, *nodes: _Node) -> str | None:
    """4.9.8's text for a compile-time refusal: RuntimeException (its grammar's actions) or ParseException."""
    shown = [_java_show(n) for n in nodes]
    if None in shown:
        return None
    package = "org.apache.rocketmq.filter.parser." if exception == "ParseException" else "java.lang."
    return f"{package}{exception}: " + template.format(*shown)


def _show(node: _Node) -> str:
    if node.prop is not None:
        return node.prop
    if node.constant:
        return "NULL" if node.value is None else repr(node.value)
    return "an expression"


def _java_long(text: str) -> int:
    """Long.valueOf: an optional sign and ASCII digits, nothing else (no spaces, no underscores)."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not (digits.isascii() and digits.isdigit()):
        raise _Unknown(text)
    return int(text)


def _java_double(text: str) -> float:
    t = text.strip()
    if t.endswith(("d", "D", "f", "F")):
        t = t[:-1]
    if t.lower() in ("inf", "+inf", "-inf", "infinity", "+infinity", "nan") and t not in (
            "Infinity", "+Infinity", "-Infinity", "NaN"):
        raise _Unknown(text)
    return float(t)


def _compare(lv: Value, rv: Value) -> int:
    """Java's ComparisonExpression.__compare with string conversion on: -1, 0 or 1."""
    lt, rt = type(lv), type(rv)
    if lt is not rt:
        if lt is bool or rt is bool:
            if lt is str:  # Boolean.valueOf(String)
                lv = lv.lower() == "true"
            else:
                return -1  # incomparable (Java answers -1); Boolean vs String throws upstream
        elif lt is int and rt is float:
            lv = float(lv)
        elif lt is float and rt is int:
            rv = float(rv)
        elif lt is str:
            lv = _java_long(lv) if rt is int else _java_double(lv)
        elif rt is str:
            rv = _java_long(rv) if lt is int else _java_double(rv)
    return int(lv > rv) - int(lv < rv)


def _equal(lv: Value, rv: Value) -> Value:
    if (lv is None) != (rv is None):
        return None if lv is None else False
    if lv is None or lv == rv and type(lv) is type(rv):
        return True
    return _compare(lv, rv) == 0


def _ordered(op: Callable[[int], bool]) -> Callable[[Value, Value], Value]:
    def evaluate(lv: Value, rv: Value) -> Value:
        if lv is None or rv is None:
            return None
        if type(lv) is str and type(rv) is str:  # two strings by >, <: as doubles, or not at all
            return op(_compare(_java_double(lv), _java_double(rv)))
        return op(_compare(lv, rv))
    return evaluate


_GT = _ordered(lambda c: c > 0)
_GE = _ordered(lambda c: c >= 0)
_LT = _ordered(lambda c: c < 0)
_LE = _ordered(lambda c: c <= 0)


def _and(lv: Value, rv: Callable[[], Value]) -> Value:
    if lv is False:
        return False
    r = rv()
    if r is False:
        return False
    return None if lv is None or r is None else True


def _or(lv: Value, rv: Callable[[], Value]) -> Value:
    if lv is True:
        return True
    r = rv()
    if r is True:
        return True
    return None if lv is None or r is None else False


class _Compiler:
    def build(self, tree: Any) -> _Node:
        build: Callable[..., _Node] = getattr(self, tree[0])
        node = build(*tree[1:])
        if node.java is None:
            node.java = java_text(tree)
        return node

    # literals and properties
    def string(self, tok: Any) -> _Node:
        return _const(str(tok)[1:-1].replace("''", "'"))

    def long(self, tok: Any) -> _Node:
        text = str(tok).rstrip("lL")
        value = int(text)
        if value > 2**63 - 1:
            raise SQL92Error(f"the number {tok} is out of the long range", number_format_message(text))
        return _const(value)

    def double(self, tok: str) -> _Node:
        value = float(tok)
        if value == float("inf"):
            raise SQL92Error(f"the number {tok} is out of the double range",
                             f"java.lang.RuntimeException: {tok} is greater than 1.7976931348623157E308")
        return _const(value)

    def true(self) -> _Node:
        return _const(True, boolean=True)

    def false(self) -> _Node:
        return _const(False, boolean=True)

    def null(self) -> _Node:
        return _const(None, boolean=True)

    def prop(self, name: str) -> _Node:
        return _Node(lambda p: p.get(name), prop=name)

    # unary
    def neg(self, child: Any) -> _Node:
        node = self.build(child)
        if node.constant and type(node.value) in (int, float):
            return _const(-node.value)
        fn = node.fn
        return _Node(lambda p: (lambda v: -v if type(v) in (int, float) else None)(fn(p)))

    def not_(self, child: Any) -> _Node:
        fn = _as_condition(self.build(child)).fn
        return _Node(lambda p: (lambda v: None if v is None else not v)(fn(p)), boolean=True)

    # logic
    def and_(self, left: Any, right: Any) -> _Node:
        lf, rf = _as_condition(self.build(left)).fn, _as_condition(self.build(right)).fn
        return _Node(lambda p: _and(lf(p), lambda: rf(p)), boolean=True)

    def or_(self, left: Any, right: Any) -> _Node:
        lf, rf = _as_condition(self.build(left)).fn, _as_condition(self.build(right)).fn
        return _Node(lambda p: _or(lf(p), lambda: rf(p)), boolean=True)

    # comparisons
    def _binary(self, left: Any, right: Any, op: Callable[[Value, Value], Value]) -> _Node:
        lf, rf = self.build(left).fn, self.build(right).fn
        return _Node(lambda p: op(lf(p), rf(p)), boolean=True)

    def _equality_operands(self, left: Any, right: Any) -> tuple[_Node, _Node]:
        ln, rn = self.build(left), self.build(right)
        for n in (ln, rn):
            if n.constant and n.value is None:
                raise SQL92Error("NULL cannot be compared with '=' or '<>': use IS NULL or IS NOT NULL",
                                 _java_error("RuntimeException", "'{}' cannot be compared.", n))
        if ln.constant and rn.constant and (type(ln.value) is bool) != (type(rn.value) is bool):
            raise SQL92Error(f"{_show(ln)} cannot be compared with {_show(rn)}",
                             _java_error("RuntimeException", "'{}' cannot be compared with '{}'", ln, rn))
        return ln, rn

    def eq(self, left: Any, right: Any) -> _Node:
        ln, rn = self._equality_operands(left, right)
        lf, rf = ln.fn, rn.fn
        return _Node(lambda p: _equal(lf(p), rf(p)), boolean=True)

    def ne(self, left: Any, right: Any) -> _Node:
        ln, rn = self._equality_operands(left, right)
        lf, rf = ln.fn, rn.fn
        return _Node(lambda p: (lambda v: None if v is None else not v)(_equal(lf(p), rf(p))), boolean=True)

    def is_null(self, left: Any) -> _Node:
        fn = self.build(left).fn
        return _Node(lambda p: fn(p) is None, boolean=True)

    def is_not_null(self, left: Any) -> _Node:
        fn = self.build(left).fn
        return _Node(lambda p: fn(p) is not None, boolean=True)

    def _ordered_operands(self, *children: Any) -> list[_Node]:
        nodes = [self.build(c) for c in children]
        for n in nodes:
            if n.constant and type(n.value) not in (int, float):
                raise SQL92Error(f"value {_show(n)} cannot be compared with '>', '>=', '<' or '<='",
                                 _java_error("RuntimeException", "Value '{}' cannot be compared.", n))
            if n.boolean and not n.constant:
                raise SQL92Error("a condition cannot be compared with '>', '>=', '<' or '<='",
                                 _java_error("RuntimeException", "Value '{}' cannot be compared.", n))
        return nodes

    def _ordered_node(self, left: Any, right: Any, op: Callable[[Value, Value], Value]) -> _Node:
        ln, rn = self._ordered_operands(left, right)
        lf, rf = ln.fn, rn.fn
        return _Node(lambda p: op(lf(p), rf(p)), boolean=True)

    def gt(self, left: Any, right: Any) -> _Node:
        return self._ordered_node(left, right, _GT)

    def ge(self, left: Any, right: Any) -> _Node:
        return self._ordered_node(left, right, _GE)

    def lt(self, left: Any, right: Any) -> _Node:
        return self._ordered_node(left, right, _LT)

    def le(self, left: Any, right: Any) -> _Node:
        return self._ordered_node(left, right, _LE)

    def _between_fns(self, value: Any, low: Any, high: Any) -> tuple[Evaluator, Evaluator, Evaluator]:
        vn, ln, hn = self._ordered_operands(value, low, high)
        if ln.constant and hn.constant and _compare(ln.value, hn.value) > 0:
            raise SQL92Error(f"BETWEEN {_show(ln)} AND {_show(hn)}: the low value must not be above the high one",
                             _java_error("RuntimeException", "Illegal values of between, left value({}) must less "
                                         "than or equal to right value({})", ln, hn))
        return vn.fn, ln.fn, hn.fn

    def between(self, value: Any, low: Any, high: Any) -> _Node:
        vf, lf, hf = self._between_fns(value, low, high)
        return _Node(lambda p: (lambda v: _and(_GE(v, lf(p)), lambda: _LE(v, hf(p))))(vf(p)), boolean=True)

    def not_between(self, value: Any, low: Any, high: Any) -> _Node:
        vf, lf, hf = self._between_fns(value, low, high)
        return _Node(lambda p: (lambda v: _or(_LT(v, lf(p)), lambda: _GT(v, hf(p))))(vf(p)), boolean=True)

    def _in(self, left: Any, strings: Any, negate: bool) -> _Node:
        node = self.build(left)
        if node.prop is None:
            raise SQL92Error(f"IN needs a property on its left, not {_show(node)}",
                             _java_error("RuntimeException", "Expected a property for In expression, got: {}", node))
        values = frozenset(t[1:-1].replace("''", "'") for t in strings)
        name = node.prop

        def evaluate(p: Mapping[str, str]) -> Value:
            v = p.get(name)
            return None if v is None else (v in values) != negate
        return _Node(evaluate, boolean=True)

    def in_(self, left: Any, strings: Any) -> _Node:
        return self._in(left, strings, False)

    def not_in(self, left: Any, strings: Any) -> _Node:
        return self._in(left, strings, True)
