"""emu.churn: a deterministic, mutable overlay on the seeded data, paged as a database would."""

from __future__ import annotations

import pytest

from payroll_async import PayrollClient
from payroll_async.emulator import Churn, Emulator
from tests.conftest import StartEmulator


async def listing(client: PayrollClient, collection: str) -> dict[str, object]:
    if collection == "payroll-connections":
        return {str(c.id): c for c in await client.payroll_connections.list().collect()}
    if collection == "employer-identifiers":
        return {str(e.id): e for e in await client.employer_identifiers.list().collect()}
    return {str(s.webhook_subscription_id): s for s in await client.webhooks.list().collect()}


@pytest.mark.parametrize("collection", ["payroll-connections", "employer-identifiers", "webhooks"])
async def test_churn_inserts_updates_and_deletes_exactly_the_ids_it_returns(
    start_emulator: StartEmulator, collection: str
) -> None:
    emu = await start_emulator(
        seed=2, payroll_connections=300, employer_identifiers=60, webhook_subscriptions=20
    )
    async with PayrollClient(emu.base_url, emu.token) as client:
        before = await listing(client, collection)
        churn = emu.churn(collection, inserted=3, updated=4, deleted=5)
        after = await listing(client, collection)
    assert isinstance(churn, Churn)
    assert set(after) - set(before) == set(churn.inserted)
    assert set(before) - set(after) == set(churn.deleted)
    assert {k for k in before.keys() & after.keys() if before[k] != after[k]} == set(churn.updated)
    assert len(after) == len(before) - 2


async def test_an_updated_connection_changes_status_and_new_items_are_the_newest(
    start_emulator: StartEmulator,
) -> None:
    emu = await start_emulator(seed=3, payroll_connections=100)
    async with PayrollClient(emu.base_url, emu.token) as client:
        before = {str(c.id): c for c in await client.payroll_connections.list().collect()}
        churn = emu.churn("payroll-connections", inserted=2, updated=10)
        after = await client.payroll_connections.list(page_size=7).collect()
        newest_first = await client.payroll_connections.list(sort="-createdAt").collect()
    for item in after:
        if str(item.id) in churn.updated:
            old = before[str(item.id)]
            assert item.status != old.status
            assert (item.product, item.created_at) == (old.product, old.created_at)
    assert [str(c.id) for c in after[-2:]] == churn.inserted
    assert newest_first == after[::-1]


async def test_pages_after_a_deletion_move_up_one_offset(start_emulator: StartEmulator) -> None:
    emu = await start_emulator(seed=4, payroll_connections=50)
    async with PayrollClient(emu.base_url, emu.token) as client:
        whole = await client.payroll_connections.list().collect()
        first = await client.payroll_connections.list(page_size=10, max_items=10).collect()
        churn = emu.churn("payroll-connections", deleted=1)
        gone = next(i for i, c in enumerate(whole) if str(c.id) in churn.deleted)
        second = await client.payroll_connections.list(
            page_size=10, max_items=10, start_offset=10
        ).collect()
        total = (await anext(aiter(client.payroll_connections.list().pages()))).meta.total_count
    assert first == whole[:10]
    rest = [c for c in whole if str(c.id) not in churn.deleted]
    assert second == rest[10:20]
    assert total == 49
    assert gone >= 0


def test_churn_is_deterministic_from_the_seed() -> None:
    def run() -> list[Churn]:
        emu = Emulator(seed=9, payroll_connections=500, employer_identifiers=20)
        return [
            emu.churn("payroll-connections", inserted=2, updated=3, deleted=4),
            emu.churn("update-groups", updated=1, deleted=1, inserted=1),
            emu.churn("employer-identifiers", updated=2),
        ]

    assert run() == run()


async def test_update_groups_churn_one_employer_s_groups(start_emulator: StartEmulator) -> None:
    emu = await start_emulator(seed=5, employer_identifiers=4, update_groups=6)
    async with PayrollClient(emu.base_url, emu.token) as client:
        employers = [str(e.id) for e in await client.employer_identifiers.list().collect()]

        async def groups() -> dict[str, object]:
            found: dict[str, object] = {}
            for employer in employers:
                for g in await client.employer_identifiers.update_groups.list(employer).collect():
                    found[str(g.update_group_id)] = g
            return found

        before = await groups()
        churn = emu.churn("update-groups", inserted=1, updated=2, deleted=1)
        after = await groups()
    assert set(after) - set(before) == set(churn.inserted)
    assert set(before) - set(after) == set(churn.deleted)
    assert {k for k in before.keys() & after.keys() if before[k] != after[k]} == set(churn.updated)


@pytest.mark.parametrize(
    ("collection", "options", "message"),
    [
        ("payroll-connections", {"deleted": 11}, "too few"),
        ("webhooks", {"updated": 2, "deleted": 2}, "too few"),
        ("payroll-connections", {"inserted": -1}, "inserted must be an integer >= 0"),
        ("invites", {"inserted": 1}, "no collection 'invites'"),
    ],
)
def test_churn_refuses_what_it_cannot_do(
    collection: str, options: dict[str, int], message: str
) -> None:
    emu = Emulator(seed=1, payroll_connections=10, webhook_subscriptions=3)
    with pytest.raises(ValueError, match=message):
        emu.churn(collection, **options)


async def test_the_shell_emulator_churns_on_a_timer_for_demos() -> None:
    import asyncio
    import signal
    import sys

    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "payroll_async.emulator",
        "--port",
        "0",
        "--payroll-connections",
        "600",
        "--churn-every",
        "0.05",
        stdout=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None
    lines: list[str] = []
    try:
        while sum(line.startswith("churn:") for line in lines) < 2:
            line = await asyncio.wait_for(process.stdout.readline(), 30)
            assert line, f"the emulator stopped: {lines}"
            lines.append(line.decode())
    finally:
        process.send_signal(signal.SIGINT)
        await process.wait()
    assert "churn: 2 payroll connections new, 2 updated, 2 deleted\n" in lines
    assert process.returncode == 0


def test_churn_every_must_be_positive() -> None:
    from payroll_async.emulator.__main__ import main

    assert main(["--churn-every", "0"]) == 2
