"""Listings whose metadata lies and whose Link headers are odd, malformed or hostile."""

from __future__ import annotations

import asyncio
import string

import pytest
from aiohttp import web
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from payroll_async import PaginationError, PayrollClient, PayrollConnection, PayrollError
from tests import factories
from tests.conftest import BOTH_TRANSPORTS, ONCE, TOKEN, Serve, loopback

pytestmark = BOTH_TRANSPORTS  # the same code above the seam over either transport

PATH = "/v1/payroll-connections"


def _lying_total_app(n: int, total: object, hits: list[int]) -> web.Application:
    async def handle(request: web.Request) -> web.Response:
        offset = int(request.query["offset"])
        limit = int(request.query["limit"])
        hits.append(offset)
        items = [factories.connection(i) for i in range(offset, min(offset + limit, n))]
        body = factories.envelope(items, offset=offset, limit=limit)
        body["meta"]["totalCount"] = total
        return web.json_response(body)

    app = web.Application()
    app.router.add_get(PATH, handle)
    return app


@pytest.mark.parametrize("total", [-1, 0, 5, 11], ids=lambda t: f"total={t}")
async def test_a_total_that_contradicts_the_items_never_truncates(serve: Serve, total: int) -> None:
    hits: list[int] = []
    base = await serve(_lying_total_app(95, total, hits))
    async with PayrollClient(base, TOKEN, page_size=10) as client:
        items = await client.payroll_connections.list().collect()
    assert [str(c.id) for c in items] == [factories.uid(i, 1) for i in range(95)]


async def test_a_huge_total_keeps_the_window_bounded(serve: Serve) -> None:
    in_flight = 0
    most = 0

    async def handle(request: web.Request) -> web.Response:
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        await asyncio.sleep(0.002)
        in_flight -= 1
        offset = int(request.query["offset"])
        items = [factories.connection(i) for i in range(offset, min(offset + 10, 200))]
        return web.json_response(factories.envelope(items, offset=offset, limit=10, total=10**18))

    app = web.Application()
    app.router.add_get(PATH, handle)
    base = await serve(app)
    async with PayrollClient(base, TOKEN, page_size=10, concurrency=4) as client:
        items = await client.payroll_connections.list().collect()
    assert len(items) == 200
    assert most <= 4


async def test_a_total_that_turns_to_a_lie_mid_walk_still_gives_everything(
    serve: Serve,
) -> None:
    async def handle(request: web.Request) -> web.Response:
        offset = int(request.query["offset"])
        items = [factories.connection(i) for i in range(offset, min(offset + 10, 60))]
        total = 60 if offset < 30 else 0
        return web.json_response(factories.envelope(items, offset=offset, limit=10, total=total))

    app = web.Application()
    app.router.add_get(PATH, handle)
    base = await serve(app)
    async with PayrollClient(base, TOKEN, page_size=10, concurrency=2) as client:
        items = await client.payroll_connections.list().collect()
    assert [str(c.id) for c in items] == [factories.uid(i, 1) for i in range(60)]


# --- Link headers ----------------------------------------------------------------------------


def _link_app(link: str, hits: list[str]) -> web.Application:
    async def handle(request: web.Request) -> web.Response:
        hits.append(request.path_qs)
        if request.query.get("offset") == "0":
            body = factories.envelope([factories.connection(0)], limit=1, total=2)
            return web.json_response(body, headers={"Link": link})
        return web.json_response(factories.envelope([], offset=1, limit=1, total=2))

    app = web.Application()
    app.router.add_get(PATH, handle)
    return app


@pytest.mark.parametrize(
    "link",
    [
        '<http://user:pass@{host}/v1/payroll-connections?offset=1>; rel="next"',
        '<http://[::1/v1/payroll-connections?offset=1>; rel="next"',
        '<http://{host}:99999/x>; rel="next"',
        '<ftp://{host}/v1/payroll-connections>; rel="next"',
        '<javascript:alert(1)>; rel="next"',
        '<http://evil.example.test/v1/payroll-connections?offset=1>; rel="next"',
    ],
)
async def test_a_next_link_no_client_should_follow_is_a_pagination_error(
    serve: Serve, link: str
) -> None:
    hits: list[str] = []
    app = _link_app("", hits)
    base = await serve(app)
    host = base.removeprefix("http://")
    app2 = _link_app(link.format(host=host), hits)
    base2 = await serve(app2)
    async with PayrollClient(base2, TOKEN, retry=ONCE) as client:
        with pytest.raises(PaginationError):
            await client.payroll_connections.list(page_size=1).collect()
    assert all(h.startswith(PATH) for h in hits)
    assert len(hits) == 1  # nothing followed


