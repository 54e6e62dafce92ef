"""The client against servers that echo its token, and callers who reach past its options.

Each test here failed before the fix it guards: a token quoted back by the server in an
exception, ``extra_query`` steering a walk's offsets, headers that the transport owns.
"""

from __future__ import annotations

import asyncio
import gc
import json
import threading
import warnings

import pytest
from aiohttp import web

from payroll_async import (
    APIStatusError,
    InvalidArgumentError,
    PayrollClient,
    PayrollError,
    ResponseDecodeError,
)
from tests import factories
from tests.conftest import BOTH_TRANSPORTS, ONCE, TOKEN, Serve, loopback
from tests.hostile.conftest import RawServe, assert_secret_free, read_request

pytestmark = BOTH_TRANSPORTS  # the same code above the seam over either transport

EID = factories.uid(3, 2)

# --- 20.15: a server that echoes the token ---------------------------------------------------

# The token near an excerpt's 200-character cut, so that a redaction after the cut would
# leave its first half behind.
_NEAR_CUT = ("x" * 190 + TOKEN + "y" * 50).encode()

ECHOES = {
    "401 JSON message": (
        401,
        "application/json",
        json.dumps({"message": f"token {TOKEN} is not valid", "errors": [f"bad {TOKEN}"]}),
    ),
    "401 JSON message escaped": (
        401,
        "application/json",
        '{"message": "token ' + "".join(f"\\u{ord(c):04x}" for c in TOKEN) + ' refused"}',
    ),
    "400 text body": (400, "text/plain", f"Bearer {TOKEN} is malformed"),
    "400 text body at the cut": (400, "text/plain", _NEAR_CUT.decode()),
    "500 text body": (500, "text/plain", f"crash while checking {TOKEN}"),
    "2xx excerpt": (200, "text/plain", f"hello {TOKEN}"),
    "2xx excerpt at the cut": (200, "application/json", _NEAR_CUT.decode()),
    "2xx wrong shape": (
        200,
        "application/json",
        json.dumps({"data": [{"id": TOKEN}], "meta": {"offset": 0}}),
    ),
}


@pytest.mark.parametrize("case", ECHOES.values(), ids=ECHOES.keys())
async def test_a_token_echoed_in_a_body_is_redacted(
    serve: Serve, case: tuple[int, str, str]
) -> None:
    status, content_type, body = case

    async def handle(request: web.Request) -> web.Response:
        return web.Response(status=status, text=body, content_type=content_type)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    base = await serve(app)
    async with PayrollClient(base, TOKEN, retry=ONCE) as client:
        with pytest.raises(PayrollError) as listing:
            await client.payroll_connections.list().collect()
        with pytest.raises(PayrollError) as single:
            await client.webhooks.create(
                event_types=["PAYROLL_PROCESSED"], path="https://example.com/h"
            )
    for caught in (listing, single):
        assert isinstance(caught.value, (APIStatusError, ResponseDecodeError))
        assert_secret_free(caught.value, TOKEN)
    assert "***" in str(listing.value) or status >= 500 or "shape" in case[2]


async def test_a_token_echoed_in_the_status_line_is_redacted(raw_serve: RawServe) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(f"HTTP/1.1 401 Token {TOKEN} expired\r\nContent-Length: 0\r\n\r\n".encode())
        await writer.drain()

    base = await raw_serve(handler)
    async with PayrollClient(base, TOKEN, retry=ONCE) as client:
        with pytest.raises(APIStatusError) as caught:
            await client.payroll_connections.list().collect()
    assert_secret_free(caught.value, TOKEN)
    assert "***" in str(caught.value)


async def test_a_token_echoed_in_an_oversized_2xx_is_redacted(serve: Serve) -> None:
    async def handle(request: web.Request) -> web.Response:
        return web.Response(text=f"{TOKEN} " * 1000, content_type="application/json")

    app = web.Application()
    app.router.add_get("/v1/payroll-connections", handle)
    base = await serve(app)
    async with PayrollClient(base, TOKEN, retry=ONCE, max_response_size=100) as client:
        with pytest.raises(ResponseDecodeError) as caught:
            await client.payroll_connections.list().collect()
    assert_secret_free(caught.value, TOKEN)


# --- 20.17: extra_query and extra_headers cannot take over what the client controls ---------


@pytest.mark.parametrize("query", [{"offset": 19990}, {"limit": 5}, {"Offset": "3"}, {"LIMIT": 1}])
async def test_extra_query_cannot_set_the_walks_parameters(
    serve: Serve, query: dict[str, object]
) -> None:
    hits = []

    async def handle(request: web.Request) -> web.Response:
        hits.append(request.path_qs)
        return web.json_response(factories.envelope([]))

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    base = await serve(app)
    async with PayrollClient(base, TOKEN) as client:
        with pytest.raises(InvalidArgumentError, match="extra_query"):
            client.payroll_connections.list(extra_query=query)
        with pytest.raises(InvalidArgumentError, match="extra_query"):
            client.employer_identifiers.list(extra_query=query)
        with pytest.raises(InvalidArgumentError, match="extra_query"):
            await client.webhooks.ensure(
                event_types=["PAYROLL_PROCESSED"], path="https://example.com/h", extra_query=query
            )
    assert hits == []


