"""What one write does: which items changed, their rows in stored form, the changes.

A batch of items goes through each step at once (``map``, ``zip``, ``compress``: loops in
C), not item by item: the items whose digests no live row had when the run began (the
pages' decoder looked them up, ``_sent``), their stored digests, the rows of the items that
changed, column by column, and the changes to record.
"""

from __future__ import annotations

import collections
import datetime
import logging
import operator
import uuid
from array import array
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from itertools import compress, repeat
from typing import Any

import attrs
from sqlalchemy.ext.asyncio import AsyncConnection

from ._driver import Statements
from ._schema import TABLES
from ._sent import SentPage

__all__ = ["Plan", "Planner", "Sent", "column_maker"]

logger = logging.getLogger("payroll_async")

_item = operator.itemgetter(0)
_raw = operator.itemgetter(1)
_hash = operator.itemgetter(2)
_text = partial(str, encoding="utf-8")  # an item's bytes as text (any buffer: msgspec.Raw)
_SLOTS = 1 << 23  # the written-ids filter: a byte a slot, 8 MB
_SLOT = _SLOTS - 1


def _plain(row: Sequence[Any]) -> tuple[Any, ...]:
    """A row with its ids as text (a driver gives UUIDs, an item sent text)."""
    return tuple(str(v) if isinstance(v, uuid.UUID) else v for v in row)


class Sent:
    """The items of some pages, each id once (the last seen of it is written): ``at``, by
    id, the place of its fields, bytes, digest and whether to write it (not known) in
    the pages' lists laid end to end."""

    __slots__ = ("at", "digests", "fields", "raws", "write")

    def __init__(self, pages: Sequence[SentPage]) -> None:
        self.at: dict[str, int] = {}
        self.fields: list[Any] = []
        self.raws: list[Any] = []
        self.digests = array("q")
        self.write: list[bool] = []
        for page in pages:
            start = len(self.fields)
            self.at.update(zip(page.ids, range(start, start + len(page)), strict=True))
            self.fields += page
            self.raws += page.raws
            self.digests += page.digests
            known = page.known
            self.write += [True] * len(page) if known is None else map(operator.not_, known)


@attrs.define
class Plan:
    """What one write does: the rows to upsert (by column) and the changes to record."""

    keys: list[str]
    """Every item of the write (written or not)."""
    now: datetime.datetime
    stamp: Any
    columns: list[list[Any]] | None = None
    """The upsert's columns (the model's, then the bookkeeping), or None: nothing to write."""
    made: list[list[Any]] = attrs.Factory(lambda: [[], [], [], []])
    """The changes to record, by column: key, change, before, after."""
    updated: list[str] = attrs.Factory(list)


