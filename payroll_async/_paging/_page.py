"""One page of a listing and what comes after it: ``Page``, and the one next-page rule
(``_NextPageContext.following``), which ``Page.next_page_info()``, ``has_next_page()``,
``get_next_page()`` and every walk ask; ``MaxItems`` (``max_items``) and ``Fetches`` (what
the rule asks of a walk's requests, ``_walks.ListRequest``). A page's links are read by
``_links``; its requests are sent, and fetched ahead, by ``_walks``.

The rule, for a page of ``got`` items (after ``max_items`` and the limit asked):

- no items: the end (an empty page ends any listing);
- the page reaches ``max_items``: the end;
- with a Link header: its ``rel="next"``, or the end without one. A next link that asks
  exactly what the offset walk would ask next (this listing's request, the offset right
  after this page's items) is that offset request; any other is followed as it is, once
  checked: http(s), no credentials, the client's origin, not a page already walked (a
  loop), else ``PaginationError``;
- without one: the end once the offset after the page reaches a ``totalCount`` that
  agrees with the items seen; else the offset right after the page's items, with a limit
  that completes the page size's grid from the walk's start (a short page is completed
  first, so that the pages fetched ahead stay the ones asked for next).
"""

from __future__ import annotations

from collections.abc import Container, Coroutine, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

import attrs
from yarl import URL

from .._core._exceptions import PaginationError
from .._core._redact import shown_url
from .._http._seam import Response
from ..models import ListMeta
from ._links import Links

if TYPE_CHECKING:
    pass

__all__ = [
    "CHAIN",
    "Fetches",
    "LinkKey",
    "NextRequest",
    "Page",
    "PageInfo",
    "MaxItems",
    "believed_total",
    "link_key",
]

T = TypeVar("T")

LinkKey = tuple[str, str, tuple[tuple[str, str], ...]]
Chain = tuple[LinkKey, ...]
Query = Mapping[str, Any] | None
Fetched = Coroutine[Any, Any, "Page[T]"]


# --- next links as URLs ------------------------------------------------------------------


def _offset_link(link: URL, url: URL, offset: int) -> bool:
    """Whether a next link asks what the offset walk asks next: the request ``url`` (same
    origin, same path, the same query) at ``offset``, whatever its limit (the walk asks
    its own: a link that echoes a short page's rest does not shrink the pages after it).
    Anything else (a cursor, another path, a changed filter) is followed as a link."""
    try:
        if link.origin() != url.origin() or link.path != url.path:
            return False
    except (ValueError, TypeError):
        return False
    query = link.query
    if query.getall("offset", None) != [str(offset)] or len(query.getall("limit", ())) > 1:
        return False
    return _rest(query.items()) == _rest(url.query.items())


