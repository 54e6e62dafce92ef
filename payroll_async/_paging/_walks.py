"""The two ways a listing is walked after its first page: by offset, or by next links.

Each walk is a strategy object with one coroutine, ``next_page()`` (the next page, or
None at the end), and one plain method, ``close()``, which cancels what is in flight at
once (it is called from ``__del__`` too, when a caller leaves a loop without closing it).
The requests in flight are tasks of ``download()``, which holds no reference to the walk,
so that a walk nobody holds is freed, and closed, as soon as it is dropped.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import TYPE_CHECKING, Generic, TypeVar

from yarl import URL

from .._http._seam import Response
from ._page import (
    LinkKey,
    Listing,
    Page,
    Quota,
    believed_total,
    follow,
    link_key,
    offset_link,
    with_items,
)

if TYPE_CHECKING:
    pass

__all__ = ["LinkWalk", "OffsetWalk", "may_go_on", "page_step_after"]

T = TypeVar("T")


class LinkWalk(Generic[T]):
    """Pages one after another by their ``rel="next"`` links, on the client's origin only.

    ``visited``: the pages already walked (by offset), which a link must not lead back to.
    """

    __slots__ = ("_emitted", "_link", "_listing", "_page", "_quota", "_secret", "_visited")

    def __init__(
        self,
        listing: Listing[T],
        page: tuple[Page[T], Response],
        quota: Quota,
        visited: set[LinkKey] | None = None,
    ) -> None:
        self._listing = listing
        self._page: tuple[Page[T], Response] | None = page
        self._quota = quota
        self._visited = {*(visited or ()), link_key(page[1].url)}
        self._emitted = 0
        self._link: URL | None = None
        self._secret: str | None = None
        """The token of the answer that gave ``_link``, redacted wherever it is shown."""

    async def next_page(self) -> Page[T] | None:
        fetched = self._page
        if fetched is None:
            link = self._link
            if link is None:
                return None
            self._link = None
            fetched = await self._listing.fetch(self._target(link), None)
        self._page = None
        page, response = fetched
        items = self._quota.take(page.items, self._emitted)
        self._emitted += len(items)
        link = response.links.get("next")
        if items and link is not None and not self._quota.reached(self._emitted):
            self._link, self._secret = link, response.secret
        return with_items(page, items)

    def _target(self, link: URL) -> URL:
        return follow(self._listing, link, self._visited, self._secret)

    def close(self) -> list[asyncio.Task[Response]]:
        self._page = self._link = None
        return []


class OffsetWalk(Generic[T]):
    """Offset/limit pages after the first: concurrent once a total can be trusted.

    ``linked``: the pages carry next links. Each is checked against the offset walk; a
    page without one ends the walk, and from a page whose link says anything else the walk
    hands over to a ``LinkWalk``.

    The first page goes through the window like any other, so that the pages after it are
    already on their way while the caller works through its items. The pages fetched ahead
    wait as bytes and are decoded only when their turn comes: typed objects are then made
    just before use and die young, instead of piling up in the window and being promoted
    through the collector's generations (a third of the CPU of a long walk, measured).
    """

    __slots__ = (
        "_emitted",
        "_end",
        "_handover",
        "_linked",
        "_listing",
        "_next_offset",
        "_quota",
        "_short_page",
        "_step",
        "_total",
        "_walked",
        "_width",
        "_window",
    )

    def __init__(
        self,
        listing: Listing[T],
        first: tuple[Page[T], Response],
        offset: int,
        limit: int | None,
        page_step: int,
        quota: Quota,
        *,
        linked: bool,
    ) -> None:
        self._listing = listing
        self._step = page_step
        self._quota = quota
        self._linked = linked
        self._width = listing.options.concurrency
        self._emitted = 0
        self._walked: list[URL] = []  # the pages walked, made keys only for a handover
        self._handover: LinkWalk[T] | None = None
        self._short_page: tuple[int, int, int] | None = None  # a short page to complete first
        self._window: deque[tuple[int, int, tuple[Page[T], Response] | asyncio.Task[Response]]] = (
            deque()
        )
        first_page = first[0]
        items = quota.take(first_page.items)
        if limit is not None:
            items = items[:limit]
        got = len(items)
        self._next_offset = offset + got
        self._total = believed_total(first_page.meta.total_count, offset + got)
        self._end = quota.end(offset)
        if items:
            self._window.append((offset, got if limit is None else page_step, first))
        else:  # the first page is empty: it is the whole listing
            self._short_page = None
            self._end = offset
            self._window.append((offset, 0, first))

    async def next_page(self) -> Page[T] | None:
        if self._handover is not None:
            return await self._handover.next_page()
        if self._short_page is not None:
            page = await self._complete_short_page()
            if page is not None:
                return page
        listing = self._listing
        window = self._window
        if self._total is None:
            # Without a total to trust, one page at a time until an empty one.
            self._fill(1)
            if not window:
                return None
            page_offset, size, pending = window.popleft()
        else:
            if not window:
                self._fill(self._width)
                if not window:
                    return None
            page_offset, size, pending = window.popleft()
        if isinstance(pending, asyncio.Task):
            response = await pending
            if self._total is not None:
                # Refilled once this page is in: while the caller works through it,
                # ``concurrency`` pages are on their way, not one fewer.
                self._fill(self._width)
            page = listing.parse(response)
        else:
            if self._total is not None:
                self._fill(self._width)
            page, response = pending
            if size == 0:  # an empty first page
                self.close()
                return page
        items = page.items if len(page.items) <= size else page.items[:size]
        if not items:
            self.close()
            return None
        links = response.links
        link = links.text("next")
        if self._linked:
            self._walked.append(response.url)
            after = page_offset + len(page.items)
            # The text of the very request the walk makes next says so at once; anything
            # else is compared as URLs.
            if (
                link is not None
                and link != listing.page_text(after, size)
                and not offset_link(links["next"], response.url, after, self._step, size)
            ):
                # The links stopped matching the offsets: follow them from here.
                quota = self._quota.after(self._emitted)
                self.close()
                walked = {link_key(url) for url in self._walked}
                self._handover = LinkWalk(listing, (page, response), quota, walked)
                return await self._handover.next_page()
        self._total = believed_total(page.meta.total_count, page_offset + len(items))
        self._emitted += len(items)
        if self._linked and link is None:
            self.close()  # the server says this is the last page
            self._end = self._next_offset = 0
        elif self._is_short(page_offset, size, len(items)):
            self._short_page = (page_offset, size, len(items))
        return with_items(page, items)

    def _fill(self, width: int) -> None:
        """Start page requests until ``width`` are queued, within the total and the end."""
        listing, window, total, end = self._listing, self._window, self._total, self._end
        while (
            len(window) < width
            and (total is None or self._next_offset < total)
            and (end is None or self._next_offset < end)
        ):
            offset = self._next_offset
            size = self._step if end is None else min(self._step, end - offset)
            task = listing.start(*listing.target(offset, size))
            window.append((offset, size, task))
            self._next_offset = offset + size

    def _is_short(self, page_offset: int, size: int, got: int) -> bool:
        """Whether the page at ``page_offset`` holds fewer items than the listing has there."""
        total = self._total
        return got < (size if total is None else min(size, total - page_offset))

    async def _complete_short_page(self) -> Page[T] | None:
        """The rest of a page that came back short, so that no item is skipped."""
        assert self._short_page is not None
        page_offset, size, got = self._short_page
        self._short_page = None
        if not self._is_short(page_offset, size, got):
            return None
        listing = self._listing
        gap, _ = await listing.fetch(*listing.target(page_offset + got, size - got))
        items = gap.items[: size - got]
        if not items:
            return None
        self._emitted += len(items)
        if self._is_short(page_offset, size, got + len(items)):
            self._short_page = (page_offset, size, got + len(items))
        return with_items(gap, items)

    def close(self) -> list[asyncio.Task[Response]]:
        """Cancel the pages in flight at once (no await: ``__del__`` calls it too).

        Returns the tasks cancelled, for a caller that can wait for them to end.
        """
        window = self._window
        cancelled = []
        while window:
            _, _, pending = window.pop()
            if isinstance(pending, asyncio.Task):
                pending.cancel()
                cancelled.append(pending)
        if self._handover is not None:
            self._handover.close()
        return cancelled


def may_go_on(items: int, total_count: object, offset: int) -> bool:
    """Whether the listing may go on after a first page, as far as its total tells."""
    total = believed_total(total_count, offset + items)
    return total is None or offset + items < total


def page_step_after(limit: int | None, got: int, meta_limit: object, *, more: bool) -> int:
    """The page size to walk on after a first page of ``got`` items.

    A first page shorter than asked, with more to come, tells the server's page size;
    without a size of our own, the page's ``meta.limit`` tells it (or the page's length).
    """
    if limit is None:
        if type(meta_limit) is int and meta_limit >= got:
            return max(meta_limit, 1)
        return got
    return got if got < limit and more else limit
