"""The database reads the page: one write's items compared, upserted and recorded in SQL.

SQLite gets each page as the text the service sent (one parameter) with its items'
digests; ``json_each`` splits it into a temporary table of the write's items (each id
once, as last seen), and set-based statements compare each with its row, extract the
typed columns, upsert them and record the changes with ``before``/``after``. An item's
kind there: ``inserted`` (no row, or a row marked deleted), ``updated`` (a live row with
another ``mirror_item``), ``kept`` (the very item kept under another digest, or a row of
schema 1 whose typed columns are the item's: written again, not a change) or NULL
(nothing to write). PostgreSQL does the same in one statement (`PostgresPageSQL`).

A value a typed column cannot hold (a timestamp outside the years 1 to 9999 in UTC, an
integer past 64 bits, a text with a NUL) is NULL in its column and kept in
``mirror_item``; the write reads back which columns were left NULL, for the warning.
`Statements` are the run's other statements; in SQLite a write's statements run as one
job of a thread on the driver's ``sqlite3`` connection (``run_all``): one wake-up of the
event loop per write.
"""

from __future__ import annotations

import asyncio
import sqlite3
from typing import Any

import msgspec
from sqlalchemy import JSON, BigInteger, Boolean, Dialect, Table, Text, text
from sqlalchemy.ext.asyncio import AsyncConnection

from .._core._converter import to_camel
from .._sql import ItemId, UTCDateTime, converter, sqlite3_connection
from ._schema import BOOKKEEPING, MirrorTable
from ._seen import KnownDigests

__all__ = ["PageSQL", "PostgresPageSQL", "Statements", "filled"]

_STAGE_TABLE = "temp.mirror_page"
CREATE_STAGE = (
    "CREATE TEMP TABLE IF NOT EXISTS mirror_page (seq INTEGER PRIMARY KEY, k TEXT, "
    "item TEXT, digest INTEGER, kind TEXT, old TEXT)"
)
"""The write's items, each id once (the temporary table of the run's connection)."""


def _timestamp(value: str) -> str:
    """``YYYY-MM-DD HH:MM:SS.ffffff`` UTC (as the schema's type writes it) of the RFC 3339
    text ``value``: the service's own form (``T``, ``Z``) cut and padded as text, any other
    through ``strftime`` (the fraction, cut to microseconds, taken from the text); NULL
    outside the years 1 to 9999 in UTC, or for another form."""
    return (
        f"CASE WHEN {value} GLOB '????-??-??T??:??:??Z' THEN replace(substr({value}, 1, 19), "
        f"'T', ' ') || '.000000' WHEN {value} GLOB '????-??-??T??:??:??.??????Z' THEN "
        f"replace(substr({value}, 1, 26), 'T', ' ') WHEN {value} GLOB "
        f"'????-??-??T??:??:??.*Z' THEN replace(substr({value}, 1, 19), 'T', ' ') || '.' || "
        f"substr(substr({value}, 21, length({value}) - 21) || '000000', 1, 6) "
        f"ELSE {_any_timestamp(value)} END"
    )


def _any_timestamp(value: str) -> str:
    return (
        "(SELECT CASE WHEN length(s) = 19 AND s >= '0001-01-01' THEN s || '.' || "
        "CASE WHEN substr(n, 20, 1) = '.' THEN substr(substr(n, 21, length(n) - 20 - "
        "CASE WHEN n LIKE '%Z' THEN 1 ELSE 6 END) || '000000', 1, 6) ELSE '000000' END END "
        "FROM (SELECT strftime('%Y-%m-%d %H:%M:%S', n) AS s, n FROM (SELECT CASE WHEN "
        "substr(u, -5, 1) IN ('+', '-') THEN substr(u, 1, length(u) - 2) || ':' || "
        f"substr(u, -2) ELSE u END AS n FROM (SELECT upper({value}) AS u))))"
    )


