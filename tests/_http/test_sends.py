"""What each send carries and shows, over the client's own transport (aiohttp) and over a
transport of yours, both through the seam (a `TransportRequest` each send, its headers a
request's merged with the token once and reused, read only, while both stay): a token that
changes and headers that change are sent from the next request on; a refused body's URL
shows no credentials."""

from __future__ import annotations

import pytest
from aiohttp import web

from payroll_async import PayrollClient, ResponseDecodeError, TransportRequest, TransportResponse
from payroll_async.testing import MockTransport, page_response
from tests import factories
from tests.conftest import BASE, TOKEN, Serve

TOTAL = 12


def listing_app(seen: list[tuple[int, str, str | None]]) -> web.Application:
    """Pages of 3 of ``TOTAL`` items; each request's offset, token and ``X-Team`` kept."""

    async def handle(request: web.Request) -> web.Response:
        offset = int(request.query.get("offset", "0"))
        limit = int(request.query.get("limit", "3"))
        token = request.headers["Authorization"].removeprefix("Bearer ")
        seen.append((offset, token, request.headers.get("X-Team")))
        items = [factories.connection(i) for i in range(offset, min(offset + limit, TOTAL))]
        return web.json_response(factories.envelope(items, offset=offset, limit=limit, total=TOTAL))

    app = web.Application()
    app.router.add_get("/v1/payroll-connections", handle)
    return app


class NewEachTime:
    """A provider whose token changes at every request (a rotation without any 401)."""

    def __init__(self) -> None:
        self.given: list[str] = []

    async def get_token(self, *, refresh: bool = False) -> str:
        token = f"token-{len(self.given)}"
        self.given.append(token)
        return token


async def test_a_token_that_changes_mid_walk_reaches_the_next_request(serve: Serve) -> None:
    seen: list[tuple[int, str, str | None]] = []
    base = await serve(listing_app(seen))
    provider = NewEachTime()
    async with PayrollClient(base, provider, concurrency=1) as client:
        items = await client.payroll_connections.list(page_size=3, concurrency=1).collect()
    assert len(items) == TOTAL
    assert [token for _, token, _ in seen] == provider.given  # each its own, in order
    assert len(set(provider.given)) == len(seen) == TOTAL // 3


async def test_headers_changed_between_requests_are_sent(serve: Serve) -> None:
    seen: list[tuple[int, str, str | None]] = []
    base = await serve(listing_app(seen))
    async with PayrollClient(base, "tok_0123456789", headers={"X-Team": "a"}) as client:
        await client.payroll_connections.list(page_size=3)
        await client.payroll_connections.list(page_size=3, extra_headers={"X-Team": "b"})
        await client.with_options(extra_headers={"X-Team": "c"}).payroll_connections.list(
            page_size=3
        )
        await client.payroll_connections.list(page_size=3)
    assert [team for _, _, team in seen] == ["a", "b", "c", "a"]
    assert {token for _, token, _ in seen} == {"tok_0123456789"}


async def test_a_transport_of_yours_cannot_change_what_the_next_send_carries() -> None:
    sent: list[dict[str, str]] = []

    def handler(request: TransportRequest) -> TransportResponse:
        headers = request.headers
        sent.append(dict(headers))
        with pytest.raises(TypeError):  # read only: shared by the sends of a request
            headers["X-Seen"] = "by the transport"  # type: ignore[index]
        assert headers["authorization"] == f"Bearer {TOKEN}"  # case-insensitive
        return page_response([])

    async with PayrollClient(BASE, TOKEN, transport=MockTransport(handler)) as client:
        for _ in range(3):
            await client.payroll_connections.list()
    assert len(sent) == 3
    assert all("X-Seen" not in headers for headers in sent)
    assert all(headers["Authorization"] == f"Bearer {TOKEN}" for headers in sent)


def big_page_app() -> web.Application:
    async def handle(request: web.Request) -> web.Response:
        return web.json_response(factories.envelope([factories.connection(0)] * 50))

    app = web.Application()
    app.router.add_get("/v1/payroll-connections", handle)
    return app


@pytest.mark.parametrize("transport", ["aiohttp", "yours"])
async def test_a_body_past_its_bound_shows_its_url_without_credentials(
    serve: Serve, transport: str
) -> None:
    """The URL a refused body's error shows, query included, has credential-like query
    values (and the token's text) redacted, whichever transport read it."""
    base = await serve(big_page_app())
    mock = MockTransport(lambda request: page_response([factories.connection(0)] * 50))
    async with PayrollClient(
        base if transport == "aiohttp" else BASE,
        TOKEN,
        max_response_size=1000,
        transport=mock if transport == "yours" else None,
    ) as client:
        with pytest.raises(ResponseDecodeError, match="max_response_size") as caught:
            await client.payroll_connections.list(extra_query={"api_key": "key-0123456789"})
    assert "offset=0" in caught.value.url  # the whole URL asked
    assert "key-0123456789" not in caught.value.url
    assert "key-0123456789" not in str(caught.value)
