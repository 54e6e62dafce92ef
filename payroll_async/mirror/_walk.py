"""A walk of a listing that proves which items it did not miss (``_proof``).

Offsets shift while a listing changes (a deletion moves every later item up one), so a
plain offset walk can skip an item that exists the whole time. This walk asks for pages
in the service's default order, each starting at the previous page's last item, fetched
ahead through the page engine's one fetch-ahead (``_paging._walks.Ahead``), and hands
each page to its ``Proof`` (a pure function of the pages, in the order taken), which says
whether the walk is proven, and if not why (``doubt``). It still delivers every page it
fetched. Beside the proof's reasons, a walk is unproven when its listing is gone, or when
it made more requests than twice the pages that the larger of the first ``totalCount``
and ``hint`` (the rows the mirror holds) call for, plus 16.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from typing import Any

from .._core._exceptions import NotFoundError
from .._paging._pagination import PageSource
from .._paging._walks import Ahead
from ._proof import END, GO_ON, SHORT, Proof
from ._seen import SeenIds

__all__ = ["HOLD_ITEMS", "HOLD_NEAR", "HOLD_SECONDS", "FirstPage", "Walk"]

logger = logging.getLogger("payroll_async")


FirstPage = Callable[[object, int, int, Callable[[int], Awaitable[bool]]], Awaitable[None]]
"""Told of a walk's first page before any page is handed out: its ``totalCount``, its
items, the page size, and a way to ask whether the listing holds an item at an offset
(the deletion guard's first word; what it raises ends the walk)."""

HOLD_ITEMS = {"postgresql": 0, "sqlite": 1000}
"""Items a batch written into each database waits for (``least``). SQLite: fewer, larger
writes (each a plan, a hop to aiosqlite's thread) cost less CPU (7% of a first mirror's);
PostgreSQL: small writes keep the server busy while the walk goes on (larger: no faster)."""
HOLD_SECONDS = 0.05
"""How long after its first page such a batch waits for the next (``hold``): while the
service answers fast, writes are fewer and larger; when it is slow, each page is written."""
HOLD_NEAR = 0.01
"""A listing whose first page comes sooner than this is near (``near``: an emulator, a
service next door): no batch of it waits (holding cost 5-8% of wall, measured at 0 ms)."""


class Walk:
    """One walk of a listing; ``proven`` says, once it ends, whether it can miss nothing."""

    def __init__(
        self,
        source: PageSource[Any],
        key: Callable[[Any], Any],
        order: Callable[[Any], Any],
        *,
        page_size: int,
        concurrency: int,
        missing_ok: bool = False,
        hint: int = 0,
        seen: SeenIds | None = None,
        first: FirstPage | None = None,
        record: Callable[[SeenIds, Any, int], None] | None = None,
    ) -> None:
        self._source = source
        self._first = first
        self._proof = Proof(key, order, page_size, seen=seen, record=record)
        self._size = page_size
        self._step = page_size - 1
        # Pages asked for ahead of the writer: twice what the client sends at once, so that
        # requests keep going while a batch is written.
        self._ahead = max(2, 2 * concurrency)
        self._missing_ok = missing_ok
        self._hint = hint
        self._pages = self._items = 0  # pages and items taken (overlaps included)
        self.total: int | None = None
        """``totalCount`` of the first page."""

    @property
    def proven(self) -> bool:
        """Whether the walk, once over, can have missed no item (``_proof``)."""
        return self._proof.proven

    @property
    def doubt(self) -> str | None:
        """Why the walk is not proven (the first reason seen), or None."""
        return self._proof.doubt

    async def batches(
        self, most: int, least: int = 0, hold: float = 0.0, near: float = 0.0
    ) -> AsyncGenerator[list[Sequence[Any]], None]:
        """The pages in order: each time the next one, and those fetched already after it
        (at most ``most`` in all), so that a writer slower than the service catches up.

        A batch of fewer than ``least`` items waits for the next page up to ``hold``
        seconds after its first page came (fewer, larger writes while pages come fast),
        unless the listing's first page came within ``near`` seconds; a page that fails
        is never waited for: the batch is given first, then the failure raised."""
        source, proof = self._source, self._proof
        clock = asyncio.get_running_loop().time
        asked = clock()
        pending: Ahead[int] = Ahead(self._ahead)  # the requests' offsets
        try:
            try:
                page = source.page(await source.request(0, self._size))
            except NotFoundError:
                if not self._missing_ok:
                    raise
                proof.doubts("the listing is gone")
                return  # the listing itself is gone (an employer deleted): unproven
            total, limit = page.meta.total_count, page.meta.limit
            self.total = total if type(total) is int else None
            if type(limit) is int and 2 <= limit < self._size:
                # The service pages smaller than asked: walk at its page size (found once,
                # here), so that each page is one answer (one moment of the listing).
                self._size, self._step = limit, limit - 1
                proof.size = limit
            if self._first is not None:  # before anything of the walk is handed out
                await self._first(total, len(page.items), self._size, self._holds)
            if clock() - asked < near:
                least = 0  # a near listing: its pages are written as they come
            most_items = max(self.total or 0, self._hint)  # the pages after the first:
            planned = max(0, (most_items - self._size) // self._step + 1)
            # A listing that grows as fast as the walk advances would keep it going for
            # ever: past twice the pages planned, the walk stops, unproven.
            bound = 2 * planned + 16
            requests = 0
            offset, after = 0, self._step  # this page's offset; the next one to ask for
            batch: list[Sequence[Any]] = []
            held = 0  # the batch's items
            since = 0.0  # when its first page came
            while True:
                outcome = proof.page(offset, page)
                items = page.items
                if not batch:
                    since = clock()
                    held = 0
                batch.append(items)
                held += len(items)
                self._pages += 1
                self._items += len(items)
                if outcome == END:
                    break
                if outcome == SHORT:
                    # Walk on from the short page's last item: cancel what was asked after it.
                    pending.cancel()
                    after = offset + (len(items) - 1 if len(items) >= 2 else self._step)
                horizon = math.inf if proof.capped else float(proof.latest)
                while (
                    pending.room()
                    and requests < bound
                    and (after < horizon or (outcome == GO_ON and not len(pending)))
                ):
                    pending.add(after, source.request(after, self._size))
                    requests += 1
                    after += self._step
                head = pending.head()
                if head is None:
                    if requests >= bound:
                        proof.doubts(f"still full pages after {requests + 1} requests")
                    break
                following = head[1]
                if held < least and len(batch) < most and not following.done():
                    left = since + hold - clock()
                    if left > 0:  # not raised here: the batch goes first if it fails
                        await asyncio.wait((following,), timeout=left)
                if batch and (
                    len(batch) >= most
                    or not following.done()
                    or (not following.cancelled() and following.exception() is not None)
                ):
                    # written before the next page is awaited, and before its failure is
                    # raised: what was fetched is kept (and told) whatever comes next
                    yield batch
                    batch = []
                offset, task = pending.take()
                page = source.page(await task)
            if batch:
                yield batch
        finally:
            # waited for, their outcome read; a cancellation of this task is not swallowed
            # here (it goes on, as any other)
            await pending.aclose()
            source.end(self._pages, self._items)
        if not proof.end():
            logger.debug("mirror walk not proven: %s", self.doubt)

    async def _holds(self, offset: int) -> bool:
        """Whether the listing holds an item at ``offset`` (one request of its own)."""
        source = self._source
        return bool(source.page(await source.request(offset, self._size)).items)
