"""One page of a listing, and how one is fetched: ``Page`` (with its way to the next one),
``Listing`` (what every request of a walk shares), ``Quota`` (``max_items`` and its
arithmetic) and ``Sender`` (what the requests go through).

The walks over many pages are ``_walks``'s. Next links are compared here too: whether one
is the offset walk's next request (``offset_link``), whether it may be followed
(``next_target``, ``follow``): links arrive as URL objects and are compared as such.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

import attrs
from yarl import URL

from .._core._exceptions import PaginationError
from .._core._redact import shown_url
from .._http import _otel
from .._http._attempt import Request, build_request
from .._http._auth import Identity
from .._http._seam import Response
from ..models import ListMeta

if TYPE_CHECKING:
    from .._http._options import FinalOptions
    from ._decode import Decodes

__all__ = [
    "LinkKey",
    "Listing",
    "Page",
    "Quota",
    "Sender",
    "believed_total",
    "download",
    "follow",
    "link_key",
    "next_target",
    "offset_link",
    "with_items",
]

T = TypeVar("T")

LinkKey = tuple[str, str, tuple[tuple[str, str], ...]]


def offset_link(link: URL, url: URL, offset: int, *limits: int) -> bool:
    """Whether a next link asks exactly what the offset walk would ask next.

    That is: the request ``url`` (same origin, same path, the same query) with ``offset``
    advanced, and a limit (if any) that is one of ``limits``. Anything else (a cursor,
    another path, a changed filter) is followed as a link.
    """
    try:
        if link.origin() != url.origin() or link.path != url.path:
            return False
    except (ValueError, TypeError):
        return False
    query = link.query
    if query.getall("offset", None) != [str(offset)]:
        return False
    link_limits = query.getall("limit", [])
    if link_limits and (len(link_limits) != 1 or link_limits[0] not in {str(n) for n in limits}):
        return False
    return _rest(query.items()) == _rest(url.query.items())


def _rest(items: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    return sorted((k, v) for k, v in items if k not in ("offset", "limit"))


def next_target(link: URL, secret: str | None) -> URL:
    """A next link that may be followed, or PaginationError for one no client should follow
    (showing the link as ``shown_url`` does, ``secret`` redacted)."""
    shown = shown_url(link, secret)[:200]
    try:
        link.origin()
    except (ValueError, TypeError):
        raise PaginationError(f"the next link is not a valid URL: {shown!r}") from None
    if link.scheme not in ("http", "https") or not link.host:
        raise PaginationError(f"refusing a next link that is not http(s): {shown!r}")
    if link.user is not None or link.password is not None:
        raise PaginationError("refusing a next link that carries credentials (user:pass@)")
    return link


def link_key(url: URL) -> LinkKey:
    """A URL as compared for loops: the same link with its parameters reordered is the same."""
    return (str(url.origin()), url.path, tuple(sorted(url.query.items())))


CHAIN = 1024
"""Pages of its chain a page remembers, to refuse a next link back to one of them: a
while-loop over ``get_next_page()`` ends on a loop of up to this many pages."""


@attrs.frozen(slots=True)
class Quota:
    """A walk's ``max_items`` and all its arithmetic: what to ask for, what to keep."""

    wanted: int | None
    """Items the walk yields at most (None: every item)."""

    def left(self, emitted: int) -> int | None:
        """Items still wanted after ``emitted`` (None: no limit)."""
        return None if self.wanted is None else max(0, self.wanted - emitted)

    def reached(self, emitted: int) -> bool:
        """Whether ``emitted`` items are all that is wanted."""
        return self.wanted is not None and emitted >= self.wanted

    def limit(self, page_size: int | None, emitted: int = 0) -> int | None:
        """A request's limit: the page size, no more than the items still wanted (>= 1)."""
        left = self.left(emitted)
        if left is None or page_size is None:
            return page_size
        return max(1, min(page_size, left))

    def take(self, items: Sequence[T], emitted: int = 0) -> Sequence[T]:
        """The part of ``items`` still wanted after ``emitted``."""
        left = self.left(emitted)
        return items if left is None or len(items) <= left else items[:left]

    def end(self, start: int) -> int | None:
        """The offset past the last wanted item of a walk from ``start`` (None: none)."""
        return None if self.wanted is None else start + self.wanted

    def after(self, emitted: int) -> Quota:
        """What is left to want once ``emitted`` items were yielded."""
        return self if self.wanted is None else Quota(self.left(emitted))


