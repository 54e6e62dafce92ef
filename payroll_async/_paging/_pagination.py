"""AsyncPaginator: every item of a listing, walking Link rel=next or offset/limit pages.

Nothing is sent until the paginator is iterated, and each iteration is a fresh walk. Each
page is one request with its own retries (never a retried generator).

What comes after each page is decided in one place, the page's own rule
(``Page.next_page_info()``, in ``_page``), which the walk (``_walks.Walk``) asks as
``get_next_page()`` does, so a walk and pages chained by hand cannot disagree:

- offset/limit, when there is no Link header, or when the next link is exactly the
  request the offset walk would make next (same origin and path, the same query with the
  offset advanced by the page), as the service's and the emulator's links are: once a
  page gives a ``totalCount`` to trust, the pages after it are fetched concurrently (at
  most ``concurrency`` at once) and still yielded in order. The walk ends on an empty
  page, when the offset reaches ``totalCount``, or (with links) on a page without a next
  link. A server that answers with smaller pages than asked is followed at its own page
  size, and a page that comes back short is completed before the next one is yielded, so
  no item is skipped.
- any other next link (an opaque cursor, another path, a changed filter) is followed as
  it is; a link to another origin or one already visited raises PaginationError, so the
  token never goes anywhere but the client's base URL.

A ``totalCount`` is trusted only while it agrees with the data: a total that is not an
integer, or is smaller than the items already seen (-1, or 0 while items arrive), is not
believed. The walk then goes on one page at a time until a page comes back empty, so a
lying total can cost requests but never truncates the listing.

A Link header that cannot be parsed, or a next link with credentials or another scheme,
raises PaginationError: only PayrollErrors leave a walk.

Items come from an iterator that hands out the current page's items without suspending
and suspends only when a page must be awaited. Leaving the loop early (``break``, even
without ``aclosing``), or an error, cancels the requests in flight at once.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import AsyncGenerator, Awaitable, Generator, Iterator, Mapping
from types import TracebackType
from typing import Any, Generic, TypeVar

from yarl import URL

from .._core._exceptions import InvalidArgumentError
from .._http._auth import Identity
from .._http._options import FinalOptions
from .._http._seam import Response
from ..models import ListMeta
from ._decode import Decodes, PageDecoder
from ._page import MaxItems, NextRequest, Page, PageInfo
from ._walks import ListRequest, SendsPages, Walk

__all__ = ["AsyncPaginator", "Page", "PageInfo", "PageSource", "SendsPages"]

T = TypeVar("T")


class PageSource(Generic[T]):
    """A listing asked page by page at offsets of the caller's choosing (see
    ``AsyncPaginator.page_source``): ``request`` starts one page's request at once (a
    task), ``page`` reads a finished one, ``end`` ends the walk's span."""

    __slots__ = ("_listing",)

    def __init__(self, listing: ListRequest[T]) -> None:
        self._listing = listing

    def request(self, offset: int, limit: int) -> Awaitable[Response]:
        """Start the request for ``limit`` items from ``offset`` (a task, already running)."""
        listing = self._listing
        listing.open_span()
        # The URL as text when the query is only the listing's own: no URL built from a
        # query mapping for every page.
        return listing.start(*listing.target(offset, limit))

    def page(self, answer: Response) -> Page[T]:
        """The page a finished request answered."""
        return self._listing.parse(answer)

    def end(self, pages: int, items: int) -> None:
        """The walk is over: it took ``pages`` pages of ``items`` items in all."""
        self._listing.close_span(pages, items)


