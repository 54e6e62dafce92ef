"""A walk of a listing that proves which items it did not miss.

Offsets shift while a listing changes (a deletion moves every later item up one), so a
plain offset walk can skip an item that exists the whole time. This walk asks for pages
in the service's default order, each starting at the previous page's last item, and
checks each overlap: page 0 holds every item up to its last one, and a page k+1 that
starts with page k's last item holds every item after it up to its own last one,
whenever each page was fetched. When every overlap holds and a page shorter than asked
reaches its own ``totalCount``, every item that existed during the whole walk was seen:
the walk is *proven*. Anything it saw that disagrees with what the service said makes it
unproven (``doubt``: the first reason), and it still delivers every page it fetched:

- a page that does not start with the previous page's last item;
- a page shorter than asked while its ``totalCount`` says more (the walk goes on from its
  last item), or longer than asked;
- ``meta.limit`` other than the page size walked, ``meta.offset`` other than asked, or no
  integer ``totalCount``;
- a ``totalCount`` below the items seen up to that page (a capped count: the walk goes on
  while pages come back full, up to its bound);
- order keys (``_assumed.MIRROR_ORDER``) going down, changing for the boundary item, or
  tying at a page's edge;
- one id seen twice, other than each boundary item (found at the end of the walk, or of
  the pass when the walk adds its ids to the pass's ``seen``);
- more requests than twice the pages that the larger of the first ``totalCount`` and
  ``hint`` (the rows the mirror holds) call for, plus 16.
"""

from __future__ import annotations

import asyncio
import logging
import math
import operator
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from typing import Any

from .._core._exceptions import NotFoundError
from .._paging._page import Page
from .._paging._pagination import PageSource
from .._paging._walks import Ahead
from ._seen import SeenIds

__all__ = ["HOLD_ITEMS", "HOLD_NEAR", "HOLD_SECONDS", "FirstPage", "Walk"]

logger = logging.getLogger("payroll_async")

