"""SQLite reads the page: one write's items compared, upserted and recorded in SQL.

Each page goes to SQLite once, as the text the service sent (one bound parameter), with
the digests of its items (a JSON array, in the items' order). ``json_each`` splits the
page into its items; SQLite itself compares each with its row, extracts the typed
columns, upserts them and records the changes with ``before``/``after``, in set-based
statements over a temporary table of the write's items (each id once: the last seen of
it is written). Python converts no column value.

An item's kind (a column of the temporary table):

- ``inserted``: no row, or a row marked deleted;
- ``updated``: a live row with another ``mirror_item``;
- ``kept``: the very item kept (its text, or the same JSON less whitespace) with another
  digest (an earlier build's), or a row of schema 1 (no ``mirror_item``) whose typed
  columns are the item's: written again, not a change;
- NULL: the very item kept with its digest: nothing to write.

A value a typed column cannot hold (a timestamp outside the years 1 to 9999 in UTC, an
integer past 64 bits, a text with a NUL character, which SQLite's JSON functions cut
short) is NULL in its column and kept in ``mirror_item``; the write reads back which
columns were left NULL where the item had a value, for the warning.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import BigInteger, Boolean, Text

from .._core._converter import to_camel
from .._sql import ItemId, UTCDateTime
from ._schema import BOOKKEEPING, MirrorTable

__all__ = ["PageSQL"]

_STAGE_TABLE = "temp.mirror_page"
CREATE_STAGE = (
    "CREATE TEMP TABLE IF NOT EXISTS mirror_page (seq INTEGER PRIMARY KEY, k TEXT UNIQUE, "
    "item TEXT, digest INTEGER, kind TEXT, old TEXT)"
)
"""The write's items, each id once (the temporary table of the run's connection)."""


def _timestamp(value: str) -> str:
    """``YYYY-MM-DD HH:MM:SS.ffffff`` UTC (as the schema's type writes it) of the RFC 3339
    text ``value`` (``T``/``t``/space, ``Z``/``z`` or an offset with or without its
    colon, any fraction cut to microseconds); NULL outside the years 1 to 9999 in UTC or
    for another form. SQLite's ``strftime`` applies the offset; the fraction, which an
    offset of whole minutes leaves alone, is taken from the text."""
    return (
        "(SELECT CASE WHEN length(s) = 19 AND s >= '0001-01-01' THEN s || '.' || "
        "CASE WHEN substr(n, 20, 1) = '.' THEN substr(substr(n, 21, length(n) - 20 - "
        "CASE WHEN n LIKE '%Z' THEN 1 ELSE 6 END) || '000000', 1, 6) ELSE '000000' END END "
        "FROM (SELECT strftime('%Y-%m-%d %H:%M:%S', n) AS s, n FROM (SELECT CASE WHEN "
        "substr(u, -5, 1) IN ('+', '-') THEN substr(u, 1, length(u) - 2) || ':' || "
        f"substr(u, -2) ELSE u END AS n FROM (SELECT upper({value}) AS u))))"
    )


class PageSQL:
    """The statements that write pages into one collection's table, in SQLite."""

    def __init__(self, mirrored: MirrorTable, scope_column: str | None) -> None:
        table = mirrored.table
        name, key = f'main."{table.name}"', f'"{mirrored.key}"'
        path = {f: f"'$.{to_camel(f)}'" for f in mirrored.fields}
        self.stage = (
            f"INSERT OR REPLACE INTO {_STAGE_TABLE} (k, item, digest, kind, old) "
            "SELECT j.k, j.value, j.d, CASE WHEN t.rowid IS NULL OR t.mirror_deleted_at IS "
            "NOT NULL THEN 'inserted' WHEN t.mirror_item = j.value OR CASE WHEN json_valid("
            "t.mirror_item) THEN json(t.mirror_item) END = j.value THEN CASE WHEN "
            "t.mirror_digest IS j.d THEN NULL ELSE 'kept' END WHEN t.mirror_item IS NULL "
            "THEN 'legacy' ELSE 'updated' END, t.mirror_item FROM (SELECT lower(json_extract("
            f"value, {path[mirrored.key]})) AS k, value, json_extract(:digests, '$[' || key "
            f"|| ']') AS d FROM json_each(:page, '$.data')) AS j LEFT JOIN {name} AS t ON "
            f"t.{key} = j.k"
        )
        """One page into the write's items, each compared with its row."""
        self.clear = f"DELETE FROM {_STAGE_TABLE}"
        self.count = (
            "SELECT coalesce(sum(kind = 'inserted'), 0), coalesce(sum(kind = 'updated'), 0), "
            f"count(kind) FROM {_STAGE_TABLE}"
        )
        """The write's inserts, updates and rows to write (changes or not)."""
        exprs: dict[str, str] = {}
        nul_safe: dict[str, str] = {}
        checked: list[str] = []  # columns a value may be left NULL in
        for column in (table.c[f] for f in mirrored.fields):
            field = column.name
            value = f"json_extract(item, {path.get(field, 'NULL')})"
            kind = column.type
            if field == scope_column:
                exprs[field] = ":scope"
                continue
            if isinstance(kind, ItemId):
                exprs[field] = f"lower({value})"
            elif isinstance(kind, UTCDateTime):
                exprs[field] = _timestamp(value)
                checked.append(field)
            elif isinstance(kind, BigInteger):
                exprs[field] = f"CASE WHEN typeof({value}) = 'integer' THEN {value} END"
                checked.append(field)
            elif isinstance(kind, (Text, Boolean)) or field == "webhook_event_types":
                exprs[field] = value
                if isinstance(kind, Text):
                    # A NUL character (``\u0000`` in the text sent) cuts SQLite's text short.
                    spared = f"json_extract(replace(item, '\\u0000', '\\u0001'), {path[field]})"
                    nul_safe[field] = f"CASE WHEN {spared} IS {value} THEN {value} END"
                    checked.append(field)
            else:  # pragma: no cover - a column type the schema does not use
                raise AssertionError(f"no SQLite expression for {column!r}")
        columns = [*mirrored.fields, *BOOKKEEPING]
        names = ", ".join(f'"{c}"' for c in columns)
        kept = {mirrored.key, "mirror_first_seen_at"}
        sets = ", ".join(f'"{c}" = excluded."{c}"' for c in columns if c not in kept)

        def upsert(typed: dict[str, str]) -> str:
            values = ", ".join(["k", *(typed[f] for f in mirrored.fields[1:])])
            return (
                f"INSERT INTO {name} ({names}) SELECT {values}, :now, :now, NULL, item, digest "
                f"FROM {_STAGE_TABLE} WHERE kind IS NOT NULL ORDER BY seq "
                f"ON CONFLICT ({key}) DO UPDATE SET {sets}"
            )

        self.upsert = upsert(exprs)
        self.upsert_nul = upsert(exprs | nul_safe)
        """As ``upsert``, for a page whose text holds ``\\u0000``."""
        compared = ", ".join(
            f"json({f})" if f == "webhook_event_types" else f'"{f}"' for f in mirrored.fields
        )
        typed = ", ".join(
            f"json({exprs[f]})" if f == "webhook_event_types" else exprs[f]
            for f in mirrored.fields[1:]
        )
        self.legacy = (
            f"UPDATE {_STAGE_TABLE} SET kind = CASE WHEN (k, {typed}) IS (SELECT {compared} "
            f"FROM {name} AS t WHERE t.{key} = {_STAGE_TABLE}.k) THEN 'kept' ELSE 'updated' "
            "END WHERE kind = 'legacy'"
        )
        """A row of schema 1 (no ``mirror_item``): a change only if its typed columns differ."""
        self.changes = (
            'INSERT INTO main.mirror_changes (run_id, collection, item_id, change, at, "before", '
            "\"after\") SELECT :run, :collection, k, kind, :now, CASE WHEN kind = 'updated' "
            f"THEN old END, item FROM {_STAGE_TABLE} WHERE kind IN ('inserted', 'updated') "
            "ORDER BY seq"
        )
        self.told = (
            f"SELECT k, kind, CASE WHEN kind = 'updated' THEN old END, item FROM {_STAGE_TABLE} "
            "WHERE kind IN ('inserted', 'updated') ORDER BY seq"
        )
        """The write's changes, for ``on_change``."""
        self.checked = tuple(checked)
        left = " OR ".join(f't."{c}" IS NULL' for c in checked)
        flags = ", ".join(
            f"t.\"{c}\" IS NULL AND coalesce(json_type(p.item, {path[c]}), 'null') <> 'null'"
            for c in checked
        )
        self.nulls = (
            f"SELECT p.k, {flags} FROM {_STAGE_TABLE} AS p JOIN {name} AS t ON t.{key} = p.k "
            f"WHERE p.kind IS NOT NULL AND ({left})"
        )
        """The items written with a column left NULL where the item has a value."""

    def stage_all(self, pages: list[tuple[str, str]], scope: str | None) -> list[tuple[str, Any]]:
        """The statements that put a write's pages (text, digests) into its items."""
        return [
            (self.clear, ()),
            *((self.stage, {"page": page, "digests": digests}) for page, digests in pages),
            (self.legacy, {"scope": scope}),
        ]

    def write_all(self, params: dict[str, Any], nul: bool, told: bool) -> list[tuple[str, Any]]:
        """The statements that write the staged items: the upsert, the changes, the
        columns left NULL, the counts and (``told``) the changes for ``on_change``."""
        statements: list[tuple[str, Any]] = [
            (self.upsert_nul if nul else self.upsert, {k: params[k] for k in ("now", "scope")}),
            (self.changes, {k: params[k] for k in ("run", "collection", "now")}),
            (self.nulls, ()),
            (self.count, ()),
        ]
        if told:
            statements.append((self.told, ()))
        return statements
