"""The run's statements at the driver's level, beside the pages' (``_page_sql``).

SQLAlchemy compiles what it can once per dialect (the run's progress); the rest is plain
SQL for each dialect. In SQLite a write's statements go to aiosqlite's thread as one job
(``run_all``), on the driver's connection: none of SQLAlchemy's work per statement, one
wake-up of the event loop per write.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import msgspec
from sqlalchemy import Dialect, Table, bindparam, text, update
from sqlalchemy.ext.asyncio import AsyncConnection

from .._sql import compiled, converter
from ._page_sql import CREATE_STAGE
from ._schema import RUNS
from ._seen import KnownDigests

if TYPE_CHECKING:
    import sqlite3

__all__ = ["Statements"]

_first = operator.itemgetter(0)
_encode = msgspec.json.encode


_DIGESTS_PART = 100_000  # SQLite: live rows' digests read at once
# SQLite's page cache while the live rows' digests are read (its default, 2,000 KiB): the
# read passes every page of the table once, and a run's larger cache would take a new page
# of memory for each (134 ms against 62 for 100,000 rows, the first read on a connection).
_SCAN_CACHE = -2000
_integers = msgspec.json.Decoder(list[int]).decode


def _thread_job(
    driver: Any,
) -> Callable[[Callable[[sqlite3.Connection], Any]], Awaitable[Any]] | None:
    """aiosqlite: the coroutine that runs a function in the connection's thread (after the
    statements queued before it), or None (another driver, or an aiosqlite without it: its
    ``_execute`` and ``_conn`` are private, so they are looked up, never assumed)."""
    run = getattr(driver, "_execute", None)
    if run is None or not isinstance(getattr(type(driver), "_conn", None), property):
        return None

    async def job(function: Callable[[sqlite3.Connection], Any]) -> Any:
        return await run(partial(function, driver._conn))

    return job


def _execute_all(
    statements: list[tuple[str, Any]], connection: sqlite3.Connection
) -> list[list[Any]]:
    return [connection.execute(statement, params).fetchall() for statement, params in statements]


class Statements:
    """The run's statements of one table in one dialect."""

    def __init__(self, table: Table, key: str, dialect: Dialect) -> None:
        self.dialect = dialect.name
        self._driver: Any = None
        self._job: Callable[[Callable[[sqlite3.Connection], Any]], Awaitable[Any]] | None = None
        self.direct = False
        """Whether statements go to the driver's connection (SQLite, once attached)."""
        self.time = converter(table.c.mirror_first_seen_at, self.dialect)
        self.uuid = converter(table.c[key], self.dialect)
        counted = ("finished_at", "complete", "items", "inserted", "updated", "deleted")
        self._progress, order = compiled(
            update(RUNS)
            .where(RUNS.c.run_id == bindparam("run"))
            .values({name: bindparam(name) for name in counted}),
            dialect,
        )
        if order != [*counted, "run"]:
            raise AssertionError(f"unexpected parameters of the progress: {order}")
        quoted = dialect.identifier_preparer.quote
        self._name, self._key = quoted(table.name), quoted(key)
        if self.dialect == "postgresql":
            marks, ids, later = ("$1", "$2", "$3", "$4", "$5"), "= ANY({}::uuid[])", "$2"
        else:
            marks, ids, later = (
                ("?1", "?2", "?3", "?4", "?5"),
                "IN (SELECT value FROM json_each({}))",
                "?2",
            )
        live = f"{self._key} {ids} AND mirror_deleted_at IS NULL"
        self._deleted = (
            'INSERT INTO mirror_changes (run_id, collection, item_id, change, at, "before",'
            f' "after") SELECT {marks[0]}, {marks[1]}, {self._key}, {marks[2]}, {marks[3]},'
            f" mirror_item, NULL FROM {self._name} WHERE {live.format(marks[4])}"
            ' RETURNING item_id, CAST("before" AS TEXT)'  # (asyncpg would parse json)
        )
        """The changes of marking some rows deleted (run, collection, "deleted", now, ids)."""
        self._delete = (
            f"UPDATE {self._name} SET mirror_deleted_at = {marks[0]} WHERE {live.format(later)}"
        )
        """Marking them deleted (now, ids)."""

    async def attach(self, conn: AsyncConnection) -> None:
        """SQLite: run this table's statements on the driver's connection itself (aiosqlite:
        one hop to its thread each, none of SQLAlchemy's work per statement). Transactions
        stay SQLAlchemy's: its ``begin`` sends ``BEGIN IMMEDIATE`` on that connection."""
        if self.dialect == "sqlite":
            raw = await conn.get_raw_connection()
            self._driver = raw.driver_connection
            self._job = _thread_job(self._driver)
            self.direct = self._driver is not None
            if self.direct:
                # The write's items, in memory (this connection's own; see ``_page_sql``).
                await self._driver.execute("PRAGMA temp_store = MEMORY")
                await self._driver.execute(CREATE_STAGE)

    async def _run(self, conn: AsyncConnection, statement: str, params: Any) -> list[Any]:
        if self._driver is not None:
            found: list[Any] = list(await self._driver.execute_fetchall(statement, params))
            return found
        result = await conn.exec_driver_sql(statement, params)
        return list(result) if result.returns_rows else []

    async def run_all(
        self, conn: AsyncConnection, statements: list[tuple[str, Any]]
    ) -> list[list[Any]]:
        """SQLite: run ``statements`` (with their parameters) one after another, and give
        each one's rows; on the driver's connection as one job of its thread (no round
        trip to the event loop between two: the thread goes on while the loop walks, and
        the loop is woken once)."""
        if self._job is not None:
            found: list[list[Any]] = await self._job(partial(_execute_all, statements))
            return found
        return [await self._run(conn, statement, params) for statement, params in statements]

    async def delete(
        self, conn: AsyncConnection, run: Any, collection: str, now: Any, ids: list[Any]
    ) -> dict[str, Any]:
        """Mark the live rows of ``ids`` deleted at ``now`` and record each change (the row's
        ``mirror_item`` before); ``before`` of each, by the id's text."""
        pg = self.dialect == "postgresql"
        keys = ids if pg else json.dumps([str(i) for i in ids])
        params = (self.uuid(run), collection, "deleted", self.time(now), keys)
        found = await self._run(conn, self._deleted, params)
        await self._run(conn, self._delete, params[3:])
        return {str(key): before for key, before in found}

    async def progress(
        self,
        conn: AsyncConnection,
        run: Any,
        counts: Sequence[int],
        finished: Any = None,
        complete: bool = False,
    ) -> None:
        """Set a run's counts (items, inserted, updated, deleted) in ``mirror_runs``, and
        when it finished, complete or not."""
        params = (self.time(finished), complete, *counts, self.uuid(run))
        if self._driver is not None:
            await self._driver.execute(self._progress, params)
        else:
            await conn.exec_driver_sql(self._progress, params)

    async def live_digests(self, conn: AsyncConnection) -> tuple[KnownDigests, int]:
        """``mirror_digest`` of the live rows (every scope; a row of schema 1 has none), and
        how many live rows there are, read in parts (the digests kept: 8 bytes a row), in
        the rows' order in SQLite."""
        known = KnownDigests()
        rows = 0
        if self._driver is not None:
            # SQLite: a part's digests come back as one text, parsed by msgspec in C (a
            # part with a value other than an integer, written by hand, is read row by
            # row); the parts follow the rowid, where the last one ended.
            part = (
                f'FROM (SELECT rowid, "mirror_digest" AS d FROM {self._name} '
                'WHERE rowid > ? AND "mirror_deleted_at" IS NULL '
                f"ORDER BY rowid LIMIT {_DIGESTS_PART})"
            )
            after = -(2**63)
            ((cache,),) = await self._driver.execute_fetchall("PRAGMA cache_size")
            await self._driver.execute_fetchall(f"PRAGMA cache_size={_SCAN_CACHE}")
            try:
                while True:
                    ((values, count, last),) = await self._driver.execute_fetchall(
                        f"SELECT group_concat(d), count(*), max(rowid) {part}", (after,)
                    )
                    if values:
                        try:
                            known.add(_integers(f"[{values}]"))
                        except msgspec.DecodeError:
                            each = await self._driver.execute_fetchall(f"SELECT d {part}", (after,))
                            known.add([d for (d,) in each if type(d) is int])
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
            digests = list(map(_first, chunk))
            rows += len(digests)
            known.add([value for value in digests if type(value) is int])
        await result.close()
        await conn.commit()
        return known, rows