_LINKISH = st.one_of(
    st.text(alphabet=string.printable.replace("\r", "").replace("\n", ""), max_size=80),
    st.builds(
        lambda url, rel: f"<{url}>; rel={rel}",
        st.one_of(
            st.text(
                alphabet=string.ascii_letters + string.digits + ":/?#[]@!$&'()*+,;=%.-_~ ",
                max_size=60,
            ),
            st.sampled_from(
                [
                    "http://u:p@127.0.0.1/v1/payroll-connections",
                    "//127.0.0.1/x",
                    "/v1/payroll-connections?offset=0&limit=1",
                    "?offset=1",
                    "http://127.0.0.1:0/x",
                    "https://127.0.0.1/x",
                ]
            ),
        ),
        st.sampled_from(['"next"', "next", '"next prev"', '"NEXT"', '""']),
    ),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(link=_LINKISH)
def test_any_link_header_gives_items_or_a_payroll_error_and_stays_home(link: str) -> None:
    async def run() -> None:
        hits: list[str] = []
        async with (
            loopback(_link_app(link, hits)) as base,
            PayrollClient(base, TOKEN, retry=ONCE) as client,
        ):
            # the built-in listing, and the same listing walked by get_api_list
            for listing in (
                client.payroll_connections.list(page_size=1),
                client.get_api_list(PATH, model=PayrollConnection, page_size=1),
            ):
                hits.clear()
                try:
                    items = await listing.collect()
                except PayrollError:
                    pass
                else:
                    assert len(items) >= 1
                assert 1 <= len(hits) <= 3
                assert all(h.startswith(PATH) for h in hits)

    asyncio.run(run())


def _offset_link_app(next_for: object) -> tuple[web.Application, list[str]]:
    """Pages of 10 (of 40) whose Link rel=next is ``next_for(request, offset)``."""
    seen: list[str] = []

    async def handle(request: web.Request) -> web.Response:
        seen.append(request.headers.get("Authorization", ""))
        offset = int(request.query.get("offset", "0"))
        items = [factories.connection(i) for i in range(offset, min(offset + 10, 40))]
        link = next_for(request, offset)  # type: ignore[operator]
        return web.json_response(
            factories.envelope(items, offset=offset, limit=10, total=40),
            headers={"Link": f'<{link}>; rel="next"'},
        )

    app = web.Application()
    app.router.add_get(PATH, handle)
    return app, seen


async def test_an_offset_shaped_link_to_another_origin_is_refused(serve: Serve) -> None:
    # Same path and query with the offset advanced, but another port: not the walk's next
    # request, so it is a link to follow, and following it would leave the origin.
    other = await serve(_offset_link_app(lambda r, o: "http://127.0.0.1:1/")[0])
    app, seen = _offset_link_app(
        lambda r, o: str(r.url.with_port(int(other.rsplit(":", 1)[1])).update_query(offset=o + 10))
    )
    base = await serve(app)
    async with PayrollClient(base, TOKEN, page_size=10, retry=ONCE) as client:
        with pytest.raises(PaginationError, match="another origin"):
            await client.payroll_connections.list().collect()
    assert len(seen) == 1  # nothing sent anywhere after the first page


async def test_offset_links_that_do_not_advance_are_a_loop_not_a_flood(serve: Serve) -> None:
    app, seen = _offset_link_app(lambda r, o: str(r.url))  # next = this very page
    base = await serve(app)
    async with PayrollClient(base, TOKEN, page_size=10, retry=ONCE) as client:
        with pytest.raises(PaginationError, match="already visited"):
            await client.payroll_connections.list().collect()
    assert len(seen) == 1