def _sqlite_values(
    mirrored: MirrorTable, scope_column: str | None, item: str
) -> tuple[dict[str, str], dict[str, str], list[str]]:
    """SQLite: each column's value from the item's JSON text in the column ``item`` (the
    scope's: ``:scope``); as those, for an item whose text holds ``\\u0000``; the columns a
    value may be left NULL in."""
    path = {f: f"'$.{to_camel(f)}'" for f in mirrored.fields}
    exprs: dict[str, str] = {}
    nul_safe: dict[str, str] = {}
    checked: list[str] = []  # columns a value may be left NULL in
    for column in (mirrored.table.c[f] for f in mirrored.fields):
        field = column.name
        value = f"json_extract({item}, {path.get(field, 'NULL')})"
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
        elif isinstance(kind, (Text, Boolean, JSON)):  # (JSON: a list, as sent)
            exprs[field] = value
            if isinstance(kind, Text):
                # A NUL character (``\u0000`` in the text sent) cuts SQLite's text short.
                spared = f"json_extract(replace({item}, '\\u0000', '\\u0001'), {path[field]})"
                nul_safe[field] = f"CASE WHEN {spared} IS {value} THEN {value} END"
                checked.append(field)
        else:  # pragma: no cover - a column type the schema does not use
            raise AssertionError(f"no SQLite expression for {column!r}")
    return exprs, nul_safe, checked


