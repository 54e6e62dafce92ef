"""How exported items become bytes: JSON Lines, CSV and JSON, each a header, pages, a footer.

JSON Lines and JSON are written from each item's bytes as the service sent them (``raw``):
nothing is decoded into a model and encoded again. An item that spans lines is made
compact first, so that each item of a JSON Lines file is one line.

CSV is written for spreadsheets: a text value that starts with ``=``, ``+``, ``-``, ``@``,
a tab or a carriage return gets a ``'`` in front, so that Excel, LibreOffice and Google
Sheets show it as text instead of running it as a formula (OWASP's advice on CSV
injection). ``csv_raw`` writes every value exactly as the service sent it.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from .._core._converter import to_dict
from .._core._json import dumps  # the package's one JSON module (orjson if installed)

__all__ = ["FORMATS", "Format", "format_for"]

try:
    from msgspec.json import format as _compact_json
except ImportError:  # pragma: no cover - exercised when msgspec is not installed
    _compact_json = None  # type: ignore[assignment]


@attrs.frozen
class Format:
    """How items become bytes: a header, each page, a footer, and a count read back.

    ``raw``: pages are items' JSON bytes as the service sent them; else models.
    ``count(fd, size)``: the items in the first ``size`` bytes of a file of this format
    (what a resume checks a checkpoint against).
    """

    name: str
    header: Callable[[list[str]], bytes]
    page: Callable[[Sequence[Any], list[str], bool], bytes]
    footer: bytes
    raw: bool
    count: Callable[[int, int], int]


def _one_line(item: Any) -> Any:
    """An item's bytes on one line (JSON strings hold no raw line breaks: only layout does)."""
    data = bytes(item)
    if b"\n" not in data and b"\r" not in data:
        return item
    if _compact_json is not None:
        return _compact_json(data, indent=0)
    return dumps(json.loads(data))  # pragma: no cover - without msgspec


def _lines(items: Sequence[Any]) -> Sequence[Any]:
    return [_one_line(item) for item in items]


def _jsonl_page(items: Sequence[Any], columns: list[str], first: bool) -> bytes:
    return b"\n".join(items) + b"\n" if items else b""


def _json_page(items: Sequence[Any], columns: list[str], first: bool) -> bytes:
    if not items:
        return b""
    return (b"" if first else b",\n") + b",\n".join(items)


# -- reading back ------------------------------------------------------------------------


def _chunks(fd: int, size: int) -> Any:
    offset = 0
    while offset < size:
        chunk = os.pread(fd, min(1 << 20, size - offset), offset)
        if not chunk:
            return
        offset += len(chunk)
        yield chunk


def _count_lines(fd: int, size: int) -> int:
    return sum(chunk.count(b"\n") for chunk in _chunks(fd, size))


def _count_json(fd: int, size: int) -> int:
    # "[\n" then items joined by ",\n" (items hold no line break): n items, n line breaks.
    return _count_lines(fd, size) if size > len(b"[\n") else 0


class _Range(io.RawIOBase):
    def __init__(self, fd: int, size: int) -> None:
        self._chunks = _chunks(fd, size)
        self._rest = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if not self._rest:
            self._rest = next(self._chunks, b"")
        n = min(len(buffer), len(self._rest))
        buffer[:n] = self._rest[:n]
        self._rest = self._rest[n:]
        return n


def _count_csv(fd: int, size: int) -> int:
    text = io.TextIOWrapper(
        io.BufferedReader(_Range(fd, size)), encoding="utf-8", errors="replace", newline=""
    )
    try:
        rows = sum(1 for _ in csv.reader(text))
    except csv.Error:
        return -1  # not a CSV file this export wrote: no count can match
    return max(0, rows - 1)  # the header


# -- CSV ---------------------------------------------------------------------------------

_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


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


def _safe_cell(value: Any) -> Any:
    """A cell a spreadsheet shows as text: ``'`` before a formula's first character."""
    cell = _csv_cell(value)
    if isinstance(cell, str) and cell.startswith(_FORMULA_STARTS):
        return "'" + cell
    return cell


def _csv_page(cell: Callable[[Any], Any]) -> Callable[[Sequence[Any], list[str], bool], bytes]:
    def page(items: Sequence[Any], columns: list[str], first: bool) -> bytes:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        # With "\n" as the line end, the csv module does not quote a value holding a bare
        # CR, which readers take as a line end: such a row has every value quoted.
        quoted = csv.writer(buffer, lineterminator="\n", quoting=csv.QUOTE_ALL)
        for item in items:
            data = to_dict(item)
            row = [cell(data.get(c)) for c in columns]
            if any(isinstance(value, str) and "\r" in value for value in row):
                quoted.writerow(row)
            else:
                writer.writerow(row)
        return buffer.getvalue().encode()

    return page


def _jsonl(items: Sequence[Any], columns: list[str], first: bool) -> bytes:
    data = _jsonl_page(items, columns, first)
    if b"\r" in data or data.count(b"\n") != len(items):
        return _jsonl_page(_lines(items), columns, first)
    return data


def _json(items: Sequence[Any], columns: list[str], first: bool) -> bytes:
    data = _json_page(items, columns, first)
    if items and (b"\r" in data or data.count(b"\n") != len(items) - (1 if first else 0)):
        return _json_page(_lines(items), columns, first)
    return data


FORMATS: dict[str, Format] = {
    "jsonl": Format("jsonl", lambda _: b"", _jsonl, b"", True, _count_lines),
    "json": Format("json", lambda _: b"[\n", _json, b"\n]\n", True, _count_json),
    "csv": Format("csv", _csv_row, _csv_page(_safe_cell), b"", False, _count_csv),
}
_CSV_RAW = attrs.evolve(FORMATS["csv"], page=_csv_page(_csv_cell))


def format_for(name: str, *, csv_raw: bool = False) -> Format | None:
    """The format called ``name`` (None if there is none); ``csv_raw``: CSV cells unquoted."""
    if name == "csv" and csv_raw:
        return _CSV_RAW
    return FORMATS.get(name)
