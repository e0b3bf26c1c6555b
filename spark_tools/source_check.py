"""What `rocketmq-emulator seed --from PATH` can check of a file before Spark starts (no pyspark here): its kind
by extension, and its columns against what the `rocketmq` writer takes (a `body`, and only the known optional
columns). A file that passes may still fail in Spark (a row with a null body); one that fails here would have
failed there too, only after Spark's start-up.

    check_source("orders.csv")   # SourceProblem("orders.csv: no body column (it has: id, text); ...")
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

#: the columns the `rocketmq` writer takes; `body` is the one it requires (spark_tools/datasource.py checks them
#: again on the DataFrame)
WRITE_COLUMNS = frozenset({"body", "topic", "tags", "keys", "properties", "queueId", "brokerName", "bornTimestamp"})

#: file extensions `seed --from` reads, by kind
PARQUET, JSON_LINES, CSV = (".parquet",), (".json", ".jsonl", ".ndjson"), (".csv",)

#: a JSON file larger than this is not read whole before Spark (its columns are Spark's union of every record's
#: keys, which only a full read knows); Spark's writer still refuses it, later
JSON_SCAN_LIMIT = 64 * 1024 * 1024


class SourceProblem(Exception):
    """A --from file that cannot be seeded; the message says why in one line."""


def source_kind(path: str) -> str:
    """"parquet", "json" or "csv" by the path's extension (a directory of .parquet files is Parquet)."""
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix in PARQUET or (p.is_dir() and any(p.glob("*.parquet"))):
        return "parquet"
    if suffix in JSON_LINES:
        return "json"
    if suffix in CSV:
        return "csv"
    raise SourceProblem(f"{path}: seed from a .parquet, .json/.jsonl or .csv file (or a Parquet directory)")


def _columns(path: str, kind: str) -> list[str] | None:
    """The file's column names, or None when they cannot be known without Spark."""
    if kind == "csv":
        with open(path, newline="", encoding="utf-8", errors="replace") as f:
            header = next(csv.reader(f), None)
        if not header:
            raise SourceProblem(f"{path}: the CSV file is empty (seed reads a header line of column names first)")
        return header
    if kind == "json":
        if os.path.isdir(path) or os.path.getsize(path) > JSON_SCAN_LIMIT:
            return None
        names: dict[str, None] = {}
        with open(path, encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except ValueError:
                    raise SourceProblem(f"{path}, line {number}: not a JSON object (seed reads one JSON object "
                                        f"per line)") from None
                if not isinstance(record, dict):
                    raise SourceProblem(f"{path}, line {number}: a JSON {type(record).__name__}, not an object "
                                        f"(seed reads one JSON object per line)")
                names.update(dict.fromkeys(record))
        return list(names)
    try:
        import pyarrow.parquet as pq
    except ImportError:
        return None  # Spark says it, with the install advice
    target = Path(path)
    if target.is_dir():
        target = min(target.glob("*.parquet"))
    try:
        return list(pq.read_schema(target).names)
    except Exception as exc:  # noqa: BLE001 - pyarrow's errors for a file that is not Parquet: one line
        raise SourceProblem(f"{path}: not a readable Parquet file ({' '.join(str(exc).split())})") from None


def check_source(path: str) -> None:
    """SourceProblem when `path` (a local file or directory) cannot be seeded: an unknown kind, no `body` column,
    or a column the writer does not take."""
    kind = source_kind(path)
    columns = _columns(path, kind)
    if columns is None:
        return
    optional = ", ".join(sorted(WRITE_COLUMNS - {"body"}))
    if "body" not in columns:
        raise SourceProblem(f"{path}: no body column (it has: {', '.join(columns) or 'none'}); every row needs a "
                            f"body (optional columns: {optional})")
    unknown = [c for c in columns if c not in WRITE_COLUMNS]
    if unknown:
        raise SourceProblem(f"{path}: unknown column(s) {', '.join(unknown)}: seed takes body and {optional} "
                            f"(rename or drop the others)")
