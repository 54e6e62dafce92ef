"""Secrets are kept out of what is shown for as long as whatever holds them lives, however
many others come and go (issue 53, item 2): a router's ``whsec_`` secret is not pushed out
by seventy tenants' clients and a provider that mints a token per request; a router without
an inbox scrubs what it logs, tracebacks included; a collected holder's secret is let go.
"""

from __future__ import annotations

import gc
import json
import logging
import time
from itertools import count

import pytest

from payroll_async import PayrollClient
from payroll_async._core._redact import REDACTED
from payroll_async._core._secrets import scrub
from payroll_async.events import EventRouter, WebhookEvent, sign
from payroll_async.testing import MockTransport, TransportRequest, json_response

BASE = "https://api.example.com"
WHSEC = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


def _notification(event_id: str) -> tuple[bytes, dict[str, str]]:
    body = json.dumps(
        {
            "eventId": event_id,
            "eventType": "PAYROLL_PROCESSED",
            "occurredAt": "2026-11-22T05:00:00Z",
            "data": {"payrollId": event_id},
        }
    ).encode()
    return body, {
        **sign(WHSEC, event_id, int(time.time()), body),
        "Content-Type": "application/json",
    }


class PerRequest:
    """A provider that mints a new token for every request."""

    def __init__(self) -> None:
        self._numbers = count()
        self.last = ""

    async def get_token(self, *, refresh: bool = False) -> str:
        self.last = f"minted-{next(self._numbers):06d}-token"
        return self.last


def _ok(request: TransportRequest) -> object:
    return json_response({"id": "p1"})


async def _seventy_tenants_and_a_busy_provider() -> tuple[list[PayrollClient], str]:
    """Seventy tenants' clients, and a client whose provider minted 200 tokens: all open."""
    tenants = [
        PayrollClient(BASE, f"tenant-{n:03d}-token", transport=MockTransport(_ok))
        for n in range(70)
    ]
    provider = PerRequest()
    busy = PayrollClient(BASE, provider, transport=MockTransport(_ok))
    for _ in range(200):
        await busy.get("/v1/payroll-platforms/p1", cast_to=dict)
    return [*tenants, busy], provider.last


async def test_seventy_clients_and_a_token_per_request_do_not_push_out_the_routers_secret() -> None:
    router = EventRouter(secret=WHSEC)
    clients, current = await _seventy_tenants_and_a_busy_provider()
    # what the inbox stores of a handler's error: every secret held taken out
    stored = scrub(f"{WHSEC} {WHSEC[6:]} {current} tenant-000-token tenant-069-token")
    assert stored == " ".join([REDACTED] * 5)
    assert router is not None  # held until here
    for client in clients:
        await client.close()


async def test_a_router_without_an_inbox_scrubs_what_it_logs_tracebacks_included(
    caplog: pytest.LogCaptureFixture,
) -> None:
    router = EventRouter(secret=WHSEC)  # no inbox: the router logs the handler's failure
    clients, current = await _seventy_tenants_and_a_busy_provider()

    @router.on()
    async def leaky(event: WebhookEvent) -> None:
        raise RuntimeError(
            f"signed with {WHSEC} ({WHSEC[6:]}), sent {current} and tenant-000-token"
        )

    body, headers = _notification("evt-1")
    with caplog.at_level(logging.DEBUG, "payroll_async.events"):
        reply = await router.receive(body, headers)
    assert reply.status == 500
    (record,) = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert "a handler of notification evt-1" in record.getMessage()
    assert "Traceback" in caplog.text
    assert "RuntimeError: signed with *** (***), sent *** and ***" in caplog.text
    for secret in (WHSEC, WHSEC[6:], current, "tenant-000-token"):
        assert secret not in caplog.text
    for client in clients:
        await client.close()


async def test_a_providers_older_tokens_and_a_collected_holders_secret_are_let_go() -> None:
    provider = PerRequest()
    async with PayrollClient(BASE, provider, transport=MockTransport(_ok)) as client:
        seen = []
        for _ in range(3):
            await client.get("/v1/payroll-platforms/p1", cast_to=dict)
            seen.append(provider.last)
        assert scrub(" ".join(seen)) == f"{seen[0]} {REDACTED} {REDACTED}"  # current, previous
    client = PayrollClient(BASE, "held-by-one-client-only", transport=MockTransport(_ok))
    assert scrub("held-by-one-client-only") == REDACTED
    await client.close()
    del client
    gc.collect()
    assert scrub("held-by-one-client-only") == "held-by-one-client-only"
    router = EventRouter(secret="whsec_c2VjcmV0LW9mLXRoZS1yb3V0ZXItNDI=")
    assert scrub("whsec_c2VjcmV0LW9mLXRoZS1yb3V0ZXItNDI=") == REDACTED
    del router
    gc.collect()
    assert "c2VjcmV0" in scrub("whsec_c2VjcmV0LW9mLXRoZS1yb3V0ZXItNDI=")