class PageSQL:
    """The statements that write pages into one collection's table, in SQLite."""

    def __init__(self, mirrored: MirrorTable, scope_column: str | None) -> None:
        table = mirrored.table
        name, key = f'main."{table.name}"', f'"{mirrored.key}"'
        path = {f: f"'$.{to_camel(f)}'" for f in mirrored.fields}
        self.stage = (
            f"INSERT INTO {_STAGE_TABLE} (k, item, digest, kind, old) "
            "SELECT j.k, j.value, j.d, CASE WHEN t.rowid IS NULL OR t.mirror_deleted_at IS "
            "NOT NULL THEN 'inserted' WHEN t.mirror_item = j.value OR CASE WHEN json_valid("
            "t.mirror_item) THEN json(t.mirror_item) END = j.value THEN CASE WHEN "
            "t.mirror_digest IS j.d THEN NULL ELSE 'kept' END WHEN t.mirror_item IS NULL "
            "THEN 'legacy' ELSE 'updated' END, t.mirror_item FROM (SELECT lower(json_extract("
            f"value, {path[mirrored.key]})) AS k, value, json_extract(:digests, '$[' || key "
            f"|| ']') AS d FROM json_each(:page, '$.data') WHERE key NOT IN (SELECT value FROM "
            f"json_each(:drop))) AS j LEFT JOIN {name} AS t ON t.{key} = j.k"
        )
        """One page into the write's items, each compared with its row, less the items at
        ``:drop`` (seen again later in the write; Python knows them: a unique index would
        cost 0.3-0.5 µs an item)."""
        self.clear = f"DELETE FROM {_STAGE_TABLE}"
        self.count = (
            "SELECT coalesce(sum(kind = 'inserted'), 0), coalesce(sum(kind = 'updated'), 0), "
            f"count(kind) FROM {_STAGE_TABLE}"
        )
        """The write's inserts, updates and rows to write (changes or not)."""
        exprs, nul_safe, checked = _sqlite_values(mirrored, scope_column, "item")
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
        lists = {f for f in mirrored.fields if isinstance(table.c[f].type, JSON)}
        compared = ", ".join(f"json({f})" if f in lists else f'"{f}"' for f in mirrored.fields)
        typed = ", ".join(
            f"json({exprs[f]})" if f in lists else exprs[f] for f in mirrored.fields[1:]
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


# PostgreSQL's json cannot give a field of an item that holds a ``\u0000`` anywhere (a
# text cannot hold a NUL): such an item's fields are read from its text with each escape
# made U+FFFE (only an escape, not an escaped backslash before "u0000"), and a text
# holding U+FFFE is NULL in its column.
_READ = (
    r"CASE WHEN strpos(item::text, '\u0000') > 0 THEN regexp_replace(item::text, "
    r"'(?<!\\)((\\\\)*)\\u0000', '\1\\ufffe', 'g')::json ELSE item END"
)
_PG_TIME = r"'^\d{4}-\d\d-\d\d[Tt ]\d\d:\d\d:\d\d(\.\d+)?([Zz]|[+-]\d\d(:?\d\d)?)$'"


def _pg_expression(column: Any, path: str) -> str:
    """The value of ``column`` in PostgreSQL from the item's JSON (``s``: see ``_READ``),
    NULL for a value the column cannot hold: a timestamp outside the years 1 to 9999 in
    UTC (or of another form than RFC 3339), an integer past 64 bits, a text with a NUL."""
    kind = column.type
    value = f"(s ->> {path})"
    if isinstance(kind, ItemId):
        return f"{value}::uuid"
    if isinstance(kind, UTCDateTime):
        # more than 6 digits of fraction cut, as the model reads them (not rounded)
        return (
            f"(SELECT CASE WHEN ts >= '0001-01-01 00:00:00+00' AND ts < '10000-01-01 00:00:00+00'"
            f" THEN ts END FROM (SELECT CASE WHEN {value} LIKE '____-__-__T__:__:__Z' OR {value}"
            f" LIKE '____-__-__T__:__:__.______Z' THEN {value}::timestamptz WHEN {value} ~"
            rf" {_PG_TIME} THEN regexp_replace({value}, '(\.\d{{6}})\d+', '\1')::timestamptz"
            " END AS ts) AS read)"
        )
    if isinstance(kind, BigInteger):
        return (
            f"CASE WHEN json_typeof(s -> {path}) = 'number' AND {value} ~ '^-?[0-9]{{1,19}}$'"
            f" THEN CASE WHEN {value}::numeric BETWEEN -9223372036854775808 AND "
            f"9223372036854775807 THEN {value}::bigint END END"
        )
    if isinstance(kind, Boolean):
        return f"{value}::boolean"
    if isinstance(kind, Text):
        return f"CASE WHEN strpos({value}, chr(65534)) = 0 THEN {value} END"
    if not isinstance(kind, JSON):  # pragma: no cover - a column type the schema does not use
        raise AssertionError(f"no PostgreSQL expression for {column!r}")
    return (  # a list: text[]
        f"(SELECT CASE WHEN bool_or(strpos(e, chr(65534)) > 0) IS NOT TRUE THEN coalesce("
        f"array_agg(e ORDER BY at), '{{}}') END FROM json_array_elements_text(s -> {path})"
        " WITH ORDINALITY AS list(e, at))"
    )


class PostgresPageSQL:
    """The one statement of a write in PostgreSQL: its items as sent (one ``json`` array,
    which keeps each item's text, where ``jsonb`` would not, beside their digests), each id
    once (the last seen), compared, upserted and recorded, giving back one row: the counts,
    the changes when someone is told, the items with a column left NULL."""

    def __init__(self, mirrored: MirrorTable, scope_column: str | None) -> None:
        table = mirrored.table
        name, key = f'"{table.name}"', f'"{mirrored.key}"'
        fields = mirrored.fields
        path = {f: f"'{to_camel(f)}'" for f in fields}
        typed = {
            f: "$6::uuid" if f == scope_column else _pg_expression(table.c[f], path[f])
            for f in fields[1:]
        }
        self.scoped = scope_column is not None
        checked = [  # the columns a value may be left NULL in (as SQLite's ``checked``)
            f
            for f in fields[1:]
            if f != scope_column and not isinstance(table.c[f].type, (ItemId, Boolean))
        ]
        self.checked = tuple(checked)
        columns = [*fields, *BOOKKEEPING]
        kept = {mirrored.key, "mirror_first_seen_at"}
        sets = ", ".join(f'"{c}" = excluded."{c}"' for c in columns if c not in kept)
        stored = ", ".join(f't."{f}"' for f in fields[1:])
        sent = ", ".join(f'c."{f}"' for f in fields[1:])
        flags = [
            f"c.\"{f}\" IS NULL AND coalesce(json_typeof(c.s -> {path[f]}), 'null') <> 'null'"
            for f in checked
        ]
        head = (
            "WITH sent AS (SELECT item, digest::bigint AS digest, n FROM ROWS FROM ("
            "json_array_elements(($1::text)::json), json_array_elements_text(($2::text)::json))"
            f" WITH ORDINALITY AS z(item, digest, n)), read AS (SELECT item, n, digest, {_READ}"
            f" AS s FROM sent), items AS (SELECT DISTINCT ON (k) (s ->> {path[fields[0]]})::uuid"
            " AS k, item, s, digest, n FROM read ORDER BY k, n DESC), typed AS"
            f" (SELECT k, item, s, digest, n, "
            + ", ".join(f'{typed[f]} AS "{f}"' for f in fields[1:])
            + " FROM items), compared AS (SELECT c.*, t.mirror_item::text AS old, CASE WHEN"
            f" t.{key} IS NULL OR t.mirror_deleted_at IS NOT NULL THEN 'inserted' WHEN"
            f" t.mirror_item IS NULL THEN CASE WHEN ({stored}) IS NOT DISTINCT FROM ({sent})"
            " THEN 'kept' ELSE 'updated' END WHEN t.mirror_item::text = c.item::text THEN CASE"
            " WHEN t.mirror_digest IS NOT DISTINCT FROM c.digest THEN NULL ELSE 'kept' END"
            f" ELSE 'updated' END AS kind FROM typed AS c LEFT JOIN {name} AS t ON t.{key} ="
            f" c.k), upserted AS (INSERT INTO {name} ("
            + ", ".join(f'"{c}"' for c in columns)
            + ") SELECT k, "
            + ", ".join(f'"{f}"' for f in fields[1:])
            + ", $3, $3, NULL, item, digest FROM compared WHERE kind IS NOT NULL ON CONFLICT"
            f" ({key}) DO UPDATE SET {sets}), recorded AS (INSERT INTO mirror_changes (run_id,"
            ' collection, item_id, change, at, "before", "after") SELECT $4, $5, k, kind, $3,'
            " CASE WHEN kind = 'updated' THEN old::json END, item FROM compared WHERE kind IN"
            " ('inserted', 'updated') ORDER BY n) SELECT count(*) FILTER (WHERE kind ="
            " 'inserted'), count(*) FILTER (WHERE kind = 'updated'), (SELECT json_agg("
            "json_build_array(c.k, c.kind, c.old, c.item::text"
            + "".join(f", {flag}" for flag in flags)
            + ") ORDER BY n)::text FROM compared AS c WHERE c.kind IS NOT NULL AND ("
        )
        wanted = " OR ".join(flags) or "false"
        self.write = f"{head}{wanted})) FROM compared"
        """The write, giving back the items written with a column left NULL."""
        self.write_told = f"{head}c.kind <> 'kept' OR {wanted})) FROM compared"
        """The write, giving back its changes too (someone is told of them)."""


_SQLITE_ID = "-".join("[0-9a-fA-F]" * n for n in (8, 4, 4, 4, 12))
_PG_ID = "'^[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$'"


def filled(mirrored: MirrorTable, names: list[str], dialect: str) -> str:
    """The statement that fills the columns ``names`` of every row from its ``mirror_item``,
    each as a write would (a column added to a table made before its field). The items were
    decoded by a model without the field: an id or a boolean of another form is NULL too
    (the other types' expressions make NULL what their column cannot hold)."""
    table, sqlite = mirrored.table, dialect == "sqlite"
    if sqlite:
        exprs, nul_safe, _ = _sqlite_values(mirrored, None, "mirror_item")
        values = exprs | nul_safe
    else:
        values = {n: _pg_expression(table.c[n], repr(to_camel(n))) for n in names}
    for n in names:
        path = f"'$.{to_camel(n)}'" if sqlite else repr(to_camel(n))
        if isinstance(table.c[n].type, ItemId):
            test = (
                f"json_extract(mirror_item, {path}) GLOB '{_SQLITE_ID}'"
                if sqlite
                else f"(s ->> {path}) ~ {_PG_ID}"
            )
        elif isinstance(table.c[n].type, Boolean):
            test = (
                f"json_type(mirror_item, {path}) IN ('true', 'false')"
                if sqlite
                else f"json_typeof(s -> {path}) = 'boolean'"
            )
        else:
            continue
        values[n] = f"CASE WHEN {test} THEN {values[n]} END"
    quoted = {n: f'"{n}"' for n in names}  # (names are Python's: no quote in them)
    if sqlite:
        sets = ", ".join(f"{quoted[n]} = {values[n]}" for n in names)
        return f'UPDATE main."{table.name}" SET {sets} WHERE json_valid(mirror_item)'
    name, key = f'"{table.name}"', f'"{mirrored.key}"'
    typed = ", ".join(f"{values[n]} AS {quoted[n]}" for n in names)
    sets = ", ".join(f"{quoted[n]} = r.{quoted[n]}" for n in names)
    return (
        f"UPDATE {name} AS t SET {sets} FROM (SELECT k, {typed} FROM (SELECT k, {_READ} AS s "
        f"FROM (SELECT {key} AS k, mirror_item AS item FROM {name} WHERE mirror_item IS NOT "
        f"NULL) AS i) AS j) AS r WHERE t.{key} = r.k"
    )


_DIGESTS_PART = 100_000  # SQLite: live rows' digests read at once
# SQLite's page cache while the live rows' digests are read (its default, 2,000 KiB): the
# read passes every page of the table once, and a run's larger cache would take a new page
# of memory for each (134 ms against 62 for 100,000 rows, the first read on a connection).
_SCAN_CACHE = -2000
_integers = msgspec.json.Decoder(list[int]).decode


def _each(connection: sqlite3.Connection, statements: list[tuple[str, Any]]) -> list[Any]:
    return [connection.execute(*each).fetchall() for each in statements]


class Statements:
    """The run's statements of one table in one dialect."""

    def __init__(self, table: Table, key: str, dialect: Dialect) -> None:
        self.dialect = dialect.name
        self._driver: Any = None
        self._sqlite: sqlite3.Connection | None = None  # the driver's, for a thread of ours
        self._running: asyncio.Future[Any] | None = None  # its job, until done
        self.time = converter(table.c.mirror_first_seen_at, self.dialect)
        self.uuid = converter(table.c[key], self.dialect)
        self._name = dialect.identifier_preparer.quote(table.name)

    async def attach(self, conn: AsyncConnection) -> None:
        """SQLite: run this table's statements on the driver's connection itself (none of
        SQLAlchemy's work per statement); its ``begin`` still sends ``BEGIN IMMEDIATE``."""
        if self.dialect == "sqlite":
            raw = await conn.get_raw_connection()
            self._driver = raw.driver_connection
            self._sqlite = sqlite3_connection(raw)
            if self._driver is not None:
                # The write's items, in memory (this connection's own).
                await self._driver.execute("PRAGMA temp_store = MEMORY")
                await self._driver.execute(CREATE_STAGE)

    async def run_all(self, statements: list[tuple[str, Any]]) -> list[list[Any]]:
        """SQLite: run ``statements`` (with their parameters) one after another, and give
        each one's rows; as one job of a thread on the driver's connection (the loop woken
        once), which runs to its end if the caller is cancelled (see ``idle``)."""
        if self._sqlite is None:
            return [list(await self._driver.execute_fetchall(*each)) for each in statements]
        loop = asyncio.get_running_loop()
        running = self._running = loop.run_in_executor(None, _each, self._sqlite, statements)
        found: list[list[Any]] = await asyncio.shield(running)
        return found

    async def idle(self) -> None:
        """Once the thread's job (if any) is done: nothing else runs on the connection
        meanwhile, such as a rollback (its failure is the cancelled caller's, not raised)."""
        running, self._running = self._running, None
        if running is not None:
            await asyncio.wait([running])
            if not running.cancelled():
                running.exception()  # retrieved: its caller was cancelled, or has it

    async def live_digests(self, conn: AsyncConnection) -> tuple[KnownDigests, int]:
        """``mirror_digest`` of the live rows (every scope; a row of schema 1 has none), and
        how many live rows there are, read in parts (the digests kept: 8 bytes a row), in
        the rows' order in SQLite."""
        known = KnownDigests()
        rows = 0
        if self._driver is not None:
            # SQLite: a part's digests (those that are integers: one may be written by
            # hand) come back as one text, parsed by msgspec in C; the parts follow the
            # rowid, where the last one ended.
            part = (
                "SELECT group_concat(CASE WHEN typeof(d) = 'integer' THEN d END), count(*), "
                f'max(rowid) FROM (SELECT rowid, "mirror_digest" AS d FROM {self._name} '
                'WHERE rowid > ? AND "mirror_deleted_at" IS NULL '
                f"ORDER BY rowid LIMIT {_DIGESTS_PART})"
            )
            after = -(2**63)
            ((cache,),) = await self._driver.execute_fetchall("PRAGMA cache_size")
            await self._driver.execute_fetchall(f"PRAGMA cache_size={_SCAN_CACHE}")
            try:
                while True:
                    found = await self._driver.execute_fetchall(part, (after,))
                    ((values, count, last),) = found
                    if values:
                        known.add(_integers(f"[{values}]"))
                    rows += count
                    if count < _DIGESTS_PART:
                        break
                    after = last
            finally:
                await self._driver.execute_fetchall(f"PRAGMA cache_size={int(cache)}")
            return known, rows
        statement = f'SELECT "mirror_digest" FROM {self._name} WHERE "mirror_deleted_at" IS NULL'
        result = await conn.stream(text(statement))
        async for chunk in result.partitions(10_000):
            rows += len(chunk)
            known.add([digest for (digest,) in chunk if type(digest) is int])
        await result.close()
        await conn.commit()
        return known, rows
