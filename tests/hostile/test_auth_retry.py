"""Token providers that lag, hang or lie; 503s with Retry-After; a pause under load;
a DELETE whose first answer was lost."""

from __future__ import annotations

import asyncio

import pytest
from aiohttp import web
from hypothesis import given
from hypothesis import strategies as st

from payroll_async import (
    APITimeoutError,
    InvalidArgumentError,
    PayrollClient,
    RetryPolicy,
    ServerError,
)
from payroll_async._http._status import parse_retry_after
from tests import factories
from tests.conftest import BOTH_TRANSPORTS, ONCE, SUBS_PATH, TOKEN, FakeClock, HeldClock, Serve
from tests.hostile.conftest import RawServe, read_request

pytestmark = BOTH_TRANSPORTS  # the same code above the seam over either transport


def _listing_app(accept: str, seen: list[str]) -> web.Application:
    async def handle(request: web.Request) -> web.Response:
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        seen.append(token)
        if token != accept:
            return web.json_response({"message": "invalid token", "errors": []}, status=401)
        return web.json_response(factories.envelope([factories.employer(1)]))

    app = web.Application()
    app.router.add_get("/v1/employer-identifiers", handle)
    return app


# --- 3. the refreshed token is the one sent ------------------------------------------------


class LaggingProvider:
    """Plain get_token() keeps returning the old token; refresh=True gives the new one."""

    def __init__(self) -> None:
        self.calls: list[bool] = []

    async def get_token(self, *, refresh: bool = False) -> str:
        self.calls.append(refresh)
        return "new-token" if refresh else "old-token"


async def test_the_retry_after_a_refresh_sends_the_refreshed_token(serve: Serve) -> None:
    seen: list[str] = []
    base = await serve(_listing_app("new-token", seen))
    provider = LaggingProvider()
    async with PayrollClient(base, provider, retry=ONCE) as client:
        assert len(await client.employer_identifiers.list().collect()) == 1
        assert len(await client.employer_identifiers.list().collect()) == 1
    assert seen == ["old-token", "new-token", "new-token"]
    assert provider.calls.count(True) == 1


# --- 4. a provider is bounded and checked --------------------------------------------------


class HangingProvider:
    async def get_token(self, *, refresh: bool = False) -> str:
        await asyncio.sleep(3600)
        return "never"


async def test_a_hanging_provider_times_out_with_its_name(serve: Serve) -> None:
    seen: list[str] = []
    base = await serve(_listing_app(TOKEN, seen))
    async with PayrollClient(base, HangingProvider(), timeout=0.05, retry=ONCE) as client:
        with pytest.raises(APITimeoutError, match=r"HangingProvider\.get_token"):
            await client.employer_identifiers.list().collect()
    assert seen == []


class BadProvider:
    def __init__(self, value: object) -> None:
        self.value = value

    async def get_token(self, *, refresh: bool = False) -> str:
        return self.value  # type: ignore[return-value]


@pytest.mark.parametrize(
    "value", [None, "", "s3cr3t\r\nX-Evil: 1", "s3cr3t\x00", " s3cr3t", 42, b"s3cr3t"], ids=repr
)
async def test_a_provider_answer_that_is_no_token_is_a_typed_error(
    serve: Serve, value: object
) -> None:
    seen: list[str] = []
    base = await serve(_listing_app(TOKEN, seen))
    async with PayrollClient(base, BadProvider(value), retry=ONCE) as client:
        with pytest.raises(InvalidArgumentError, match=r"BadProvider\.get_token") as caught:
            await client.employer_identifiers.list().collect()
    assert seen == []
    if isinstance(value, str) and value:
        assert value not in str(caught.value)


# --- 6. Retry-After on 503 -------------------------------------------------------------------


async def test_a_503_retry_after_is_honoured(serve: Serve, clock: FakeClock) -> None:
    answers = [503, 200]

    async def handle(request: web.Request) -> web.Response:
        status = answers.pop(0)
        if status == 503:
            return web.json_response(
                {"message": "busy", "errors": []}, status=503, headers={"Retry-After": "3"}
            )
        return web.json_response(factories.envelope([]))

    app = web.Application()
    app.router.add_get("/v1/employer-identifiers", handle)
    base = await serve(app)
    async with PayrollClient(base, TOKEN, clock=clock) as client:
        await client.employer_identifiers.list().collect()
    assert clock.sleeps == [3.0]


async def test_a_503_retry_after_beyond_the_ceiling_raises_at_once(
    serve: Serve, clock: FakeClock
) -> None:
    hits = []

    async def handle(request: web.Request) -> web.Response:
        hits.append(1)
        return web.json_response(
            {"message": "down", "errors": []}, status=503, headers={"Retry-After": "600"}
        )

    app = web.Application()
    app.router.add_get("/v1/employer-identifiers", handle)
    base = await serve(app)
    async with PayrollClient(
        base, TOKEN, retry=RetryPolicy(max_retry_after=60), clock=clock
    ) as client:
        with pytest.raises(ServerError) as caught:
            await client.employer_identifiers.list().collect()
    assert caught.value.retry_after == 600
    assert hits == [1]
    assert clock.sleeps == []


