"""The Link header read into ``Links`` (rel -> URL), by the SDK's own parse (RFC 8288).

A header made only of the service's plain entries (``<URL>; rel="name"`` on the client's
origin) is read by one match; any other by ``parse_link_header``, a scan of the header
once from left to right (no backtracking: its time is linear in the header's length,
whatever the header holds), which knows what RFC 8288 says a walk needs:

- several links in one header, or in several headers (joined with ", ");
- parameters as tokens or quoted strings (``\\`` escapes, and ``,`` ``;`` ``<`` ``>``
  inside quotes are text);
- ``rel`` of one or more space-separated relation types, compared without case (only
  its first occurrence counts); the first link of each relation type is kept;
- each URL resolved against the URL answered.

A link without ``rel`` is kept under its URL's text as written. An element that is not a
link (no ``<``) is skipped up to the next comma outside quotes, as an unreadable
parameter is; a link whose ``<`` is never closed, or whose URL cannot be resolved, makes
the header unreadable (``read_links`` says why, and the walk raises PaginationError).

Links arrive as text and are made URLs only when compared as such.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator, Mapping

from multidict import CIMultiDictProxy
from yarl import URL

__all__ = ["NO_LINKS", "Links", "parse_link_header", "plain_links", "read_links"]


class Links(Mapping[str, URL]):
    """rel -> absolute URL of a Link header (the first link of each rel).

    Kept as the links' text; each ``URL`` is made when it is first read, so that a walk
    that only compares a page's next link with the request it expects makes none.
    """

    __slots__ = ("_texts", "_urls")

    def __init__(self, texts: Mapping[str, str], urls: Mapping[str, URL] | None = None) -> None:
        self._texts = texts
        """rel -> the URL's text, each ``str(URL)`` of its link."""
        self._urls: dict[str, URL] = dict(urls) if urls else {}

    @classmethod
    def of(cls, urls: Mapping[str, URL]) -> Links:
        """The links of ``urls`` (rel -> URL), their texts printed once."""
        return urls if isinstance(urls, Links) else cls({r: str(u) for r, u in urls.items()}, urls)

    def text(self, rel: str) -> str | None:
        """The text of the ``rel`` link (None: no such link), without making its URL."""
        return self._texts.get(rel)

    @property
    def texts(self) -> Mapping[str, str]:
        """rel -> text of every link."""
        return self._texts

    def __getitem__(self, rel: str) -> URL:
        url = self._urls.get(rel)
        if url is None:
            # The text is a URL's own printing (see ``read_links``): no quoting to redo.
            url = self._urls[rel] = URL(self._texts[rel], encoded=True)
        return url

    def __iter__(self) -> Iterator[str]:
        return iter(self._texts)

    def __len__(self) -> int:
        return len(self._texts)

    def __contains__(self, rel: object) -> bool:
        return rel in self._texts

    def __repr__(self) -> str:
        return f"Links({self._texts!r})"


NO_LINKS: Links = Links({})


def read_links(
    headers: CIMultiDictProxy[str] | Mapping[str, str], url: URL, origin: str
) -> tuple[Links, str | None]:
    """rel -> URL from the Link header (the first of each rel), or why it cannot be read.

    Each link is resolved against ``url`` (the URL answered). A header made only of
    ``<URL>; rel="name"`` entries whose URLs are plain absolute URLs on ``origin`` (the
    client's, as ``str(URL.origin())`` prints it) is read by one match: for those
    ``parse_link_header`` gives the same links, each URL printing as its text
    (``tests/_paging/test_link_header.py`` holds the two to it).
    """
    getall = getattr(headers, "getall", None)
    if getall is not None:
        values = getall("Link", None)
    else:
        one = headers.get("Link")
        values = None if one is None else [one]
    if values is None:
        return NO_LINKS, None
    header = values[0] if len(values) == 1 else ", ".join(values)
    texts = plain_links(header, origin)
    if texts is not None:
        return Links(texts), None
    try:
        targets = parse_link_header(header)
        urls = {rel: url.join(URL(target)) for rel, target in targets.items()}
    except (ValueError, TypeError):
        return NO_LINKS, f"cannot be parsed: {header[:200]!r}"
    return Links.of(urls), None


