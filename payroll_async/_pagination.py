"""AsyncPaginator: every item of a listing, walking Link rel=next or offset/limit pages.

Nothing is sent until the paginator is iterated, and each iteration is a fresh walk. Each
page is one request with its own retries (never a retried generator).

Two ways to walk, chosen by the first response:

- offset/limit, when there is no Link ``rel="next"`` or when the next link is exactly the
  request the offset walk would make next (same origin and path, the same query with the
  offset advanced by the page), as the service's and the emulator's links are: once the
  first page gives ``totalCount``, the remaining pages are fetched concurrently (at most
  ``concurrency`` at once) and still yielded in order. The walk ends on an empty page,
  when the offset reaches ``totalCount``, or (with links) on a page without a next link.
  A server that answers with smaller pages than asked is followed at its own page size,
  and a page that comes back short is completed before the next one is yielded, so no
  item is skipped. A page whose next link stops matching hands the walk over to:
- following next links one after another until a page has none (an opaque cursor,
  another path, a changed filter); a link to another origin or one already visited raises
  PaginationError, so the token never goes anywhere but the client's base URL.

A ``totalCount`` is trusted only while it agrees with the data: a total that is not an
integer, or is smaller than the items already seen (-1, or 0 while items arrive), is not
believed. The walk then goes on one page at a time until a page comes back empty, so a
lying total can cost requests but never truncates the listing.

A Link header that cannot be parsed, or a next link with credentials or another scheme,
raises PaginationError: only PayrollErrors leave a walk.

Leaving the loop early, or an error, cancels the requests in flight.
"""

from __future__ import annotations

import asyncio
import copy
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Generator, Mapping, Sequence
from contextlib import aclosing
from typing import Any, Generic, Protocol, TypeVar

import attrs
from yarl import URL

from . import _otel
from ._decode import PageDecoder
from ._exceptions import InvalidArgumentError, PaginationError
from ._links import LinkKey, link_key, next_target, offset_link
from ._response import Response
from ._types import RequestOptions
from .models import ListMeta

__all__ = ["AsyncPaginator", "Page", "Sender"]

T = TypeVar("T")


class Sender(Protocol):
    """What a paginator sends its GETs through: one client's transport, options and state."""

    @property
    def origin(self) -> URL: ...

    def url(self, path: str) -> str: ...

    def send(
        self,
        method: str,
        url: str | URL,
        *,
        options: RequestOptions,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
    ) -> Awaitable[Response]: ...


