"""The transport seam: PayrollClient(transport=...) runs every operation and listing over a
transport of the user's, and MockTransport answers from a function with no network; the
retry loop, the token, the gates and the bounds above the seam behave as over aiohttp."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from typing import Any

import aiohttp
import pytest
from yarl import URL

from payroll_async import (
    APIConnectionError,
    APITimeoutError,
    AsyncTransport,
    AuthenticationError,
    ClientClosedError,
    InvalidArgumentError,
    PayrollClient,
    PayrollConnection,
    RateLimitError,
    ResponseDecodeError,
    RetryPolicy,
    Timeout,
    TransportRequest,
    TransportResponse,
    testing,
)
from payroll_async._http import _attempt
from payroll_async.testing import MockTransport, json_response
from tests import factories
from tests.conftest import BASE, TOKEN, FakeClock, StartEmulator

LIST = "/v1/payroll-connections"


class Forwarding:
    """A transport of the user's own: every request through a session of its own (as a
    company's HTTP stack would), to the emulator."""

    def __init__(self) -> None:
        self.session: aiohttp.ClientSession | None = None
        self.sent: list[tuple[str, str]] = []
        self.closed = False

    async def handle_async_request(self, request: TransportRequest) -> TransportResponse:
        if self.session is None:
            self.session = aiohttp.ClientSession()
        self.sent.append((request.method, request.url.path))
        async with self.session.request(
            request.method,
            request.url,
            headers=request.headers,
            data=request.content,
            allow_redirects=False,
        ) as answer:
            body = await answer.read()
        return TransportResponse(answer.status, answer.headers, body, reason=answer.reason)

    async def aclose(self) -> None:
        self.closed = True
        if self.session is not None:
            await self.session.close()


@pytest.mark.parametrize("links", [False, True])
async def test_every_operation_and_listing_runs_over_a_transport_of_yours(
    start_emulator: StartEmulator, links: bool
) -> None:
    emu = await start_emulator(
        seed=3,
        payroll_connections=250,
        employer_identifiers=30,
        webhook_subscriptions=0,
        link_headers=links,
    )
    wire = Forwarding()
    assert isinstance(wire, AsyncTransport)
    ids = emu.sample_ids()
    eid, iid = ids["employer_identifier_id"], ids["invite_id"]
    hook = "https://hooks.example.com/payroll"
    async with PayrollClient(emu.base_url, emu.token, transport=wire, page_size=40) as client:
        conns = await client.payroll_connections.list().collect()
        assert len(conns) == 250
        assert len({c.id for c in conns}) == 250
        assert len(await client.employer_identifiers.list().collect()) == 30
        groups = await client.employer_identifiers.update_groups.list(eid).collect()
        assert groups
        assert all(isinstance(g.update_group_id, uuid.UUID) for g in groups)
        session = await client.employer_identifiers.invites.create_session(eid, iid)
        assert session.onboarding_link
        raw = await client.employer_identifiers.invites.with_raw_response.create_session(eid, iid)
        assert raw.status in (200, 201)
        assert raw.parsed.onboarding_link
        made = await client.webhooks.create(event_types=["PAYROLL_PROCESSED"], path=hook)
        assert made.webhook_subscription_id in {
            s.webhook_subscription_id async for s in client.webhooks.list()
        }
        same = await client.webhooks.ensure(event_types=["PAYROLL_PROCESSED"], path=hook)
        assert same.webhook_subscription_id == made.webhook_subscription_id
        new = await client.webhooks.replace(
            made.webhook_subscription_id, event_types=["PAYROLL_PROCESSED"], path=hook
        )
        await client.webhooks.delete(new.webhook_subscription_id)
        assert [s.webhook_subscription_id async for s in client.webhooks.list()] == []
        page = await client.payroll_connections.list(page_size=100)
        assert page.has_next_page()
        second = await page.get_next_page()
        assert [c.id for c in second.items] == [c.id for c in conns[100:200]]
        generic = await client.get(LIST, cast_to=dict, params={"limit": 5})
        assert len(generic["data"]) == 5
        rows = await client.get_api_list(LIST, model=dict, max_items=60).collect()
        assert [r["id"] for r in rows] == [str(c.id) for c in conns[:60]]
        raw_get = await client.with_raw_response.request("GET", LIST, cast_to=dict)
        assert raw_get.status == 200
    assert wire.closed  # the client closes the transport it was given
    assert all(path.startswith("/v1/") for _, path in wire.sent)


