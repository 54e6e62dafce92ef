"""The mirror's stamps are the database's time, whatever the mirroring machine's clock says."""

from __future__ import annotations

import datetime
import types
from typing import Any

import pytest

from payroll_async import PayrollClient
from payroll_async.mirror import Change, mirror
from payroll_async.mirror import _store as mirror_store
from tests._postgres import query
from tests.conftest import StartEmulator

AHEAD = datetime.timedelta(hours=2)  # the mirroring machine's clock


class _Ahead:
    """``datetime.datetime`` as the writer of the mirror's rows sees it: ``now`` ahead."""

    def __getattr__(self, name: str) -> Any:
        return getattr(datetime.datetime, name)

    @staticmethod
    def now(tz: datetime.tzinfo | None = None) -> datetime.datetime:
        return datetime.datetime.now(tz) + AHEAD


def _utc(at: object) -> datetime.datetime:
    if isinstance(at, str):  # SQLite's text
        at = datetime.datetime.fromisoformat(at)
    assert isinstance(at, datetime.datetime)
    return at if at.tzinfo else at.replace(tzinfo=datetime.timezone.utc)


async def test_changes_and_deletions_are_stamped_on_the_databases_clock(
    start_emulator: StartEmulator, into: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    emu = await start_emulator(seed=3, payroll_connections=60)
    told: list[Change] = []

    async def on_change(change: Change) -> None:
        told.append(change)

    async with PayrollClient(emu.base_url, emu.token) as client:
        await mirror(client, "payroll-connections", into=into, page_size=25)
        emu.churn("payroll-connections", inserted=2, updated=3, deleted=4)
        before = datetime.datetime.now(datetime.timezone.utc)
        with monkeypatch.context() as patched:
            clock = types.SimpleNamespace(**{**vars(datetime), "datetime": _Ahead()})
            patched.setattr(mirror_store, "datetime", clock)
            result = await mirror(
                client, "payroll-connections", into=into, page_size=25, on_change=on_change
            )
        after = datetime.datetime.now(datetime.timezone.utc)
    run = result.run_id if into.startswith("postgresql") else str(result.run_id)
    stamps = await query(into, "SELECT at FROM mirror_changes WHERE run_id = :r", r=run)
    deleted = await query(
        into,
        "SELECT mirror_deleted_at FROM payroll_connections WHERE mirror_deleted_at IS NOT NULL",
    )
    assert (len(stamps), len(deleted), len(told)) == (9, 4, 9)
    slack = datetime.timedelta(seconds=5)  # the database's clock is this machine's own
    for at in [*(s for (s,) in stamps), *(d for (d,) in deleted), *(c.at for c in told)]:
        assert before - slack <= _utc(at) <= after + slack, at
