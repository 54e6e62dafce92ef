"""Checked by mypy and pyright (tests/test_typing.py), never run: what a user's checker sees.

Each ``type: ignore[code]`` is an expectation: with ``warn_unused_ignores`` a line that
stops being an error fails the check, so a misspelt keyword must stay a type error.
"""

from __future__ import annotations

from typing_extensions import assert_type

from payroll_async import (
    AsyncPaginator,
    InviteSession,
    PayrollClient,
    PayrollConnection,
    RawResponse,
    RetryPolicy,
    WebhookSubscription,
)


async def operations(client: PayrollClient, sid: str) -> None:
    raw = await client.webhooks.with_raw_response.create(
        event_types=["PAYROLL_PROCESSED"], path="https://example.com/h", timeout=5
    )
    assert_type(raw, RawResponse[WebhookSubscription])
    assert_type(raw.parsed, WebhookSubscription)
    assert_type((await client.webhooks.with_raw_response.delete(sid)).parsed, None)
    session = await client.employer_identifiers.invites.with_raw_response.create_session(sid, sid)
    assert_type(session.parsed, InviteSession)
    assert_type(await client.webhooks.replace(sid, event_types=[], path=""), WebhookSubscription)

    # misspelt operations and keywords, wrong option types
    await client.webhooks.with_raw_response.craete()  # type: ignore[attr-defined]
    await client.webhooks.with_raw_response.create(evnt_types=42, path="")  # type: ignore[call-arg]
    await client.webhooks.create(event_types=[], path="", timeuot=5)  # type: ignore[call-arg]
    await client.webhooks.delete(sid, retry="never")  # type: ignore[arg-type]
    client.payroll_connections.list(page_sise=10)  # type: ignore[call-arg]
    client.payroll_connections.list(max_items="10")  # type: ignore[arg-type]

    listing = client.payroll_connections.list(sort="-createdAt", page_size=50, concurrency=4)
    assert_type(listing, AsyncPaginator[PayrollConnection])
    copy = client.with_options(
        timeout=5,
        retry=RetryPolicy(max_attempts=2),
        page_size=10,
        concurrency=2,
        max_response_size=2**20,
        extra_headers={"X-Team": "payroll"},
        extra_query={"tag": "x"},
    )
    assert_type(copy, PayrollClient)
    client.with_options(page_sise=10)  # type: ignore[call-arg]
