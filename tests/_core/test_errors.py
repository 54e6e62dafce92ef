import pytest
from aioresponses import aioresponses

from payroll_async import (
    APIStatusError,
    AuthenticationError,
    BadRequestError,
    NotFoundError,
    PayrollClient,
    PermissionDeniedError,
    RateLimitError,
    ResponseDecodeError,
    RetryPolicy,
    ServerError,
)
from tests import factories
from tests.conftest import BASE, TOKEN

URL = f"{BASE}/v1/payroll-connections?limit=100&offset=0"


@pytest.fixture
def once(client: PayrollClient) -> PayrollClient:
    return client.with_options(retry=RetryPolicy(max_attempts=1))


@pytest.mark.parametrize(
    ("status", "cls"),
    [
        (400, BadRequestError),
        (401, AuthenticationError),
        (403, PermissionDeniedError),
        (404, NotFoundError),
        (409, APIStatusError),
        (429, RateLimitError),
        (500, ServerError),
        (503, ServerError),
        (599, ServerError),
    ],
)
async def test_status_maps_to_its_error(
    mock_api: aioresponses, once: PayrollClient, status: int, cls: type[APIStatusError]
) -> None:
    mock_api.get(
        URL,
        status=status,
        payload=factories.error_body("nope", "limit: too large", "sort: bad"),
        headers={"X-Trace": "t1"},
    )
    with pytest.raises(cls) as info:
        await once.payroll_connections.list().collect()
    err = info.value
    assert type(err) is cls
    assert (err.status, err.message, err.errors) == (
        status,
        "nope",
        ("limit: too large", "sort: bad"),
    )
    assert err.method == "GET"
    assert err.url.startswith(f"{BASE}/v1/payroll-connections")
    assert err.headers["x-trace"] == "t1"
    assert "limit: too large" in str(err)
    assert TOKEN not in str(err) + repr(err) + err.url


@pytest.mark.parametrize(
    ("body", "content_type", "expected"),
    [
        (
            b"<html><body>Bad Gateway</body></html>",
            "text/html",
            "Bad Gateway (an HTML page instead of an error body)",
        ),
        (b"", "application/json", "Bad Gateway (empty body)"),
        (b"upstream timed out", "text/plain", "Bad Gateway: upstream timed out"),
        (b'{"error": "x"}', "application/json", 'Bad Gateway: {"error": "x"}'),
    ],
)
async def test_error_without_the_error_shape_gets_a_sensible_message(
    mock_api: aioresponses, once: PayrollClient, body: bytes, content_type: str, expected: str
) -> None:
    mock_api.get(URL, status=502, body=body, content_type=content_type, reason="Bad Gateway")
    with pytest.raises(ServerError) as info:
        await once.payroll_connections.list().collect()
    assert info.value.message == expected
    assert info.value.errors == ()


async def test_rate_limit_error_carries_retry_after(
    mock_api: aioresponses, client: PayrollClient
) -> None:
    policy = RetryPolicy(max_retry_after=5)
    mock_api.get(
        URL, status=429, payload=factories.error_body("slow down"), headers={"Retry-After": "120"}
    )
    with pytest.raises(RateLimitError) as info:
        await client.with_options(retry=policy).payroll_connections.list().collect()
    assert info.value.retry_after == 120.0


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b'{"data": {}, "meta": {}}',
        b'{"data": []}',
        b"[]",
        b'{"data": [{"id": "x"}], "meta": {"currentCount": 1, "filters": {}, "limit": 1, '
        b'"offset": 0, "sort": "", "totalCount": 1}}',
    ],
)
async def test_a_2xx_of_the_wrong_shape_is_a_decode_error(
    mock_api: aioresponses, client: PayrollClient, body: bytes
) -> None:
    mock_api.get(URL, status=200, body=body)
    with pytest.raises(ResponseDecodeError) as info:
        await client.payroll_connections.list().collect()
    assert info.value.status == 200
    assert info.value.body_excerpt == body.decode()[:200]
    assert TOKEN not in str(info.value)


async def test_decode_error_excerpt_is_short(mock_api: aioresponses, client: PayrollClient) -> None:
    mock_api.get(URL, status=200, body=b"x" * 10_000)
    with pytest.raises(ResponseDecodeError) as info:
        await client.payroll_connections.list().collect()
    assert len(info.value.body_excerpt) < 300


def test_timeouts_are_timeout_errors_and_decode_errors_name_the_method() -> None:
    from payroll_async import APITimeoutError, ResponseDecodeError

    timeout = APITimeoutError("t", method="GET", url="https://x.example")
    assert isinstance(timeout, TimeoutError)
    decode = ResponseDecodeError(
        "bad", status=201, url="https://x.example", body_excerpt="", method="POST"
    )
    assert decode.method == "POST"
    assert "POST https://x.example" in str(decode)