@attrs.frozen
class Page(Generic[T]):
    """One page of a listing."""

    items: Sequence[T]
    """The page's items, structured."""
    meta: ListMeta
    """The list envelope's ``meta``: offset, limit, totalCount, sort, filters."""
    links: Mapping[str, str]
    """rel -> absolute URL, from the Link header (empty without one)."""
    headers: Mapping[str, str]
    """The response headers."""


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
        sender: Sender,
        path: str,
        model: type[T],
        *,
        params: Mapping[str, Any],
        page_size: int | None,
        max_items: int | None,
        start_offset: int,
        concurrency: int,
        options: RequestOptions,
        operation: str = "list",
    ) -> None:
        self._operation = operation
        self._sender = sender
        self._path = path
        self._model = model
        self._decoder = PageDecoder(model)
        self._params = params
        self._page_size = page_size
        self._max_items = max_items
        self._start_offset = start_offset
        self._concurrency = concurrency
        self._options = options

    def __repr__(self) -> str:
        return (
            f"<AsyncPaginator {self._path} page_size={self._page_size} "
            f"max_items={self._max_items} start_offset={self._start_offset}>"
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
            "max_items": self._max_items,
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
        clone = copy.copy(self)
        clone._start_offset = self._start_offset + count
        if self._max_items is not None:
            clone._max_items = max(0, self._max_items - count)
        return clone

    def __aiter__(self) -> AsyncGenerator[T, None]:
        """A fresh walk; ``contextlib.aclosing(aiter(paginator))`` closes it on exit."""
        return self._items()

    async def _items(self) -> AsyncGenerator[T, None]:
        async with aclosing(self._pages()) as pages:
            async for page in pages:
                for item in page.items:
                    yield item

    def pages(self) -> AsyncGenerator[Page[T], None]:
        """The listing page by page, each a [`Page`][payroll_async.Page] with its meta, links and
        headers."""
        return self._pages()

    def __await__(self) -> Generator[Any, None, Page[T]]:
        """``await paginator``: the first [`Page`][payroll_async.Page] only, in one request.

        As openai-python's list calls answer: ``page = await client.webhooks.list()``.
        ``page.meta.total_count`` says how many there are in all; iterate the paginator
        for every item.
        """
        return self._first_page().__await__()

    async def _first_page(self) -> Page[T]:
        # One request, as the walk's first: no fetch-ahead of the pages after it.
        want = self._max_items
        limit = self._page_size
        if want is not None and limit is not None:
            limit = max(1, min(limit, want))
        url = self._sender.url(self._path)
        page = self._parse(await self._download(url, self._query(self._start_offset, limit)))
        if want is not None and len(page.items) > want:
            page = attrs.evolve(page, items=page.items[:want])
        return page

    async def collect(self) -> list[T]:
        """Every item in a list (mind the memory for large collections)."""
        return [item async for item in self]

    async def _download(
        self, url: str | URL, params: Mapping[str, Any] | None, span: Any = None
    ) -> Response:
        with _otel.using(span):  # the request's spans are children of the walk's
            return await self._sender.send("GET", url, options=self._options, params=params)

    async def _fetch(
        self, url: str | URL, params: Mapping[str, Any] | None, span: Any = None
    ) -> Page[T]:
        return self._parse(await self._download(url, params, span))

    def _parse(self, response: Response) -> Page[T]:
        items, meta = self._decoder.decode(response)
        if response.link_error is not None:
            raise PaginationError(f"the Link header of {response.url} {response.link_error}")
        return Page(items=items, meta=meta, links=response.links, headers=response.headers)

    def _query(self, offset: int, limit: int | None) -> dict[str, Any]:
        if limit is None:  # the service's own page size
            return {**self._params, "offset": offset}
        return {**self._params, "limit": limit, "offset": offset}

    async def _pages(self) -> AsyncGenerator[Page[T], None]:
        want = self._max_items
        if want == 0:
            return
        span = _otel.start(self._operation)
        pages = items = 0
        try:
            async with aclosing(self._first_then_rest(want, span)) as walk:
                async for page in walk:
                    pages += 1
                    items += len(page.items)
                    yield page
        finally:
            _otel.items(self._operation, items)
            _otel.end(span, **{"payroll_async.pages": pages, "payroll_async.items": items})

    async def _first_then_rest(self, want: int | None, span: Any) -> AsyncGenerator[Page[T], None]:
        offset = self._start_offset
        limit = (
            self._page_size
            if want is None or self._page_size is None
            else min(self._page_size, want)
        )
        url = self._sender.url(self._path)
        response = await self._download(url, self._query(offset, limit), span)
        first = self._parse(response)
        walk: AsyncGenerator[Page[T], None]
        next_link = first.links.get("next")
        got = len(first.items)
        step = _step(limit, got, first.meta.limit, more=_more(first, offset))
        if next_link is not None and not offset_link(next_link, response.url, offset + got, step):
            walk = self._follow_links(first, response.url, want, span=span)
        else:
            # No Link header, or next links that say exactly what the offset walk would ask
            # next: the pages are fetched by offset, concurrently once a total is known.
            walk = self._walk_offsets(
                first,
                response.url,
                url,
                offset,
                limit,
                step,
                want,
                linked=next_link is not None,
                span=span,
            )
        async with aclosing(walk) as pages:
            async for page in pages:
                yield page

    async def _walk_offsets(
        self,
        first: Page[T],
        first_url: str,
        url: str,
        offset: int,
        limit: int | None,
        step: int,
        want: int | None,
        *,
        linked: bool,
        span: Any = None,
    ) -> AsyncGenerator[Page[T], None]:
        """Offset/limit pages after ``first``: concurrent once a total can be trusted.

        ``linked``: the pages carry next links. Each is checked against the offset walk;
        a page without one ends the walk, and from a page whose link says anything else
        the walk follows the links one by one instead.
        """
        items = first.items if want is None else first.items[:want]
        if limit is not None:
            items = items[:limit]
        if not items:
            yield first
            return
        got = len(items)
        next_offset = offset + got
        total = _trusted(first.meta.total_count, next_offset)
        end = None if want is None else offset + want
        width = self._concurrency
        emitted = 0
        walked: set[LinkKey] = set()
        # The first page goes through the window like any other, so that the pages after it
        # are already on their way while the caller works through its items. The pages
        # fetched ahead wait as bytes and are decoded only when their turn comes: typed
        # objects are then made just before use and die young, instead of piling up in the
        # window and being promoted through the collector's generations (a third of the
        # CPU of a long walk, measured).
        window: deque[tuple[int, int, Page[T] | asyncio.Task[Response]]] = deque(
            [(offset, got if limit is None else step, first)]
        )
        try:
            while True:
                # Without a total to trust, one page at a time until an empty one.
                while (
                    len(window) < (width if total is not None else 1)
                    and (total is None or next_offset < total)
                    and (end is None or next_offset < end)
                ):
                    size = step if end is None else min(step, end - next_offset)
                    task = asyncio.create_task(
                        self._download(url, self._query(next_offset, size), span),
                        name=f"payroll_async page {self._path} offset={next_offset}",
                    )
                    window.append((next_offset, size, task))
                    next_offset += size
                if not window:
                    return
                page_offset, size, pending = window.popleft()
                if isinstance(pending, Page):
                    page, page_url = pending, first_url
                else:
                    response = await pending
                    page, page_url = self._parse(response), response.url
                items = page.items[:size]
                if not items:
                    return
                if linked:
                    walked.add(link_key(URL(page_url)))
                    link = page.links.get("next")
                    if link is not None and not offset_link(
                        link, page_url, page_offset + len(page.items), step, size
                    ):
                        # The links stopped matching the offsets: follow them from here.
                        left = None if want is None else want - emitted
                        rest_walk = self._follow_links(page, page_url, left, walked, span=span)
                        async with aclosing(rest_walk) as rest:
                            async for later in rest:
                                yield later
                        return
                total = _trusted(page.meta.total_count, page_offset + len(items))
                yield _with_items(page, items)
                emitted += len(items)
                if linked and "next" not in page.links:
                    return  # the server says this is the last page
                # Complete a short page before moving on, so no item is skipped.
                got = len(items)
                while got < (size if total is None else min(size, total - page_offset)):
                    gap = await self._fetch(url, self._query(page_offset + got, size - got), span)
                    gap_items = gap.items[: size - got]
                    if not gap_items:
                        break
                    yield _with_items(gap, gap_items)
                    emitted += len(gap_items)
                    got += len(gap_items)
        finally:
            tasks = [pending for _, _, pending in window if not isinstance(pending, Page)]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _follow_links(
        self,
        page: Page[T],
        url: str,
        want: int | None,
        visited: set[LinkKey] | None = None,
        *,
        span: Any = None,
    ) -> AsyncGenerator[Page[T], None]:
        """Pages one after another by their ``rel="next"`` links, on this origin only.

        ``visited``: the pages already walked (by offset), which a link must not lead back to.
        """
        visited = {*(visited or ()), link_key(URL(url))}
        emitted = 0
        origin = self._sender.origin
        while True:
            items = page.items if want is None else page.items[: want - emitted]
            yield _with_items(page, items)
            emitted += len(items)
            next_link = page.links.get("next")
            if not items or next_link is None or (want is not None and emitted >= want):
                return
            target = next_target(next_link)
            if target.origin() != origin:
                raise PaginationError(
                    f"refusing to follow a next link to another origin ({target.origin()}); "
                    f"the client only talks to {origin}"
                )
            key = link_key(target)
            if key in visited:
                raise PaginationError(f"the next link {next_link} was already visited (a loop)")
            visited.add(key)
            page = await self._fetch(target, None, span)


def _more(page: Page[Any], offset: int) -> bool:
    """Whether the listing may go on after this first page, as far as its total tells."""
    total = _trusted(page.meta.total_count, offset + len(page.items))
    return total is None or offset + len(page.items) < total


def _step(limit: int | None, got: int, meta_limit: object, *, more: bool) -> int:
    """The page size to walk on after a first page of ``got`` items.

    A first page shorter than asked, with more to come, tells the server's page size;
    without a size of our own, the page's ``meta.limit`` tells it (or the page's length).
    """
    if limit is None:
        if type(meta_limit) is int and meta_limit >= got:
            return max(meta_limit, 1)
        return got
    return got if got < limit and more else limit


def _trusted(total: object, seen: int) -> int | None:
    """``totalCount`` if it agrees with the ``seen`` items so far, else None (unknown)."""
    if type(total) is not int or total < seen:
        return None
    return total


def _with_items(page: Page[T], items: Sequence[T]) -> Page[T]:
    return page if len(items) == len(page.items) else attrs.evolve(page, items=items)