class Sender(Protocol):
    """What a paginator sends its GETs through: one client's transport, options and state."""

    @property
    def origin(self) -> URL: ...

    def url(self, path: str) -> URL: ...

    def identity(self) -> Identity: ...

    def send(self, request: Request) -> Coroutine[Any, Any, Response]: ...


@attrs.frozen(repr=False)
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
    _next_context: _NextPageContext | None = attrs.field(
        default=None, init=False, eq=False, repr=False
    )

    def __repr__(self) -> str:
        """Its fields, with the token's text and credential-like query values redacted
        wherever they appear (a Link header may echo the token in its next URL)."""
        secret = None if self._next_context is None else self._next_context.secret
        fields = (
            f"items={self.items!r}, meta={self.meta!r}, links={self.links!r}, "
            f"headers={self.headers!r}"
        )
        return shown_url(f"Page({fields})", secret)

    def has_next_page(self) -> bool:
        """Whether the listing goes on after this page, as its walk would decide.

        With Link headers: whether this page has a ``rel="next"`` link. Without: whether
        items came and the offset after them is below a ``totalCount`` that agrees with
        them (a total that does not agree is not believed: the next page is then asked
        for, and an empty one ends the listing). An empty page, the last page, and the
        page that reaches the listing's ``max_items`` say no.
        """
        turn = self._next_context
        return turn is not None and turn.following(self) is not None

    async def get_next_page(self) -> Page[T]:
        """The page after this one, in one request, with the listing's options.

        Raises [`PaginationError`][payroll_async.PaginationError] when there is none
        (check [`has_next_page()`][payroll_async.Page.has_next_page] first), or when the
        next link leaves the client's origin or leads back to a page of the chain this one
        came from by ``get_next_page()`` (its last 1,024 pages), as the ``async for`` walk
        refuses a loop, with the same error.
        """
        turn = self._next_context
        following = None if turn is None else turn.following(self)
        if turn is None or following is None:
            raise PaginationError("this is the last page of its listing: there is no next page")
        listing = turn.listing
        if isinstance(following, URL):
            chain = (*turn.chain[1 - CHAIN :], link_key(turn.url))
            target = follow(listing, following, set(chain), turn.secret)
            page, _ = await listing.fetch(target, None, turn.end, chain)
            return page
        offset, limit = following
        page, _ = await listing.fetch(*listing.target(offset, limit), turn.end)
        return page


class _NextPageContext:
    """What a page needs to know to ask for the one after it, as the walks would.

    Kept as the answer left it (the URL answered, its links) and read only when asked:
    a walk's pages pay nothing for it.
    """

    __slots__ = ("chain", "end", "links", "listing", "secret", "url")

    def __init__(
        self,
        listing: Listing[Any],
        response: Response,
        end: int | None,
        chain: tuple[LinkKey, ...] = (),
    ) -> None:
        self.listing = listing
        self.chain = chain
        """The pages (at most ``CHAIN``) that ``get_next_page()`` went through to this one."""
        self.url = response.url
        """The URL the page was answered from, its query included."""
        self.links = response.links
        self.secret = response.secret
        """The token the page was asked with, redacted wherever a link is shown."""
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
        total = believed_total(page.meta.total_count, after)
        if total is not None and after >= total:
            return None
        limit = _number(self.url.query.get("limit"))  # None: the service's own page size
        if end is not None and limit is not None:
            limit = min(limit, end - after)
        return after, limit


def download(
    sender: Sender,
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
    span: Any, sender: Sender, url: URL, options: FinalOptions, params: Mapping[str, Any] | None
) -> Response:
    with _otel.using(span):
        return await sender.send(build_request("GET", url, options, params))


