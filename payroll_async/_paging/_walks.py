"""The page engine: a listing's requests (``ListRequest``: what every request of a walk
shares, each page's GET and its span, an answer read into a ``Page``), the one
fetch-ahead (``Ahead``: requests started in order, taken in order, at most ``width`` at
once), and the walk of a listing after its first page (``Walk``): each page the one the
page before it says comes next (``_page``'s one rule, as ``Page.next_page_info()`` says
it), offset pages fetched ahead. The mirror's proof walk fetches its overlapping pages
through the same ``Ahead`` (``AsyncPaginator.page_source()``).

``Walk`` has one coroutine, ``next_page()`` (the next page, or None at the end), and one
plain method, ``close()``, which cancels what is in flight at once (it is called from
``__del__`` too, when a caller leaves a loop without closing it). The requests in flight
are tasks of ``download()``, which hold no reference to the walk, so that a walk nobody
holds is freed, and closed, as soon as it is dropped.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

import attrs
from yarl import URL

from .._core._exceptions import PaginationError
from .._core._redact import shown_url
from .._http import _otel
from .._http._attempt import Request, build_request
from .._http._auth import Identity
from .._http._seam import Response
from ._links import read_links
from ._page import LinkKey, NextRequest, Page, _NextPageContext, believed_total, link_key

if TYPE_CHECKING:
    from .._http._options import FinalOptions
    from ._decode import Decodes

__all__ = ["Ahead", "FirstRequest", "ListRequest", "SendsPages", "Walk", "download"]

FirstRequest = tuple[URL, "Mapping[str, Any] | None", NextRequest]
"""The URL, parameters and request of a walk's first page."""

T = TypeVar("T")
K = TypeVar("K")


class SendsPages(Protocol):
    """What a paginator sends its GETs through: one client's transport, options and state."""

    @property
    def origin(self) -> URL: ...

    def url(self, path: str) -> URL: ...

    def identity(self) -> Identity: ...

    def send(self, request: Request) -> Coroutine[Any, Any, Response]: ...


def download(
    sender: SendsPages,
    url: URL,
    options: FinalOptions,
    params: Mapping[str, Any] | None,
    span: Any,
) -> Coroutine[Any, Any, Response]:
    """One GET of a walk; its request spans are children of the walk's span."""
    if span is None:  # the send itself: no coroutine around it
        return sender.send(build_request("GET", url, options, params))
    return _download_in(span, sender, url, options, params)


async def _download_in(
    span: Any, sender: SendsPages, url: URL, options: FinalOptions, params: Mapping[str, Any] | None
) -> Response:
    with _otel.using(span):
        return await sender.send(build_request("GET", url, options, params))


