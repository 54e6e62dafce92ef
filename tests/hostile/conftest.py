"""Servers that misbehave on purpose, on loopback ports, and a check for leaked secrets."""

from __future__ import annotations

import asyncio
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

RawHandler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
RawServe = Callable[[RawHandler], Awaitable[str]]


@pytest.fixture
async def raw_serve() -> AsyncIterator[RawServe]:
    """A TCP server on a free loopback port that runs ``handler`` per connection.

    For answers aiohttp.web would never send: bad status lines, over-long headers,
    conflicting framing, connections dropped mid-request.
    """
    servers: list[asyncio.Server] = []
    tasks: set[asyncio.Task[None]] = set()

    async def start(handler: RawHandler) -> str:
        async def run(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            assert task is not None
            tasks.add(task)  # type: ignore[arg-type]
            try:
                await handler(reader, writer)
            except (ConnectionError, asyncio.IncompleteReadError):
                pass
            finally:
                writer.close()
                tasks.discard(task)  # type: ignore[arg-type]

        server = await asyncio.start_server(run, "127.0.0.1", 0)
        servers.append(server)
        port = server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    yield start
    for server in servers:
        server.close()
    for task in list(tasks):
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    for server in servers:
        await server.wait_closed()


async def read_request(reader: asyncio.StreamReader) -> tuple[str, dict[str, str], bytes]:
    """The request line, the headers (lowercase names) and the body of one request."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    body = await reader.readexactly(length) if length else b""
    return lines[0], headers, body


def chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and every exception reachable through __cause__ and __context__."""
    seen: list[BaseException] = []
    todo = [exc]
    while todo:
        current = todo.pop()
        if any(current is s for s in seen):
            continue
        seen.append(current)
        todo.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    return seen


def assert_secret_free(exc: BaseException, secret: str) -> None:
    """No exception in the chain shows ``secret``: not in str, repr, args or a traceback."""
    for item in chain(exc):
        texts = [
            str(item),
            repr(item),
            repr(item.args),
            repr(vars(item) if hasattr(item, "__dict__") else ""),
        ]
        for text in texts:
            assert secret not in text, f"{type(item).__name__} carries the secret: {text[:300]}"
    formatted = "".join(traceback.format_exception(exc))
    assert secret not in formatted