async def test_extra_query_cannot_override_the_listings_own_keywords() -> None:
    async with PayrollClient("https://api.example.test", TOKEN) as client:
        with pytest.raises(InvalidArgumentError, match="'sort'"):
            client.payroll_connections.list(sort="-createdAt", extra_query={"sort": "id"})
        with pytest.raises(InvalidArgumentError, match="extra_query"):
            client.webhooks.list(active=True, extra_query={"filter[active][eq]": "false"})
        # a parameter the listing does not set is still the caller's to add
        client.payroll_connections.list(sort="-createdAt", extra_query={"tag": "x"})


@pytest.mark.parametrize(
    "name", ["Host", "host", "Content-Length", "content-length", "Transfer-Encoding"]
)
async def test_extra_headers_cannot_set_the_transports_headers(serve: Serve, name: str) -> None:
    hits = []

    async def handle(request: web.Request) -> web.Response:
        hits.append(request.path)
        return web.json_response(factories.envelope([]))

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    base = await serve(app)
    async with PayrollClient(base, TOKEN) as client:
        with pytest.raises(InvalidArgumentError, match="extra_headers"):
            client.payroll_connections.list(extra_headers={name: "evil.example"})
        with pytest.raises(InvalidArgumentError, match="extra_headers"):
            await client.employer_identifiers.invites.create_session(
                EID, EID, extra_headers={name: "1"}
            )
    with pytest.raises(InvalidArgumentError, match="headers"):
        PayrollClient(base, TOKEN, headers={name: "x"})
    assert hits == []


# --- 20.19: a client belongs to its event loop ------------------------------------------------


def _one_employer() -> web.Application:
    async def handle(request: web.Request) -> web.Response:
        return web.json_response(factories.envelope([factories.employer(1)]))

    app = web.Application()
    app.router.add_get("/v1/employer-identifiers", handle)
    return app


def test_a_client_used_from_a_second_event_loop_says_so(either_transport: str) -> None:
    async def first() -> PayrollClient:
        async with loopback(_one_employer()) as base:
            client = PayrollClient(base, TOKEN, retry=ONCE)
            assert len(await client.employer_identifiers.list().collect()) == 1
        return client  # not closed: the loop ends with the client in use

    async def second(client: PayrollClient) -> None:
        await client.employer_identifiers.list().collect()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        client = asyncio.run(first())
        with pytest.raises(PayrollError, match="event loop") as raised:
            asyncio.run(second(client))
        assert not isinstance(raised.value.__context__, RuntimeError)
        if either_transport == "aiohttp":  # it tells the client too (``TransportStatus``)
            with pytest.raises(PayrollError, match="event loop"):
                asyncio.run(client.__aenter__())
        asyncio.run(client.close())
        del client
        gc.collect()
    assert [str(w.message) for w in caught] == []


def test_a_client_shared_with_a_running_loop_in_another_thread_says_so() -> None:
    started = threading.Event()
    stop = threading.Event()
    holder: list[PayrollClient] = []

    async def owner() -> None:
        async with (
            loopback(_one_employer()) as base,
            PayrollClient(base, TOKEN, retry=ONCE) as client,
        ):
            await client.employer_identifiers.list().collect()
            holder.append(client)
            started.set()
            await asyncio.get_running_loop().run_in_executor(None, stop.wait)

    thread = threading.Thread(target=asyncio.run, args=(owner(),))
    thread.start()
    try:
        assert started.wait(10)

        async def borrow() -> None:
            await holder[0].employer_identifiers.list().collect()

        with pytest.raises(PayrollError, match="another event loop"):
            asyncio.run(borrow())
    finally:
        stop.set()
        thread.join()


# --- 20.20: leaving a walk early costs nothing ------------------------------------------------


async def _counting_server(serve: Serve) -> tuple[str, list[str]]:
    hits: list[str] = []

    async def listing(request: web.Request) -> web.Response:
        offset = int(request.query["offset"])
        hits.append(f"{request.path}?offset={offset}")
        items = [factories.connection(i) for i in range(offset, offset + 10)]
        return web.json_response(factories.envelope(items, offset=offset, limit=10, total=1000))

    async def empty(request: web.Request) -> web.Response:
        return web.json_response(factories.envelope([]))

    app = web.Application()
    app.router.add_get("/v1/payroll-connections", listing)
    app.router.add_get("/v1/employer-identifiers", empty)
    return await serve(app), hits


async def test_breaking_out_of_a_walk_stops_its_prefetch_at_once(serve: Serve) -> None:
    base, hits = await _counting_server(serve)
    async with PayrollClient(base, TOKEN, page_size=10, concurrency=8) as client:
        # Warm connections in the pool, as a client in use has them: a request started
        # then goes out without waiting for a connection.
        assert len(await client.payroll_connections.list(max_items=80).collect()) == 80
        hits.clear()
        async for _ in client.payroll_connections.list():
            break  # no aclosing: the walk must stop anyway
        # Anything the walk had started would be sent before this listing is answered.
        await client.employer_identifiers.list().collect()
        assert hits == ["/v1/payroll-connections?offset=0"]
        async for _ in client.payroll_connections.list().pages():
            break
        await client.employer_identifiers.list().collect()
        assert len(hits) == 2
