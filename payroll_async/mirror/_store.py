"""Writing pages: compare with the rows, upsert what changed, record it, all at once.

The pages that arrived while the previous write ran (one page when the service is slow,
at most ``MAX_PAGES`` when it is fast) are one transaction, together with the run's
progress in ``mirror_runs``, so that a run killed at any point leaves every page either
wholly written or not at all; the next run, finding those rows equal, records nothing
twice.

Which ids the first pass saw is kept in memory, exactly, in ``seen`` (a ``SeenIds``, 16
bytes an id, about 16 MB for a million; see ``_seen``), which the pass's walks fill (each
id once, but for an id the service answered twice: ``repeated`` says so): enough to tell
which live rows the pass did not see.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import attrs
from sqlalchemy import ColumnElement, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from ._driver import Statements
from ._schema import RUNS, MirrorTable
from ._seen import SeenIds

__all__ = ["MAX_PAGES", "Change", "Counts", "Store"]

MAX_PAGES = 10
"""Most pages written in one transaction."""
_BATCH = 500  # ids per statement where a set of ids is marked deleted


@attrs.frozen
class Change:
    """One change the mirror recorded (a row of ``mirror_changes``)."""

    run_id: uuid.UUID
    """The run that recorded it."""
    collection: str
    """The collection, as the command names it."""
    item_id: uuid.UUID
    """The item's id (its row's primary key)."""
    change: str
    """``inserted``, ``updated`` or ``deleted``."""
    at: datetime.datetime
    """When the change was committed (UTC)."""

    def values(self) -> tuple[Any, ...]:
        """As a row of ``mirror_changes``: run_id, collection, item_id, change, at."""
        return (self.run_id, self.collection, self.item_id, self.change, self.at)

    def to_json(self) -> dict[str, str]:
        """As a line of ``--changes``."""
        return {
            "run_id": str(self.run_id),
            "collection": self.collection,
            "item_id": str(self.item_id),
            "change": self.change,
            "at": self.at.isoformat().replace("+00:00", "Z"),
        }


@attrs.define
class Counts:
    inserted: int = 0
    updated: int = 0
    deleted: int = 0


class Store:
    """The run's writes into one collection's table, on one connection."""

    def __init__(
        self,
        connection: AsyncConnection,
        mirrored: MirrorTable,
        collection: str,
        run_id: uuid.UUID,
        to_row: Callable[[Any], tuple[Any, ...]],
        scope: uuid.UUID | None,
    ) -> None:
        self._conn = connection
        self._m = mirrored
        self._collection = collection
        self.run_id = run_id
        self.to_row = to_row
        self.counts = Counts()
        self.keep_changes = True
        """Whether ``write_pages`` returns the changes (someone is told of them)."""
        self.items = 0
        """Distinct items seen by this pass of the run."""
        table = mirrored.table
        self._key = table.c[mirrored.key]
        self._live: ColumnElement[bool] = table.c.mirror_deleted_at.is_(None)
        if scope is not None and mirrored.scope is not None:
            self._live = self._live & (table.c[mirrored.scope] == scope)
        self._sql = Statements(table, mirrored.key, mirrored.fields, connection.dialect)
        self.seen: SeenIds | None = SeenIds()
        """The ids the first pass's walks saw (they add them); None once narrowed."""
        self.repeated = False
        """Whether the first pass's walks were given one id twice (other than overlaps)."""
        self._suspects: set[uuid.UUID] | None = None  # None: the first pass is running
        self._previous: set[Any] = set()  # the last page's ids: pages overlap by one

    async def start(self, started_at: datetime.datetime) -> None:
        await self._conn.execute(
            insert(RUNS).values(
                run_id=self.run_id,
                collection=self._collection,
                started_at=started_at,
                finished_at=None,
                complete=False,
                items=0,
                inserted=0,
                updated=0,
                deleted=0,
            )
        )
        await self._conn.commit()

    async def write_pages(self, pages: Sequence[Sequence[Any]]) -> list[Change]:
        """Upsert some pages (one transaction); the changes they made."""
        sql = self._sql
        rows: dict[Any, tuple[Any, ...]] = {}
        ids: dict[Any, uuid.UUID] = {}
        items = 0
        for page in pages:
            keys = []
            for item in page:
                values = self.to_row(item)
                row = sql.row(values)
                key = row[0]
                rows[key] = row  # an overlap or a retried page may repeat an item
                ids[key] = values[0]
                keys.append(key)
            items += len(set(keys) - self._previous)
            self._previous = set(keys)
        if not rows:
            return []
        now = datetime.datetime.now(datetime.timezone.utc)
        stamp = sql.time(now)
        conn = self._conn
        made: list[tuple[Any, str]] = []  # (key, change)
        async with conn.begin():
            stored: dict[str, Any] = {}
            keys = list(rows)
            for start in range(0, len(keys), 1000):
                for found in await sql.stored(conn, keys[start : start + 1000]):
                    stored[str(found[0])] = found
            writes: list[tuple[Any, ...]] = []
            for key, row in rows.items():
                old = stored.get(str(key))
                live = old is not None and old[-1] is None
                if old is not None and live and tuple(old[:-1]) == row:
                    continue  # unchanged: nothing written
                writes.append((*row, stamp, stamp, None))
                # an item that comes back after it was marked deleted is inserted again
                made.append((key, "updated" if live else "inserted"))
            if writes:
                await sql.insert(conn, sql.upsert, writes)
                run, name = sql.uuid(self.run_id), self._collection
                await sql.insert(
                    conn, sql.change, [(run, name, key, kind, stamp) for key, kind in made]
                )
            updated = sum(kind == "updated" for _, kind in made)
            self.counts.updated += updated
            self.counts.inserted += len(made) - updated
            self.items += items
            await self._progress(now=None)
        self._saw(ids.values())
        if not self.keep_changes:
            return []
        return [Change(self.run_id, self._collection, ids[k], kind, now) for k, kind in made]

    def _saw(self, ids: Any) -> None:
        if self._suspects is not None:  # the first pass's walks add to ``seen`` themselves
            self._suspects.difference_update(ids)

    async def _progress(self, now: datetime.datetime | None, complete: bool = False) -> None:
        await self._conn.execute(
            update(RUNS)
            .where(RUNS.c.run_id == self.run_id)
            .values(
                items=self.items,
                inserted=self.counts.inserted,
                updated=self.counts.updated,
                deleted=self.counts.deleted,
                finished_at=now,
                complete=complete,
            )
        )

    def begin_pass(self) -> None:
        self.items = 0
        self.repeated = False
        self._previous = set()

    async def narrow_suspects(self) -> int:
        """After a pass: the live rows the first pass did not see, less those seen since."""
        if self._suspects is not None:
            return len(self._suspects)
        seen, self.seen = self.seen, None
        assert seen is not None
        seen.freeze()
        self.items = len(seen)
        self.repeated = self.items != seen.added
        suspects: set[uuid.UUID] = set()
        conn = self._conn
        async with conn.begin():
            live = (await conn.execute(select(func.count()).where(self._live))).scalar() or 0
            # Every item seen was written live, so equal counts mean every live row was seen.
            if live != self.items:
                result = await conn.stream(select(self._key).where(self._live))
                async for (key,) in result:
                    if key not in seen:
                        suspects.add(key)
        self._suspects = suspects
        return len(suspects)

    async def delete_suspects(self) -> list[Change]:
        """Mark the rows every pass missed as deleted, in batches; the changes."""
        table = self._m.table
        changes: list[Change] = []
        pending = sorted(self._suspects or ())
        for start in range(0, len(pending), _BATCH):
            ids = pending[start : start + _BATCH]
            now = datetime.datetime.now(datetime.timezone.utc)
            batch = [Change(self.run_id, self._collection, i, "deleted", now) for i in ids]
            async with self._conn.begin():
                await self._conn.execute(
                    update(table)
                    .where(self._key.in_(ids), table.c.mirror_deleted_at.is_(None))
                    .values(mirror_deleted_at=now)
                )
                await self._sql.insert(
                    self._conn, self._sql.change, [self._sql.change_row(c.values()) for c in batch]
                )
                self.counts.deleted += len(ids)
                await self._progress(now=None)
            changes.extend(batch)
        self._suspects = set()
        return changes

    async def finish(self, complete: bool) -> None:
        async with self._conn.begin():
            await self._progress(datetime.datetime.now(datetime.timezone.utc), complete)
