"""The generic calls' door: hostile paths refused before any request, no token in any error."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiohttp import web

from payroll_async import (
    APIConnectionError,
    APIStatusError,
    InvalidArgumentError,
    PaginationError,
    PayrollClient,
    PayrollError,
    ResponseDecodeError,
)
from tests.conftest import BOTH_TRANSPORTS, ONCE, TOKEN, Serve
from tests.hostile.conftest import RawServe, assert_secret_free, read_request

pytestmark = BOTH_TRANSPORTS  # the same code above the seam over either transport


def _counting(hits: list[str]) -> web.Application:
    async def handle(request: web.Request) -> web.Response:
        hits.append(f"{request.method} {request.path_qs} {request.headers.get('Authorization')}")
        return web.json_response({"data": [], "meta": {}})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    return app


HOSTILE = [
    "{evil}/v1/x",  # absolute, to another origin
    "{home}/v1/x",  # absolute, even to the client's own origin
    "//{evil_host}/v1/x",  # protocol-relative
    "///{evil_host}/v1/x",
    "/\\{evil_host}/v1/x",
    "\\\\{evil_host}/v1/x",
    "v1/x",  # relative: would join the host
    "@{evil_host}/v1/x",
    ":{evil_port}/v1/x",
    "",
    "/v1/../../x",
    "/v1/./x",
    "/..",
    "/v1/%2e%2e/%2e%2e/x",
    "/v1/%2E%2E%2Fx",
    "/v1/..%2fx",
    "/v1/%252e%252e/x",
    "/v1/x\r\nHost: evil",
    "/v1/x\x00",
    "/v1/%0d%0aX-Injected:%201",
    "/v1/x y",
    "/v1/x\t",
    "/v1/caf\u00e9",
    "/v1/x\u2028",
    "/v1/x#frag",
    "/v1/x?limit=1",  # duplicates params
    "/v1/x?tag=1",  # duplicates extra_query
]


@pytest.mark.parametrize("template", HOSTILE)
async def test_a_hostile_path_is_refused_with_nothing_sent(serve: Serve, template: str) -> None:
    home_hits: list[str] = []
    evil_hits: list[str] = []
    home = await serve(_counting(home_hits))
    evil = await serve(_counting(evil_hits))
    evil_host = evil.removeprefix("http://")
    path = template.format(
        home=home, evil=evil, evil_host=evil_host, evil_port=evil_host.rpartition(":")[2]
    )
    async with PayrollClient(home, TOKEN, retry=ONCE) as client:
        for method in ("GET", "POST", "DELETE"):
            with pytest.raises(InvalidArgumentError) as info:
                await client.request(
                    method, path, cast_to=dict, params={"limit": 1}, extra_query={"tag": "t"}
                )
            assert_secret_free(info.value, TOKEN)
        with pytest.raises(InvalidArgumentError):
            client.get_api_list(path, model=dict, extra_query={"tag": "t"})
        with pytest.raises(InvalidArgumentError):
            await client.with_raw_response.get(
                path, cast_to=dict, params={"limit": 1}, extra_query={"tag": "t"}
            )
    assert home_hits == []
    assert evil_hits == []


@pytest.mark.parametrize("path", [None, b"/v1/x", 3, ["/v1/x"]])
async def test_a_path_that_is_not_a_string_is_refused(serve: Serve, path: Any) -> None:
    hits: list[str] = []
    async with PayrollClient(await serve(_counting(hits)), TOKEN) as client:
        with pytest.raises(InvalidArgumentError, match="path"):
            await client.get(path, cast_to=dict)
    assert hits == []


async def test_a_listing_cannot_set_the_walks_parameters(serve: Serve) -> None:
    hits: list[str] = []
    async with PayrollClient(await serve(_counting(hits)), TOKEN) as client:
        for bad in ("/v1/x?offset=5", "/v1/x?LIMIT=5"):
            with pytest.raises(InvalidArgumentError, match="paginator"):
                client.get_api_list(bad, model=dict)
        with pytest.raises(InvalidArgumentError, match="paginator"):
            client.get_api_list("/v1/x", model=dict, params={"offset": 5})
        with pytest.raises(InvalidArgumentError, match="model"):
            client.get_api_list("/v1/x", model=int)
    assert hits == []


async def test_dots_inside_a_segment_are_a_name_not_a_climb(serve: Serve) -> None:
    hits: list[str] = []
    async with PayrollClient(await serve(_counting(hits)), TOKEN) as client:
        await client.get("/v1/files/a..b/.hidden/x.", cast_to=dict)
    assert hits == [f"GET /v1/files/a..b/.hidden/x. Bearer {TOKEN}"]


async def test_a_next_link_of_a_generic_listing_stays_home(serve: Serve) -> None:
    evil_hits: list[str] = []
    evil = await serve(_counting(evil_hits))

    async def handle(request: web.Request) -> web.Response:
        body = {
            "data": [{"n": 1}],
            "meta": {"currentCount": 1, "filters": {}, "limit": 1, "offset": 0, "sort": ""},
        }
        body["meta"]["totalCount"] = 5
        return web.json_response(body, headers={"Link": f'<{evil}/v1/users?c=2>; rel="next"'})

    app = web.Application()
    app.router.add_get("/v1/users", handle)
    async with PayrollClient(await serve(app), TOKEN, retry=ONCE) as client:
        with pytest.raises(PaginationError, match="another origin"):
            await client.get_api_list("/v1/users", model=dict).collect()
        page = await client.get_api_list("/v1/users", model=dict)
        assert page.has_next_page()
        with pytest.raises(PaginationError, match="another origin"):
            await page.get_next_page()
    assert evil_hits == []


# --- no token in any error of the chain ------------------------------------------------------


async def test_errors_that_echo_the_token_do_not_carry_it(serve: Serve) -> None:
    async def handle(request: web.Request) -> web.Response:
        echoed = request.headers["Authorization"]
        status = int(request.query["status"])
        return web.Response(
            status=status,
            text=f'{{"message": "bad {echoed}", "errors": ["{echoed}"]}}'
            if status >= 400
            else f"not json: {echoed}",
            content_type="application/json",
            headers={"X-Request-Id": "req-1"},
        )

    app = web.Application()
    app.router.add_route("*", "/v1/users", handle)
    async with PayrollClient(await serve(app), TOKEN, retry=ONCE) as client:
        for status, expected in ((400, APIStatusError), (401, APIStatusError), (200, PayrollError)):
            for method in ("GET", "POST", "PATCH"):
                with pytest.raises(expected) as info:
                    await client.request(
                        method, "/v1/users", cast_to=dict, params={"status": status}, json={}
                    )
                assert_secret_free(info.value, TOKEN)
                assert info.value.request_id == "req-1"  # type: ignore[attr-defined]
        with pytest.raises(ResponseDecodeError) as decoded:
            await client.get("/v1/users", cast_to=list, params={"status": 200})
        assert_secret_free(decoded.value, TOKEN)


async def test_a_dropped_connection_chains_no_token(raw_serve: RawServe) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{")
        await writer.drain()

    async with PayrollClient(await raw_serve(handler), TOKEN, retry=ONCE) as client:
        for method in ("GET", "PUT"):
            with pytest.raises(APIConnectionError) as info:
                await client.request(method, "/v1/users", cast_to=bytes)
            assert_secret_free(info.value, TOKEN)