@attrs.define(slots=True)
class Listing(Generic[T]):
    """What every page request of one walk shares: where, how, and how to read a page."""

    sender: Sender
    url: URL
    params: Mapping[str, Any]
    options: FinalOptions
    decoder: Decodes
    name: str
    operation: str = ""
    """The walk's span and metrics name (``payroll_connections.list``)."""
    span: Any = None
    end: int | None = None
    """The offset at which ``max_items`` ends the listing (None: no such end)."""
    _prefix: str | None = attrs.field(init=False, default=None)
    """The text of ``url`` with ``params``, ready for ``limit`` and ``offset`` (None when
    the request's query is not only those: extra query parameters go through aiohttp)."""

    def __attrs_post_init__(self) -> None:
        params = self.params
        if not self.options.extra_query and "limit" not in params and "offset" not in params:
            text = str(self.url.extend_query(params) if params else self.url)
            self._prefix = text + ("&" if "?" in text else "?")

    def open_span(self) -> None:
        """Start the walk's span, once (every page request of the walk is its child)."""
        if self.span is None:
            self.span = _otel.start(self.operation)

    def close_span(self, pages: int, items: int) -> None:
        """End the walk's span: it took ``pages`` pages of ``items`` items in all."""
        _otel.items(self.operation, items)
        _otel.end(self.span, **{"payroll_async.pages": pages, "payroll_async.items": items})
        self.span = None

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
            download(self.sender, url, self.options, params, self.span),
            name=f"payroll_async page {self.name}",
        )
        # A page fetched ahead that fails is the walk's error when its turn comes (awaiting
        # it raises); if the walk is abandoned first, nobody is left to be told.
        task.add_done_callback(_retrieve)
        return task

    async def fetch(
        self,
        url: URL,
        params: Mapping[str, Any] | None,
        end: int | None = None,
        chain: tuple[LinkKey, ...] = (),
    ) -> tuple[Page[T], Response]:
        """One page; with ``end``, its items past that offset left out (``max_items``);
        ``chain``: the pages ``get_next_page()`` went through to it."""
        response = await download(self.sender, url, self.options, params, self.span)
        page = self.parse(response, chain)
        if end is not None and page._next_context is not None:
            offset = page._next_context.offset(page.meta)
            if offset is not None and offset + len(page.items) > end:
                page = with_items(page, page.items[: max(0, end - offset)])
        return page, response

    def parse(self, response: Response, chain: tuple[LinkKey, ...] = ()) -> Page[T]:
        items, meta = self.decoder.decode(response)
        if response.link_error is not None:
            shown = shown_url(f"{response.url} {response.link_error}", response.secret)
            raise PaginationError(f"the Link header of {shown}")
        texts = response.links.texts
        links = dict(texts) if texts else {}
        page = Page(items=items, meta=meta, links=links, headers=response.headers)
        object.__setattr__(page, "_next_context", _NextPageContext(self, response, self.end, chain))
        return page


def follow(listing: Listing[Any], link: URL, visited: set[LinkKey], secret: str | None) -> URL:
    """A next link to follow: on the client's origin, and not a page already ``visited``.

    ``secret``: the token of the answer that gave the link, redacted where it is shown.
    """
    target = next_target(link, secret)
    origin = listing.sender.origin
    if target.origin() != origin:
        raise PaginationError(
            f"refusing to follow a next link to another origin ({target.origin()}); "
            f"the client only talks to {origin}"
        )
    key = link_key(target)
    if key in visited:
        shown = shown_url(link, secret)
        raise PaginationError(f"the next link {shown} was already visited (a loop)")
    visited.add(key)
    return target


def _number(text: str | None) -> int | None:
    return int(text) if text is not None and text.isascii() and text.isdigit() else None


def _retrieve(task: asyncio.Task[Response]) -> None:
    """Mark a cancelled page's outcome as seen: it is not anyone's error any more."""
    if not task.cancelled():
        task.exception()


def believed_total(total: object, seen: int) -> int | None:
    """``totalCount`` if it agrees with the ``seen`` items so far, else None (unknown)."""
    if type(total) is not int or total < seen:
        return None
    return total


def with_items(page: Page[T], items: Sequence[T]) -> Page[T]:
    if len(items) == len(page.items):
        return page
    trimmed = attrs.evolve(page, items=items)
    object.__setattr__(trimmed, "_next_context", page._next_context)  # not an __init__ argument
    return trimmed