_GO_ON, _END, _SHORT = range(3)

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
        self._record = record
        """How a page's ids from ``start`` on go into the ids seen (None: ``key`` of each)."""
        self._key = key
        self._order = order
        self._size = page_size
        self._step = page_size - 1
        # Pages asked for ahead of the writer: twice what the client sends at once, so that
        # requests keep going while a batch is written.
        self._ahead = max(2, 2 * concurrency)
        self._missing_ok = missing_ok
        self._hint = hint
        # The ids seen, each once (a boundary item only in its first page): the walk's own,
        # to find an id seen twice at its end; or ``seen``, which the caller checks so.
        self._own = seen is None
        self._ids: SeenIds | None = SeenIds() if seen is None else seen
        self._capped = False  # a totalCount below what the walk saw
        self._latest = 0  # the latest page's totalCount
        self._pages = self._items = 0  # pages and items taken (overlaps included)
        self.proven = False
        self.doubt: str | None = None
        """Why the walk is not proven (the first reason seen), or None."""
        self.total: int | None = None
        """``totalCount`` of the first page."""

    def _doubts(self, why: str) -> None:
        if self.doubt is None:
            self.doubt = why
            if self._own:
                self._ids = None  # no proof to keep ids for any more

    async def batches(
        self, most: int, least: int = 0, hold: float = 0.0, near: float = 0.0
    ) -> AsyncGenerator[list[Sequence[Any]], None]:
        """The pages in order: each time the next one, and those fetched already after it
        (at most ``most`` in all), so that a writer slower than the service catches up.

        A batch of fewer than ``least`` items waits for the next page up to ``hold``
        seconds after its first page came (fewer, larger writes while pages come fast),
        unless the listing's first page came within ``near`` seconds; a page that fails
        is never waited for: the batch is given first, then the failure raised."""
        source = self._source
        clock = asyncio.get_running_loop().time
        asked = clock()
        pending: Ahead[int] = Ahead(self._ahead)  # the requests' offsets
        try:
            try:
                page = source.page(await source.request(0, self._size))
            except NotFoundError:
                if not self._missing_ok:
                    raise
                self._doubts("the listing is gone")
                return  # the listing itself is gone (an employer deleted): unproven
            total, limit = page.meta.total_count, page.meta.limit
            self.total = total if type(total) is int else None
            if type(limit) is int and 2 <= limit < self._size:
                # The service pages smaller than asked: walk at its page size (found once,
                # here), so that each page is one answer (one moment of the listing).
                self._size, self._step = limit, limit - 1
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
            boundary: Any = None  # the item the next page must start with
            batch: list[Sequence[Any]] = []
            held = 0  # the batch's items
            since = 0.0  # when its first page came
            while True:
                outcome = self._check(offset, page, boundary)
                items = page.items
                if not batch:
                    since = clock()
                    held = 0
                batch.append(items)
                held += len(items)
                self._pages += 1
                self._items += len(items)
                if outcome == _END:
                    break
                if outcome == _SHORT:
                    # Walk on from the short page's last item: cancel what was asked after it.
                    pending.cancel()
                    after = offset + (len(items) - 1 if len(items) >= 2 else self._step)
                    boundary = items[-1] if len(items) >= 2 else None
                else:
                    boundary = items[-1]
                horizon = math.inf if self._capped else float(self._latest)
                while (
                    pending.room()
                    and requests < bound
                    and (after < horizon or (outcome == _GO_ON and not len(pending)))
                ):
                    pending.add(after, source.request(after, self._size))
                    requests += 1
                    after += self._step
                head = pending.head()
                if head is None:
                    if requests >= bound:
                        self._doubts(f"still full pages after {requests + 1} requests")
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
        ids = self._ids
        if self._own and ids is not None:
            ids.freeze()
            if len(ids) != ids.added:
                self._doubts("an id seen twice")
        self.proven = self.doubt is None
        if self.doubt is not None:
            logger.debug("mirror walk not proven: %s", self.doubt)

    async def _holds(self, offset: int) -> bool:
        """Whether the listing holds an item at ``offset`` (one request of its own)."""
        source = self._source
        return bool(source.page(await source.request(offset, self._size)).items)

    def _check(self, offset: int, page: Page[Any], boundary: Any) -> int:
        """Check one page against the walk and the service's words; what comes next."""
        items = page.items
        got = len(items)
        meta = page.meta
        # Read as values of any type: whatever the service sent, nothing is taken on trust.
        counted: object = meta.total_count
        limit: object = meta.limit
        at: object = meta.offset
        total = counted if type(counted) is int else None
        if total is None:
            self._doubts("a page without an integer totalCount")
        else:
            self._latest = total
        if type(limit) is int and limit != self._size:
            self._doubts(f"meta.limit {limit} on a walk of pages of {self._size}")
        if type(at) is int and at != offset:
            self._doubts(f"meta.offset {at} for offset {offset}")
        if got > self._size:
            self._doubts(f"{got} items where {self._size} were asked for")
        start = 0
        if boundary is not None:
            if not items or self._key(items[0]) != self._key(boundary):
                self._doubts("a page that does not start with the previous page's last item")
            else:
                start = 1
                if self._order(items[0]) != self._order(boundary):
                    self._doubts("the boundary item's order key changed between pages")
        if self.doubt is None:
            self._check_order(items)
        if self._ids is not None:
            if self._record is not None:  # the page's own ids (a mirror's page: `SentPage`)
                self._record(self._ids, items, start)
            else:
                self._ids.add(list(map(self._key, items))[start:])
        reached = offset + got
        if got < self._size:
            if total is not None and reached == total:
                return _END
            if total is not None and reached > total:
                self._doubts(f"totalCount {total} below the {reached} items seen")
                return _END  # the service says no more, twice
            self._doubts(f"a short page ({got} of {self._size}) while totalCount says more")
            return _SHORT
        if total is not None and reached > total:
            self._doubts(f"totalCount {total} below the {reached} items seen")
            self._capped = True
        return _GO_ON

    def _check_order(self, items: Sequence[Any]) -> None:
        """Order keys never go down, and never tie at a page's edge (a page at a time:
        ``map`` in C)."""
        last = len(items) - 1
        if last < 1:
            return
        try:
            keys = list(map(self._order, items))
            if any(map(operator.lt, keys[1:], keys)):
                self._doubts("items out of order")
            elif not (keys[0] < keys[1] and keys[last - 1] < keys[last]):
                self._doubts("two items with the same order key at a page's edge")
        except TypeError:  # an order key that does not compare (None, another type)
            self._doubts("an order key that does not compare")
