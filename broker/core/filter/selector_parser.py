"""RocketMQ's SQL92 selector grammar, parsed as its JavaCC parser (filter/parser/SelectorParser.jj) parses it.

Why not a parser library: 4.9.8's and 5.x's parser is a JavaCC LL parser, and two of its traits are part of what a
client sees. It stops at the first token that cannot continue a complete expression and ignores the rest
(`a > 1 b`, `a > 1)` and `(a > 1))` are accepted and filter as `a > 1`), and its refusals list the tokens it
expected at that point, in its token order. An LALR parser (lark, used before) can do neither, so this module is a
recursive descent over the same productions, recording at each choice point, as JavaCC's `jj_la1` does, the tokens
it would have taken: the expected set of an error is the union of those recorded at the error's token plus the
token a failed match wanted. The lexer is JavaCC's longest match with its line/column count (tabs to multiples of 8)
and its lexical-error texts.

    tree = parse_selector("a > 5 AND region IN ('eu')")   # nested tuples: ("and_", ("gt", ...), ("in_", ...))
    SelectorSyntaxError: .message (the emulator's words), .java (what 4.9.8 answers: ParseException/TokenMgrError)
"""

from __future__ import annotations

import re
from typing import Any

# token kinds in SelectorParserConstants order (the order JavaCC lists expected tokens in)
EOF, NOT, AND, OR, BETWEEN, IN, TRUE, FALSE, NULL, IS = 0, 8, 9, 10, 11, 12, 13, 14, 15, 16
DECIMAL, FLOAT, STRING, ID = 17, 18, 20, 21
EQ, NE, GT, GE, LT, LE, LPAREN, COMMA, RPAREN, MINUS, PLUS = range(22, 33)

_IMAGES = {EOF: "<EOF>", NOT: '"NOT"', AND: '"AND"', OR: '"OR"', BETWEEN: '"BETWEEN"', IN: '"IN"',
           TRUE: '"TRUE"', FALSE: '"FALSE"', NULL: '"NULL"', IS: '"IS"', DECIMAL: "<DECIMAL_LITERAL>",
           FLOAT: "<FLOATING_POINT_LITERAL>", STRING: "<STRING_LITERAL>", ID: "<ID>", EQ: '"="', NE: '"<>"',
           GT: '">"', GE: '">="', LT: '"<"', LE: '"<="', LPAREN: '"("', COMMA: '","', RPAREN: '")"', MINUS: '"-"',
           PLUS: '"+"'}
_KEYWORDS = {"not": NOT, "and": AND, "or": OR, "between": BETWEEN, "in": IN, "true": TRUE, "false": FALSE,
             "null": NULL, "is": IS}
_PUNCT = {"=": EQ, "<>": NE, ">": GT, ">=": GE, "<": LT, "<=": LE, "(": LPAREN, ",": COMMA, ")": RPAREN,
          "-": MINUS, "+": PLUS}
_EXP = r"[eE][+-]?[0-9]+"
_TOKENS = [  # (kind, pattern); None = skipped. The longest match wins; on a tie the earlier kind
    (None, re.compile(r"[ \t\n\r\f]")),
    (None, re.compile(r"--[^\n\r]*(?:\n|\r\n?)")),
    (None, re.compile(r"/\*[^*]*\*+(?:[^*/][^*]*\*+)*/")),
    (DECIMAL, re.compile(r"(?:0|[1-9][0-9]*)[lL]?")),
    (FLOAT, re.compile(rf"[0-9]+\.[0-9]*(?:{_EXP})?|\.[0-9]+(?:{_EXP})?|[0-9]+{_EXP}")),
    (STRING, re.compile(r"'(?:''|[^'])*'")),
    (ID, re.compile(r"[a-zA-Z_$][a-zA-Z0-9_$]*")),
    (EQ, re.compile(r"<>|<=|>=|[=<>(),+-]")),
]
_UNARY_START = (MINUS, NOT, TRUE, FALSE, NULL, DECIMAL, FLOAT, STRING, ID, LPAREN)