@attrs.define(slots=True)
class ListRequest(Generic[T]):
    """What every page request of one walk shares: where, how, and how to read a page."""

    sender: SendsPages
    url: URL
    params: Mapping[str, Any]
    options: FinalOptions
    decoder: Decodes
    name: str
    operation: str = ""
    """The walk's span and metrics name (``payroll_connections.list``)."""
    span: Any = None
    _prefix: str | None = attrs.field(init=False, default=None)
    """The text of ``url`` with ``params``, ready for ``limit`` and ``offset`` (None when
    the request's query is not only those: extra query parameters go through aiohttp)."""
    _origin: str = attrs.field(init=False, default="")
    """The client's origin as text, as the Link header's plain entries are matched."""
    _task_name: str = attrs.field(init=False, default="")
    """The name of the walk's page tasks (``payroll_async page <path>``), made once."""
    _spanned: bool = attrs.field(init=False, default=False)
    """Whether the walk's span was started (None when nothing records it)."""

    @property
    def origin(self) -> URL:
        """The client's origin."""
        return self.sender.origin

    def __attrs_post_init__(self) -> None:
        params = self.params
        if not self.options.extra_query and "limit" not in params and "offset" not in params:
            text = str(self.url.extend_query(params) if params else self.url)
            self._prefix = text + ("&" if "?" in text else "?")
        self._origin = str(self.sender.origin)
        self._task_name = f"payroll_async page {self.name}"

    def open_span(self) -> None:
        """Start the walk's span, once (every page request of the walk is its child; a
        walk that starts unrecorded is not asked again at each page)."""
        if not self._spanned:
            self._spanned = True
            self.span = _otel.start(self.operation)

    def close_span(self, pages: int, items: int) -> None:
        """End the walk's span: it took ``pages`` pages of ``items`` items in all."""
        _otel.items(self.operation, items)
        _otel.end(self.span, **{"payroll_async.pages": pages, "payroll_async.items": items})
        self.span, self._spanned = None, False

    def query(self, offset: int, limit: int | None) -> dict[str, Any]:
        if limit is None:  # the service's own page size
            return {**self.params, "offset": offset}
        return {**self.params, "limit": limit, "offset": offset}

    def page_text(self, offset: int, limit: int | None) -> str | None:
        """The text of the URL of the page at ``offset`` (None: not built as text)."""
        prefix = self._prefix
        if prefix is None:
            return None
        if limit is None:
            return f"{prefix}offset={offset}"
        return f"{prefix}limit={limit}&offset={offset}"

    def target(self, offset: int, limit: int | None) -> tuple[URL, Mapping[str, Any] | None]:
        """The URL and query parameters of the page at ``offset``.

        The URL is built as text, query included, when the query is only the listing's
        parameters with ``limit`` and ``offset`` (the same URL aiohttp would build from
        them, without building it again for every page).
        """
        text = self.page_text(offset, limit)
        if text is None:
            return self.url, self.query(offset, limit)
        return URL(text, encoded=True), None

    def start(self, url: URL, params: Mapping[str, Any] | None) -> asyncio.Task[Response]:
        task = asyncio.create_task(
            download(self.sender, url, self.options, params, self.span), name=self._task_name
        )
        # A page fetched ahead that fails is the walk's error when its turn comes (awaiting
        # it raises); if the walk is abandoned first, nobody is left to be told.
        task.add_done_callback(_retrieve)
        return task

    async def fetch(
        self,
        url: URL,
        params: Mapping[str, Any] | None,
        asked: NextRequest | None = None,
        chain: tuple[LinkKey, ...] = (),
    ) -> Page[T]:
        """One page, asked by ``asked`` (see ``parse``); ``chain``: the pages with links
        ``get_next_page()`` went through to it."""
        if self.span is None:  # a page asked for by hand, or a walk that records nothing
            _otel.configure()
        response = await download(self.sender, url, self.options, params, self.span)
        return self.parse(response, asked, chain)

    def parse(
        self,
        response: Response,
        asked: NextRequest | None = None,
        chain: tuple[LinkKey, ...] = (),
    ) -> Page[T]:
        """The page of ``response``, fetched by the request ``asked`` (None: a page read
        on its own, as a page source's): its items past the limit asked and past
        ``max_items`` left out."""
        items, meta = self.decoder.decode(response)
        links, link_error = read_links(response.headers, response.url, self._origin)
        if link_error is not None:
            shown = shown_url(f"{response.url} {link_error}", response.secret)
            raise PaginationError(f"the Link header of {shown}")
        if asked is not None:
            keep = asked.left
            if (
                asked.url is None
                and asked.limit is not None
                and (keep is None or asked.limit < keep)
            ):
                keep = asked.limit
            if keep is not None and len(items) > keep:
                items = items[:keep]
        texts = links.texts
        return Page(
            items=items,
            meta=meta,
            links=dict(texts) if texts else {},
            headers=response.headers,
            _next_context=_NextPageContext(self, response, links, asked, chain),
        )


def _retrieve(task: asyncio.Task[Response]) -> None:
    """Mark a cancelled page's outcome as seen: it is not anyone's error any more."""
    if not task.cancelled():
        task.exception()


