"""How exported items become bytes: JSON Lines, CSV and JSON, each a header, items, a footer."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from typing import Any

import attrs

from ._json import dumps  # the package's one JSON module (orjson if installed)

__all__ = ["FORMATS", "Format"]


@attrs.frozen
class Format:
    """How items become bytes: a header, each item, a footer."""

    name: str
    header: Callable[[list[str]], bytes]
    item: Callable[[dict[str, Any], list[str], bool], bytes]
    footer: bytes


def _csv_row(values: list[Any]) -> bytes:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow(values)
    return buffer.getvalue().encode()


def _csv_cell(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"  # as in the JSON formats
    if isinstance(value, list):
        return " ".join(str(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, separators=(",", ":"))
    return value


FORMATS: dict[str, Format] = {
    "jsonl": Format("jsonl", lambda _: b"", lambda d, _, first: dumps(d) + b"\n", b""),
    "json": Format(
        "json",
        lambda _: b"[\n",
        lambda d, _, first: (b"" if first else b",\n") + dumps(d),
        b"\n]\n",
    ),
    "csv": Format(
        "csv",
        lambda columns: _csv_row(columns),
        lambda d, columns, first: _csv_row([_csv_cell(d.get(c)) for c in columns]),
        b"",
    ),
}
