"""The change feed read back: ``mirror_changes`` after a change id, for ``--changes``.

The one reader of ``mirror_changes`` (the writer is ``_store``): a change to the table's
columns or to how ids are stored is a change here, nowhere else. Within one collection
the ids grow in commit order (its runs never overlap, and each writes on one connection),
so "every change after id N" never skips one committed later. Each read is a short
transaction of at most ``limit`` rows, so a long catch-up never holds up a mirror of
another collection (in SQLite every transaction takes the write lock).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any

import attrs
from sqlalchemy import ColumnElement, Text, cast, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from .._sql import Database
from ._change import Change
from ._migrate import connected, ensure_schema
from ._schema import CHANGES, SCHEMA, TABLES

__all__ = ["Feed", "open_feed"]


@attrs.define(eq=False)
class Feed:
    """The changes of one collection (of one employer's update groups) in one database."""

    db: Database
    conn: AsyncConnection
    collection: str
    employer: uuid.UUID | None
    database_id: str
    """This database's identity: when its schema was installed (kept by a copy of it)."""

    async def last(self) -> int:
        """The id of the newest change of any collection (0 when there is none)."""
        ((found,),) = await self._rows(select(func.max(CHANGES.c.change_id)))
        return int(found or 0)

    async def _rows(self, query: Any) -> Sequence[Any]:
        """``query``'s rows, read in a short transaction of its own."""
        with self.db.errors(f"reading the changes in {self.db.shown}"):
            async with self.conn.begin():
                return (await self.conn.execute(query)).all()

    async def after(
        self, change_id: int, limit: int = 5000, skip_run: uuid.UUID | None = None
    ) -> list[tuple[int, Change | None]]:
        """The feed's next changes after ``change_id`` (at most ``limit``), oldest first, as
        (id, change) pairs; a change of ``skip_run`` is (id, None)."""
        where: ColumnElement[bool] = (CHANGES.c.change_id > change_id) & (
            CHANGES.c.collection == self.collection
        )
        query = select(
            CHANGES.c.change_id,
            CHANGES.c.run_id,
            CHANGES.c.item_id,
            CHANGES.c.change,
            CHANGES.c.at,
            cast(CHANGES.c.before, Text),  # the JSON's text as stored (PostgreSQL: json)
            cast(CHANGES.c.after, Text),
        )
        if self.employer is not None:  # one employer's update groups: its rows' changes
            groups = TABLES["update-groups"].table
            query = query.join(groups, groups.c.update_group_id == CHANGES.c.item_id)
            where = where & (groups.c.employer_identifier_id == self.employer)
        rows = await self._rows(query.where(where).order_by(CHANGES.c.change_id).limit(limit))
        return [
            (
                int(number),
                None
                if run == skip_run
                else Change(run, self.collection, item, change, at, before, after),
            )
            for number, run, item, change, at, before, after in rows
        ]

    async def recorded(self, run_id: uuid.UUID, after: int) -> tuple[int, int | None]:
        """How many changes run ``run_id`` recorded after id ``after``, and the last one's
        id (None when none)."""
        query = select(func.count(), func.max(CHANGES.c.change_id)).where(
            (CHANGES.c.change_id > after) & (CHANGES.c.run_id == run_id)
        )
        ((number, last),) = await self._rows(query)
        return int(number or 0), None if last is None else int(last)


@contextlib.asynccontextmanager
async def open_feed(
    into: str, collection: str, employer: uuid.UUID | None = None
) -> AsyncIterator[Feed]:
    """The feed of ``collection`` in the database ``into`` (its tables created if new)."""
    async with connected(into) as (db, conn):
        await ensure_schema(db, conn)
        with db.errors(f"reading {db.shown}"):
            async with conn.begin():
                installed = await conn.scalar(
                    select(SCHEMA.c.installed_at).order_by(SCHEMA.c.version).limit(1)
                )
        identity = installed.isoformat() if installed is not None else ""
        yield Feed(db, conn, collection, employer, identity)
