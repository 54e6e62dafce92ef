"""What the proxy and TLS tests share: a private CA, a TLS server, a CONNECT proxy.

Real parts on loopback: the certificates come from a certificate authority made for the
test (trustme), the server is aiohttp's over TLS, and the proxy is a small asyncio one
that tunnels ``CONNECT`` the way squid does (or refuses it, or drops it), recording what
it could read.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
import trustme
from aiohttp import web

from payroll_async.emulator import Emulator

SERVICE_HOST = "payroll.example.test"
"""The service's name: never resolved, only the proxy knows where it is."""


class PrivateCA:
    """A certificate authority of the test's own, and the files a user would have of it."""

    def __init__(self, directory: Path) -> None:
        self.ca = trustme.CA(organization_name="Payroll test CA")
        self.server = self.ca.issue_cert(SERVICE_HOST, "localhost", "127.0.0.1")
        self.bundle = directory / "private-ca.pem"
        self.ca.cert_pem.write_to_path(str(self.bundle))
        self.client = self.ca.issue_cert("payroll-client@example.test")

    def server_context(self, *, client_certificate: bool = False) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.server.configure_cert(context)
        if client_certificate:
            context.verify_mode = ssl.CERT_REQUIRED
            self.ca.configure_trust(context)
        return context

    def client_context(self, *, certificate: bool = False) -> ssl.SSLContext:
        """What a user builds for a private CA (and mutual TLS): ``ssl.create_default_context``."""
        context = ssl.create_default_context(cafile=str(self.bundle))
        if certificate:
            self.client.configure_cert(context)
        return context


@contextlib.asynccontextmanager
async def tls_server(app: web.Application, context: ssl.SSLContext) -> AsyncIterator[int]:
    """Serve ``app`` over TLS on a free loopback port for the block; yields the port."""
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.01)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context).start()
        yield int(runner.addresses[0][1])
    finally:
        await runner.cleanup()


_Server = TypeVar("_Server", bound="_LoopbackServer")


class _LoopbackServer:
    """A TCP server on a free loopback port for an ``async with`` block; each connection
    is ``handle()``'d, and those still open are cancelled as the block ends."""

    def __init__(self, context: ssl.SSLContext | None = None) -> None:
        self.context = context
        self.port = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def __aenter__(self: _Server) -> _Server:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.context)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self.handle(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raise NotImplementedError


class TunnelProxy(_LoopbackServer):
    """An HTTP proxy on loopback that tunnels ``CONNECT`` to ``upstream`` (whatever host
    was asked: it is the network's way to the service).

    ``answer``: ``None`` to tunnel, a status (407, 403, 502) to refuse with, or ``"drop"``
    to close the connection once the ``CONNECT`` is read. ``credentials``: the
    ``user:password`` it requires (answering 407 otherwise; with ``echo``, a reason phrase
    that repeats the ``Proxy-Authorization`` it was sent). ``heads`` are the requests'
    heads as read; ``seen`` every byte the clients sent it, tunnelled ones included.
    """

    def __init__(
        self,
        upstream: int,
        *,
        answer: int | str | None = None,
        credentials: str | None = None,
        echo: bool = False,
    ) -> None:
        super().__init__()
        self.echo = echo  # a 407's reason phrase repeats the Proxy-Authorization it got
        self.upstream = upstream
        self.answer = answer
        self.credentials = credentials
        self.heads: list[bytes] = []
        self.seen = bytearray()
        self.tunnels = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        self.heads.append(head)
        self.seen += head
        refusal = self._refusal(head)
        if refusal == "drop":
            return
        if refusal is not None:
            writer.write(f"HTTP/1.1 {refusal}\r\nContent-Length: 0\r\n\r\n".encode())
            await writer.drain()
            return
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream)
        self.tunnels += 1
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await writer.drain()
        try:
            await asyncio.gather(_pipe(reader, up_writer, self.seen), _pipe(up_reader, writer))
        finally:
            up_writer.close()

    def _refusal(self, head: bytes) -> str | None:
        if not head.startswith(b"CONNECT "):
            return "405 Method Not Allowed"
        if self.answer == "drop":
            return "drop"
        if isinstance(self.answer, int):
            return {403: "403 Forbidden", 502: "502 Bad Gateway"}.get(
                self.answer, f"{self.answer} Refused"
            )
        if self.credentials is not None:
            expected = base64.b64encode(self.credentials.encode()).decode()
            if f"proxy-authorization: basic {expected}".lower().encode() not in head.lower():
                sent = [
                    line.split(b":", 1)[1].strip().decode()
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"proxy-authorization:")
                ]
                reason = (
                    f"Denied {sent[0]}" if self.echo and sent else "Proxy Authentication Required"
                )
                return f'407 {reason}\r\nProxy-Authenticate: Basic realm="x"'
        return None


class TLSTerminator(_LoopbackServer):
    """A TLS front of a plain TCP server on loopback (as stunnel is to a Redis without
    TLS): ``forwarded`` counts the connections whose handshake succeeded."""

    def __init__(self, upstream: int, context: ssl.SSLContext) -> None:
        super().__init__(context)
        self.upstream = upstream
        self.forwarded = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.forwarded += 1
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream)
        try:
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        finally:
            up_writer.close()


async def _pipe(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, record: bytearray | None = None
) -> None:
    """Copy ``reader`` to ``writer`` until its end (kept in ``record`` too, if given)."""
    try:
        while chunk := await reader.read(65536):
            if record is not None:
                record += chunk
            writer.write(chunk)
            await writer.drain()
    finally:
        with contextlib.suppress(OSError, RuntimeError):
            writer.write_eof()


@pytest.fixture
def ca(tmp_path: Path) -> PrivateCA:
    return PrivateCA(tmp_path)


class Service:
    """The emulator over TLS, with what it was sent: each request's Authorization header;
    ``faults`` maps a request's number to the status it is answered with."""

    def __init__(self, emulator: Emulator, faults: dict[int, int] | None = None) -> None:
        self.emulator = emulator
        self.faults = faults or {}
        self.authorizations: list[str | None] = []
        self.port = 0

        @web.middleware
        async def record(request: web.Request, handler: Any) -> web.StreamResponse:
            self.authorizations.append(request.headers.get("Authorization"))
            status = self.faults.get(len(self.authorizations))
            if status is not None:
                return web.json_response(
                    {"message": "not now"}, status=status, headers={"Retry-After": "1"}
                )
            response: web.StreamResponse = await handler(request)
            return response

        emulator.app.middlewares.insert(0, record)


ServiceFactory = Callable[..., Awaitable[Service]]


@pytest.fixture
async def tls_service(ca: PrivateCA) -> AsyncIterator[ServiceFactory]:
    """``await tls_service(faults=..., client_certificate=...)``: the emulator over TLS."""
    async with contextlib.AsyncExitStack() as stack:

        async def start(
            *, faults: dict[int, int] | None = None, client_certificate: bool = False
        ) -> Service:
            emulator = Emulator(payroll_connections=230)
            stack.push_async_callback(emulator.close)
            service = Service(emulator, faults)
            context = ca.server_context(client_certificate=client_certificate)
            service.port = await stack.enter_async_context(tls_server(emulator.app, context))
            return service

        yield start
