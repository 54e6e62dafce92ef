"""The retry policy: what is retried, how long it waits, Retry-After."""

import asyncio
import datetime
import logging
import socket

import aiohttp
import pytest
from aioresponses import aioresponses
from hypothesis import given
from hypothesis import strategies as st

from payroll_async import (
    APIConnectionError,
    BadRequestError,
    InvalidArgumentError,
    PayrollClient,
    RateLimitError,
    RetryPolicy,
    ServerError,
)
from payroll_async._http._retry import wait_for
from payroll_async._http._status import parse_retry_after
from tests import factories
from tests.conftest import BASE, BOTH_TRANSPORTS, LIST, NOW, SID, SUBS, TOKEN, FakeClock
from tests.resources.helpers import calls

pytestmark = BOTH_TRANSPORTS  # the same code above the seam over either transport

# --- Retry-After and the wait ------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("120", 120.0),
        ("0", 0.0),
        (" 7 ", 7.0),
        ("1.5", 1.5),
        ("Sun, 22 Nov 2026 12:00:30 GMT", 30.0),
        ("Sun, 22 Nov 2026 11:00:00 GMT", 0.0),
        ("Sunday, 22-Nov-26 12:01:00 GMT", 60.0),
        ("Sun Nov 22 12:00:05 2026", 5.0),
        ("soon", None),
        ("-5", None),
        ("", None),
        (None, None),
        ("1e3", None),
    ],
)
def test_parse_retry_after(header: str | None, expected: float | None) -> None:
    assert parse_retry_after(header, now=NOW) == expected


@given(st.text(max_size=40))
def test_retry_after_is_never_negative(header: str) -> None:
    value = parse_retry_after(header, now=NOW)
    assert value is None or value >= 0


@given(
    st.datetimes(min_value=datetime.datetime(1970, 1, 2), max_value=datetime.datetime(2100, 1, 1))
)
def test_retry_after_dates_count_from_now(when: datetime.datetime) -> None:
    header = when.replace(tzinfo=datetime.timezone.utc).strftime("%a, %d %b %Y %H:%M:%S GMT")
    expected = max(
        0.0, (when.replace(tzinfo=datetime.timezone.utc, microsecond=0) - NOW).total_seconds()
    )
    assert parse_retry_after(header, now=NOW) == expected


def _rate_limited(retry_after: float | None) -> RateLimitError:
    return RateLimitError("slow", method="GET", url=BASE, retry_after=retry_after)


def test_wait_prefers_retry_after() -> None:
    assert wait_for(_rate_limited(42.0), 1, RetryPolicy()) == 42.0


@given(
    attempt=st.integers(1, 60),
    initial=st.floats(0, 10),
    cap=st.floats(0, 100),
    rate_limited=st.booleans(),
)
def test_backoff_is_never_negative_nor_above_the_cap(
    attempt: int, initial: float, cap: float, rate_limited: bool
) -> None:
    policy = RetryPolicy(backoff_initial=initial, backoff_max=cap)
    exc = (
        _rate_limited(None)
        if rate_limited
        else ServerError("x", status=503, method="GET", url=BASE)
    )
    value = wait_for(exc, attempt, policy)
    assert 0 <= value <= min(cap, initial * 2 ** (attempt - 1))


def test_backoff_has_full_jitter() -> None:
    policy = RetryPolicy(backoff_initial=1, backoff_max=8)
    exc = ServerError("x", status=503, method="GET", url=BASE)
    values = {round(wait_for(exc, 4, policy), 6) for _ in range(50)}
    assert len(values) > 40
    assert max(values) <= 8


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_attempts": 0},
        {"backoff_initial": -1},
        {"backoff_max": "8"},
        {"max_retry_after": -0.1},
        {"max_attempts": True},
    ],
)
def test_policy_refuses_nonsense(kwargs: dict[str, object]) -> None:
    with pytest.raises(InvalidArgumentError):
        RetryPolicy(**kwargs)  # type: ignore[arg-type]


# --- what is retried -------------------------------------------------------------------------


@pytest.mark.parametrize("status", [500, 502, 503, 504])
async def test_get_is_retried_on_passing_server_errors(
    mock_api: aioresponses, client: PayrollClient, clock: FakeClock, status: int
) -> None:
    mock_api.get(LIST, status=status, payload=factories.error_body("busy"))
    mock_api.get(LIST, payload=factories.envelope([factories.connection(1)]))
    assert len(await client.payroll_connections.list().collect()) == 1
    assert len(clock.sleeps) == 1
    assert 0 <= clock.sleeps[0] <= 0.5


async def test_attempts_run_out_with_the_typed_error(
    mock_api: aioresponses, client: PayrollClient, clock: FakeClock
) -> None:
    mock_api.get(LIST, status=503, payload=factories.error_body("down"), repeat=True)
    with pytest.raises(ServerError, match="down"):
        await client.payroll_connections.list().collect()
    assert len(calls(mock_api)) == 4
    assert len(clock.sleeps) == 3
    assert all(0 <= s <= c for s, c in zip(clock.sleeps, [0.5, 1.0, 2.0], strict=False))


@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 501])
async def test_other_statuses_raise_at_once(
    mock_api: aioresponses, client: PayrollClient, clock: FakeClock, status: int
) -> None:
    mock_api.get(LIST, status=status, payload=factories.error_body("no"), repeat=True)
    with pytest.raises(Exception, match="no"):
        await client.payroll_connections.list().collect()
    assert len(calls(mock_api)) == 1
    assert clock.sleeps == []


