"""A walk of a listing that proves which items it did not miss.

Offsets shift while a listing changes: an item deleted before the walk's position moves
every later item up one offset, so a plain offset walk can skip an item that exists the
whole time. This walk asks for overlapping pages (each page starts at the previous page's
last item) in the service's default order, oldest first, and checks each overlap:

- page 0 starts at offset 0, so it holds every item up to its last one, X0;
- page k+1 still holding Xk means it holds every item after Xk up to its own last one,
  whenever each page was fetched (concurrently is fine);
- a page shorter than asked ends the listing.

So when every overlap holds and a short page ends the chain, every item that existed
during the whole walk was seen: the walk is *proven*, and an item it did not see was
absent at some moment of it. A broken overlap (the boundary item moved out of the next
page, or was deleted) makes the walk unproven; it still delivers every page it fetched.
This needs a stable total order: ASSUMED in ``_assumed.MIRROR_ORDER``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import Any

from .._core._assumed import MIRROR_ORDER
from .._core._exceptions import NotFoundError
from .._paging._pagination import AsyncPaginator

__all__ = ["Walk"]

Listing = Callable[..., AsyncPaginator[Any]]
"""A list method of the client: ``listing(page_size=, max_items=, start_offset=)``."""


class Walk:
    """One walk of a listing; ``proven`` says, once it ends, whether it can miss nothing."""

    def __init__(
        self,
        listing: Listing,
        key: Callable[[Any], Any],
        *,
        page_size: int,
        concurrency: int,
        missing_ok: bool = False,
    ) -> None:
        if page_size < 2:
            raise ValueError("the mirror walks pages of at least 2 items (they overlap by one)")
        self._listing = listing
        self._key = key
        self._size = page_size
        self._step = page_size - 1
        # Pages asked for ahead of the writer: twice what the client sends at once, so that
        # requests keep going while a batch is written.
        self._ahead = max(2, 2 * concurrency)
        self._missing_ok = missing_ok
        self.proven = False
        self._split = False
        self.total: int | None = None
        """``totalCount`` of the first page."""

    async def _fetch(self, offset: int) -> list[Any]:
        listing = self._listing(
            page_size=self._size, max_items=self._size, start_offset=offset, sort=MIRROR_ORDER
        )
        pages = [page async for page in listing.pages()]
        if len(pages) > 1:  # the service answered with less than asked: not one snapshot
            self._split = True
        return [item for page in pages for item in page.items]

    async def pages(self) -> AsyncGenerator[Sequence[Any], None]:
        """The pages in order (overlapping items included: the caller dedupes)."""
        async with contextlib.aclosing(self.batches(1)) as batches:
            async for batch in batches:
                for page in batch:
                    yield page

    async def batches(self, most: int) -> AsyncGenerator[list[Sequence[Any]], None]:
        """The pages in order: each time the next one, and those fetched already after it
        (at most ``most`` in all), so that a writer slower than the service catches up."""
        try:
            first = await anext(
                aiter(
                    self._listing(
                        page_size=self._size,
                        max_items=self._size,
                        start_offset=0,
                        sort=MIRROR_ORDER,
                    ).pages()
                ),
                None,
            )
        except NotFoundError:
            if not self._missing_ok:
                raise
            return  # the listing itself is gone (an employer deleted): unproven
        items = list(first.items) if first is not None else []
        self.total = first.meta.total_count if first is not None else 0
        limit = first.meta.limit if first is not None else 0
        if isinstance(limit, int) and 2 <= limit < self._size and len(items) == limit:
            # The service pages smaller than asked: walk at its page size, so that each
            # page is one answer (one moment of the listing).
            self._size, self._step = limit, limit - 1
        if len(items) < self._size:
            self.proven = True
            yield [items]
            return
        ok = True
        last = self._key(items[-1])
        planned = max(0, -(-(self.total - self._size) // self._step))  # pages after the first
        # A listing that grows as fast as the walk advances would keep it going for ever:
        # past twice the pages the first totalCount asked for, the walk stops, unproven.
        bound = 2 * planned + 16
        queue: deque[asyncio.Task[list[Any]]] = deque()
        next_planned = 1
        batch: list[Sequence[Any]] = [items]
        ended = False
        try:
            while not ended:
                while len(queue) < self._ahead and (next_planned <= planned or not queue):
                    queue.append(asyncio.ensure_future(self._fetch(self._step * next_planned)))
                    next_planned += 1
                if batch and (len(batch) >= most or not queue[0].done()):
                    yield batch
                    batch = []
                    continue
                page = await queue.popleft()
                batch.append(page)
                if ok and last not in {self._key(item) for item in page}:
                    ok = False  # the boundary moved: something may have been skipped
                if len(page) < self._size:
                    ended = True  # the end of the listing (later planned pages add nothing)
                elif next_planned > bound:
                    ok, ended = False, True
                else:
                    last = self._key(page[-1])
            if batch:
                yield batch
        finally:
            for task in queue:
                task.cancel()
            for task in queue:
                with contextlib.suppress(BaseException):
                    await task
        self.proven = ok and not self._split
