"""The receiver's answer, and the servers that carry it: one framework-neutral core,
``EventRouter.receive(body, headers) -> Reply``, behind thin adapters for aiohttp
(``router.app()``, ``router.handle``) and any ASGI 3 server (``router.asgi()``).

Each adapter bounds what a sender can make it hold before the core sees anything, alike:
the body's size (``MAX_BODY``), the time its body may take (``read_timeout``), and the
number of headers (``MAX_HEADERS``, checked by the core too); the nesting of the JSON is
the core's. Nothing here knows of signatures, handlers or the inbox.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

import aiohttp
import attrs
from aiohttp import web
from multidict import CIMultiDict, CIMultiDictProxy

from .._core._clock import bounded
from .._core._json import dumps

__all__ = [
    "MAX_BODY",
    "MAX_HEADERS",
    "ASGIReceiver",
    "Delivered",
    "Reply",
    "answer",
    "header_count",
    "read_aiohttp",
    "to_aiohttp",
]

logger = logging.getLogger("payroll_async.events")  # the receiver's logger, and its filter

MAX_BODY = 2**20
"""The largest notification body accepted, in bytes (413 past it)."""
MAX_HEADERS = 100
"""The most request headers accepted (431 past it): a delivery carries a dozen."""


@attrs.frozen
class Reply:
    """What a receiver answers a sender: ``status``, ``headers`` and ``body`` (JSON bytes).

    Any framework can send it, for instance FastAPI's
    ``Response(reply.body, status_code=reply.status, headers=reply.headers)``.
    """

    status: int
    """The HTTP status: 200, or the refusal of the answers table."""
    headers: Mapping[str, str]
    """The headers to send: ``Content-Type``, and ``Retry-After`` where the sender should wait."""
    body: bytes
    """The JSON body: ``{"status": ...}`` or ``{"error": ...}``."""


RETRY_AFTER = "5"
"""Seconds a sender is asked to wait before it delivers again after a 409 or a 503."""


def answer(document: Mapping[str, str], status: int = 200, **headers: str) -> Reply:
    """A JSON reply (``Content_Type="x"`` is sent as ``Content-Type: x``); a 409 or a 503
    always carries ``Retry-After``, so that a sender knows when to deliver again."""
    named = {name.replace("_", "-"): value for name, value in headers.items()}
    if status in (409, 503):
        named.setdefault("Retry-After", RETRY_AFTER)
    return Reply(status, {"Content-Type": "application/json", **named}, dumps(dict(document)))


@attrs.frozen
class Delivered:
    """What a ``verify=`` hook gets as its request outside aiohttp: ``headers`` (looked up
    case-insensitively) and ``remote``, the sender's address (None when unknown)."""

    headers: CIMultiDictProxy[str]
    remote: str | None


def header_count(headers: Mapping[str, str]) -> int:
    """How many headers a mapping holds (every value of a multi-mapping)."""
    try:
        return len(headers)
    except TypeError:
        return 0


Core = Callable[[bytes, Mapping[str, str], "str | None", Any], Awaitable[Reply]]
"""``core(body, headers, remote, request)``: the router's whole behaviour."""


def _slow(remote: str | None, timeout: float) -> None:
    logger.warning(
        "a sender at %s took more than %gs to send a notification: connection closed",
        remote,
        timeout,
    )


def _hung_up(remote: str | None, why: str) -> None:
    # the sender hung up mid-body: one line, no traceback (it is not our failure)
    logger.info("a sender at %s hung up before its notification arrived (%s)", remote, why)


def _late() -> Reply:
    return answer({"error": "the body did not arrive in time"}, 408, Connection="close")


# aiohttp


async def read_aiohttp(request: web.Request, timeout: float) -> bytes | None:
    """The body, or None if it did not arrive within ``timeout`` (then closed).

    Its size is bounded by the application's ``client_max_size`` (413 past it).
    """
    try:
        return await bounded(request.read(), timeout)
    except asyncio.TimeoutError:
        _slow(request.remote, timeout)
    except (aiohttp.ClientPayloadError, ConnectionError) as exc:
        _hung_up(request.remote, type(exc).__name__)
    if request.transport is not None:
        request.transport.close()
    return None


def to_aiohttp(reply: Reply) -> web.Response:
    """A reply as aiohttp's response."""
    return web.Response(status=reply.status, headers=dict(reply.headers), body=reply.body)


# ASGI 3

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class _TooLarge(Exception):
    pass


class _HungUp(Exception):
    pass


@attrs.define(eq=False, repr=False)
class ASGIReceiver:
    """An ASGI 3 application that answers POST ``path`` with the router's core.

    A class, not a function, so that Starlette's ``Route`` and ``Mount`` treat it as an
    ASGI application. It answers the lifespan protocol, 404 for other paths and 405 for
    other methods; a mount's ``root_path`` is taken off the path first.
    """

    _core: Core
    path: str
    _read_timeout: float
    _max_body: int = MAX_BODY
    _max_headers: int = MAX_HEADERS

    def __repr__(self) -> str:
        return f"<ASGIReceiver POST {self.path}>"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await _lifespan(receive, send)
            return
        if kind != "http":
            if kind == "websocket":
                await send({"type": "websocket.close", "code": 1008})
            return
        remote = _client(scope)
        reply = await self._answer(scope, receive, remote)
        if reply is not None:
            await _send(send, reply)

    async def _answer(self, scope: Scope, receive: Receive, remote: str | None) -> Reply | None:
        if _route_path(scope) != self.path:
            return answer({"error": "not found"}, 404)
        if scope["method"] != "POST":
            return answer({"error": "method not allowed"}, 405, Allow="POST")
        raw: list[tuple[bytes, bytes]] = list(scope.get("headers", ()))
        if len(raw) > self._max_headers:
            return answer({"error": "too many headers"}, 431, Connection="close")
        headers = CIMultiDictProxy(
            CIMultiDict(
                # as aiohttp decodes them, so that both adapters see the same text
                (name.decode("utf-8", "surrogateescape"), value.decode("utf-8", "surrogateescape"))
                for name, value in raw
            )
        )
        length = headers.get("content-length", "")
        if length.isascii() and length.isdigit() and int(length) > self._max_body:
            return _too_large()
        try:
            body = await bounded(self._read(receive), self._read_timeout)
        except asyncio.TimeoutError:
            _slow(remote, self._read_timeout)
            return _late()
        except _TooLarge:
            return _too_large()
        except _HungUp:
            _hung_up(remote, "disconnected")
            return None
        return await self._core(body, headers, remote, None)

    async def _read(self, receive: Receive) -> bytes:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise _HungUp
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self._max_body:
                raise _TooLarge
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)


def _too_large() -> Reply:
    return answer({"error": f"the body is over {MAX_BODY:,} bytes"}, 413, Connection="close")


def _client(scope: Scope) -> str | None:
    client = scope.get("client")
    return str(client[0]) if client else None


def _route_path(scope: Scope) -> str:
    """The path below the mount point (Starlette's ``Mount`` and ``--root-path``)."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    if root and path.startswith(root):
        path = path[len(root) :] or "/"
    return path


async def _send(send: Send, reply: Reply) -> None:
    headers = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in reply.headers.items()]
    headers.append((b"content-length", str(len(reply.body)).encode()))
    await send({"type": "http.response.start", "status": reply.status, "headers": headers})
    await send({"type": "http.response.body", "body": reply.body})


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
