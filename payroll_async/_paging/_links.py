"""Next links: whether one is the offset walk's next request, whether it may be followed.

Links arrive as URL objects (aiohttp parses the Link header and resolves each link
against the response's URL) and are compared as such, never printed and parsed again.
"""

from __future__ import annotations

from collections.abc import Iterable

from yarl import URL

from .._core._exceptions import PaginationError
from .._core._redact import shown_url

__all__ = ["LinkKey", "link_key", "next_target", "offset_link"]

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
