"""Next links: whether one is the offset walk's next request, whether it may be followed."""

from __future__ import annotations

from typing import Any

from yarl import URL

from ._exceptions import PaginationError

__all__ = ["LinkKey", "link_key", "next_target", "offset_link"]

LinkKey = tuple[str, str, tuple[tuple[str, str], ...]]


def offset_link(link: str, url: str, offset: int, *limits: int) -> bool:
    """Whether a next link asks exactly what the offset walk would ask next.

    That is: the request ``url`` (same origin, same path, the same query) with ``offset``
    advanced, and a limit (if any) that is one of ``limits``. Anything else (a cursor,
    another path, a changed filter) is followed as a link.
    """
    try:
        target, here = URL(link), URL(url)
        if target.origin() != here.origin() or target.path != here.path:
            return False
    except (ValueError, TypeError):
        return False
    if target.query.getall("offset", None) != [str(offset)]:
        return False
    link_limits = target.query.getall("limit", [])
    if link_limits and (len(link_limits) != 1 or link_limits[0] not in {str(n) for n in limits}):
        return False

    def rest(query: Any) -> list[tuple[str, str]]:
        return sorted((k, v) for k, v in query.items() if k not in ("offset", "limit"))

    return rest(target.query) == rest(here.query)


def next_target(link: str) -> URL:
    """A next link as a URL, or PaginationError for one no client should follow."""
    try:
        target = URL(link)
        target.origin()
    except (ValueError, TypeError):
        raise PaginationError(f"the next link is not a valid URL: {link[:200]!r}") from None
    if target.scheme not in ("http", "https") or not target.host:
        raise PaginationError(f"refusing a next link that is not http(s): {link[:200]!r}")
    if target.user is not None or target.password is not None:
        raise PaginationError("refusing a next link that carries credentials (user:pass@)")
    return target


def link_key(url: URL) -> LinkKey:
    """A URL as compared for loops: the same link with its parameters reordered is the same."""
    return (str(url.origin()), url.path, tuple(sorted(url.query.items())))