def plain_links(header: str, origin: str) -> dict[str, str] | None:
    """rel -> URL text of a Link header of plain entries only (see ``read_links``), else None."""
    entry = _plain_entry(origin)
    texts: dict[str, str] = {}
    for part in header.split(", "):
        match = entry(part)
        if match is None:
            return None
        url, rel = match.groups()
        if rel not in texts:
            texts[rel] = url
    return texts


# A plain entry: a URL of unreserved characters (no "." in its path: no dot segments to
# resolve, no "%": no escapes to normalise; no "," or space: the entries split at ", ")
# and a quoted lower-case rel of one relation type.
_URL_REST = r"/[A-Za-z0-9_~/\-]*(?:\?[A-Za-z0-9._~=&\-]+)?"


@functools.lru_cache(maxsize=8)
def _plain_entry(origin: str) -> Callable[[str], re.Match[str] | None]:
    return re.compile(f'<({re.escape(origin)}{_URL_REST})>; rel="([a-z]+)"').fullmatch


# --- RFC 8288 ----------------------------------------------------------------------------

_SPACE = re.compile(r"[ \t]*")
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"', re.DOTALL)
_ESCAPE = re.compile(r"\\(.)", re.DOTALL)
# Text up to the next ",", ";" (or, for an element, ",") outside quotes: what is skipped.
_JUNK_PARAM = re.compile(r'(?:[^",;]|"(?:[^"\\]|\\.)*"?)*', re.DOTALL)
_JUNK_ELEMENT = re.compile(r'(?:[^",]|"(?:[^"\\]|\\.)*"?)*', re.DOTALL)


def parse_link_header(header: str) -> dict[str, str]:
    """rel -> the target as written (not resolved), the first link of each relation type.

    Raises ValueError for a link whose ``<`` is never closed. Linear in the header's
    length: each step matches from where the last one ended, and every pattern is a
    loop over single characters or closed quotes.
    """
    links: dict[str, str] = {}
    at, end = 0, len(header)
    while at < end:
        char = header[at]
        if char in ", \t":
            at += 1
            continue
        if char != "<":  # not a link: skipped up to the next element
            at = _JUNK_ELEMENT.match(header, at).end()  # type: ignore[union-attr]
            continue
        close = header.find(">", at + 1)
        if close < 0:
            raise ValueError("a link's '<' is never closed")
        target = header[at + 1 : close]
        rel, at = _params(header, close + 1)
        types = rel.lower().split() if rel is not None else []
        for name in types or [target]:
            links.setdefault(name, target)
    return links


def _params(header: str, at: int) -> tuple[str | None, int]:
    """The ``rel`` of the link whose parameters start at ``at`` (None: no rel), and where
    the link ends (its ``,``, or the header's end)."""
    rel: str | None = None
    end = len(header)
    while True:
        at = _SPACE.match(header, at).end()  # type: ignore[union-attr]
        if at >= end or header[at] == ",":
            return rel, at
        if header[at] != ";":  # not a parameter: skipped up to the next one
            at = _JUNK_PARAM.match(header, at).end()  # type: ignore[union-attr]
            continue
        at = _SPACE.match(header, at + 1).end()  # type: ignore[union-attr]
        name = _TOKEN.match(header, at)
        if name is None:
            at = _JUNK_PARAM.match(header, at).end()  # type: ignore[union-attr]
            continue
        at = _SPACE.match(header, name.end()).end()  # type: ignore[union-attr]
        value: str | None = None
        if at < end and header[at] == "=":
            at = _SPACE.match(header, at + 1).end()  # type: ignore[union-attr]
            quoted = _QUOTED.match(header, at)
            if quoted is not None:
                value = _ESCAPE.sub(r"\1", quoted.group(1))
                at = quoted.end()
            else:
                token = _TOKEN.match(header, at)
                value = "" if token is None else token.group()
                at = at if token is None else token.end()
        if rel is None and name.group().lower() == "rel" and value is not None:
            rel = value  # only the first rel counts (RFC 8288, 3.3)
