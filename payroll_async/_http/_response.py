"""The transport's answer: a finished 2xx response as plain data, read and closed."""

from __future__ import annotations

from collections.abc import Mapping

import attrs
from multidict import CIMultiDictProxy
from yarl import URL

__all__ = ["Response"]


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
    links: Mapping[str, URL] = attrs.field(factory=dict)
    """rel -> absolute URL from the Link header; the first link of each rel wins."""
    link_error: str | None = None
    """Why the Link header could not be parsed (it is then ignored in ``links``)."""
    secret: str | None = attrs.field(default=None, eq=False)
    """The token the request was sent with, to redact if the body echoes it."""

    def __repr__(self) -> str:
        return f"<Response {self.method} {self.url} {self.status} {len(self.body)} bytes>"
