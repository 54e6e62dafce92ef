"""One request against servers that lie, stall, flood or break the protocol.

Each test here failed before the fix it guards: bodies without a size limit, aiohttp's
request info (with the Authorization header) chained to our errors, builtin exceptions
escaping, identifiers steering the path.
"""

from __future__ import annotations

import asyncio
import gzip
import math
import uuid

import aiohttp
import pytest
from aiohttp import web

from payroll_async import (
    APIConnectionError,
    APITimeoutError,
    InvalidArgumentError,
    PayrollClient,
    PayrollError,
    ResponseDecodeError,
    ServerError,
)
from tests import factories
from tests.conftest import BOTH_TRANSPORTS, ONCE, TOKEN, Serve
from tests.hostile.conftest import RawServe, assert_secret_free, read_request

pytestmark = BOTH_TRANSPORTS  # the same code above the seam over either transport

EID = factories.uid(3, 2)


# --- 1. bounded bodies ---------------------------------------------------------------------


async def _endless(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "application/json"})
    await response.prepare(request)
    chunk = b"[" * 0 + b" " * 65536
    try:
        while True:  # never ends: only the client's limit stops it
            await response.write(chunk)
    except (ConnectionResetError, RuntimeError):
        pass
    return response


async def test_an_endless_body_stops_at_max_response_size(serve: Serve) -> None:
    served = []

    async def ok(request: web.Request) -> web.Response:
        served.append(request.path)
        return web.json_response(factories.envelope([factories.employer(1)]))

    app = web.Application()
    app.router.add_get("/v1/payroll-connections", _endless)
    app.router.add_get("/v1/employer-identifiers", ok)
    base = await serve(app)
    async with PayrollClient(base, TOKEN, retry=ONCE, max_response_size=1_000_000) as client:
        with pytest.raises(ResponseDecodeError, match=r"max_response_size \(1,000,000 bytes\)"):
            await client.payroll_connections.list().collect()
        # The half-read connection is closed, not reused: the next call works.
        assert len(await client.employer_identifiers.list().collect()) == 1
    assert served == ["/v1/employer-identifiers"]


async def test_a_gzip_bomb_is_stopped_after_decompression(serve: Serve) -> None:
    bomb = gzip.compress(b" " * 50_000_000, compresslevel=9)  # ~50 KB on the wire
    assert len(bomb) < 100_000

    async def handle(request: web.Request) -> web.Response:
        return web.Response(
            body=bomb, headers={"Content-Encoding": "gzip", "Content-Type": "application/json"}
        )

    app = web.Application()
    app.router.add_get("/v1/payroll-connections", handle)
    base = await serve(app)
    async with PayrollClient(base, TOKEN, retry=ONCE, max_response_size=2_000_000) as client:
        with pytest.raises(ResponseDecodeError, match="max_response_size"):
            await client.payroll_connections.list().collect()


async def test_a_declared_length_over_the_limit_is_refused_before_reading(serve: Serve) -> None:
    async def handle(request: web.Request) -> web.Response:
        return web.json_response(factories.envelope([factories.connection(i) for i in range(50)]))

    app = web.Application()
    app.router.add_get("/v1/payroll-connections", handle)
    base = await serve(app)
    async with PayrollClient(base, TOKEN, retry=ONCE, max_response_size=1000) as client:
        with pytest.raises(ResponseDecodeError, match="larger than max_response_size"):
            await client.payroll_connections.list().collect()
    async with PayrollClient(base, TOKEN, max_response_size=None) as client:
        assert len(await client.payroll_connections.list().collect()) == 50