def _rest(items: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    return sorted((k, v) for k, v in items if k not in ("offset", "limit"))


def link_key(url: URL) -> LinkKey:
    """A URL as compared for loops: the same link with its parameters reordered is the same."""
    return (str(url.origin()), url.path, tuple(sorted(url.query.items())))


def _checked(link: URL, origin: URL, visited: Container[LinkKey], secret: str | None) -> URL:
    """``link`` if a walk may follow it: http(s), no credentials, on ``origin``, not a page
    already ``visited``; else PaginationError (the link shown as ``shown_url`` shows it,
    ``secret`` redacted)."""
    shown = shown_url(link, secret)[:200]
    try:
        link_origin = link.origin()
    except (ValueError, TypeError):
        raise PaginationError(f"the next link is not a valid URL: {shown!r}") from None
    if link.scheme not in ("http", "https") or not link.host:
        raise PaginationError(f"refusing a next link that is not http(s): {shown!r}")
    if link.user is not None or link.password is not None:
        raise PaginationError("refusing a next link that carries credentials (user:pass@)")
    if link_origin != origin:
        raise PaginationError(
            f"refusing to follow a next link to another origin ({link_origin}); "
            f"the client only talks to {origin}"
        )
    if link_key(link) in visited:
        raise PaginationError(f"the next link {shown} was already visited (a loop)")
    return link


CHAIN = 1024
"""Pages of its chain a page remembers, to refuse a next link back to one of them: a
while-loop over ``get_next_page()`` ends on a loop of up to this many pages."""


# --- max_items ---------------------------------------------------------------------------


@attrs.frozen(slots=True)
class MaxItems:
    """A walk's ``max_items`` and its arithmetic: what to ask for first, what is left."""

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

    def after(self, emitted: int) -> MaxItems:
        """What is left to want once ``emitted`` items were yielded."""
        return self if self.wanted is None else MaxItems(self.left(emitted))


# --- the next request --------------------------------------------------------------------


@attrs.frozen(slots=True, repr=False)
class PageInfo:
    """The request that fetches the page after one (``Page.next_page_info()``): either a
    next link to follow, already checked, or this listing's own request at an offset."""

    url: URL | None = None
    """The ``rel="next"`` link to follow as it is (on the client's origin, http(s), no
    credentials, not a page of the chain already walked); None for an offset request."""
    offset: int | None = None
    """The offset of the next request (None when it is a ``url`` to follow)."""
    limit: int | None = None
    """The limit of the next request (None when it is a ``url`` to follow)."""
    _secret: str | None = attrs.field(default=None, eq=False, kw_only=True, alias="_secret")
    """The token the page was asked with, redacted from the repr (given by the walk)."""

    def __repr__(self) -> str:
        """Its fields, the link shown as errors show URLs: the token's text (a link may
        echo it) and credential-like query values redacted."""
        url = None if self.url is None else shown_url(self.url, self._secret)
        return f"PageInfo(url={url!r}, offset={self.offset!r}, limit={self.limit!r})"


@attrs.define(slots=True, eq=False)
class NextRequest:
    """What the rule decided comes next, with what the page it fetches must know: the
    request (``url``, or ``offset`` and ``limit``), the walk's grid (``start``, ``step``)
    and the items still wanted before it (``left``, None: no ``max_items``)."""

    url: URL | None
    offset: int | None
    limit: int | None
    start: int | None
    step: int | None
    left: int | None

    def info(self, secret: str | None) -> PageInfo:
        """The public form (``secret``: the token, redacted from its repr)."""
        return PageInfo(url=self.url, offset=self.offset, limit=self.limit, _secret=secret)


def _step_of(limit: int | None, got: int, meta_limit: object) -> int:
    """The page size the walk goes on with, learned from a page of ``got`` items asked with
    ``limit``: the server's own when it answered fewer than asked; without a limit of ours,
    its ``meta.limit`` (or the page's length)."""
    if limit is None:
        if type(meta_limit) is int and meta_limit >= got:
            return max(meta_limit, 1)
        return got
    return min(got, limit)


def believed_total(total: object, seen: int) -> int | None:
    """``totalCount`` if it agrees with the ``seen`` items so far, else None (unknown)."""
    if type(total) is not int or total < seen:
        return None
    return total


def _number(text: str | None) -> int | None:
    return int(text) if text is not None and text.isascii() and text.isdigit() else None


class _NextPageContext:
    """What a page knows of its listing to say what comes after it: the one next-page rule.

    Kept as the answer left it and read only when asked: a walk's pages pay for the rule
    once each, when the walk asks it.
    """

    __slots__ = ("asked", "chain", "links", "listing", "secret", "url")

    def __init__(
        self,
        listing: Fetches[Any],
        response: Response,
        links: Links,
        asked: NextRequest | None,
        chain: tuple[LinkKey, ...] = (),
    ) -> None:
        self.listing = listing
        self.url = response.url
        """The URL the page was answered from, its query included."""
        self.links = links
        self.secret = response.secret
        """The token the page was asked with, redacted wherever a link is shown."""
        self.asked = asked
        """The request that fetched the page (None: not known, e.g. a page source's)."""
        self.chain = chain
        """The pages with links (at most ``CHAIN``) ``get_next_page()`` went through to it."""

    @property
    def asked_url(self) -> URL:
        """The URL the page was asked at: the next link followed, else the URL answered
        (a link is compared for loops with the links followed, as they were written)."""
        asked = self.asked
        return self.url if asked is None or asked.url is None else asked.url

    def where(self, meta: ListMeta) -> tuple[int | None, int | None, int | None]:
        """The page's offset, the limit it was asked with, the items wanted before it."""
        asked = self.asked
        if asked is not None and asked.url is None:
            return asked.offset, asked.limit, asked.left
        query = self.url.query
        offset = _number(query.get("offset"))
        if offset is None and type(meta.offset) is int:
            offset = meta.offset
        left = None if asked is None else asked.left
        return offset, _number(query.get("limit")), left

    def following(
        self, page: Page[Any], visited: Container[LinkKey] | None = None
    ) -> NextRequest | None:
        """What comes after ``page``: the next request, or None at the end of the listing.

        ``visited``: the pages a walk went through (None: this page's chain). Raises
        PaginationError for a next link no walk may follow.
        """
        got = len(page.items)
        if not got:
            return None
        meta = page.meta
        offset, limit, left = self.where(meta)
        if left is not None:
            left -= got
            if left <= 0:
                return None
        after = None if offset is None else offset + got
        links = self.links
        if links:  # with Link headers, only rel="next" says there is more
            text = links.text("next")
            if text is None:
                return None
            if after is not None:
                start, step, next_limit = self._step_next(after, limit, got, meta, left)
                if text == self.listing.page_text(after, next_limit) or _offset_link(
                    links["next"], self.url, after
                ):
                    return NextRequest(None, after, next_limit, start, step, left)
            if visited is None:
                visited = {*self.chain, link_key(self.asked_url)}
            target = _checked(links["next"], self.listing.origin, visited, self.secret)
            return NextRequest(target, None, None, None, None, left)
        if after is None:
            return None
        total = believed_total(meta.total_count, after)
        if total is not None and after >= total:
            return None
        start, step, next_limit = self._step_next(after, limit, got, meta, left)
        return NextRequest(None, after, next_limit, start, step, left)

    def _step_next(
        self, after: int, limit: int | None, got: int, meta: ListMeta, left: int | None
    ) -> tuple[int, int, int]:
        """The walk's grid (its start, its page size) and the limit that completes the
        page at ``after`` on it, no more than the items still wanted."""
        asked = self.asked
        if asked is not None and asked.step is not None and asked.start is not None:
            start, step = asked.start, asked.step
        else:  # the walk's first page (or one reached by a link): it tells the grid
            start, step = after - got, _step_of(limit, got, meta.limit)
        next_limit = step - (after - start) % step
        if left is not None and left < next_limit:
            next_limit = left
        return start, step, next_limit


# --- a page ------------------------------------------------------------------------------


class Fetches(Protocol[T]):
    """What the rule and ``get_next_page()`` ask of the requests of a page's walk (its
    ``_walks.ListRequest``)."""

    @property
    def origin(self) -> URL:
        """The client's origin: a next link is followed only there."""
        ...

    def page_text(self, offset: int, limit: int | None) -> str | None: ...

    def target(self, offset: int, limit: int | None) -> tuple[URL, Mapping[str, Any] | None]: ...

    def fetch(self, url: URL, query: Query, asked: NextRequest, chain: Chain, /) -> Fetched[T]:
        """The page at ``url`` (with ``query``), asked by ``asked``, after ``chain``."""
        ...


@attrs.frozen(repr=False)
class Page(Generic[T]):
    """One page of a listing.

    ```pycon
    >>> page = await client.payroll_connections.list(page_size=50)
    >>> while page.has_next_page():
    ...     page = await page.get_next_page()
    ```

    What comes after a page is decided in one place, `next_page_info()`, which the
    ``async for`` walk and ``.pages()`` ask too: chained by hand, pages give the same
    items as the walk, page for page.
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
        default=None, eq=False, repr=False, kw_only=True, alias="_next_context"
    )
    """What the page knows of its listing to say what comes after it (given by the walk
    that fetched it; None: a page made by hand, the last of its listing)."""

    def __repr__(self) -> str:
        """Its fields, with the token's text and credential-like query values redacted
        wherever they appear (a Link header may echo the token in its next URL)."""
        secret = None if self._next_context is None else self._next_context.secret
        fields = (
            f"items={self.items!r}, meta={self.meta!r}, links={self.links!r}, "
            f"headers={self.headers!r}"
        )
        return shown_url(f"Page({fields})", secret)

    def next_page_info(self) -> PageInfo | None:
        """The request that fetches the next page, or None when this page is the last.

        The one rule of what comes next, which `get_next_page()`, `has_next_page()` and
        the ``async for`` walk all follow:

        - an empty page, and the page that reaches the listing's ``max_items``, are last;
        - with Link headers, the ``rel="next"`` link says what comes next (none: the
          end). A link that is this listing's request at the offset after this page's
          items (whatever its limit) is that offset request
          (``PageInfo(offset=..., limit=...)``);
          any other is ``PageInfo(url=...)``, checked first: a link that is not
          http(s), carries credentials, leaves the client's origin, or leads back to a
          page of this chain (its last 1,024 pages) raises
          [`PaginationError`][payroll_async.PaginationError];
        - without, the offset after this page's items, until it reaches a
          ``totalCount`` that agrees with the items seen (a total that does not agree
          is not believed: the next page is asked for, and an empty one ends the
          listing). A page shorter than the page size is completed first (its limit is
          the rest of the page).

        ```pycon
        >>> page = await client.payroll_connections.list(page_size=50)
        >>> page.next_page_info()
        PageInfo(url=None, offset=50, limit=50)
        ```
        """
        context = self._next_context
        following = None if context is None else context.following(self)
        return None if following is None or context is None else following.info(context.secret)

    def has_next_page(self) -> bool:
        """Whether the listing goes on after this page, as `next_page_info()` says.

        An empty page, the last page, and the page that reaches the listing's
        ``max_items`` say no. A next link that may not be followed says yes: the listing
        goes on, and `get_next_page()` (as the ``async for`` walk) raises
        [`PaginationError`][payroll_async.PaginationError] for it.
        """
        context = self._next_context
        if context is None:
            return False
        try:
            return context.following(self) is not None
        except PaginationError:
            return True

    async def get_next_page(self) -> Page[T]:
        """The page after this one, in one request, with the listing's options: the
        request `next_page_info()` says.

        Raises [`PaginationError`][payroll_async.PaginationError] when there is none
        (check [`has_next_page()`][payroll_async.Page.has_next_page] first), or when the
        next link leaves the client's origin or leads back to a page of the chain this one
        came from by ``get_next_page()`` (its last 1,024 pages), as the ``async for`` walk
        refuses a loop, with the same error.
        """
        context = self._next_context
        following = None if context is None else context.following(self)
        if context is None or following is None:
            raise PaginationError("this is the last page of its listing: there is no next page")
        chain = context.chain
        if context.links:  # a page with links: a link may lead back to it
            chain = (*chain[1 - CHAIN :], link_key(context.asked_url))
        listing = context.listing
        if following.url is not None:
            return await listing.fetch(following.url, None, following, chain)
        assert following.offset is not None
        url, params = listing.target(following.offset, following.limit)
        return await listing.fetch(url, params, following, chain)