class Planner:
    """Plans the writes of one run into one table (reads only)."""

    def __init__(self, sql: Statements, collection: str) -> None:
        self._sql = sql
        self._collection = collection
        self._written: bytearray | None = None
        self._recent: dict[str, int] = {}  # the last write's rows: key, digest

    def table_was_empty(self) -> None:
        """The table had no row at all when the run began: an id is looked up only if
        this run may have written it (a filter of the ids written, by their hash: a slot
        taken by another id costs a look-up, never a wrong answer)."""
        self._written = bytearray(_SLOTS)

    async def plan(
        self,
        conn: AsyncConnection,
        sent: Sent,
        to_columns: Callable[[list[Any]], list[list[Any]]],
        settle: Callable[[], Awaitable[None]],
    ) -> Plan:
        """Compare the items sent with their rows: what to write. ``settle`` is awaited
        before the connection is used (the last write's statements may still be running
        on it)."""
        sql = self._sql
        now = datetime.datetime.now(datetime.timezone.utc)
        stamp = sql.time(now)
        keys = list(sent.at)
        plan = Plan(keys, now, stamp)
        # An item whose digest a live row had when the run began is unchanged (the digest
        # covers the item's bytes, its id included): no row is read for it.
        places = list(sent.at.values())
        wanted = list(map(sent.write.__getitem__, places))
        if not any(wanted):
            return plan
        if not all(wanted):
            keys, places = list(compress(keys, wanted)), list(compress(places, wanted))
        raws = list(map(sent.raws.__getitem__, places))
        hashes = list(map(sent.digests.__getitem__, places))
        stored = await self._stored(conn, keys, settle)
        olds: list[Any] = []
        if stored:
            olds = list(map(stored.get, keys))
            # unchanged: a live row with this very digest (nothing written)
            same = [
                at
                for at in compress(range(len(keys)), olds)
                if olds[at][1] is None and olds[at][0] == hashes[at]
            ]
            if same:
                if keys is plan.keys:
                    keys = keys[:]
                if len(same) * 4 < len(keys):  # a few (the overlap with the last write)
                    for at in reversed(same):
                        del keys[at], places[at], raws[at], hashes[at], olds[at]
                else:
                    write = [True] * len(keys)
                    for at in same:
                        write[at] = False
                    keys, places = list(compress(keys, write)), list(compress(places, write))
                    raws, hashes = list(compress(raws, write)), list(compress(hashes, write))
                    olds = list(compress(olds, write))
        if not keys:
            return plan
        columns = self._columns(keys, to_columns(list(map(sent.fields.__getitem__, places))))
        texts = list(map(_text, raws))
        count = len(keys)
        plan.columns = [*columns, [stamp] * count, [stamp] * count, [None] * count, texts, hashes]
        self._recent = dict(zip(keys, hashes, strict=True))
        if not stored:  # every one new
            plan.made = [keys, ["inserted"] * count, [None] * count, texts]
            return plan
        await self._changes(conn, plan, keys, olds, texts, columns, settle)
        return plan

    async def _changes(
        self,
        conn: AsyncConnection,
        plan: Plan,
        keys: list[str],
        olds: list[Any],
        texts: list[str],
        columns: list[list[Any]],
        settle: Callable[[], Awaitable[None]],
    ) -> None:
        """The changes of the items written, some of which had rows: ``plan.made``, column
        by column (every item an insert, but the few that had a row, looked at alone)."""
        sql = self._sql
        count = len(keys)
        kinds = ["inserted"] * count  # new, or back after it was marked deleted
        befores: list[Any] = [None] * count
        legacy: dict[str, int] = {}  # rows of schema 1: no digest kept
        had: dict[str, int] = {}  # live rows with another digest: updated, unless the same bytes
        for at in compress(range(count), olds):  # the items that had a row
            digest, gone = olds[at]
            if gone is None:
                (had if digest is not None else legacy)[keys[at]] = at
        dropped: list[int] = []  # written, not a change
        if legacy or had:
            # Their rows are read as written: the last write (which may hold some of them)
            # first.
            await settle()
        if legacy:
            differ: set[int] = set()
            for found in await sql.typed(conn, list(legacy)):
                at = legacy[str(found[0])]
                if _plain(found[:-1]) != _plain([column[at] for column in columns]):
                    differ.add(at)
            # the others: only mirror_item and its digest are new
            dropped += [at for at in legacy.values() if at not in differ]
            had.update((keys[at], at) for at in differ)
        updated: list[int] = []
        if had:
            before = await sql.items(conn, list(had))
            for key, at in had.items():
                kept = before.get(key)
                # The very bytes kept (a digest of another kind, from an earlier build): the
                # digest is written again, the item did not change.
                if kept == texts[at]:
                    dropped.append(at)
                else:
                    kinds[at], befores[at] = "updated", kept
                    updated.append(at)
        made = [keys[:], kinds, befores, texts]
        if dropped:
            keep = [True] * count
            for at in dropped:
                keep[at] = False
            made = [list(compress(column, keep)) for column in made]
        plan.made = made
        plan.updated = [keys[at] for at in sorted(updated)]

    async def _stored(
        self, conn: AsyncConnection, keys: list[str], settle: Callable[[], Awaitable[None]]
    ) -> dict[str, Any]:
        """(``mirror_digest``, ``mirror_deleted_at``) of the rows of ``keys``, by key."""
        written = self._written
        asked = keys
        if written is not None:
            slots = list(map(operator.and_, map(hash, keys), repeat(_SLOT)))
            taken = list(map(written.__getitem__, slots))
            # written from here on (if the write fails, a slot taken costs a look-up only)
            collections.deque(map(written.__setitem__, slots, repeat(1)), maxlen=0)
            asked = list(compress(keys, taken)) if any(taken) else []
        found: dict[str, Any] = {}
        recent = self._recent
        if asked and recent:
            # The last write's rows, as it wrote them (the item that ends a write begins the
            # next): no look-up, so no wait for that write's statements.
            found = {key: (recent[key], None) for key in asked if key in recent}
            asked = [key for key in asked if key not in found]
        if not asked:
            return found
        if not self._sql.direct:
            # One operation at a time on the connection: the last write's statements first.
            # (SQLite's statements queue on its one thread, so the look-up follows those the
            # last write sent, and the ids asked are not among its rows: no wait there, and
            # the walk and the write overlap as when no id is asked.)
            await settle()
        found.update((str(k), (d, gone)) for k, d, gone in await self._sql.stored(conn, asked))
        return found

    def _columns(self, keys: list[str], values: list[list[Any]]) -> list[list[Any]]:
        """The model's columns of some items (``values``, column by column) in stored form;
        a value its column cannot hold is NULL (the item's row only), with a warning."""
        sql = self._sql
        try:
            return sql.columns(values)
        except (OverflowError, ValueError, TypeError):
            pass
        rows: list[tuple[Any, ...]] = []
        for key, one in zip(keys, zip(*values, strict=True), strict=True):
            try:
                rows.append(sql.row(one))
            except (OverflowError, ValueError, TypeError):
                row, empty = sql.careful_row(one)
                logger.warning(
                    "mirror %s: item %s stored with %s NULL (a value the database cannot "
                    "hold; mirror_item keeps it as sent)",
                    self._collection,
                    key,
                    ", ".join(empty),
                )
                rows.append(row)
        return [list(column) for column in zip(*rows, strict=True)]


def _event_types(values: Sequence[Any]) -> list[str]:
    return [getattr(value, "value", value) for value in values]


def column_maker(
    collection: str, scope: uuid.UUID | None
) -> Callable[[list[Any]], list[list[Any]]]:
    """The model's columns of some items' fields, each a list (in the table's order)."""
    fields = TABLES[collection].fields
    if collection == "webhooks":
        sid, types, path, created, active = map(operator.attrgetter, fields)
        return lambda items: [
            list(map(sid, items)),
            list(map(_event_types, map(types, items))),
            list(map(path, items)),
            list(map(created, items)),
            list(map(active, items)),
        ]
    if collection == "update-groups":
        gid, date, errors = map(
            operator.attrgetter, ("update_group_id", "upload_date", "error_count")
        )
        return lambda items: [
            list(map(gid, items)),
            [scope] * len(items),
            list(map(date, items)),
            list(map(errors, items)),
        ]
    getters = [operator.attrgetter(name) for name in fields]
    return lambda items: [list(map(get, items)) for get in getters]
