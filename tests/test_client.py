import gc
import logging

import aiohttp
import pytest
from aiohttp import web
from aioresponses import aioresponses

from payroll_async import (
    ClientClosedError,
    ClientState,
    InvalidArgumentError,
    PayrollClient,
    ResponseDecodeError,
    RetryPolicy,
    ServerError,
)
from tests import factories
from tests.conftest import BASE, TOKEN, Serve

URL = f"{BASE}/v1/payroll-connections?limit=100&offset=0"


def test_base_url_and_token_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAYROLL_BASE_URL", "https://env.example.test/")
    monkeypatch.setenv("PAYROLL_TOKEN", TOKEN)
    client = PayrollClient()
    assert client.base_url == "https://env.example.test"


def test_demo_uses_the_demo_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAYROLL_DEMO_BASE_URL", "https://demo.example.test")
    assert PayrollClient.demo(token=TOKEN).base_url == "https://demo.example.test"
    monkeypatch.delenv("PAYROLL_DEMO_BASE_URL")
    with pytest.raises(InvalidArgumentError, match="PAYROLL_DEMO_BASE_URL"):
        PayrollClient.demo(token=TOKEN)


def test_missing_settings_are_clear_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PAYROLL_BASE_URL", raising=False)
    monkeypatch.delenv("PAYROLL_TOKEN", raising=False)
    with pytest.raises(InvalidArgumentError, match="PAYROLL_BASE_URL"):
        PayrollClient(token=TOKEN)
    with pytest.raises(InvalidArgumentError, match="PAYROLL_TOKEN"):
        PayrollClient(BASE)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"base_url": "http://api.example.test"}, "https"),
        ({"timeout": 0}, "timeout"),
        ({"page_size": 0}, "page_size"),
        ({"concurrency": 0}, "concurrency"),
        ({"retry": 3}, "RetryPolicy"),
        ({"token": 42}, "token"),
        ({"token": "a\nb"}, "token"),
        ({"session": object()}, "session"),
    ],
)
def test_bad_settings_are_refused(kwargs: dict[str, object], match: str) -> None:
    settings: dict[str, object] = {"base_url": BASE, "token": TOKEN, **kwargs}
    with pytest.raises(InvalidArgumentError, match=match):
        PayrollClient(**settings)  # type: ignore[arg-type]


@pytest.mark.parametrize("host", ["127.0.0.1:8080", "localhost", "[::1]:9000", "127.8.9.10"])
def test_plain_http_is_allowed_for_loopback(host: str) -> None:
    assert PayrollClient(f"http://{host}", TOKEN).base_url.startswith("http://")


def test_repr_never_shows_the_token() -> None:
    client = PayrollClient(BASE, TOKEN)
    assert TOKEN not in repr(client)
    assert TOKEN not in repr(client._transport.auth)
    assert repr(client) == f"<PayrollClient base_url='{BASE}' unopened>"


async def test_the_client_state_moves_from_unopened_to_open_to_closed() -> None:
    client = PayrollClient(BASE, TOKEN)
    assert client.state is ClientState.UNOPENED
    async with client:
        assert client.state is ClientState.OPEN
        assert repr(client).endswith(" open>")
    assert client.state is ClientState.CLOSED
    assert client.is_closed


async def test_a_copys_state_is_its_own_and_its_parents_together(
    mock_api: aioresponses,
) -> None:
    mock_api.get(URL, payload=factories.envelope([]), repeat=True)
    parent = PayrollClient(BASE, TOKEN)
    copy = parent.with_options(timeout=5)
    assert (parent.state, copy.state) == (ClientState.UNOPENED, ClientState.UNOPENED)
    await parent.payroll_connections.list().collect()  # the shared session starts: both open
    assert (parent.state, copy.state) == (ClientState.OPEN, ClientState.OPEN)
    await copy.close()  # closes only the copy
    assert (parent.state, copy.state) == (ClientState.OPEN, ClientState.CLOSED)
    with pytest.raises(ClientClosedError):
        await copy.payroll_connections.list().collect()
    other = parent.with_options(timeout=5)
    await parent.close()  # closes its copies with it
    assert (parent.state, other.state) == (ClientState.CLOSED, ClientState.CLOSED)
    assert other.is_closed


async def test_closed_client_refuses_use(mock_api: aioresponses) -> None:
    client = PayrollClient(BASE, TOKEN)
    await client.close()
    assert client.is_closed
    with pytest.raises(ClientClosedError):
        await client.payroll_connections.list().collect()
    with pytest.raises(ClientClosedError):
        async with client:
            pass


async def test_unclosed_client_warns(mock_api: aioresponses) -> None:
    mock_api.get(URL, payload=factories.envelope([]))
    client = PayrollClient(BASE, TOKEN)
    await client.payroll_connections.list().collect()
    session = client._transport.wire._session  # type: ignore[attr-defined]
    assert session is not None
    with pytest.warns(ResourceWarning, match="unclosed <PayrollClient"):
        del client
        gc.collect()
    await session.close()


async def test_a_borrowed_session_is_used_and_left_open(mock_api: aioresponses) -> None:
    mock_api.get(URL, payload=factories.envelope([factories.connection(1)]))
    async with aiohttp.ClientSession() as session:
        async with PayrollClient(BASE, TOKEN, session=session) as client:
            assert len(await client.payroll_connections.list().collect()) == 1
        assert not session.closed


