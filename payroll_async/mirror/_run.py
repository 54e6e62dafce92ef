"""``mirror()``: one run, from the lock to the last deletion it can prove."""

from __future__ import annotations

import datetime
import functools
import logging
import operator
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, cast

import attrs
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from .._client import PayrollClient
from .._collections import COLLECTIONS as REGISTRY
from .._core._assumed import LIMIT_MAX, MIRROR_ORDER, MIRROR_ORDER_FIELDS
from .._core._env import MIRROR_URL, read
from .._core._exceptions import InvalidArgumentError, NotFoundError
from .._core._types import NOT_GIVEN
from .._core._validation import check_concurrency, check_id, check_int
from .._sql import MIRROR_PRAGMAS, Database
from ._change import MirrorProgress, MirrorResult
from ._errors import (
    MaxDeletions,
    MirrorDeletionsError,
    MirrorURLError,
    check_max_deletions,
    refusal,
)
from ._guard import Guard
from ._migrate import connected, ensure_schema
from ._schema import TABLES
from ._sent import SentPage, SentPageDecoder, record_ids
from ._store import MAX_PAGES, Change, Store
from ._walk import HOLD_ITEMS, HOLD_NEAR, HOLD_SECONDS, Walk

__all__ = ["COLLECTIONS", "MirrorProgress", "MirrorResult", "mirror"]

logger = logging.getLogger("payroll_async")

COLLECTIONS = tuple(TABLES)
"""The collections the mirror copies, as the command names them."""

OnChange = Callable[[Change], Awaitable[None]]


async def mirror(
    client: PayrollClient,
    collection: str,
    *,
    into: str | None = None,
    employer: uuid.UUID | str | None = None,
    on_change: OnChange | None = None,
    wait: bool = False,
    on_wait: Callable[[str], None] | None = None,
    on_progress: Callable[[MirrorProgress], None] | None = None,
    page_size: int = 100,
    concurrency: int = 8,
    max_passes: int = 4,
    max_deletions: MaxDeletions = NOT_GIVEN,
) -> MirrorResult:
    """Copy ``collection`` into the database ``into`` and record what changed.

    ```pycon
    >>> result = await mirror(client, "payroll-connections", into="sqlite:///payroll.db")
    >>> result.inserted, result.updated, result.deleted
    (25000, 0, 0)
    ```

    ``into`` is ``sqlite:///PATH`` or ``postgresql://USER:PASSWORD@HOST/DB`` (default: the
    ``PAYROLL_MIRROR_URL`` environment variable). Tables are created on first use. Each
    change (a `Change`) is recorded in ``mirror_changes`` and, once committed, awaited
    with ``on_change``. ``update-groups`` covers every employer, or only ``employer``.
    Another run of the same collection into the same database raises `MirrorBusyError`,
    or is waited for with ``wait=True`` (``on_wait`` is told). Database failures raise
    `MirrorError`, whose text never holds a credential of the URL. ``on_progress`` is
    called with a `MirrorProgress` after each write (for a progress bar; it must not
    block). ``page_size`` items a request, ``concurrency`` pages fetched ahead, at most
    ``max_passes`` walks of the listing.

    A run that would mark more rows deleted than ``max_deletions`` (default: half of the
    live rows, from 100; None: no bound) marks none and raises `MirrorDeletionsError`.
    """
    if collection not in TABLES:
        raise InvalidArgumentError(
            f"collection: one of {', '.join(COLLECTIONS)}, got {collection!r}"
        )
    if employer is not None and not REGISTRY[collection].needs_employer:
        raise InvalidArgumentError("employer= applies to update-groups only")
    scope = uuid.UUID(check_id(employer, "employer")) if employer is not None else None
    check_int(page_size, "page_size", 2, REGISTRY[collection].page_size_max or LIMIT_MAX)
    check_concurrency(concurrency)
    check_int(max_passes, "max_passes", 1, 2**31)
    check_max_deletions(max_deletions)
    url = into or read(MIRROR_URL)
    if not url:
        raise MirrorURLError(f"into: give a database URL, or set {MIRROR_URL}")
    run = _Run(client, collection, scope, on_change, on_progress, page_size, concurrency)
    return await run.run(url, wait, on_wait, max_passes, max_deletions)


