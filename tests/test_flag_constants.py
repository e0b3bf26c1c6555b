"""A RemotingCommand's flag bits are named: `RESPONSE_FLAG` and `ONEWAY_FLAG` (protocol/command.py, their one
home), never the numbers 1 and 2 in the project's code."""

from __future__ import annotations

import ast
from pathlib import Path

from rocketmq_emulator.protocol import RemotingCommand
from rocketmq_emulator.protocol.command import ONEWAY_FLAG, RESPONSE_FLAG

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("protocol", "client", "broker", "store")
BIT_OPS = (ast.BitAnd, ast.BitOr, ast.BitXor)


def _is_flag(node: ast.AST) -> bool:
    """`x.flag`, `flag` or `x["flag"]`."""
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and node.slice.value == "flag"
    return (isinstance(node, ast.Attribute) and node.attr == "flag") or (isinstance(node, ast.Name)
                                                                        and node.id == "flag")


def _is_number(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int


def raw_flag_bits(source: str) -> list[int]:
    """Line numbers of `x.flag & 1`, `flag | 2`, `cmd.flag |= 2`, `RemotingCommand(..., flag=1)` and a number as
    RemotingCommand's fifth positional argument (its flag)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.BinOp) and isinstance(node.op, BIT_OPS):
            if (_is_flag(node.left) and _is_number(node.right)) or (_is_flag(node.right) and _is_number(node.left)):
                lines.append(node.lineno)
        elif isinstance(node, ast.AugAssign) and isinstance(node.op, BIT_OPS):
            if _is_flag(node.target) and _is_number(node.value):
                lines.append(node.lineno)
        elif isinstance(node, ast.Call) and ast.unparse(node.func).split(".")[-1] == "RemotingCommand":
            numbered = [k.value for k in node.keywords if k.arg == "flag"] + node.args[4:5]
            if any(_is_number(v) and v.value for v in numbered):  # type: ignore[attr-defined]
                lines.append(node.lineno)
    return sorted(lines)


def test_the_finder_finds_raw_bits():
    code = ("if cmd.flag & 1: pass\nx = 2 | request.flag\ncmd.flag |= 2\nRemotingCommand(0, flag=1)\n"
            "RemotingCommand(0, 'JAVA', 409, 7, 1)\nok = cmd.flag & RESPONSE_FLAG\nm = MessageExt(flag=7)\n"
            "sys = h.sys_flag & 4\noneway = rec['flag'] & 2\n")
    assert raw_flag_bits(code) == [1, 2, 3, 4, 5, 9]


def test_no_raw_flag_bits_in_the_project():
    offenders = [f"{path.relative_to(ROOT)}:{line}" for package in PACKAGES
                 for path in sorted((ROOT / package).rglob("*.py")) for line in raw_flag_bits(path.read_text())]
    assert not offenders, f"use RESPONSE_FLAG / ONEWAY_FLAG: {offenders}"


def test_the_named_bits_are_the_protocols():
    request = RemotingCommand.request(10, oneway=True)
    assert (RESPONSE_FLAG, ONEWAY_FLAG) == (1, 2) and request.flag == ONEWAY_FLAG and request.is_oneway
    response = RemotingCommand.response_to(request)
    assert response.flag == RESPONSE_FLAG and response.is_response and not response.is_oneway
