"""The walk of a listing after its first page: each page the one the page before it says
comes next (``_page``'s one rule, as ``Page.next_page_info()`` says it), offset pages
fetched ahead.

``Walk`` has one coroutine, ``next_page()`` (the next page, or None at the end), and one
plain method, ``close()``, which cancels what is in flight at once (it is called from
``__del__`` too, when a caller leaves a loop without closing it). The requests in flight
are tasks of ``download()``, which hold no reference to the walk, so that a walk nobody
holds is freed, and closed, as soon as it is dropped.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Generic, TypeVar

from .._core._exceptions import PaginationError
from .._http._seam import Response
from ._page import LinkKey, ListRequest, NextRequest, Page, believed_total, link_key

__all__ = ["Walk"]

T = TypeVar("T")


class Walk(Generic[T]):
    """The pages of a listing from its first: what comes after each is the rule's answer.

    The rule is asked once a page is handed out; the page it names is then fetched. Offset
    pages are fetched ahead, ``concurrency`` of them, once a ``totalCount`` can be
    trusted: each is the page the rule will name if the pages before it come whole (the
    next cells of the page size's grid, within the total and ``max_items``). A page the
    rule names that is not the one fetched next (a short page's rest) is fetched at once,
    and the pages ahead are kept if they still follow it, else cancelled. The pages
    fetched ahead wait as bytes and are decoded only when their turn comes: typed objects
    are then made just before use and die young, instead of piling up in the window and
    being promoted through the collector's generations (a third of the CPU of a long walk,
    measured).
    """

    __slots__ = (
        "_handed",
        "_listing",
        "_next",
        "_page",
        "_total",
        "_visited",
        "_walked",
        "_width",
        "_window",
    )

    def __init__(self, listing: ListRequest[T], first: Page[T]) -> None:
        self._listing = listing
        self._page: Page[T] | None = first
        self._handed = False
        self._next: NextRequest | PaginationError | None = None
        self._width = max(1, listing.options.concurrency)
        self._total: int | None = None
        """The latest ``totalCount`` that agrees with the items seen (None: none)."""
        self._window: deque[tuple[NextRequest, asyncio.Task[Response]]] = deque()
        self._walked: list[LinkKey | object] = []
        """The URLs of the pages walked that had links, made keys only when a link is
        checked for a loop (``__contains__``)."""
        self._visited: set[LinkKey] | None = None
        self._note(first)

    def __contains__(self, key: object) -> bool:
        """Whether ``key`` is a page this walk went through (a next link back to it: a loop)."""
        visited = self._visited
        if visited is None:
            visited = self._visited = {link_key(url) for url in self._walked}  # type: ignore[arg-type]
            self._walked.clear()
        return key in visited

    def _note(self, page: Page[T]) -> None:
        context = page._next_context
        if context is not None and context.links:
            if self._visited is None:
                self._walked.append(context.asked_url)
            else:
                self._visited.add(link_key(context.asked_url))

    async def next_page(self) -> Page[T] | None:
        page = self._page
        if page is None:
            return None
        if not self._handed:  # the first page, even an empty one
            self._handed = True
            self._plan(page)
            return page
        following = self._next
        self._next = None
        if following is None:
            self.close()
            return None
        if isinstance(following, PaginationError):
            self.close()
            raise following
        listing = self._listing
        if following.url is not None:
            page = await listing.fetch(following.url, None, following)
        else:
            window = self._window
            head = window[0][0] if window else None
            if head is not None and _asks_same(head, following):
                _, task = window.popleft()
                response = await task
                # Refilled once this page is in: while it is read, ``concurrency`` pages
                # are on their way, not one fewer.
                self._fill(window[-1][0] if window else head)
                page = listing.parse(response, following)
            else:
                assert following.offset is not None
                page = await listing.fetch(
                    *listing.target(following.offset, following.limit), following
                )
        if not page.items:  # an empty page ends the listing; it is not handed out
            self.close()
            return None
        self._page = page
        self._note(page)
        self._plan(page)
        return page

    def _plan(self, page: Page[T]) -> None:
        """Ask the rule what comes after ``page``, and start fetching it (and those after it)."""
        context = page._next_context
        following: NextRequest | PaginationError | None
        try:
            following = None if context is None else context.following(page, self)
        except PaginationError as exc:  # raised when the walk gets there
            following = exc
        self._next = following
        if not isinstance(following, NextRequest) or following.url is not None:
            self._cancel()
            return
        window = self._window
        if window:
            head = window[0][0]
            if not _asks_same(head, following):
                offset, limit = following.offset, following.limit
                if offset is not None and limit is not None and offset + limit == head.offset:
                    window.appendleft((following, self._start(following)))  # a short page's rest
                else:
                    self._cancel()
        assert following.offset is not None
        self._total = total = believed_total(page.meta.total_count, following.offset)
        if total is None:
            return  # without a total to trust, one page at a time
        if not window:
            window.append((following, self._start(following)))
        self._fill(window[-1][0])

    def _fill(self, last: NextRequest) -> None:
        """Start offset requests after ``last`` until ``concurrency`` are queued: the next
        cells of the grid, within the believed total and ``max_items``."""
        window, total = self._window, self._total
        if total is None:
            return
        width = self._width
        while len(window) < width:
            if last.offset is None or last.limit is None or last.step is None or last.start is None:
                return
            offset = last.offset + last.limit
            left = None if last.left is None else last.left - last.limit
            if offset >= total or (left is not None and left <= 0):
                return
            step = last.step
            limit = step - (offset - last.start) % step
            if left is not None and left < limit:
                limit = left
            last = NextRequest(None, offset, limit, last.start, step, left)
            window.append((last, self._start(last)))

    def _start(self, request: NextRequest) -> asyncio.Task[Response]:
        listing = self._listing
        assert request.offset is not None
        return listing.start(*listing.target(request.offset, request.limit))

    def _cancel(self) -> list[asyncio.Task[Response]]:
        window = self._window
        cancelled = []
        while window:
            _, task = window.pop()
            task.cancel()
            cancelled.append(task)
        return cancelled

    def close(self) -> list[asyncio.Task[Response]]:
        """Cancel the pages in flight at once (no await: ``__del__`` calls it too).

        Returns the tasks cancelled, for a caller that can wait for them to end.
        """
        self._page = None
        self._next = None
        return self._cancel()


def _asks_same(fetched: NextRequest, named: NextRequest) -> bool:
    """Whether the page fetched ahead is the one the rule names (same offset and limit)."""
    return fetched.offset == named.offset and fetched.limit == named.limit