async def test_delete_is_retried_on_a_dropped_connection(
    mock_api: aioresponses, client: PayrollClient
) -> None:
    mock_api.delete(f"{SUBS}/{SID}", exception=aiohttp.ServerDisconnectedError())
    mock_api.delete(f"{SUBS}/{SID}", status=204)
    await client.webhooks.delete(SID)
    assert len(calls(mock_api)) == 2


@pytest.mark.parametrize("status", [500, 503])
async def test_post_is_not_retried_when_it_may_have_been_processed(
    mock_api: aioresponses, client: PayrollClient, status: int
) -> None:
    mock_api.post(SUBS, status=status, payload=factories.error_body("boom"), repeat=True)
    with pytest.raises(ServerError):
        await client.webhooks.create(
            event_types=["PAYROLL_PROCESSED"], path="https://h.example.test/x"
        )
    assert len(calls(mock_api)) == 1


@pytest.mark.parametrize("exception", [aiohttp.ServerDisconnectedError(), asyncio.TimeoutError()])
async def test_a_post_without_an_answer_is_sent_again_only_after_looking_for_its_work(
    mock_api: aioresponses, client: PayrollClient, exception: BaseException
) -> None:
    mock_api.post(SUBS, exception=exception, repeat=True)
    mock_api.get(
        f"{SUBS}?sort=-createdAt&limit=100&offset=0", payload=factories.envelope([]), repeat=True
    )
    with pytest.raises(APIConnectionError):
        await client.webhooks.create(
            event_types=["PAYROLL_PROCESSED"], path="https://h.example.test/x"
        )
    methods = [method for method, _, _ in calls(mock_api)]
    # Four attempts in all, each lost answer looked for at once, and once more before each
    # of the three resends, once the lost attempt can no longer land (the order is checked
    # on a loopback server in tests/resources/test_webhooks_create_once.py).
    assert (methods.count("POST"), methods.count("GET")) == (4, 4 + 3)


async def test_post_is_retried_on_429(
    mock_api: aioresponses, client: PayrollClient, clock: FakeClock
) -> None:
    mock_api.post(
        SUBS, status=429, payload=factories.error_body("slow down"), headers={"Retry-After": "3"}
    )
    mock_api.post(SUBS, status=201, payload=factories.subscription(1))
    sub = await client.webhooks.create(
        event_types=["PAYROLL_PROCESSED"], path="https://h.example.test/x"
    )
    assert str(sub.webhook_subscription_id) == factories.uid(1, 5)
    assert clock.sleeps[0] == 3.0


async def test_post_is_retried_when_the_connection_was_refused(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again at once: nothing listens there
    caplog.set_level(logging.WARNING, logger="payroll_async")
    async with PayrollClient(f"http://127.0.0.1:{port}", TOKEN, clock=clock) as client:
        with pytest.raises(APIConnectionError, match="cannot connect") as info:
            await client.webhooks.create(
                event_types=["PAYROLL_PROCESSED"], path="https://h.example.test/x"
            )
    assert info.value.request_sent is False
    assert len(clock.sleeps) == 3
    assert len([r for r in caplog.records if "retrying" in r.getMessage()]) == 3


async def test_retry_after_above_the_maximum_raises_at_once(
    mock_api: aioresponses, client: PayrollClient, clock: FakeClock
) -> None:
    mock_api.get(
        LIST,
        status=429,
        payload=factories.error_body("later"),
        headers={"Retry-After": "3600"},
        repeat=True,
    )
    with pytest.raises(RateLimitError) as info:
        await client.payroll_connections.list().collect()
    assert info.value.retry_after == 3600.0
    assert len(calls(mock_api)) == 1
    assert clock.sleeps == []


async def test_retry_after_as_an_http_date(
    mock_api: aioresponses, client: PayrollClient, clock: FakeClock
) -> None:
    when = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=30)
    mock_api.get(
        LIST, status=429, headers={"Retry-After": when.strftime("%a, %d %b %Y %H:%M:%S GMT")}
    )
    mock_api.get(LIST, payload=factories.envelope([]))
    await client.payroll_connections.list().collect()
    assert 25 <= clock.sleeps[0] <= 30


async def test_per_call_policy(mock_api: aioresponses, client: PayrollClient) -> None:
    mock_api.get(LIST, status=503, repeat=True)
    with pytest.raises(ServerError):
        await (
            client.with_options(retry=RetryPolicy(max_attempts=2))
            .payroll_connections.list()
            .collect()
        )
    assert len(calls(mock_api)) == 2


# --- logging ---------------------------------------------------------------------------------


async def test_attempts_and_waits_are_logged(
    mock_api: aioresponses, client: PayrollClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="payroll_async")
    mock_api.get(LIST, status=503, payload=factories.error_body("busy"))
    mock_api.get(LIST, payload=factories.envelope([]))
    await client.payroll_connections.list().collect()
    attempts = [
        r for r in caplog.records if r.levelno == logging.DEBUG and "attempt" in r.getMessage()
    ]
    assert [(r.method, r.status, r.attempt) for r in attempts] == [("GET", 503, 1), ("GET", 200, 2)]  # type: ignore[attr-defined]
    assert (
        "/v1/payroll-connections?limit=100&offset=0 -> 503 (attempt 1" in attempts[0].getMessage()
    )
    retry = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(retry) == 1
    assert "status 503" in retry[0].getMessage()
    assert "retrying in" in retry[0].getMessage()


async def test_bad_request_is_never_retried(mock_api: aioresponses, client: PayrollClient) -> None:
    mock_api.get(LIST, status=400, payload=factories.error_body("limit: bad"))
    with pytest.raises(BadRequestError):
        await client.payroll_connections.list().collect()
