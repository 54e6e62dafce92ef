"""Raw responses (status, headers, request id with the parsed model) and request ids in errors."""

from __future__ import annotations

import logging

import pytest
from aioresponses import aioresponses

from payroll_async import (
    EventType,
    NotFoundError,
    PayrollClient,
    RawResponse,
    ResponseDecodeError,
    WebhookSubscription,
)
from tests import factories
from tests.conftest import SID, SUBS


async def test_a_create_gives_status_headers_request_id_and_the_model(
    mock_api: aioresponses, client: PayrollClient
) -> None:
    mock_api.post(
        SUBS,
        status=201,
        payload=factories.subscription(1),
        headers={"X-Request-Id": "req-42", "X-Other": "o"},
    )
    raw = await client.webhooks.with_raw_response.create(
        event_types=[EventType.PAYROLL_PROCESSED], path="https://h.example.test/x"
    )
    assert isinstance(raw, RawResponse)
    assert (raw.status, raw.request_id, raw.method) == (201, "req-42", "POST")
    assert raw.headers["x-other"] == "o"  # case-insensitive
    assert isinstance(raw.parsed, WebhookSubscription)
    assert raw.parse() is raw.parsed


async def test_a_delete_has_no_model_but_a_status(
    mock_api: aioresponses, client: PayrollClient
) -> None:
    mock_api.delete(f"{SUBS}/{SID}", status=204, headers={"X-Correlation-Id": "corr-7"})
    raw = await client.webhooks.with_raw_response.delete(SID)
    assert (raw.parsed, raw.status, raw.request_id) == (None, 204, "corr-7")


def test_listings_point_to_page_headers(client: PayrollClient) -> None:
    with pytest.raises(AttributeError, match=r"\.pages\(\)"):
        client.webhooks.with_raw_response.list  # noqa: B018


async def test_request_ids_are_in_errors_and_debug_logs(
    mock_api: aioresponses, client: PayrollClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="payroll_async")
    mock_api.delete(
        f"{SUBS}/{SID}",
        status=404,
        payload=factories.error_body("not found"),
        headers={"X-Request-Id": "req-404"},
    )
    with pytest.raises(NotFoundError) as info:
        await client.webhooks.delete(SID)
    assert info.value.request_id == "req-404"
    assert "[request id req-404]" in str(info.value)
    assert any("request id req-404" in r.getMessage() for r in caplog.records)
    mock_api.post(SUBS, status=201, body=b"not json", headers={"Request-Id": "req-bad"})
    with pytest.raises(ResponseDecodeError, match="request id req-bad") as decode:
        await client.webhooks.create(event_types=["PAYROLL_PROCESSED"], path="https://h.test/x")
    assert decode.value.request_id == "req-bad"


@pytest.mark.parametrize("value", ["x" * 129, "has space", "bad\u00e9"])
async def test_a_request_id_that_is_not_sane_is_left_out(
    mock_api: aioresponses, client: PayrollClient, value: str
) -> None:
    mock_api.delete(f"{SUBS}/{SID}", status=404, headers={"X-Request-Id": value})
    with pytest.raises(NotFoundError) as info:
        await client.webhooks.delete(SID)
    assert info.value.request_id is None
    assert "request id" not in str(info.value)
