"""The SDK against the emulator on a real loopback port."""

import uuid
from collections.abc import AsyncIterator

import pytest

from payroll_async import (
    EventType,
    InviteSession,
    NotFoundError,
    PayrollClient,
    PermissionDeniedError,
    RetryPolicy,
    WebhookSubscription,
)
from payroll_async.emulator import Emulator
from tests.conftest import StartEmulator

HOOK = "https://hooks.example.com/e2e"


@pytest.fixture
async def emu(start_emulator: StartEmulator) -> Emulator:
    return await start_emulator(
        seed=11, payroll_connections=3000, employer_identifiers=40, update_groups=7
    )


@pytest.fixture
async def client(emu: Emulator) -> AsyncIterator[PayrollClient]:
    async with PayrollClient(emu.base_url, emu.token) as c:
        yield c


def expected_ids(emu: Emulator, count: int) -> list[uuid.UUID]:
    return [uuid.UUID(emu.data.payroll_connection(i)["id"]) for i in range(count)]


@pytest.mark.parametrize("link_headers", [True, False])
async def test_every_payroll_connection_once_and_in_order(
    emu: Emulator, client: PayrollClient, link_headers: bool
) -> None:
    emu.link_headers = link_headers
    ids = [c.id async for c in client.payroll_connections.list(page_size=70)]
    assert ids == expected_ids(emu, 3000)


async def test_concurrent_and_sequential_walks_agree(emu: Emulator, client: PayrollClient) -> None:
    emu.link_headers = False
    fast = await client.payroll_connections.list(page_size=50, concurrency=8).collect()
    slow = await client.payroll_connections.list(page_size=50, concurrency=1).collect()
    assert fast == slow
    assert len(fast) == 3000


async def test_descending_sort_and_resume(emu: Emulator, client: PayrollClient) -> None:
    ids = [
        c.id async for c in client.payroll_connections.list(sort="-created_at", start_offset=2990)
    ]
    assert ids == expected_ids(emu, 10)[::-1]


async def test_employers_and_their_update_groups(emu: Emulator, client: PayrollClient) -> None:
    employers = await client.employer_identifiers.list(sort="display_name").collect()
    assert len(employers) == 40
    assert [e.display_name for e in employers] == sorted(e.display_name for e in employers)
    groups = await client.employer_identifiers.update_groups.list(employers[0].id).collect()
    assert len(groups) == 7
    assert all(g.upload_date.tzinfo is not None for g in groups)


async def test_invite_session(emu: Emulator, client: PayrollClient) -> None:
    ids = emu.sample_ids()
    session = await client.employer_identifiers.invites.create_session(
        ids["employer_identifier_id"], ids["invite_id"]
    )
    assert isinstance(session, InviteSession)
    assert session.onboarding_link.startswith(f"{emu.base_url}/onboarding?token=")
    with pytest.raises(NotFoundError):
        await client.employer_identifiers.invites.create_session(
            ids["employer_identifier_id"], uuid.uuid4()
        )


async def test_webhook_lifecycle(emu: Emulator, client: PayrollClient) -> None:
    created = await client.webhooks.create(event_types=[EventType.PAYROLL_PROCESSED], path=HOOK)
    assert isinstance(created, WebhookSubscription)
    assert created.active
    listed = await client.webhooks.list(active=True, sort="-created_at").collect()
    assert listed[0] == created
    assert all(s.active for s in listed)
    ensured = await client.webhooks.ensure(event_types=["PAYROLL_PROCESSED"], path=HOOK)
    assert ensured == created
    replaced = await client.webhooks.replace(
        created.webhook_subscription_id,
        event_types=[EventType.PAYROLL_PROCESSED, EventType.EMPLOYEE_CENSUS_HIRED],
        path=HOOK,
    )
    ids = {s["webhookSubscriptionId"] for s in emu.subscriptions()}
    assert str(replaced.webhook_subscription_id) in ids
    assert str(created.webhook_subscription_id) not in ids
    await client.webhooks.delete(replaced.webhook_subscription_id)
    with pytest.raises(NotFoundError):
        await client.webhooks.delete(replaced.webhook_subscription_id)


async def test_webhooks_need_the_role(emu: Emulator) -> None:
    async with PayrollClient(emu.base_url, emu.token_without_webhook_role) as client:
        assert len(await client.payroll_connections.list().collect()) == 3000
        with pytest.raises(PermissionDeniedError, match="api-user-webhook-subscription"):
            await client.webhooks.list().collect()


async def test_every_item_exactly_once_under_errors_and_drops() -> None:
    patient = RetryPolicy(max_attempts=12, backoff_initial=0.001, backoff_max=0.01)
    async with Emulator(
        seed=2, payroll_connections=4000, error_rate=0.15, drop_rate=0.1, link_headers=False
    ) as emu:
        async with PayrollClient(emu.base_url, emu.token, retry=patient) as client:
            ids = [c.id async for c in client.payroll_connections.list(page_size=40)]
    assert ids == expected_ids(emu, 4000)
    assert emu.stats["errors"] > 5
    assert emu.stats["dropped"] > 5


async def test_every_item_exactly_once_under_rate_limits() -> None:
    async with Emulator(seed=4, payroll_connections=1500, rate_limit=40) as emu:
        emu.link_headers = False
        async with PayrollClient(emu.base_url, emu.token) as client:
            ids = [c.id async for c in client.payroll_connections.list(page_size=25)]
    assert ids == expected_ids(emu, 1500)
    assert emu.stats["rate_limited"] >= 1
    # One 429 pauses the whole client: far fewer 429s than the 60 pages would collect alone.
    assert emu.stats["rate_limited"] <= 16