class AsyncPaginator(Generic[T]):
    """The items of a listing, fetched page by page as they are consumed.

    ``async for`` walks every item (a fresh walk each time); ``pages()`` walks the pages;
    ``await paginator`` is the first [`Page`][payroll_async.Page] alone, in one request.

    ```pycon
    >>> async for conn in client.payroll_connections.list():  # every item
    ...     print(conn.id)
    >>> async for page in client.payroll_connections.list().pages():
    ...     print(page.meta.offset, len(page.items))
    >>> firsts = await client.employer_identifiers.list(max_items=10).collect()
    >>> page = await client.payroll_connections.list(page_size=50)  # the first Page
    ```
    """

    def __init__(
        self,
        sender: SendsPages,
        path: str,
        model: type[T],
        *,
        params: Mapping[str, Any],
        max_items: int | None,
        start_offset: int,
        options: FinalOptions,
        operation: str = "list",
    ) -> None:
        self._operation = operation
        self._sender = sender
        self._path = path
        self._model = model
        self._decoder: Decodes = PageDecoder(model)
        self._params = params
        self._max_items = MaxItems(max_items)
        self._start_offset = start_offset
        self._options = options

    def __repr__(self) -> str:
        return (
            f"<AsyncPaginator {self._path} page_size={self._options.page_size} "
            f"max_items={self._max_items.wanted} start_offset={self._start_offset}>"
        )

    @property
    def model(self) -> type[T]:
        """The model of the items."""
        return self._model

    def describe(self) -> dict[str, Any]:
        """What this listing asks for: path, query, start and item limit (no secrets).

        ```pycon
        >>> client.payroll_connections.list(sort="-createdAt").describe()["query"]
        {'sort': '-createdAt'}
        ```
        """
        return {
            "path": self._path,
            "query": {str(k): str(v) for k, v in sorted(self._params.items())},
            "start_offset": self._start_offset,
            "max_items": self._max_items.wanted,
        }

    def skip(self, count: int) -> AsyncPaginator[T]:
        """The same listing without its first ``count`` items (as a resume needs it).

        ```pycon
        >>> rest = client.payroll_connections.list().skip(10_000)  # 10,001st on
        ```
        """
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise InvalidArgumentError(f"skip takes an integer >= 0, got {count!r}")
        if count == 0:
            return self
        clone: AsyncPaginator[T] = copy.copy(self)
        clone._start_offset = self._start_offset + count
        clone._max_items = self._max_items.after(count)
        return clone

    def _listing(self) -> ListRequest[T]:
        """What every page request of one walk of this listing shares."""
        return ListRequest(
            sender=self._sender,
            url=self._sender.url(self._path),
            params=self._params,
            options=self._options,
            decoder=self._decoder,
            name=self._path,
            operation=self._operation,
        )

    def with_decoder(self, decoder: Decodes) -> AsyncPaginator[Any]:
        """The same listing, its pages decoded by ``decoder`` (a `PageDecoder`: the
        export's raw item bytes, the mirror's ids and bytes) instead of into models."""
        clone: AsyncPaginator[Any] = copy.copy(self)
        clone._decoder = decoder
        return clone

    def page_source(self) -> PageSource[T]:
        """This listing asked page by page at offsets the caller chooses (the mirror's
        proof walk): one request a page with the listing's retries, options and decoder,
        and one span for the whole walk, as a walk of this paginator has."""
        return PageSource(self._listing())

    @property
    def identity(self) -> Identity:
        """The service this listing is sent to and the credentials it is sent with (never
        shown: an export's checkpoint records their fingerprint, to resume only from the
        same service and account)."""
        return self._sender.identity()

    def __aiter__(self) -> AsyncGenerator[T, None]:
        """A fresh walk; ``contextlib.aclosing(aiter(paginator))`` closes it on exit."""
        return _Items(self._walk())

    def pages(self) -> AsyncGenerator[Page[T], None]:
        """The listing page by page, each a [`Page`][payroll_async.Page] with its meta, links and
        headers."""
        return _Pages(self._walk())

    def __await__(self) -> Generator[Any, None, Page[T]]:
        """``await paginator``: the first [`Page`][payroll_async.Page] only, in one request.

        As openai-python's list calls answer: ``page = await client.webhooks.list()``.
        ``page.meta.total_count`` says how many there are in all; iterate the paginator
        for every item.
        """
        return self._first_page().__await__()

    async def _first_page(self) -> Page[T]:
        # One request, as the walk's first: no fetch-ahead of the pages after it.
        if self._max_items.reached(0):  # as iterating it: nothing is asked for, so nothing is sent
            return _no_page(self._start_offset, self._params)
        listing = self._listing()
        return await listing.fetch(*self._first_request(listing))

    def _first_request(
        self, listing: ListRequest[T]
    ) -> tuple[URL, Mapping[str, Any] | None, NextRequest]:
        """The URL, parameters and request of the listing's first page."""
        offset = self._start_offset
        limit = self._max_items.limit(self._options.page_size)
        url, params = listing.target(offset, limit)
        return url, params, NextRequest(None, offset, limit, None, None, self._max_items.wanted)

    def _walk(self) -> Walk[T]:
        """A fresh walk of this listing (nothing sent until its first page is asked)."""
        listing = self._listing()
        first = None if self._max_items.reached(0) else self._first_request(listing)
        return Walk(listing, first)

    async def collect(self) -> list[T]:
        """Every item in a list (mind the memory for large collections)."""
        items: list[T] = []
        walker = self._walk()
        try:
            while (page := await walker.next_page()) is not None:
                items.extend(page.items)
        finally:
            await walker.aclose()
        return items


class _Iterator(AsyncGenerator[Any, None]):
    """An async iterator over a walk, closed when dropped (a ``break`` without aclosing)."""

    __slots__ = ("_walker",)

    def __init__(self, walker: Walk[Any]) -> None:
        self._walker = walker

    def __del__(self) -> None:
        # RuntimeError: its event loop is closed, and nothing of the walk can run any more.
        with contextlib.suppress(RuntimeError):
            self._walker.close()

    async def asend(self, value: None) -> Any:
        return await self.__anext__()

    async def athrow(
        self,
        typ: type[BaseException] | BaseException,
        val: BaseException | object = None,
        tb: TracebackType | None = None,
    ) -> Any:
        await self.aclose()
        if isinstance(typ, BaseException):
            raise typ
        raise typ() if val is None else val  # type: ignore[misc]

    async def aclose(self) -> None:
        await self._walker.aclose()

    async def _next_page(self) -> Page[Any]:
        """The walk's next page; the walk closed if it fails, StopAsyncIteration at its end."""
        try:
            page = await self._walker.next_page()
        except BaseException:
            await self._walker.aclose()
            raise
        if page is None:
            raise StopAsyncIteration
        return page


class _Items(_Iterator, Generic[T]):
    """Every item: the current page's without suspending, then the next page's."""

    __slots__ = ("_items",)

    def __init__(self, walker: Walk[T]) -> None:
        super().__init__(walker)
        self._items: Iterator[T] = iter(())

    async def __anext__(self) -> T:
        for item in self._items:  # the current page's next item (the cheapest way to it)
            return item
        while True:
            page = await self._next_page()
            if page.items:
                items: Iterator[T] = iter(page.items)
                self._items = items
                return next(items)


class _Pages(_Iterator, Generic[T]):
    """Every page, as a ``Page``."""

    __slots__ = ()

    async def __anext__(self) -> Page[T]:
        return await self._next_page()


def _no_page(offset: int, params: Mapping[str, Any]) -> Page[Any]:
    """The page of ``max_items=0``: no items, and a meta that describes no request (no
    ``totalCount`` was asked for: it says 0)."""
    meta = ListMeta(
        current_count=0,
        filters={},
        limit=0,
        offset=offset,
        sort=str(params.get("sort", "")),
        total_count=0,
    )
    return Page(items=(), meta=meta, links={}, headers={})
