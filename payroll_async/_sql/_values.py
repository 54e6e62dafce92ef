"""Values in the form each database stores them: one value at a time, or a whole column.

The forms are exactly what the schema's types write (``8-4-4-4-12`` text for an id in
SQLite, ``YYYY-MM-DD HH:MM:SS.ffffff`` UTC text for a timestamp, JSON text for a list),
so that rows read back through SQLAlchemy are the same values. A column's converter does
a batch's values at once where it can (ids lower-cased in one call, timestamps from
msgspec's text of the whole column), each value as the one-value converter gives it.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable, Sequence
from typing import Any

import msgspec
from sqlalchemy import JSON, BigInteger, Boolean, Column, Text

from ._types import ItemId, UTCDateTime

__all__ = ["Convert", "column_converter", "converter", "has_upper", "id_text", "row_converter"]

_encode = msgspec.json.encode
Convert = Callable[[Any], Any]
_UTC = datetime.timezone.utc
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _sqlite_time(value: datetime.datetime | None) -> str | None:
    """As SQLAlchemy's DateTime writes it in SQLite: ``YYYY-MM-DD HH:MM:SS.ffffff``, UTC."""
    if value is None:
        return None
    if value.tzinfo is not _UTC:
        value = value.astimezone(_UTC)
    # "YYYY-MM-DD HH:MM:SS.ffffff+00:00" less its offset (years have four digits)
    return value.isoformat(" ", "microseconds")[:26]


def id_text(value: Any) -> str:
    """An id (a UUID, or its text as sent) as SQLite stores it: lower-case 8-4-4-4-12."""
    return value.lower() if type(value) is str else str(value)


def _same(value: Any) -> Any:
    return value


def _int64(value: Any) -> Any:
    """A BIGINT: the integers both databases hold (else OverflowError)."""
    if value is not None and not _INT64_MIN <= value <= _INT64_MAX:
        raise OverflowError(f"{value} does not fit a 64-bit integer")
    return value


def _pg_time(value: datetime.datetime | None) -> datetime.datetime | None:
    """A timestamptz as asyncpg sends it: UTC (OverflowError past year 9999 or before 1)."""
    return None if value is None else value.astimezone(_UTC)


def _pg_text(value: str | None) -> str | None:
    """PostgreSQL's text: no NUL character (else ValueError)."""
    if value is not None and "\x00" in value:
        raise ValueError("PostgreSQL's text cannot hold a NUL character")
    return value


def _pg_text_list(values: Any) -> list[Any]:
    return [_pg_text(value) for value in values]


def converter(column: Column[Any], dialect: str) -> Convert:
    kind = column.type
    if isinstance(kind, BigInteger):
        return _int64
    if dialect == "postgresql":
        if isinstance(kind, UTCDateTime):
            return _pg_time
        if isinstance(kind, Text):
            return _pg_text
        return _pg_text_list if isinstance(kind, JSON) else _same  # (a list: text[])
    if isinstance(kind, ItemId):
        return id_text  # never None: ids are required
    if isinstance(kind, UTCDateTime):
        return _sqlite_time
    if isinstance(kind, Boolean):
        return lambda value: None if value is None else int(value)
    if isinstance(kind, JSON):  # a list
        return json.dumps
    return _same


_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def has_upper(text: str) -> bool:
    """Whether ``text`` has a character that ``lower()`` changes (for ASCII text, one
    search of the text per letter, each in C: a third faster than lowering it)."""
    if text.isascii():
        return any(map(text.__contains__, _UPPER))
    return text.lower() != text


def _id_texts(values: Sequence[Any]) -> list[Any]:
    """``id_text`` of each value: the ids' text lower-cased at once when all are text."""
    try:
        joined = "\n".join(values)
    except TypeError:  # UUIDs (an item through the models)
        return list(map(id_text, values))
    if not has_upper(joined):  # as the service writes them: kept as they are
        return list(values)
    split = joined.lower().split("\n")
    return split if len(split) == len(values) else list(map(id_text, values))


def _sqlite_times(values: Sequence[Any]) -> list[str | None]:
    """``_sqlite_time`` of each value; for UTC timestamps, from msgspec's RFC 3339 text of
    the whole column (``YYYY-MM-DDTHH:MM:SS[.ffffff]Z`` each, written in C)."""
    count = len(values)
    try:
        document = _encode(values).decode() if count else ""
    except (TypeError, msgspec.EncodeError):
        document = ""
    if document.count('Z"') == count:
        parts = document[2:-2].replace("Z", "").replace("T", " ").split('","')
        lengths = set(map(len, parts))
        if len(parts) == count and lengths == {19}:  # whole seconds, all of them
            whole: list[str | None] = [*f"{'.000000|'.join(parts)}.000000".split("|")]
            return whole
        if len(parts) == count and lengths <= {19, 26}:
            return [part if len(part) == 26 else f"{part}.000000" for part in parts]
    return [
        value.isoformat(" ", "microseconds")[:26]
        if type(value) is datetime.datetime and value.tzinfo is _UTC
        else _sqlite_time(value)
        for value in values
    ]


def _pg_texts(values: Sequence[Any]) -> list[Any]:
    try:
        clean = "\x00" not in "".join(filter(None, values))
    except TypeError:
        clean = False
    return list(values) if clean else list(map(_pg_text, values))


_COLUMN_CONVERTERS: dict[Convert, Callable[[Sequence[Any]], list[Any]]] = {
    _same: list,
    id_text: _id_texts,
    _sqlite_time: _sqlite_times,
    _pg_text: _pg_texts,
}


def column_converter(convert: Convert) -> Callable[[Sequence[Any]], list[Any]]:
    """``convert`` over a column's values (a batch's), each value as ``convert`` gives it."""
    found = _COLUMN_CONVERTERS.get(convert)
    return found if found is not None else lambda values: list(map(convert, values))


def row_converter(columns: Sequence[Column[Any]], dialect: str) -> Callable[[Any], tuple[Any, ...]]:
    converters = [converter(c, dialect) for c in columns]
    if all(c is _same for c in converters):
        return tuple
    # One expression per table and dialect, unrolled: this runs for every item.
    names = {f"c{i}": c for i, c in enumerate(converters) if c is not _same}
    parts = [f"c{i}(r[{i}])" if f"c{i}" in names else f"r[{i}]" for i in range(len(columns))]
    function: Callable[[Any], tuple[Any, ...]] = eval(  # built from the schema alone
        f"lambda r: ({', '.join(parts)},)", names
    )
    return function
