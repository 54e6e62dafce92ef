"""Writing one page: compare with the rows, upsert what changed, record it, all at once.

Each page is one transaction with the run's progress (``mirror_runs``) and the ids seen
(a temporary table of this connection), so that a run killed at any point leaves every
page either wholly written or not at all, and the next run, finding those rows equal,
records nothing twice.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import attrs
from sqlalchemy import Column, MetaData, Table, Uuid, delete, func, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.schema import CreateTable

from ._schema import CHANGES, RUNS, MirrorTable

__all__ = ["Change", "Counts", "Store"]

_BATCH = 500  # ids per statement where a set of ids is marked deleted


@attrs.frozen
class Change:
    """One change the mirror recorded (a row of ``mirror_changes``)."""

    run_id: uuid.UUID
    collection: str
    item_id: uuid.UUID
    change: str
    """``inserted``, ``updated`` or ``deleted``."""
    at: datetime.datetime

    def to_row(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "collection": self.collection,
            "item_id": self.item_id,
            "change": self.change,
            "at": self.at,
        }

    def to_json(self) -> dict[str, str]:
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


def _temp(name: str) -> Table:
    return Table(
        name, MetaData(), Column("item_id", Uuid, primary_key=True), prefixes=["TEMPORARY"]
    )


class Store:
    """The run's writes into one collection's table, on one connection."""

    def __init__(
        self,
        connection: AsyncConnection,
        mirrored: MirrorTable,
        collection: str,
        run_id: uuid.UUID,
        to_row: Callable[[Any], tuple[Any, ...]],
    ) -> None:
        self._conn = connection
        self._m = mirrored
        self._collection = collection
        self.run_id = run_id
        self.to_row = to_row
        self.counts = Counts()
        self.items = 0
        """Distinct items seen by this pass of the run."""
        self._previous: set[Any] = set()  # the last page's ids: pages overlap by one
        table = mirrored.table
        self._key = table.c[mirrored.key]
        self._current = select(
            *(table.c[name] for name in mirrored.fields), table.c.mirror_deleted_at
        )
        dialect = connection.dialect.name
        make: Any = postgresql.insert if dialect == "postgresql" else sqlite.insert
        upsert = make(table)
        kept = {"mirror_first_seen_at", mirrored.key}
        self._upsert = upsert.on_conflict_do_update(
            index_elements=[mirrored.key],
            set_={c.name: upsert.excluded[c.name] for c in table.c if c.name not in kept},
        )
        self._seen = _temp("mirror_seen")
        self._suspects = _temp("mirror_suspects")
        self._mark_seen = make(self._seen).on_conflict_do_nothing()

    async def start(self, started_at: datetime.datetime) -> None:
        for temp in (self._seen, self._suspects):
            await self._conn.execute(CreateTable(temp, if_not_exists=True))
            await self._conn.execute(delete(temp))
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

    async def write_page(self, items: Sequence[Any]) -> list[Change]:
        """Upsert one page (one transaction); the changes it made."""
        rows = {}
        for item in items:
            row = self.to_row(item)
            rows[row[0]] = row  # an overlap or a retried page may repeat an item
        if not rows:
            return []
        now = datetime.datetime.now(datetime.timezone.utc)
        fields = self._m.fields
        conn = self._conn
        async with conn.begin():
            stored = {
                row[0]: row
                for row in await conn.execute(self._current.where(self._key.in_(list(rows))))
            }
            writes: list[dict[str, Any]] = []
            changes: list[Change] = []
            for key, row in rows.items():
                old = stored.get(key)
                if old is not None and old[-1] is None and tuple(old[:-1]) == row:
                    continue  # unchanged: nothing written
                values = dict(zip(fields, row))
                values["mirror_first_seen_at"] = now
                values["mirror_last_seen_at"] = now
                values["mirror_deleted_at"] = None
                writes.append(values)
                # an item that comes back after it was marked deleted is inserted again
                kind = "updated" if old is not None and old[-1] is None else "inserted"
                changes.append(Change(self.run_id, self._collection, key, kind, now))
            if writes:
                await conn.execute(self._upsert, writes)
                await conn.execute(insert(CHANGES), [c.to_row() for c in changes])
            for change in changes:
                if change.change == "inserted":
                    self.counts.inserted += 1
                else:
                    self.counts.updated += 1
            await conn.execute(self._mark_seen, [{"item_id": key} for key in rows])
            self.items += len(rows.keys() - self._previous)
            self._previous = set(rows)
            await self._progress(now=None)
        return changes

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
        self._previous = set()

    async def seen_count(self) -> int:
        """The distinct items this pass saw (also the run's ``items`` from now on)."""
        count = (await self._conn.execute(select(func.count()).select_from(self._seen))).scalar()
        await self._conn.commit()
        self.items = int(count or 0)
        return self.items

    async def narrow_suspects(self, first: bool, scope: uuid.UUID | None) -> int:
        """After a pass: the live rows it did not see (first pass), or those still unseen."""
        seen = select(self._seen.c.item_id)
        async with self._conn.begin():
            if first:
                live = select(self._key).where(
                    self._m.table.c.mirror_deleted_at.is_(None), self._key.not_in(seen)
                )
                if scope is not None and self._m.scope is not None:
                    live = live.where(self._m.table.c[self._m.scope] == scope)
                await self._conn.execute(insert(self._suspects).from_select(["item_id"], live))
            else:
                await self._conn.execute(
                    delete(self._suspects).where(self._suspects.c.item_id.in_(seen))
                )
            await self._conn.execute(delete(self._seen))
            count = (
                await self._conn.execute(select(func.count()).select_from(self._suspects))
            ).scalar()
        return int(count or 0)

    async def delete_suspects(self) -> list[Change]:
        """Mark the rows every pass missed as deleted, in batches; the changes."""
        table = self._m.table
        changes: list[Change] = []
        while True:
            async with self._conn.begin():
                ids = list(
                    (await self._conn.execute(select(self._suspects.c.item_id).limit(_BATCH)))
                    .scalars()
                    .all()
                )
                if not ids:
                    break
                now = datetime.datetime.now(datetime.timezone.utc)
                await self._conn.execute(
                    update(table)
                    .where(self._key.in_(ids), table.c.mirror_deleted_at.is_(None))
                    .values(mirror_deleted_at=now)
                )
                batch = [Change(self.run_id, self._collection, i, "deleted", now) for i in ids]
                await self._conn.execute(insert(CHANGES), [c.to_row() for c in batch])
                await self._conn.execute(
                    delete(self._suspects).where(self._suspects.c.item_id.in_(ids))
                )
                self.counts.deleted += len(ids)
                await self._progress(now=None)
            changes.extend(batch)
        return changes

    async def finish(self, complete: bool) -> None:
        async with self._conn.begin():
            await self._progress(datetime.datetime.now(datetime.timezone.utc), complete)