class Ahead(Generic[K]):
    """The one fetch-ahead: page requests started in order, each under its key (what it
    asks), taken in that order, at most ``width`` at once (what a walk asks for next
    decides the keys: the grid of offset pages here, the overlapping pages of the
    mirror's walk).

    ``cancel()`` is a plain method (a walk's ``__del__`` calls it): the requests are tasks
    of ``download()``, holding no reference back to their walk. ``aclose()`` cancels and
    waits for them to end, their outcomes read (a cancellation of the caller is not
    swallowed: it goes on).
    """

    __slots__ = ("_queue", "width")

    def __init__(self, width: int) -> None:
        self.width = width
        """Requests at most in flight."""
        self._queue: deque[tuple[K, asyncio.Future[Any]]] = deque()

    def __len__(self) -> int:
        return len(self._queue)

    def room(self) -> bool:
        """Whether another request may start."""
        return len(self._queue) < self.width

    def add(self, key: K, request: Awaitable[Any], *, first: bool = False) -> None:
        """Queue ``request`` (started: a task, or made one) under ``key``; ``first``: before
        the others (a short page's rest, asked before the pages after it)."""
        task = asyncio.ensure_future(request)
        if first:
            self._queue.appendleft((key, task))
        else:
            self._queue.append((key, task))

    def head(self) -> tuple[K, asyncio.Future[Any]] | None:
        """The next request to take (its key and task), or None."""
        return self._queue[0] if self._queue else None

    def last(self) -> K | None:
        """The key of the last request queued, or None."""
        return self._queue[-1][0] if self._queue else None

    def take(self) -> tuple[K, asyncio.Future[Any]]:
        """The next request, out of the queue (await its task for the answer)."""
        return self._queue.popleft()

    def cancel(self) -> list[asyncio.Future[Any]]:
        """Cancel every request queued, at once; the tasks cancelled."""
        queue = self._queue
        cancelled = []
        while queue:
            _, task = queue.pop()
            task.cancel()
            cancelled.append(task)
        return cancelled

    async def aclose(self) -> None:
        """Cancel every request queued, and wait for them to end."""
        tasks = self.cancel()
        if tasks:
            await asyncio.wait(tasks)
            for task in tasks:
                if not task.cancelled():
                    task.exception()


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

    The walk fetches its first page itself (``first``: its URL, parameters and request;
    None: nothing is asked, as for ``max_items=0``), and keeps the walk's span: opened
    with the first request, ended with the pages and items handed out.
    """

    __slots__ = (
        "_first",
        "_items",
        "_listing",
        "_next",
        "_page",
        "_pages",
        "_total",
        "_visited",
        "_walked",
        "_window",
    )

    def __init__(self, listing: ListRequest[T], first: FirstRequest | None) -> None:
        self._listing = listing
        self._first = first
        self._page: Page[T] | None = None
        self._pages = self._items = 0
        """Pages and items handed out."""
        self._next: NextRequest | PaginationError | None = None
        self._total: int | None = None
        """The latest ``totalCount`` that agrees with the items seen (None: none)."""
        self._window: Ahead[NextRequest] = Ahead(max(1, listing.options.concurrency))
        self._walked: list[LinkKey | object] = []
        """The URLs of the pages walked that had links, made keys only when a link is
        checked for a loop (``__contains__``)."""
        self._visited: set[LinkKey] | None = None

    def __contains__(self, key: object) -> bool:
        """Whether ``key`` is a page this walk went through (a next link back to it: a loop)."""
        visited = self._visited
        if visited is None:
            visited = self._visited = {link_key(url) for url in self._walked}  # type: ignore[arg-type]
            self._walked.clear()
        return key in visited

    def _note(self, page: Page[T]) -> None:
        context = page._next_context  # noqa: SLF001 - the engine's own field of its Page
        if context is not None and context.links:
            if self._visited is None:
                self._walked.append(context.asked_url)
            else:
                self._visited.add(link_key(context.asked_url))

    async def next_page(self) -> Page[T] | None:
        """The next page (the first even when empty), or None at the end (the walk closed)."""
        first = self._first
        if first is not None:
            self._first = None
            listing = self._listing
            listing.open_span()
            fetched = self._page = await listing.fetch(*first)
            self._note(fetched)
            self._plan(fetched)
            return self._handed(fetched)
        page = self._page
        if page is None:
            self.close()
            return None
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
            queued = window.head()
            if queued is not None and _asks_same(queued[0], following):
                head, task = window.take()
                response = await task
                # Refilled once this page is in: while it is read, ``concurrency`` pages
                # are on their way, not one fewer.
                self._fill(window.last() or head)
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
        return self._handed(page)

    def _handed(self, page: Page[T]) -> Page[T]:
        self._pages += 1
        self._items += len(page.items)
        return page

    def _plan(self, page: Page[T]) -> None:
        """Ask the rule what comes after ``page``, and start fetching it (and those after it)."""
        context = page._next_context  # noqa: SLF001 - the engine's own field of its Page
        following: NextRequest | PaginationError | None
        try:
            following = None if context is None else context.following(page, self)
        except PaginationError as exc:  # raised when the walk gets there
            following = exc
        self._next = following
        window = self._window
        if not isinstance(following, NextRequest) or following.url is not None:
            window.cancel()
            return
        queued = window.head()
        if queued is not None:
            head = queued[0]
            if not _asks_same(head, following):
                offset, limit = following.offset, following.limit
                if offset is not None and limit is not None and offset + limit == head.offset:
                    window.add(following, self._start(following), first=True)  # a short page's rest
                else:
                    window.cancel()
        assert following.offset is not None
        self._total = total = believed_total(page.meta.total_count, following.offset)
        if total is None:
            return  # without a total to trust, one page at a time
        last = window.last()
        if last is None:
            window.add(following, self._start(following))
        self._fill(last or following)

    def _fill(self, last: NextRequest) -> None:
        """Start offset requests after ``last`` until ``concurrency`` are queued: the next
        cells of the grid, within the believed total and ``max_items``."""
        window, total = self._window, self._total
        if total is None:
            return
        while window.room():
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
            window.add(last, self._start(last))

    def _start(self, request: NextRequest) -> asyncio.Task[Response]:
        listing = self._listing
        assert request.offset is not None
        return listing.start(*listing.target(request.offset, request.limit))

    def close(self) -> list[asyncio.Future[Any]]:
        """End the walk now: cancel the pages in flight at once and end its span (no
        await: ``__del__`` calls it too).

        Returns the tasks cancelled, for a caller that can wait for them to end.
        """
        self._first = self._page = self._next = None
        cancelled = self._window.cancel()
        listing = self._listing
        if listing.span is not None or self._items:
            listing.close_span(self._pages, self._items)
            self._items = 0
        return cancelled

    async def aclose(self) -> None:
        """End the walk, and wait for the pages it cancelled to end."""
        cancelled = self.close()
        if cancelled:
            await asyncio.gather(*cancelled, return_exceptions=True)


def _asks_same(fetched: NextRequest, named: NextRequest) -> bool:
    """Whether the page fetched ahead is the one the rule names (same offset and limit)."""
    return fetched.offset == named.offset and fetched.limit == named.limit