def _listing(total: int, size: int, links: bool = False) -> MockTransport:
    def handler(request: TransportRequest) -> TransportResponse:
        offset = int(request.url.query.get("offset", "0"))
        limit = int(request.url.query.get("limit", str(size)))
        items = [factories.connection(i) for i in range(offset, min(offset + limit, total))]
        headers = {}
        if links and offset + limit < total:
            headers["Link"] = f'<{BASE}{LIST}?limit={limit}&offset={offset + limit}>; rel="next"'
        return json_response(
            factories.envelope(items, offset=offset, limit=limit, total=total), headers=headers
        )

    return MockTransport(handler)


@pytest.mark.parametrize("links", [False, True])
async def test_a_listing_walks_a_mock_by_offset_or_by_link(links: bool) -> None:
    mock = _listing(95, 20, links)
    async with PayrollClient(BASE, TOKEN, transport=mock, page_size=20) as client:
        items = await client.payroll_connections.list().collect()
    assert [c.id for c in items] == [uuid.UUID(factories.connection(i)["id"]) for i in range(95)]
    assert all(isinstance(c, PayrollConnection) for c in items)
    offsets = sorted(int(r.url.query["offset"]) for r in mock.requests)
    assert offsets == [0, 20, 40, 60, 80]
    assert all(r.headers["Authorization"] == f"Bearer {TOKEN}" for r in mock.requests)
    assert all(r.url.origin() == URL(BASE) for r in mock.requests)
    assert mock.closed


async def test_retries_and_retry_after_work_above_any_transport() -> None:
    answers = [
        json_response({"message": "busy"}, 503),
        json_response({"message": "slow down"}, 429, {"Retry-After": "7"}),
        json_response({"id": "p1"}),
    ]
    mock = MockTransport(lambda request: answers.pop(0))
    clock = FakeClock()
    retry = RetryPolicy(max_attempts=3)
    async with PayrollClient(BASE, TOKEN, transport=mock, clock=clock, retry=retry) as client:
        assert await client.get("/v1/x", cast_to=dict) == {"id": "p1"}
    assert len(mock.requests) == 3
    assert 7 in clock.sleeps  # the 429's Retry-After, as over aiohttp


async def test_a_429_past_the_retries_is_typed() -> None:
    mock = MockTransport(lambda r: json_response({"message": "no"}, 429, {"Retry-After": "1"}))
    async with PayrollClient(BASE, TOKEN, transport=mock, retry=None) as client:
        with pytest.raises(RateLimitError) as caught:
            await client.get("/v1/x", cast_to=dict)
    assert caught.value.retry_after == 1


async def test_the_testing_modules_fake_clock_makes_retry_after_cost_no_real_time() -> None:
    mock = MockTransport(lambda r: json_response({"message": "no"}, 429, {"Retry-After": "1"}))
    clock = testing.FakeClock()
    started = time.monotonic()
    async with PayrollClient(BASE, TOKEN, transport=mock, clock=clock) as client:
        with pytest.raises(RateLimitError):
            await client.get("/v1/x", cast_to=dict)
    assert time.monotonic() - started < 1.0  # the three waits of a second each: none real
    assert clock.sleeps == [1.0, 1.0, 1.0]
    assert clock.now() == 3.0
    assert len(mock.requests) == 4


async def test_the_fake_clock_gives_the_loop_a_turn_at_each_sleep() -> None:
    clock = testing.FakeClock(start=10.0)
    ran = asyncio.Event()
    other = asyncio.get_running_loop().call_soon(ran.set)
    await clock.sleep(-1)  # a negative wait: no time, but the turn
    assert ran.is_set()
    assert (clock.now(), clock.sleeps) == (10.0, [-1])
    other.cancel()


