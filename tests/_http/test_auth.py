"""Tokens: one refresh for a burst of 401s, a static token is not refreshed."""

import asyncio

import pytest
from aiohttp import web

from payroll_async import (
    AuthenticationError,
    InvalidArgumentError,
    PayrollClient,
)
from tests import factories
from tests.conftest import BASE, TOKEN, Serve

# --- token refresh ---------------------------------------------------------------------------


class Rotating:
    def __init__(self) -> None:
        self.version = 1
        self.refreshes = 0

    async def get_token(self, *, refresh: bool = False) -> str:
        if refresh:
            self.refreshes += 1
            await asyncio.sleep(0.01)
            self.version += 1
        return f"token-v{self.version}"


def auth_app(valid: set[str], seen: list[str]) -> web.Application:
    async def handle(request: web.Request) -> web.Response:
        token = request.headers["Authorization"].removeprefix("Bearer ")
        seen.append(token)
        if token not in valid:
            return web.json_response(
                factories.error_body("invalid token"),
                status=401,
                headers={"WWW-Authenticate": 'Bearer error="invalid_token"'},
            )
        return web.json_response(factories.envelope([]))

    app = web.Application()
    app.router.add_get("/v1/payroll-connections", handle)
    return app


async def test_a_401_refreshes_once_for_many_requests(serve: Serve) -> None:
    seen: list[str] = []
    base = await serve(auth_app({"token-v2"}, seen))
    provider = Rotating()
    async with PayrollClient(base, provider) as client:
        await asyncio.gather(*(client.payroll_connections.list().collect() for _ in range(6)))
    assert provider.refreshes == 1
    assert seen.count("token-v2") == 6


async def test_a_second_401_is_an_authentication_error(serve: Serve) -> None:
    seen: list[str] = []
    base = await serve(auth_app(set(), seen))
    provider = Rotating()
    async with PayrollClient(base, provider) as client:
        with pytest.raises(AuthenticationError, match="invalid token") as info:
            await client.payroll_connections.list().collect()
    assert seen == ["token-v1", "token-v2"]
    assert info.value.headers["WWW-Authenticate"].startswith("Bearer")
    assert "token-v" not in str(info.value)


async def test_a_static_token_is_not_retried_on_401(serve: Serve) -> None:
    seen: list[str] = []
    base = await serve(auth_app(set(), seen))
    async with PayrollClient(base, TOKEN) as client:
        with pytest.raises(AuthenticationError):
            await client.payroll_connections.list().collect()
    assert seen == [TOKEN]


# --- line breaks in tokens -------------------------------------------------------------------

# Every character str.splitlines() breaks on, derived from Python itself rather than listed.
LINE_BREAKS = [chr(c) for c in range(0x3000) if len(f"a{chr(c)}b".splitlines()) > 1]


def test_the_line_breaks_include_the_unicode_ones() -> None:
    assert {"\x85", "\u2028", "\u2029", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e"} <= set(LINE_BREAKS)


@pytest.mark.parametrize("brk", LINE_BREAKS, ids=lambda c: f"U+{ord(c):04X}")
def test_a_static_token_with_any_line_break_is_refused(brk: str) -> None:
    with pytest.raises(InvalidArgumentError, match="token") as caught:
        PayrollClient(BASE, f"tok{brk}Injected: 1")
    assert "Injected" not in str(caught.value)


@pytest.mark.parametrize("brk", LINE_BREAKS, ids=lambda c: f"U+{ord(c):04X}")
async def test_a_provider_token_with_any_line_break_is_refused(brk: str, serve: Serve) -> None:
    seen: list[str] = []
    base = await serve(auth_app({"x"}, seen))

    class Broken:
        async def get_token(self, *, refresh: bool = False) -> str:
            return f"tok{brk}Injected: 1"

    async with PayrollClient(base, Broken()) as client:
        with pytest.raises(InvalidArgumentError, match="token provider") as caught:
            await client.payroll_connections.list().collect()
    assert "Injected" not in str(caught.value)
    assert seen == []
