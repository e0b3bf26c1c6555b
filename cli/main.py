"""`rocketmq-emulator`, the one console entry point: one argparse tree of every command, run in this process.
Each command's module is imported only when it is the one on the command line, so a command loads what it uses
and nothing else (start-up time: README "Performance").

Each command module has `add_parser(subparsers, command, help)` (its arguments) and `run(args) -> exit status`.
"""

from __future__ import annotations

import argparse
import sys
from types import ModuleType
from typing import Any, Iterable

from .args import OneLineParser

#: command -> its line in `rocketmq-emulator -h`
COMMANDS = {
    "admin": "mqadmin-style administration (run `rocketmq-emulator admin -h`)",
    "produce": "send messages from the command line (`rocketmq-emulator produce -h`)",
    "consume": "print messages of a topic (`rocketmq-emulator consume -h`)",
    "seed": "write generated messages (or a file's rows) to a topic with Spark (`rocketmq-emulator seed -h`; "
            "needs the spark extra)",
    "health": "is the name server up and does every broker answer? exit 0 or 1 (`rocketmq-emulator health -h`)",
    "trace": "print a saved wire trace (serve --trace FILE), filtered",
    "serve": "start the name server and broker",
}


def command_module(command: str) -> ModuleType:
    """The module of `command`, imported now."""
    if command == "serve":
        from . import serve
        return serve
    if command == "trace":
        from . import trace
        return trace
    if command == "seed":
        from . import seed
        return seed
    if command in ("admin", "produce", "consume", "health"):
        from . import client_commands
        return client_commands
    raise ValueError(f"no command {command!r}")


class _VersionAction(argparse.Action):
    """`--version`, reading the installed version only when asked."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        from .version import package_version
        sys.stdout.write(f"rocketmq-emulator {package_version()}\n")  # stdout, as argparse's own version action
        parser.exit()


def build_parser(commands: Iterable[str] = COMMANDS) -> argparse.ArgumentParser:
    """The tree, with the arguments of `commands` (default: every command) filled in; every other command is
    only its help line (its module stays unloaded)."""
    wanted = set(commands)
    parser = OneLineParser(prog="rocketmq-emulator",
                           description="A RocketMQ 4.x broker and name server in one Python process.")
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", required=True)
    for command, help_text in COMMANDS.items():
        if command in wanted:
            command_module(command).add_parser(sub, command, help_text)
        else:
            sub.add_parser(command, help=help_text)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["serve"]:
        from .serve import process_started
        process_started()
    OneLineParser.argv = argv
    args = build_parser(argv[:1]).parse_args(argv)
    result: int = command_module(args.command).run(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
