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
from collections.abc import Awaitable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

import attrs
from yarl import URL

from .._core._exceptions import PaginationError
from .._http import _otel
from .._http._response import Response
from ..models import ListMeta
from ._links import LinkKey, link_key, next_target, offset_link

if TYPE_CHECKING:
    from .._http._options import FinalOptions
    from ._decode import PageDecoder

__all__ = [
    "LinkWalk",
    "Listing",
    "OffsetWalk",
    "Page",
    "Sender",
    "download",
    "more",
    "step",
    "trusted",
]

T = TypeVar("T")


class Sender(Protocol):
    """What a paginator sends its GETs through: one client's transport, options and state."""

    @property
    def origin(self) -> URL: ...

    def url(self, path: str) -> URL: ...

    def account(self) -> tuple[str, str | None]: ...

    def send(
        self,
        method: str,
        url: URL,
        *,
        options: FinalOptions,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
    ) -> Awaitable[Response]: ...


@attrs.frozen
class Page(Generic[T]):
    """One page of a listing.

    ```pycon
    >>> page = await client.payroll_connections.list(page_size=50)
    >>> while page.has_next_page():
    ...     page = await page.get_next_page()
    ```
    """

    items: Sequence[T]
    """The page's items, structured."""
    meta: ListMeta
    """The list envelope's ``meta``: offset, limit, totalCount, sort, filters."""
    links: Mapping[str, str]
    """rel -> absolute URL, from the Link header (empty without one)."""
    headers: Mapping[str, str]
    """The response headers."""
    _turn: _Turn | None = attrs.field(default=None, init=False, eq=False, repr=False)

    def has_next_page(self) -> bool:
        """Whether the listing goes on after this page, as its walk would decide.

        With Link headers: whether this page has a ``rel="next"`` link. Without: whether
        items came and the offset after them is below a ``totalCount`` that agrees with
        them (a total that does not agree is not believed: the next page is then asked
        for, and an empty one ends the listing). An empty page, the last page, and the
        page that reaches the listing's ``max_items`` say no.
        """
        turn = self._turn
        return turn is not None and turn.following(self) is not None

    async def get_next_page(self) -> Page[T]:
        """The page after this one, in one request, with the listing's options.

        Raises [`PaginationError`][payroll_async.PaginationError] when there is none
        (check [`has_next_page()`][payroll_async.Page.has_next_page] first), or when the
        next link leaves the client's origin or leads back to this page.
        """
        turn = self._turn
        following = None if turn is None else turn.following(self)
        if turn is None or following is None:
            raise PaginationError("this is the last page of its listing: there is no next page")
        listing = turn.listing
        if isinstance(following, URL):
            page, _ = await listing.fetch(
                follow(listing, following, {link_key(turn.url)}), None, turn.end
            )
            return page
        offset, limit = following
        page, _ = await listing.fetch(listing.url, listing.query(offset, limit), turn.end)
        return page


class _Turn:
    """What a page needs to know to ask for the one after it, as the walks would.

    Kept as the answer left it (the URL answered, its links) and read only when asked:
    a walk's pages pay nothing for it.
    """

    __slots__ = ("end", "links", "listing", "url")

    def __init__(
        self, listing: Listing[Any], url: URL, links: Mapping[str, URL], end: int | None
    ) -> None:
        self.listing = listing
        self.url = url
        """The URL the page was answered from, its query included."""
        self.links = links
        self.end = end
        """The offset at which the listing's ``max_items`` ends it."""

    def offset(self, meta: ListMeta) -> int | None:
        """Where the page starts in the listing: the request's offset, else ``meta.offset``."""
        offset = _number(self.url.query.get("offset"))
        if offset is None and type(meta.offset) is int:
            return meta.offset
        return offset

    def following(self, page: Page[Any]) -> URL | tuple[int, int | None] | None:
        """The next page's link, or its (offset, limit); None when there is none."""
        got = len(page.items)
        if not got:
            return None
        offset = self.offset(page.meta)
        after = None if offset is None else offset + got
        end = self.end
        if end is not None and after is not None and after >= end:
            return None
        if self.links:  # with Link headers, only rel="next" says there is more
            return self.links.get("next")
        if after is None:
            return None
        total = trusted(page.meta.total_count, after)
        if total is not None and after >= total:
            return None
        limit = _number(self.url.query.get("limit"))  # None: the service's own page size
        if end is not None and limit is not None:
            limit = min(limit, end - after)
        return after, limit


