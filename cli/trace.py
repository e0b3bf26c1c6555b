"""`rocketmq-emulator trace FILE`: print a wire trace saved by `serve --trace FILE`, filtered by the live trace's
rule (protocol/trace.py: a request when the filters choose it, an answer when its request was chosen)."""

from __future__ import annotations

import argparse
import sys

from .args import EXIT_FAILURE, report_error


def codes_type(text: str) -> frozenset[int]:
    """An argparse type: request codes by name or number, comma-separated (`PULL_MESSAGE,310`)."""
    from rocketmq_emulator.protocol.trace import parse_codes
    try:
        return parse_codes(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser], command: str,
               help_text: str) -> argparse.ArgumentParser:
    """The parser of `trace` in the command line's tree."""
    trace = sub.add_parser(command, help=help_text,
                           description="Print a wire trace written by `serve --trace FILE`: a JSON trace "
                                       "(--trace-format json) as text lines (or JSON with --json), a text trace as "
                                       "it is; the filters choose requests and their answers.")
    trace.add_argument("file", help="the trace file, or - for standard input")
    trace.add_argument("--codes", type=codes_type, default=None, help="request codes, e.g. PULL_MESSAGE,310")
    trace.add_argument("--group", default=None, help="requests naming this consumer or producer group")
    trace.add_argument("--topic", default=None, help="requests naming this topic")
    trace.add_argument("--json", action="store_true", help="print JSON records (from a JSON trace)")
    return trace


def run(args: argparse.Namespace) -> int:
    import json

    from rocketmq_emulator.protocol.trace import NotATraceError, TraceFilter, format_text, read_trace
    trace_filter = TraceFilter(args.codes, args.group, args.topic)
    try:
        stream = sys.stdin if args.file == "-" else open(args.file, encoding="utf-8", errors="replace")
    except OSError as exc:
        report_error(f"cannot read the trace {args.file!r}: {exc.strerror or exc}", "TRACE", as_json=False)
        return EXIT_FAILURE
    try:
        with stream:
            for rec in read_trace(stream, trace_filter):
                if isinstance(rec, str):
                    print(rec)
                else:
                    print(json.dumps(rec, ensure_ascii=False) if args.json else format_text(rec))
    except BrokenPipeError:  # `| head`
        sys.stderr.close()
    except NotATraceError as exc:
        report_error(f"{args.file}: {exc}", "TRACE", as_json=False)
        return EXIT_FAILURE
    except UnicodeDecodeError as exc:  # standard input (a file is read with errors="replace")
        report_error(f"{args.file}: not text ({exc.reason})", "TRACE", as_json=False)
        return EXIT_FAILURE
    return 0
