"""The transport's answer: a finished 2xx response as plain data, read and closed."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import attrs
from multidict import CIMultiDictProxy
from yarl import URL

from .._core._redact import shown_url

__all__ = ["Links", "Response"]


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
            # The text is a URL's own printing (see ``_wire.read_links``): no quoting to redo.
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


@attrs.frozen(repr=False)
class Response:
    """What ``Transport.send()`` returns: nothing in it needs the connection any more."""

    method: str
    """The method sent."""
    status: int
    """The HTTP status (a 2xx)."""
    url: URL
    """The URL answered, query included."""
    headers: CIMultiDictProxy[str] | Mapping[str, str]
    """The response headers (case-insensitive)."""
    body: bytes
    """The whole body, at most the client's ``max_response_size``."""
    links: Links = NO_LINKS
    """rel -> absolute URL from the Link header; the first link of each rel wins."""
    link_error: str | None = None
    """Why the Link header could not be parsed (it is then ignored in ``links``)."""
    secret: str | None = attrs.field(default=None, eq=False)
    """The token the request was sent with, to redact if the body echoes it."""

    def __repr__(self) -> str:
        shown = shown_url(self.url, self.secret)
        return f"<Response {self.method} {shown} {self.status} {len(self.body)} bytes>"