async def download(
    sender: Sender,
    url: URL,
    options: FinalOptions,
    params: Mapping[str, Any] | None,
    span: Any,
) -> Response:
    """One GET of a walk; its request spans are children of the walk's span."""
    if span is None:
        return await sender.send("GET", url, options=options, params=params)
    with _otel.using(span):
        return await sender.send("GET", url, options=options, params=params)


@attrs.define(slots=True)
class Listing(Generic[T]):
    """What every page request of one walk shares: where, how, and how to read a page."""

    sender: Sender
    url: URL
    params: Mapping[str, Any]
    options: FinalOptions
    decoder: PageDecoder[T]
    name: str
    span: Any = None
    end: int | None = None
    """The offset at which ``max_items`` ends the listing (None: no such end)."""

    def query(self, offset: int, limit: int | None) -> dict[str, Any]:
        if limit is None:  # the service's own page size
            return {**self.params, "offset": offset}
        return {**self.params, "limit": limit, "offset": offset}

    def start(self, url: URL, params: Mapping[str, Any] | None) -> asyncio.Task[Response]:
        task = asyncio.create_task(
            download(self.sender, url, self.options, params, self.span),
            name=f"payroll_async page {self.name}",
        )
        # A page fetched ahead that fails is the walk's error when its turn comes (awaiting
        # it raises); if the walk is abandoned first, nobody is left to be told.
        task.add_done_callback(_retrieve)
        return task

    async def fetch(
        self, url: URL, params: Mapping[str, Any] | None, end: int | None = None
    ) -> tuple[Page[T], Response]:
        """One page; with ``end``, its items past that offset left out (``max_items``)."""
        response = await download(self.sender, url, self.options, params, self.span)
        page = self.parse(response)
        if end is not None and page._turn is not None:
            offset = page._turn.offset(page.meta)
            if offset is not None and offset + len(page.items) > end:
                page = with_items(page, page.items[: max(0, end - offset)])
        return page, response

    def parse(self, response: Response) -> Page[T]:
        items, meta = self.decoder.decode(response)
        if response.link_error is not None:
            raise PaginationError(f"the Link header of {response.url} {response.link_error}")
        links = {rel: str(url) for rel, url in response.links.items()} if response.links else {}
        page = Page(items=items, meta=meta, links=links, headers=response.headers)
        object.__setattr__(page, "_turn", _Turn(self, response.url, response.links, self.end))
        return page