class SelectorSyntaxError(ValueError):
    """`message`: the emulator's words; `java`: what 4.9.8's parser says (its exception's toString)."""

    def __init__(self, message: str, java: str) -> None:
        super().__init__(message)
        self.java = java


class _Token:
    """`line`, `column`: JavaCC's count (for the Java text); `start`: the index in the expression (for people)."""

    __slots__ = ("kind", "image", "line", "column", "start")

    def __init__(self, kind: int, image: str, line: int, column: int, start: int) -> None:
        self.kind, self.image, self.line, self.column, self.start = kind, image, line, column, start


def _where(text: str, index: int) -> str:
    """`column N` (1-based, a tab counting one) of text[index], with the line when the expression has several."""
    line_start = text.rfind("\n", 0, index) + 1
    column = f"column {index - line_start + 1}"
    return column if "\n" not in text.rstrip() else f"line {text.count(chr(10), 0, index) + 1}, {column}"


def _ends_early(text: str) -> str:
    """The people's words for an expression that stops where more was expected."""
    body = text.rstrip()
    return f"the expression ends too soon (after {_where(text, len(body) - 1)})" if body else \
        "the expression is empty"


def _escape(text: str) -> str:
    """JavaCC's addEscapes."""
    out = []
    for ch in text:
        code = ord(ch)
        if ch in "\b\t\n\f\r\"'\\":
            out.append({"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}.get(ch, "\\" + ch))
        elif code < 0x20 or code > 0x7E:
            out.append(f"\\u{code:04x}")
        else:
            out.append(ch)
    return "".join(out)


def _positions(text: str) -> list[tuple[int, int]]:
    """(line, column) of each character as JavaCC's SimpleCharStream counts them (tab size 8)."""
    out, line, column, after_lf, after_cr = [], 1, 0, False, False
    for ch in text:
        column += 1
        if after_lf:
            after_lf, line, column = False, line + 1, 1
        elif after_cr:
            after_cr = False
            if ch == "\n":
                after_lf = True
            else:
                line, column = line + 1, 1
        if ch == "\r":
            after_cr = True
        elif ch == "\n":
            after_lf = True
        elif ch == "\t":
            column -= 1
            column += 8 - column % 8
        out.append((line, column))
    return out


def _lexical_error(text: str, start: int, pos: list[tuple[int, int]]) -> SelectorSyntaxError:
    """JavaCC's TokenMgrError for a token that cannot start at `start`: where its DFA stopped, and what it read."""
    n, ch = len(text), text[start]
    fail, hit_end = start, False  # the character the DFA could not take, or the end of the text inside a token
    if ch == "'":
        m = re.compile(r"'(?:''|[^'])*").match(text, start)
        fail, hit_end = (m.end() if m else start + 1), True
    elif ch == "/" and text.startswith("/*", start):
        fail, hit_end = n, True
    elif ch in "./":
        fail = start + 1
        hit_end = fail >= n
    if hit_end:
        fail = n - 1
    read = fail - start + 1
    line, column = pos[fail]
    if hit_end or fail == n - 1:  # JavaCC reads one more character to tell: the end of the text
        if text[fail] in "\n\r":
            line, column = line + 1, 0
        else:
            column += 1
        after = text[start:fail + 1] if read > 1 else ""
        seen = "<EOF> "
    else:
        after = text[start:fail] if read > 1 else ""
        seen = f'"{_escape(text[fail])}" ({ord(text[fail])}), '
    java = (f"org.apache.rocketmq.filter.parser.TokenMgrError: Lexical error at line {line}, column {column}.  "
            f'Encountered: {seen}after : "{_escape(after)}"')
    if ch == "'" and hit_end:
        people = f"the string that starts at {_where(text, start)} is not closed (add a ')"
    elif ch == "/" and hit_end:
        people = f"the comment that starts at {_where(text, start)} is not closed (add */)"
    else:
        people = f"unexpected character {ch!r} at {_where(text, start)}"
    return SelectorSyntaxError(people, java)


def tokenize(text: str) -> list[_Token]:
    pos = _positions(text)
    tokens: list[_Token] = []
    i, n = 0, len(text)
    while i < n:
        best_kind, best_end = -1, i
        for kind, pattern in _TOKENS:
            m = pattern.match(text, i)
            if m is not None and m.end() > best_end:
                best_kind, best_end = (-2 if kind is None else kind), m.end()
        if best_end == i:
            raise _lexical_error(text, i, pos)
        image = text[i:best_end]
        if best_kind != -2:
            kind = best_kind
            if kind == ID:
                kind = _KEYWORDS.get(image.lower(), ID)
            elif kind == EQ:
                kind = _PUNCT[image]
            line, column = pos[i]
            tokens.append(_Token(kind, image, line, column, i))
        i = best_end
    line, column = pos[-1] if pos else (0, 0)  # JavaCC's EOF token sits on the last character read
    tokens.append(_Token(EOF, "", line, column, n))
    return tokens


class _Parser:
    """The productions of SelectorParser.jj; `la1[i]` = tokens choice points at token i would have taken. A loop
    continues while `self.loop(kinds)`, which records those kinds when it ends."""

    def __init__(self, tokens: list[_Token], text: str) -> None:
        self.tokens, self.text = tokens, text
        self.i = 0
        self.la1: dict[int, set[int]] = {}

    def kind(self, ahead: int = 0) -> int:
        return self.tokens[min(self.i + ahead, len(self.tokens) - 1)].kind

    def miss(self, *kinds: int) -> None:
        self.la1.setdefault(self.i, set()).update(kinds)

    def loop(self, *kinds: int) -> bool:
        """A `( ... )*` loop's entry: the next token is one of `kinds`; else the loop ends and records them."""
        if self.kind() in kinds:
            return True
        self.miss(*kinds)
        return False

    def take(self, kind: int) -> _Token:
        token = self.tokens[self.i]
        if token.kind != kind:
            self.miss(kind)
            raise self.error()
        self.i += 1
        return token

    def error(self) -> SelectorSyntaxError:
        token = self.tokens[self.i]
        expected = sorted(self.la1.get(self.i, ()))
        shown = _IMAGES[EOF] if token.kind == EOF else f' {_IMAGES[token.kind]} "{_escape(token.image)} "'
        lines = "".join(f"{_IMAGES[k]} ...\n    " for k in expected)
        java = (f'org.apache.rocketmq.filter.parser.ParseException: Encountered "{shown}" at line {token.line}, '
                f"column {token.column}.\nWas expecting{':' if len(expected) == 1 else ' one of:'}\n    {lines}")
        text = self.text
        people = _ends_early(text) if token.kind == EOF else f"unexpected {token.image!r} at {_where(text, token.start)}"
        return SelectorSyntaxError(people, java)

    # JmsSelector: orExpression, and whatever follows is left unread
    def or_expression(self) -> Any:
        left = self.and_expression()
        while self.loop(OR):
            self.i += 1
            left = ("or_", left, self.and_expression())
        return left

    def and_expression(self) -> Any:
        left = self.equality_expression()
        while self.loop(AND):
            self.i += 1
            left = ("and_", left, self.equality_expression())
        return left

    def equality_expression(self) -> Any:
        left = self.comparison_expression()
        while self.loop(IS, EQ, NE):
            k = self.kind()
            if k == IS and self.kind(1) == NULL:  # LOOKAHEAD(2) IS NULL
                self.i += 2
                left = ("is_null", left)
            elif k in (EQ, NE):
                self.i += 1
                left = ("eq" if k == EQ else "ne", left, self.comparison_expression())
            else:
                self.take(IS)
                self.take(NOT)
                self.take(NULL)
                left = ("is_not_null", left)
        return left

    def comparison_expression(self) -> Any:
        left = self.unary_expr()
        ops = {GT: "gt", GE: "ge", LT: "lt", LE: "le"}
        while self.loop(NOT, BETWEEN, IN, GT, GE, LT, LE):
            k = self.kind()
            if k in ops:
                self.i += 1
                left = (ops[k], left, self.unary_expr())
            elif k == BETWEEN:
                self.i += 1
                left = ("between", left, *self._range())
            else:
                self.miss(GT, GE, LT, LE, BETWEEN)
                if k == NOT and self.kind(1) == BETWEEN:  # LOOKAHEAD(2)
                    self.i += 2
                    left = ("not_between", left, *self._range())
                elif k == IN:
                    self.i += 1
                    left = ("in_", left, self._strings())
                else:
                    self.miss(IN)
                    if k == NOT and self.kind(1) == IN:  # LOOKAHEAD(2)
                        self.i += 2
                        left = ("not_in", left, self._strings())
                    else:
                        raise self.error()
        return left

    def _range(self) -> tuple[Any, Any]:
        low = self.unary_expr()
        self.take(AND)
        return low, self.unary_expr()

    def _strings(self) -> list[str]:
        self.take(LPAREN)
        items = [self.take(STRING).image]
        while self.loop(COMMA):
            self.i += 1
            items.append(self.take(STRING).image)
        self.take(RPAREN)
        return items

    def unary_expr(self) -> Any:
        k = self.kind()
        if k == PLUS and self._unary_follows(self.i + 1):  # LOOKAHEAD("+" unaryExpr()): not in the expected set
            self.i += 1
            return self.unary_expr()
        if k == MINUS:
            self.i += 1
            return ("neg", self.unary_expr())
        if k == NOT:
            self.i += 1
            return ("not_", self.unary_expr())
        if k in _UNARY_START:
            return self.primary_expr()
        self.miss(*_UNARY_START)
        raise self.error()

    def _unary_follows(self, at: int) -> bool:
        """The syntactic lookahead `"+" unaryExpr()`: does a whole unary expression start at token `at`?"""
        probe = _Parser(self.tokens, self.text)
        probe.i = at
        try:
            probe.unary_expr()
        except SelectorSyntaxError:
            return False
        return True

    def primary_expr(self) -> Any:
        token = self.tokens[self.i]
        self.i += 1
        if token.kind == LPAREN:
            inner = self.or_expression()
            self.take(RPAREN)
            return inner
        return {STRING: ("string", token.image), DECIMAL: ("long", token.image), FLOAT: ("double", token.image),
                TRUE: ("true",), FALSE: ("false",), NULL: ("null",), ID: ("prop", token.image)}[token.kind]


def parse_selector(text: str) -> Any:
    """The expression's tree (nested tuples: the node's name, then its children or token texts)."""
    try:
        return _Parser(tokenize(text), text).or_expression()
    except RecursionError:  # 4.9.8 fails with a StackOverflowError; nobody subscribes with such an expression
        raise SelectorSyntaxError("the expression is nested too deeply",
                                  "java.lang.StackOverflowError") from None


_JAVA_SYMBOLS = {"gt": ">", "ge": ">=", "lt": "<", "le": "<=", "eq": "==", "ne": "==", "and_": "&&", "or_": "||"}


def java_text(tree: Any) -> str | None:
    """A parse tree as 4.9.8's Expression.toString writes it: literals, properties, and comparisons and logic of
    those; None for the rest (negation, IS NULL, BETWEEN, IN), whose refusals keep the emulator's words."""
    kind = tree[0]
    if kind in ("string", "prop"):
        return str(tree[1])
    if kind in ("true", "false", "null"):
        return str(kind).upper()
    if kind == "long":
        return str(int(tree[1].rstrip("lL")))
    if kind == "double":  # Double.toString, for the plain range only
        v = float(tree[1])
        return repr(v) if 1e-3 <= abs(v) < 1e7 else None
    if kind in _JAVA_SYMBOLS:
        left, right = java_text(tree[1]), java_text(tree[2])
        if left is None or right is None:
            return None
        text = f"({left} {_JAVA_SYMBOLS[kind]} {right})"
        return f"(NOT {text})" if kind == "ne" else text  # `<>` is created as NOT of `==`
    return None