def test_client_can_be_built_outside_an_event_loop() -> None:
    client = PayrollClient(BASE, TOKEN)
    assert client.state is ClientState.UNOPENED  # the session is made lazily, in the loop


async def test_with_options_shares_the_session(mock_api: aioresponses) -> None:
    mock_api.get(URL, payload=factories.envelope([]), repeat=True)
    async with PayrollClient(BASE, TOKEN) as client:
        quick = client.with_options(retry=RetryPolicy(max_attempts=1), timeout=5)
        await quick.payroll_connections.list().collect()
        await client.payroll_connections.list().collect()
        await quick.close()
        assert quick.is_closed
        with pytest.raises(ClientClosedError):
            await quick.payroll_connections.list().collect()
        # Closing the copy leaves its parent (and the session they share) working.
        assert not client.is_closed
        await client.payroll_connections.list().collect()
        other = client.with_options(timeout=None)
    # Closing the parent closes its copies too.
    assert other.is_closed
    with pytest.raises(ClientClosedError):
        await other.payroll_connections.list().collect()


async def test_with_options_takes_every_option_a_copy_can_have(serve: Serve) -> None:
    seen: list[tuple[str, str | None, str | None]] = []

    async def listing(request: web.Request) -> web.Response:
        team, tag = request.headers.get("X-Team"), request.query.get("tag")
        seen.append((request.query_string, team, tag))
        offset = int(request.query["offset"])
        items = [factories.connection(i) for i in range(offset, min(offset + 2, 5))]
        return web.json_response(factories.envelope(items, offset=offset, total=5))

    app = web.Application()
    app.router.add_get("/v1/payroll-connections", listing)
    base = await serve(app)
    async with PayrollClient(base, TOKEN) as client:
        copy = client.with_options(
            page_size=2,
            concurrency=1,
            extra_query={"tag": "x"},
            extra_headers={"X-Team": "payroll"},
            timeout=5,
            retry=None,
        )
        assert len(await copy.payroll_connections.list().collect()) == 5
        assert {query.split("limit=")[1].split("&")[0] for query, _, _ in seen} == {"2"}
        assert {(team, tag) for _, team, tag in seen} == {("payroll", "x")}
        # a call's options go over the copy's, once
        seen.clear()
        await copy.payroll_connections.list(page_size=5, extra_headers={"X-Team": "c"}).collect()
        assert {(team, tag) for _, team, tag in seen} == {("c", "x")}
        assert "limit=5" in seen[0][0]
        # the parent keeps its own
        seen.clear()
        await client.payroll_connections.list().collect()
        assert {(team, tag) for _, team, tag in seen} == {(None, None)}
        small = client.with_options(max_response_size=10)
        with pytest.raises(ResponseDecodeError, match="max_response_size"):
            await small.payroll_connections.list().collect()
        with pytest.raises(InvalidArgumentError, match="page_size"):
            client.with_options(page_size=0)
        with pytest.raises(InvalidArgumentError, match="extra_query"):
            client.with_options(extra_query={"offset": 3})
        with pytest.raises(TypeError, match="page_sise"):
            client.with_options(page_sise=3)  # type: ignore[call-arg]
        with pytest.raises(TypeError, match="timeuot"):
            await client.webhooks.delete(factories.uid(1, 5), timeuot=3)  # type: ignore[call-arg]


async def test_per_call_timeout_and_retry_override_the_client(serve: Serve) -> None:
    attempts = 0

    async def flaky(request: web.Request) -> web.Response:
        nonlocal attempts
        attempts += 1
        return web.json_response({"message": "down"}, status=503)

    app = web.Application()
    app.router.add_delete("/v1/webhooks/subscriptions/{sid}", flaky)
    base = await serve(app)
    sid = "7c3d6f59-2d1c-4f38-a2a4-0f5b2f0b6a11"
    fast = RetryPolicy(max_attempts=3, backoff_initial=0)
    async with PayrollClient(base, TOKEN, retry=fast) as client:
        with pytest.raises(ServerError):
            await client.webhooks.delete(sid)
        assert attempts == 3
        with pytest.raises(ServerError):
            await client.webhooks.delete(sid, retry=None)  # None: a single attempt
        assert attempts == 4
        with pytest.raises(ServerError):
            await client.webhooks.delete(sid, retry=RetryPolicy(max_attempts=2, backoff_initial=0))
        assert attempts == 6
        with pytest.raises(InvalidArgumentError, match="retry must be"):
            await client.webhooks.delete(sid, retry=3)  # type: ignore[arg-type]
        with pytest.raises(InvalidArgumentError, match="timeout"):
            await client.webhooks.delete(sid, timeout=-1)
        assert attempts == 6


async def test_token_never_reaches_the_log(
    mock_api: aioresponses, caplog: pytest.LogCaptureFixture
) -> None:
    mock_api.get(URL, status=500, payload=factories.error_body("boom"), repeat=True)
    caplog.set_level(logging.DEBUG, logger="payroll_async")
    async with PayrollClient(
        BASE, TOKEN, retry=RetryPolicy(max_attempts=2, backoff_initial=0)
    ) as client:
        with pytest.raises(Exception, match="boom"):
            await client.payroll_connections.list().collect()
    assert caplog.records
    for record in caplog.records:
        assert TOKEN not in record.getMessage()
        assert TOKEN not in repr(record.__dict__)
