"""The wire of one attempt: the body read within its bound, the Link header, send counting.

Everything here works on one aiohttp response or request and knows nothing of retries,
tokens or gates.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import aiohttp
from aiohttp.client_reqrep import ClientRequest
from yarl import URL

from .._core import _assumed
from .._core._exceptions import ResponseDecodeError
from ._response import NO_LINKS, Links
from ._status import excerpt

__all__ = [
    "ERROR_BODY_MAX",
    "count_sends",
    "plain_links",
    "read_body",
    "read_links",
    "session_traces",
]

logger: logging.Logger = logging.getLogger("payroll_async")

ERROR_BODY_MAX = 64 * 1024
"""The most of an error body read: its excerpt and message need no more."""


async def read_body(
    response: aiohttp.ClientResponse, method: str, limit: int | None, secret: str
) -> bytes:
    """The body, at most ``limit`` bytes after decompression (None: no limit).

    An error body is read only as far as its excerpt needs. Past the limit the connection
    is closed (never reused half-read) and ResponseDecodeError is raised; its excerpt has
    ``secret`` (the token sent) redacted.
    """
    success = _assumed.SUCCESS_MIN <= response.status <= _assumed.SUCCESS_MAX
    if not success:
        limit = ERROR_BODY_MAX if limit is None else min(limit, ERROR_BODY_MAX)
    elif limit is None:
        return await response.read()
    length = response.content_length
    chunks: list[bytes] = []
    encoded = response.headers.get("Content-Encoding")
    if success and length is not None and length <= limit and not encoded:
        return await response.read()  # a declared length within the bound: read it at once
    if length is not None and length > limit and not encoded:
        size = length
    else:
        size = 0
        async for chunk in response.content.iter_any():
            size += len(chunk)
            if size > limit:
                break
            chunks.append(chunk)
    if size <= limit:
        return b"".join(chunks)
    response.close()
    if not success:  # the status error keeps what was read: its excerpt needs no more
        return b"".join(chunks)
    raise ResponseDecodeError(
        f"the response body is larger than max_response_size ({limit:,} bytes); "
        "reading stopped. Raise it with PayrollClient(max_response_size=...) "
        "(None for no limit)",
        status=response.status,
        url=str(response.url),
        body_excerpt=excerpt(b"".join(chunks), secret),
        method=method,
    )


def read_links(response: aiohttp.ClientResponse, origin: str) -> tuple[Links, str | None]:
    """rel -> URL from the Link header (the first of each rel), or why it cannot be read.

    aiohttp parses the header and resolves each link against the response's URL. A header
    made only of ``<URL>; rel="name"`` entries whose URLs are plain absolute URLs on
    ``origin`` (the client's, as ``str(URL.origin())`` prints it) is read by one match
    instead: for those aiohttp's parse gives the same links, each URL printing as its
    text (``tests/test_link_header.py`` holds the two to it). Anything else goes to
    aiohttp's parse.
    """
    values = response.headers.getall("Link", None)
    if values is None:
        return NO_LINKS, None
    header = values[0] if len(values) == 1 else ", ".join(values)
    texts = plain_links(header, origin)
    if texts is not None:
        return Links(texts), None
    urls: dict[str, URL] = {}
    try:
        for rel, link in response.links.items():
            target = link["url"]
            urls.setdefault(str(rel), target if isinstance(target, URL) else URL(str(target)))
    except (ValueError, TypeError, KeyError):
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
# resolve, no "%": no escapes to normalise; no "," or space: the entries split at ", "
# as aiohttp splits them) and a quoted lower-case rel.
_URL_REST = r"/[A-Za-z0-9_~/\-]*(?:\?[A-Za-z0-9._~=&\-]+)?"


@functools.lru_cache(maxsize=8)
def _plain_entry(origin: str) -> Callable[[str], re.Match[str] | None]:
    return re.compile(f'<({re.escape(origin)}{_URL_REST})>; rel="([a-z]+)"').fullmatch


_MIDDLEWARES = hasattr(aiohttp, "ClientMiddlewareType")
"""aiohttp 3.12 and later take middlewares per request; before, the sends of a request are
counted by the trace of sent headers every session then carries (``session_traces``)."""


def count_sends(sends: list[object]) -> dict[str, Any]:
    """aiohttp's keywords that count the sends of one request into ``sends``.

    aiohttp 3.10 and later send an idempotent request again themselves when a pooled
    connection turns out to be closed (3.9 never does): a middleware of the request counts
    each send, or, on aiohttp before 3.12, the trace of sent headers.
    """
    if _MIDDLEWARES:
        return {"middlewares": (_send_counter(sends),)}
    return {"trace_request_ctx": sends}


def _send_counter(sends: list[object]) -> aiohttp.ClientMiddlewareType:
    async def count(
        request: ClientRequest, handler: aiohttp.ClientHandlerType
    ) -> aiohttp.ClientResponse:
        sends.append(None)
        return await handler(request)

    return count


async def _on_headers_sent(
    session: aiohttp.ClientSession,
    ctx: SimpleNamespace,
    params: aiohttp.TraceRequestHeadersSentParams,
) -> None:
    # aiohttp sends an idempotent request again, once, when a pooled keep-alive connection
    # turns out to be closed (RFC 9112 9.3.1). That is not one of our attempts: log it so
    # that what went over the wire can be told from the policy's attempts.
    sends = ctx.trace_request_ctx
    if isinstance(sends, list):
        sends.append(params.method)
        if len(sends) > 1:
            logger.debug(
                "%s %s sent again by aiohttp on a new connection (stale keep-alive connection)",
                params.method,
                params.url.path,
            )


def session_traces() -> list[aiohttp.TraceConfig]:
    """The trace of sends, when debug logging is on as a session starts, or when aiohttp
    has no middlewares to count a request's sends with (before 3.12); else none.

    Tracing costs every request ~18 us; with middlewares it only feeds a DEBUG line.
    """
    if _MIDDLEWARES and not logger.isEnabledFor(logging.DEBUG):
        return []
    trace = aiohttp.TraceConfig()
    trace.on_request_headers_sent.append(_on_headers_sent)
    return [trace]
