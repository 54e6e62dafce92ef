"""The emulator is shipped to users: a hostile request must not overload it, and its
notifications must not be redirected off the machine."""

from __future__ import annotations

import aiohttp
import pytest
from aiohttp import web

from payroll_async import EventType
from payroll_async.emulator import Emulator
from tests.conftest import Serve


async def _get(emu: Emulator, path: str) -> tuple[int, dict[str, object]]:
    async with (
        aiohttp.ClientSession() as session,
        session.get(
            emu.base_url + path, headers={"Authorization": f"Bearer {emu.token}"}
        ) as response,
    ):
        return response.status, await response.json()


async def test_a_huge_limit_is_capped_and_meta_says_so() -> None:
    async with Emulator(payroll_connections=1_000_000) as emu:
        status, body = await _get(emu, "/v1/payroll-connections?limit=4294967295")
    assert status == 200
    assert len(body["data"]) == 10_000  # type: ignore[arg-type]
    assert body["meta"]["limit"] == 10_000  # type: ignore[index]
    assert body["meta"]["totalCount"] == 1_000_000  # type: ignore[index]


async def test_max_page_size_is_an_option() -> None:
    async with Emulator(payroll_connections=100, max_page_size=7) as emu:
        _, body = await _get(emu, "/v1/payroll-connections?limit=50")
    assert len(body["data"]) == 7  # type: ignore[arg-type]


async def test_a_sort_it_cannot_afford_is_a_400_that_says_why() -> None:
    async with Emulator(payroll_connections=10**9) as emu:
        status, body = await _get(emu, "/v1/payroll-connections?sort=status&limit=1")
        assert status == 400
        assert "at most 1,000,000" in str(body["errors"])
        # the default order and its reverse stay cheap at any size
        status, body = await _get(emu, "/v1/payroll-connections?sort=-createdAt&limit=1")
        assert status == 200


@pytest.mark.parametrize("value", ["\u0661\u0662", "\uff11\uff10", "1\u0660"])
async def test_limit_and_offset_take_ascii_digits_only(value: str) -> None:
    async with Emulator() as emu:
        for name in ("limit", "offset"):
            status, _ = await _get(emu, f"/v1/payroll-connections?{name}={value}")
            assert status == 400


@pytest.mark.parametrize(
    "body",
    [b"[" * 100_000 + b"]" * 100_000, b"{", b"\xff\xfe", b'{"event_types": ' + b"[" * 5000],
    ids=["nested 100,000 deep", "truncated", "not utf-8", "nested and truncated"],
)
async def test_an_unparseable_create_body_is_a_400(body: bytes) -> None:
    async with (
        Emulator() as emu,
        aiohttp.ClientSession() as session,
        session.post(
            emu.base_url + "/v1/webhooks/subscriptions",
            data=body,
            headers={"Authorization": f"Bearer {emu.token}", "Content-Type": "application/json"},
        ) as response,
    ):
        assert response.status == 400
        assert "message" in await response.json()


async def test_emit_never_follows_a_redirect(serve: Serve) -> None:
    landed: list[str] = []

    async def elsewhere(request: web.Request) -> web.Response:
        landed.append(request.path)
        return web.Response()

    async def redirect(request: web.Request) -> web.Response:
        raise web.HTTPTemporaryRedirect(location=other + "/stolen")

    other_app = web.Application()
    other_app.router.add_post("/stolen", elsewhere)
    other = await serve(other_app)
    app = web.Application()
    app.router.add_post("/hooks", redirect)
    receiver = await serve(app)
    async with Emulator(webhook_subscriptions=0) as emu:
        from payroll_async import PayrollClient

        async with PayrollClient(emu.base_url, emu.token) as client:
            await client.webhooks.create(
                event_types=[EventType.PAYROLL_PROCESSED], path=receiver + "/hooks"
            )
        delivered = await emu.emit(EventType.PAYROLL_PROCESSED, data={"x": 1})
    assert delivered == 0
    assert landed == []
    assert "redirect" in emu.deliveries[-1].outcome


def test_expired_onboarding_links_are_pruned() -> None:
    from payroll_async.emulator._onboarding import LINK_VALIDITY, OnboardingLinks

    now = [1000.0]
    links = OnboardingLinks(clock=lambda: now[0])
    first = [links.make("invite") for _ in range(5)]
    assert len(links) == 5
    now[0] += 1.5 * LINK_VALIDITY.total_seconds()
    assert links.open(first[0]) == (410, "This onboarding link has expired.")
    now[0] += 1.5 * LINK_VALIDITY.total_seconds()
    fresh = links.make("invite")
    assert len(links) == 1  # expired for longer than their validity: forgotten
    assert links.open(first[0])[0] == 404
    assert links.open(fresh) == (200, "invite")