async def test_a_401_refreshes_the_token_once_over_a_mock() -> None:
    class Rotating:
        def __init__(self) -> None:
            self.calls: list[bool] = []

        async def get_token(self, *, refresh: bool = False) -> str:
            self.calls.append(refresh)
            return "tok_new_0123456789" if refresh else "tok_old_0123456789"

    def handler(request: TransportRequest) -> TransportResponse:
        if request.headers["Authorization"] != "Bearer tok_new_0123456789":
            return json_response({"message": "expired"}, 401)
        return json_response({"ok": True})

    provider = Rotating()
    mock = MockTransport(handler)
    async with PayrollClient(BASE, provider, transport=mock) as client:
        assert await client.get("/v1/x", cast_to=dict) == {"ok": True}
        mock.handler = lambda request: json_response({"message": "no"}, 401)
        with pytest.raises(AuthenticationError) as caught:
            await client.get("/v1/x", cast_to=dict)
    assert "tok_" not in str(caught.value)
    assert provider.calls[:2] == [False, True]


async def test_a_send_that_got_no_answer_is_a_connection_error_and_is_retried() -> None:
    calls = []

    async def handler(request: TransportRequest) -> TransportResponse:
        calls.append(request)
        if len(calls) == 1:
            raise ConnectionResetError("reset by peer")
        return json_response({"ok": 1})

    clock = FakeClock()
    async with PayrollClient(BASE, TOKEN, transport=MockTransport(handler), clock=clock) as client:
        assert await client.get("/v1/x", cast_to=dict) == {"ok": 1}
        client_once = client.with_options(retry=None)
        calls.clear()
        with pytest.raises(APIConnectionError) as caught:
            await client_once.get("/v1/x", cast_to=dict)
    assert TOKEN not in str(caught.value)
    assert caught.value.__cause__ is None
    assert len(calls) == 1


async def test_a_handler_raises_a_connection_error_with_its_message_alone() -> None:
    calls = []

    def handler(request: TransportRequest) -> TransportResponse:
        calls.append(request)
        raise APIConnectionError("backend down")  # as docs/testing.md says it

    clock = FakeClock()
    async with PayrollClient(BASE, TOKEN, transport=MockTransport(handler), clock=clock) as client:
        with pytest.raises(APIConnectionError) as caught:
            await client.get("/v1/payroll-platforms", cast_to=dict, extra_query={"a": "1"})
    assert len(calls) == 4  # a send that got no answer, retried as any
    error = caught.value
    assert (str(error), error.message) == ("backend down", "backend down")
    # the client fills in what the handler left out, from the request it was sending
    assert (error.method, error.url) == ("GET", f"{BASE}/v1/payroll-platforms?a=1")

    def says_its_method(request: TransportRequest) -> TransportResponse:
        raise APIConnectionError("x", method="PUT")

    mock = MockTransport(says_its_method)
    async with PayrollClient(BASE, TOKEN, transport=mock, retry=None) as client:
        with pytest.raises(APIConnectionError) as kept:
            await client.get("/v1/x", cast_to=dict)
    assert (kept.value.method, kept.value.url) == ("PUT", f"{BASE}/v1/x")  # what it gave, kept


async def test_a_body_past_the_bound_is_refused_whatever_the_transport() -> None:
    big = json_response({"data": "x" * 2000})
    async with PayrollClient(
        BASE, TOKEN, transport=MockTransport(lambda r: big), max_response_size=1000
    ) as client:
        with pytest.raises(ResponseDecodeError, match="max_response_size"):
            await client.get("/v1/x", cast_to=dict)


@pytest.mark.parametrize(
    "aiohttps", [{"proxy": "http://proxy:3128"}, {"ssl": False}, {"trust_env": False}]
)
async def test_aiohttps_options_with_a_transport_are_refused_before_any_request(
    aiohttps: dict[str, Any],
) -> None:
    mock = MockTransport(lambda r: json_response({}))
    with pytest.raises(InvalidArgumentError, match="cannot be given with transport="):
        PayrollClient(BASE, TOKEN, transport=mock, **aiohttps)
    with pytest.raises(InvalidArgumentError, match="handle_async_request"):
        PayrollClient(BASE, TOKEN, transport=object())  # type: ignore[arg-type]
    assert mock.requests == []


