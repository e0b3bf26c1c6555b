"""Command line entry point `rocketmq-emulator` (placeholder until the broker lands)."""

from __future__ import annotations

import argparse
import sys
from importlib.metadata import PackageNotFoundError, version


def package_version() -> str:
    try:
        return version("rocketmq-emulator")
    except PackageNotFoundError:
        return "0+unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="rocketmq-emulator",
                                     description="A RocketMQ 4.x broker and name server in one Python process.")
    parser.add_argument("--version", action="version", version=f"rocketmq-emulator {package_version()}")
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("serve", help="start the name server and broker")
    args = parser.parse_args(argv)
    if args.command in (None, "serve"):
        print(f"rocketmq-emulator {package_version()}")
        print("The broker is not implemented yet (issue 4); `serve` only prints the version and exits.")
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