@attrs.define
class _Run:
    """One run of ``mirror()``: its passes, each one or more walks written by the store."""

    client: PayrollClient
    collection: str
    scope: uuid.UUID | None
    on_change: OnChange | None
    on_progress: Callable[[MirrorProgress], None] | None
    page_size: int
    concurrency: int
    db: Database = attrs.field(init=False)
    store: Store = attrs.field(init=False)
    guard: Guard = attrs.field(init=False)
    pass_number: int = 0
    hint: int = 0
    """The live rows the mirror holds before the pass: how far a walk may have to go."""

    async def run(
        self,
        url: str,
        wait: bool,
        on_wait: Callable[[str], None] | None,
        max_passes: int,
        max_deletions: MaxDeletions,
    ) -> MirrorResult:
        collection = self.collection
        refused: MirrorDeletionsError | None = None
        mirrored = TABLES[collection]
        async with connected(url, MIRROR_PRAGMAS) as (db, conn):
            self.db = db
            notify = on_wait or (lambda message: logger.warning("%s", message))
            # The lock first: a run that waits says so (in SQLite the schema's check
            # would wait for the other run's write lock silently).
            name = mirrored.table.name
            busy = f"another mirror of {name} into {db.shown} is running"
            async with db.run_lock(conn, f"mirror:{name}", busy, wait, notify):
                await ensure_schema(db, conn)
                started = datetime.datetime.now(datetime.timezone.utc)
                self.store = store = Store(conn, mirrored, collection, uuid.uuid4(), self.scope)
                store.keep_changes = self.on_change is not None
                try:
                    with db.errors(f"writing to {db.shown}"):
                        await store.start(started)
                        live = await self._live(conn)
                    self.guard = Guard(collection, live, max_deletions)
                    complete = False
                    proven_passes = items = 0
                    for attempt in range(max_passes):
                        self.pass_number = attempt + 1
                        store.begin_pass()
                        # (the run lock: the live rows are those at its start and its inserts)
                        self.hint = store.live_at_start + store.counts.inserted
                        try:
                            proven = await self._pass()
                        except MirrorDeletionsError as early:  # the guard's first word
                            refused, items = early, store.items
                            break
                        self.guard.on = False  # the first pass is written: the end decides
                        await self._commit()  # the pass's last pages
                        with db.errors(f"reading {db.shown}"):
                            suspects = await store.narrow_suspects()
                        proven = proven and not store.repeated  # an id twice: no proof
                        items = store.items
                        proven_passes += proven
                        logger.debug(
                            "mirror %s pass %d: proven=%s suspects=%d",
                            collection,
                            attempt + 1,
                            proven,
                            suspects,
                        )
                        if proven and suspects == 0:
                            complete = True
                            break
                        if proven_passes >= 2:
                            refused = refusal(collection, suspects, store.live, max_deletions)
                            if refused is None:
                                with db.errors(f"writing to {db.shown}"):
                                    await store.delete_suspects()
                                await self._tell()
                                complete = True
                            break
                    with db.errors(f"writing to {db.shown}"):
                        await store.finish(complete)
                    await self._tell()
                except BaseException:
                    # Ended early: what is committed is told (unless on_change failed),
                    # the rest rolled back for the next run to write.
                    await store.stop()
                    await self._tell()
                    raise
        counts = store.counts
        result = MirrorResult(
            collection=collection,
            run_id=store.run_id,
            items=items,
            inserted=counts.inserted,
            updated=counts.updated,
            deleted=counts.deleted,
            unchanged=max(0, items - counts.inserted - counts.updated),
            complete=complete,
        )
        if refused is not None:
            refused.result = result
            raise refused
        return result

    async def _tell(self) -> None:
        """Tell ``on_change`` the changes the store committed, in order, each once (one
        being told when the run is interrupted counts as told); once it raised, nothing
        more (the run ends with its error; ``mirror_changes`` holds the rest)."""
        store, on_change = self.store, self.on_change
        untold = store.untold
        while untold and not store.refused:
            change = untold.popleft()
            if on_change is not None:
                try:
                    await on_change(change)
                except Exception:
                    store.refused = True
                    raise

    def _told(self, total: int | None) -> None:
        if self.on_progress is not None:
            self.on_progress(MirrorProgress(self.store.items, total, self.pass_number))

    async def _live(self, conn: AsyncConnection) -> dict[uuid.UUID | None, int]:
        """The live rows of each scope when the run began (the guard's measure): of the
        run's employer, of every employer, or (None) of a collection without scopes."""
        mirrored = TABLES[self.collection]
        if mirrored.scope is None:
            return {None: self.store.live_at_start}
        table = mirrored.table
        scope = table.c[mirrored.scope]
        query = select(scope, func.count()).where(table.c.mirror_deleted_at.is_(None))
        if self.scope is not None:
            query = query.where(scope == self.scope)
        async with conn.begin():
            rows = (await conn.execute(query.group_by(scope))).all()
        return {None if s is None else uuid.UUID(str(s)): int(n) for s, n in rows}

    def _walk_of(
        self,
        listing: Callable[..., Any],
        key: str,
        order: str,
        items: bool,
        scope: uuid.UUID | None = None,
    ) -> Walk:
        """A walk of ``listing``; of the collection's own ``items`` (not the employers of
        update groups), its ids go into the store's ``seen``."""
        paginator = listing(page_size=self.page_size, sort=MIRROR_ORDER)
        if items:  # its pages as sent (`SentPage`)
            decoder = SentPageDecoder(paginator.model, key, order, self.store.known)
            paginator = paginator.with_decoder(decoder)
        return Walk(
            paginator.page_source(),
            operator.attrgetter(key),
            operator.attrgetter(order),
            page_size=self.page_size,
            concurrency=self.concurrency,
            missing_ok=items and REGISTRY[self.collection].needs_employer,
            hint=self.hint,
            seen=self.store.seen if items else None,
            first=functools.partial(self.guard.first_page, scope) if items else None,
            record=record_ids if items else None,
        )

    async def _pass(self) -> bool:
        """One walk of the whole collection, every page written; whether it is proven."""
        if REGISTRY[self.collection].needs_employer and self.scope is None:
            employers = self._walk_of(
                self.client.employer_identifiers.list,
                "id",
                MIRROR_ORDER_FIELDS["employer-identifiers"],
                items=False,
            )
            ids: list[uuid.UUID] = []
            async for (page,) in employers.batches(1):
                ids.extend(e.id for e in page)
            proven = employers.proven
            if proven:  # every employer listed: the rows of others are in no listing
                self.guard.employers(set(ids))
            for employer_id in dict.fromkeys(ids):
                self.store.scope = employer_id
                # one listing of many: its total is not the pass's
                proven &= await self._walk(employer_id, lambda _total: self._told(None))
            return proven
        return await self._walk(self.scope, self._told)

    async def _walk(self, scope: uuid.UUID | None, told: Callable[[int | None], None]) -> bool:
        collection, db, store = self.collection, self.db, self.store
        key = TABLES[collection].key
        order = MIRROR_ORDER_FIELDS[collection]
        listing = REGISTRY[collection].list_method(self.client, scope)
        walk = self._walk_of(listing, key, order, True, scope)
        least = HOLD_ITEMS.get(db.dialect, 0)
        try:
            async for batch in walk.batches(MAX_PAGES, least, HOLD_SECONDS, HOLD_NEAR):
                with db.errors(f"writing to {db.shown}"):
                    await store.write_pages(cast("list[SentPage]", batch))
                await self._tell()
                told(walk.total)
        except Exception as exc:
            if isinstance(exc, NotFoundError) and REGISTRY[collection].needs_employer:
                return False  # the employer went away during the walk
            if not store.refused:  # on_change failed: nothing more committed untold
                await self._commit()  # a failed run keeps what it fetched
            raise
        return walk.proven

    async def _commit(self) -> None:
        """Commit the pages written since the last commit and tell their changes (at the
        end of a pass, and when a walk fails)."""
        with self.db.errors(f"writing to {self.db.shown}"):
            await self.store.commit()
        await self._tell()
