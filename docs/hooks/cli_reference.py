"""MkDocs hook: the command-line reference, generated from the argument parser when the site is built.

`docs/reference/cli.md` holds the marker `<!-- cli-reference -->`; this hook replaces it with the usage and help
of every command and subcommand of `rocketmq-emulator` (cli/main.py's `build_parser()`, walked through its
subparsers), so the page cannot drift from the program.
"""

from __future__ import annotations

import argparse
import os
from typing import Any, Iterator

MARKER = "<!-- cli-reference -->"
PAGE = "reference/cli.md"
#: the width the help is formatted for (argparse reads $COLUMNS)
COLUMNS = "100"


def commands(parser: argparse.ArgumentParser) -> Iterator[tuple[argparse.ArgumentParser, str]]:
    """(parser, its help line) of every subcommand under `parser`, depth first, in the parser's order; an alias
    is listed once, under its first name."""
    seen: set[int] = set()
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
        for name, sub in action.choices.items():
            if id(sub) in seen:
                continue
            seen.add(id(sub))
            yield sub, helps.get(name, "")
            yield from commands(sub)


def subcommand_names(parser: argparse.ArgumentParser) -> list[str]:
    """Every command's and subcommand's name (the last word of its prog), for tests."""
    return [sub.prog.split()[-1] for sub, _ in commands(parser)]


def reference() -> str:
    """The generated Markdown: the top-level help, then one section per command and subcommand."""
    from rocketmq_emulator.cli.main import build_parser

    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = COLUMNS
    try:
        parser = build_parser()
        parts = [f"### `{parser.prog}`\n\n```text\n{parser.format_help().rstrip()}\n```\n"]
        for sub, help_line in commands(parser):
            depth = len(sub.prog.split()) - 1
            title = "#" * min(3 + depth, 6)
            line = f"{help_line}\n\n" if help_line else ""
            parts.append(f"{title} `{sub.prog}`\n\n{line}```text\n{sub.format_help().rstrip()}\n```\n")
    finally:
        if before is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = before
    return "\n".join(parts)


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    if page.file.src_uri != PAGE:
        return markdown
    if MARKER not in markdown:
        raise ValueError(f"{PAGE} should hold the marker {MARKER!r} where the generated reference goes")
    return markdown.replace(MARKER, reference())