@given(st.text(alphabet=st.characters(categories=["Nd"]), min_size=1, max_size=4))
def test_retry_after_takes_ascii_digits_only(digits: str) -> None:
    parsed = parse_retry_after(digits)
    if digits.isascii():
        assert parsed == float(digits)
    else:
        assert parsed is None


@pytest.mark.parametrize("value", ["\u0661\u0662", "\uff11\uff10", "1\u0660"])
def test_retry_after_refuses_non_ascii_digits(value: str) -> None:
    assert parse_retry_after(value) is None


# --- 7. the pause holds requests that passed the gate but had no connection yet -----------


async def test_requests_waiting_for_a_connection_respect_a_new_pause(
    serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The time is the held clock's: it moves only when the test advances it, so a request
    # written during the pause arrives stamped with the time of the 429.
    clock = HeldClock()
    arrivals: list[tuple[float, str]] = []
    limited_at: list[float] = []

    async def handle(request: web.Request) -> web.Response:
        now = clock.now()
        arrivals.append((now, request.query.get("tag", "")))
        clock.poke()
        if request.query.get("tag") == "first" and not limited_at:
            limited_at.append(now)
            return web.json_response(
                {"message": "slow down", "errors": []}, status=429, headers={"Retry-After": "1"}
            )
        return web.json_response(factories.envelope([]))

    app = web.Application()
    app.router.add_get("/v1/employer-identifiers", handle)
    base = await serve(app)
    async with PayrollClient(base, TOKEN, concurrency=16, clock=clock) as client:
        await client.employer_identifiers.list(extra_query={"tag": "warm"}).collect()
        # New connections are now made only once the 429's pause is in force (its retry
        # wait is the clock's first sleep): the requests below pass the gate at once, then
        # wait for a connection while the pooled one carries the request that gets the 429.
        from aiohttp import TCPConnector

        original = TCPConnector._create_connection

        async def slow_connect(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            await clock.until(lambda: bool(clock.sleeps))
            return await original(self, *args, **kwargs)

        monkeypatch.setattr(TCPConnector, "_create_connection", slow_connect)
        first = asyncio.create_task(
            client.employer_identifiers.list(extra_query={"tag": "first"}).collect()
        )
        await asyncio.sleep(0)  # the first request takes the pooled connection
        others = [
            asyncio.create_task(
                client.employer_identifiers.list(extra_query={"tag": f"other{i}"}).collect()
            )
            for i in range(8)
        ]
        everything = asyncio.gather(first, *others)
        everything.add_done_callback(lambda _: clock.poke())

        def written_during_pause() -> list[str]:
            return [tag for when, tag in arrivals if tag.startswith("other") and when < 1001]

        async with asyncio.timeout(30):  # a bound against a hang, not a threshold
            # Until each of the 8 is either written or waiting, besides the 429's retry.
            await clock.until(
                lambda: everything.done() or clock.sleeping + len(written_during_pause()) >= 9
            )
            assert limited_at == [1000.0], "the server never answered 429"
            assert written_during_pause() == [], "written during the pause"
            while not everything.done():
                clock.advance()
                await clock.until(lambda: everything.done() or clock.sleeping > 0)
        await everything
    assert [when for when, tag in arrivals if tag.startswith("other")] == [1001.0] * 8
    assert clock.time == 1001.0


# --- 9. a DELETE whose first attempt was answered by nobody --------------------------------


async def test_a_delete_retried_after_a_drop_that_gets_404_is_done(
    raw_serve: RawServe, clock: FakeClock
) -> None:
    sid = factories.uid(1, 5)
    deleted: list[str] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            line, _, _ = await read_request(reader)
            if line.startswith("DELETE") and not deleted:
                deleted.append(line)  # committed, then the connection drops unanswered
                return
            body = b'{"message":"no such subscription","errors":[]}'
            writer.write(
                b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
            )
            await writer.drain()

    base = await raw_serve(handler)
    async with PayrollClient(base, TOKEN, clock=clock) as client:
        await client.webhooks.delete(sid)  # no NotFoundError: the first attempt deleted it
    assert len(deleted) == 1


async def test_a_first_404_on_delete_is_still_not_found(serve: Serve) -> None:
    from payroll_async import NotFoundError

    async def handle(request: web.Request) -> web.Response:
        return web.json_response({"message": "no such subscription", "errors": []}, status=404)

    app = web.Application()
    app.router.add_delete(SUBS_PATH + "/{sid}", handle)
    base = await serve(app)
    async with PayrollClient(base, TOKEN) as client:
        with pytest.raises(NotFoundError):
            await client.webhooks.delete(factories.uid(1, 5))