class LinkWalk(Generic[T]):
    """Pages one after another by their ``rel="next"`` links, on the client's origin only.

    ``visited``: the pages already walked (by offset), which a link must not lead back to.
    """

    __slots__ = ("_emitted", "_link", "_listing", "_page", "_visited", "_want")

    def __init__(
        self,
        listing: Listing[T],
        page: tuple[Page[T], Response],
        want: int | None,
        visited: set[LinkKey] | None = None,
    ) -> None:
        self._listing = listing
        self._page: tuple[Page[T], Response] | None = page
        self._want = want
        self._visited = {*(visited or ()), link_key(page[1].url)}
        self._emitted = 0
        self._link: URL | None = None

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
        want = self._want
        items = page.items if want is None else page.items[: want - self._emitted]
        self._emitted += len(items)
        link = response.links.get("next")
        if items and link is not None and (want is None or self._emitted < want):
            self._link = link
        return with_items(page, items)

    def _target(self, link: URL) -> URL:
        return follow(self._listing, link, self._visited)

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
        "_gap",
        "_handover",
        "_linked",
        "_listing",
        "_next_offset",
        "_step",
        "_total",
        "_walked",
        "_want",
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
        want: int | None,
        *,
        linked: bool,
    ) -> None:
        self._listing = listing
        self._step = page_step
        self._want = want
        self._linked = linked
        self._width = listing.options.concurrency
        self._emitted = 0
        self._walked: set[LinkKey] = set()
        self._handover: LinkWalk[T] | None = None
        self._gap: tuple[int, int, int] | None = None  # a short page to complete first
        self._window: deque[tuple[int, int, tuple[Page[T], Response] | asyncio.Task[Response]]] = (
            deque()
        )
        first_page = first[0]
        items = first_page.items if want is None else first_page.items[:want]
        if limit is not None:
            items = items[:limit]
        got = len(items)
        self._next_offset = offset + got
        self._total = trusted(first_page.meta.total_count, offset + got)
        self._end = None if want is None else offset + want
        if items:
            self._window.append((offset, got if limit is None else page_step, first))
        else:  # the first page is empty: it is the whole listing
            self._gap = None
            self._end = offset
            self._window.append((offset, 0, first))

    async def next_page(self) -> Page[T] | None:
        if self._handover is not None:
            return await self._handover.next_page()
        if self._gap is not None:
            page = await self._fill_gap()
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
        items = page.items[:size]
        if not items:
            self.close()
            return None
        links = response.links
        if self._linked:
            self._walked.add(link_key(response.url))
            link = links.get("next")
            if link is not None and not offset_link(
                link, response.url, page_offset + len(page.items), self._step, size
            ):
                # The links stopped matching the offsets: follow them from here.
                want = self._want
                left = None if want is None else want - self._emitted
                self.close()
                self._handover = LinkWalk(listing, (page, response), left, self._walked)
                return await self._handover.next_page()
        self._total = trusted(page.meta.total_count, page_offset + len(items))
        self._emitted += len(items)
        if self._linked and "next" not in links:
            self.close()  # the server says this is the last page
            self._end = self._next_offset = 0
        else:
            self._gap = (page_offset, size, len(items))
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
            task = listing.start(listing.url, listing.query(offset, size))
            window.append((offset, size, task))
            self._next_offset = offset + size

    async def _fill_gap(self) -> Page[T] | None:
        """The rest of a page that came back short, so that no item is skipped."""
        assert self._gap is not None
        page_offset, size, got = self._gap
        total = self._total
        self._gap = None
        if got >= (size if total is None else min(size, total - page_offset)):
            return None
        listing = self._listing
        gap, _ = await listing.fetch(listing.url, listing.query(page_offset + got, size - got))
        items = gap.items[: size - got]
        if not items:
            return None
        self._emitted += len(items)
        self._gap = (page_offset, size, got + len(items))
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


def follow(listing: Listing[Any], link: URL, visited: set[LinkKey]) -> URL:
    """A next link to follow: on the client's origin, and not a page already ``visited``."""
    target = next_target(link)
    origin = listing.sender.origin
    if target.origin() != origin:
        raise PaginationError(
            f"refusing to follow a next link to another origin ({target.origin()}); "
            f"the client only talks to {origin}"
        )
    key = link_key(target)
    if key in visited:
        raise PaginationError(f"the next link {link} was already visited (a loop)")
    visited.add(key)
    return target


def _number(text: str | None) -> int | None:
    return int(text) if text is not None and text.isascii() and text.isdigit() else None


def _retrieve(task: asyncio.Task[Response]) -> None:
    """Mark a cancelled page's outcome as seen: it is not anyone's error any more."""
    if not task.cancelled():
        task.exception()


def more(items: int, total_count: object, offset: int) -> bool:
    """Whether the listing may go on after a first page, as far as its total tells."""
    total = trusted(total_count, offset + items)
    return total is None or offset + items < total


def step(limit: int | None, got: int, meta_limit: object, *, more: bool) -> int:
    """The page size to walk on after a first page of ``got`` items.

    A first page shorter than asked, with more to come, tells the server's page size;
    without a size of our own, the page's ``meta.limit`` tells it (or the page's length).
    """
    if limit is None:
        if type(meta_limit) is int and meta_limit >= got:
            return max(meta_limit, 1)
        return got
    return got if got < limit and more else limit


def trusted(total: object, seen: int) -> int | None:
    """``totalCount`` if it agrees with the ``seen`` items so far, else None (unknown)."""
    if type(total) is not int or total < seen:
        return None
    return total


def with_items(page: Page[T], items: Sequence[T]) -> Page[T]:
    if len(items) == len(page.items):
        return page
    trimmed = attrs.evolve(page, items=items)
    object.__setattr__(trimmed, "_turn", page._turn)  # not an __init__ argument
    return trimmed