async def test_an_endless_error_body_still_gives_the_status_error(serve: Serve) -> None:
    async def handle(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(status=500)
        await response.prepare(request)
        try:
            while True:
                await response.write(b"x" * 65536)
        except (ConnectionResetError, RuntimeError):
            pass
        return response

    app = web.Application()
    app.router.add_get("/v1/payroll-connections", handle)
    base = await serve(app)
    async with PayrollClient(base, TOKEN, retry=ONCE, max_response_size=None) as client:
        with pytest.raises(ServerError) as caught:
            await client.payroll_connections.list().collect()
    assert caught.value.status == 500


def test_max_response_size_is_checked() -> None:
    for bad in (0, -1, 1.5, "1", True):
        with pytest.raises(InvalidArgumentError, match="max_response_size"):
            PayrollClient("https://api.example.test", TOKEN, max_response_size=bad)  # type: ignore[arg-type]


# --- 2. no token anywhere in an exception chain --------------------------------------------


MALFORMED = {
    "bad status line": b"HTTP/1.1 OK-ish\r\n\r\n",
    "over-long header": b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n",
    "conflicting framing": (
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5\r\nhello\r\n0\r\n\r\n"
    ),
    "not http at all": b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03garbage\r\n\r\n",
    "dropped mid-body": b'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"data"',
}


@pytest.mark.parametrize("answer", MALFORMED.values(), ids=MALFORMED.keys())
async def test_a_malformed_response_chains_no_token(raw_serve: RawServe, answer: bytes) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(answer)
        await writer.drain()

    base = await raw_serve(handler)
    async with PayrollClient(base, TOKEN, retry=ONCE) as client:
        with pytest.raises(APIConnectionError) as caught:
            await client.payroll_connections.list().collect()
    assert_secret_free(caught.value, TOKEN)
    assert "Bearer" not in repr(caught.value.__cause__)


# --- 5. only PayrollError escapes ----------------------------------------------------------


async def test_deeply_nested_json_is_a_decode_error_on_the_stdlib_path(
    serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    from payroll_async._core import _json
    from payroll_async._http import _status
    from payroll_async._paging import _decode

    monkeypatch.setattr(_decode, "loads", _json._stdlib_loads)
    monkeypatch.setattr(_status, "loads", _json._stdlib_loads)
    deep = b"[" * 200_000 + b"]" * 200_000

    async def handle(request: web.Request) -> web.Response:
        status = 200 if request.path.endswith("connections") else 400
        return web.Response(body=deep, status=status, content_type="application/json")

    app = web.Application()
    app.router.add_get("/v1/payroll-connections", handle)
    app.router.add_get("/v1/employer-identifiers", handle)
    base = await serve(app)
    async with PayrollClient(base, TOKEN, retry=ONCE) as client:
        with pytest.raises(ResponseDecodeError, match="not valid JSON"):
            await client.payroll_connections.list().collect()
        with pytest.raises(PayrollError):  # the 400 with an unparseable body
            await client.employer_identifiers.list().collect()


@pytest.mark.parametrize(
    "headers",
    [
        {"X-A": "a\x00b"},
        {"X-A": "a\rb"},
        {"X-A\x00": "a"},
        {"X A": "a"},
        {"": "a"},
        {"X-A": "a\x7f"},
    ],
)
async def test_bad_extra_headers_fail_before_sending(serve: Serve, headers: dict[str, str]) -> None:
    hits = []

    async def handle(request: web.Request) -> web.Response:
        hits.append(request.path)
        return web.json_response(factories.envelope([]))

    app = web.Application()
    app.router.add_get("/v1/payroll-connections", handle)
    base = await serve(app)
    async with PayrollClient(base, TOKEN) as client:
        with pytest.raises(InvalidArgumentError, match="extra_headers"):
            await client.payroll_connections.list(extra_headers=headers).collect()
    with pytest.raises(InvalidArgumentError, match="extra_headers"):
        PayrollClient(base, TOKEN, headers=headers)
    assert hits == []


@pytest.mark.parametrize(
    "timeout",
    [
        math.inf,
        math.nan,
        -1,
        0,
        aiohttp.ClientTimeout(total=math.inf),
        aiohttp.ClientTimeout(sock_read=math.nan),
        aiohttp.ClientTimeout(connect=-1),
    ],
)
def test_unusable_timeouts_are_refused_at_construction(timeout: object) -> None:
    with pytest.raises(InvalidArgumentError, match="timeout"):
        PayrollClient("https://api.example.test", TOKEN, timeout=timeout)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, [1], None, object()])
async def test_unusable_extra_query_values_fail_before_sending(value: object) -> None:
    async with PayrollClient("https://api.example.test", TOKEN) as client:
        with pytest.raises(InvalidArgumentError, match="extra_query"):
            client.payroll_connections.list(extra_query={"x": value})
        with pytest.raises(InvalidArgumentError, match="extra_query"):
            await client.webhooks.delete(factories.uid(1, 5), extra_query={"x": value})


# --- 10. the path comes from the parsed UUID, never from the caller's object ---------------


class _SneakyStr(str):
    def __str__(self) -> str:
        return "../../../v1/webhooks/subscriptions"

    def __format__(self, spec: str) -> str:
        return "../../../v1/webhooks/subscriptions"

    def lower(self) -> str:  # type: ignore[override]
        return "../../x"


class _SneakyUUID(uuid.UUID):
    def __str__(self) -> str:
        return "../../../v1/webhooks/subscriptions"

    def __format__(self, spec: str) -> str:
        return "../../../v1/webhooks/subscriptions"


@pytest.mark.parametrize(
    "eid", [_SneakyStr(EID.upper()), _SneakyUUID(EID)], ids=["str subclass", "UUID subclass"]
)
async def test_identifier_subclasses_cannot_steer_the_path(serve: Serve, eid: object) -> None:
    paths = []

    async def handle(request: web.Request) -> web.Response:
        paths.append(request.raw_path)
        if request.method == "POST":
            return web.json_response({"onboardingLink": "https://onboard.example.test/x"})
        return web.json_response(factories.envelope([]))

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    base = await serve(app)
    async with PayrollClient(base, TOKEN) as client:
        await client.employer_identifiers.update_groups.list(eid).collect()  # type: ignore[arg-type]
        await client.employer_identifiers.invites.create_session(eid, eid)  # type: ignore[arg-type]
    assert paths == [
        f"/v1/employer-identifiers/{EID}/update-groups?limit=100&offset=0",
        f"/v1/employer-identifiers/{EID}/invites/{EID}/session",
    ]


# --- small: credentials in base_url, timeout text ------------------------------------------


@pytest.mark.parametrize(
    "base_url",
    [
        "https://user:hunter2pass@api.example.test/ with space",
        "ftp://user:hunter2pass@api.example.test",
        "https://user:hunter2pass@api.example.test/?q=1",
        "https://user:hunter2pass@api.example.test",
    ],
)
def test_credentials_in_base_url_are_never_echoed(base_url: str) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        PayrollClient(base_url, TOKEN)
    assert_secret_free(caught.value, "hunter2pass")


async def test_a_sock_read_timeout_names_its_limit(serve: Serve) -> None:
    async def slow(request: web.Request) -> web.Response:
        await asyncio.sleep(2)
        return web.json_response(factories.envelope([]))

    app = web.Application()
    app.router.add_get("/v1/payroll-connections", slow)
    base = await serve(app)
    timeout = aiohttp.ClientTimeout(total=None, sock_read=0.05)
    async with PayrollClient(base, TOKEN, timeout=timeout, retry=ONCE) as client:
        with pytest.raises(APITimeoutError) as caught:
            await client.payroll_connections.list().collect()
    assert "None" not in str(caught.value)
    assert "after 0.05s (sock_read)" in str(caught.value)
    assert isinstance(caught.value, APITimeoutError)