async def test_a_closed_client_sends_nothing_through_its_transport() -> None:
    mock = MockTransport(lambda r: json_response({}))
    client = PayrollClient(BASE, TOKEN, transport=mock)
    await client.close()
    with pytest.raises(ClientClosedError):
        await client.get("/v1/x", cast_to=dict)
    assert mock.requests == []
    assert mock.closed


async def test_the_request_a_transport_gets_carries_the_body_and_the_merged_query() -> None:
    mock = MockTransport(lambda r: json_response({"id": "s"}, 201))
    async with PayrollClient(BASE, TOKEN, transport=mock) as client:
        await client.post("/v1/x?a=1", cast_to=dict, params={"b": 2}, json={"k": "v"})
    (sent,) = mock.requests
    assert sent.method == "POST"
    assert sent.url.query_string == "a=1&b=2"
    assert json.loads(sent.content or b"") == {"k": "v"}
    assert sent.headers["Content-Type"] == "application/json"


async def test_the_timeout_a_transport_gets_is_the_sdks_own() -> None:
    """``timeout=`` as seconds, an aiohttp ClientTimeout or a Timeout: a transport reads
    the SDK's `Timeout`, whichever was given (no aiohttp type crosses the seam)."""
    mock = MockTransport(lambda r: json_response({}))
    client_timeout = aiohttp.ClientTimeout(total=5, sock_read=2)
    async with PayrollClient(BASE, TOKEN, transport=mock, timeout=client_timeout) as client:
        await client.get("/v1/x", cast_to=dict)
        await client.get("/v1/x", cast_to=dict, timeout=3)
        await client.get("/v1/x", cast_to=dict, timeout=Timeout(connect=1, sock_connect=0.5))
        await client.get("/v1/x", cast_to=dict, timeout=None)
    assert [sent.timeout for sent in mock.requests] == [
        Timeout(total=5.0, sock_read=2.0),
        Timeout(total=3.0),
        Timeout(connect=1.0, sock_connect=0.5),
        Timeout(),
    ]
    assert all(type(sent.timeout) is Timeout for sent in mock.requests)
    with pytest.raises(InvalidArgumentError, match=r"timeout\.connect"):
        PayrollClient(BASE, TOKEN, transport=mock, timeout=Timeout(connect=-1))


class Stubborn:
    """A transport that swallows the cancellation of its send and holds on (as a hook or a
    transport of a user's might), until the test lets it go."""

    def __init__(self) -> None:
        self.cancelled = asyncio.Event()
        self.release = asyncio.Event()

    async def handle_async_request(self, request: TransportRequest) -> TransportResponse:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled.set()  # swallowed
        await self.release.wait()
        return json_response({})

    async def aclose(self) -> None:
        pass


async def test_a_transport_that_swallows_cancellation_cannot_hold_a_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The call's timeout is enforced above the transport: past ``total`` and a grace the
    send is cancelled, and past another grace abandoned; the call fails as timed out."""
    monkeypatch.setattr(_attempt, "CALL_GRACE", 0.05)  # the grace, short for the test
    stubborn = Stubborn()
    async with PayrollClient(BASE, TOKEN, transport=stubborn, timeout=0.05, retry=None) as client:
        call = asyncio.ensure_future(client.get("/v1/x", cast_to=dict))
        done, _ = await asyncio.wait({call}, timeout=30)  # a bound against a hang
        stubborn.release.set()  # the abandoned send ends now, its answer dropped
        assert done, "the call was held past its timeout"
        with pytest.raises(APITimeoutError, match=r"timed out after 0\.05s"):
            call.result()
    assert stubborn.cancelled.is_set()


class ClosesItself(MockTransport):
    """A transport that says how it stands (the seam's optional part, as aiohttp's does)."""

    def __init__(self) -> None:
        super().__init__(lambda r: json_response({}))
        self.closed_reason: str | None = None
        self.must_close = False


async def test_a_transport_that_closed_itself_closes_its_client() -> None:
    transport = ClosesItself()
    async with PayrollClient(BASE, TOKEN, transport=transport) as client:
        await client.get("/v1/x", cast_to=dict)
        transport.closed_reason = "the tunnel this transport used is gone"
        assert client.is_closed
        with pytest.raises(ClientClosedError, match="the tunnel this transport used is gone"):
            await client.get("/v1/x", cast_to=dict)
    assert len(transport.requests) == 1
