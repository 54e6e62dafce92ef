"""payroll_async.export.export_to_file: whole files, resumed exports, typed errors."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from payroll_async import Page, PayrollClient
from payroll_async.emulator import Emulator
from payroll_async.export import ExportError, ExportProgress, export_to_file
from tests.conftest import StartEmulator


class Stop(Exception):
    """Stands for a crash in the middle of an export."""


@pytest.fixture
async def emu(start_emulator: StartEmulator) -> Emulator:
    return await start_emulator(payroll_connections=1234, seed=6)


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def ids(path: Path) -> list[str]:
    return [json.loads(line)["id"] for line in path.read_text().splitlines()]


async def test_every_item_once_in_a_whole_file(emu: Emulator, tmp_path: Path) -> None:
    target = tmp_path / "c.jsonl"
    async with PayrollClient(emu.base_url, emu.token) as client:
        result = await export_to_file(client.payroll_connections.list(page_size=50), target)
    assert (result.path, result.items, result.resumed_from) == (target, 1234, 0)
    assert ids(target) == [emu.data.payroll_connection(i)["id"] for i in range(1234)]
    assert names(tmp_path) == ["c.jsonl"]  # nothing left beside it


async def test_an_interrupted_export_resumes_with_nothing_lost_or_doubled(
    emu: Emulator, tmp_path: Path
) -> None:
    target = tmp_path / "c.csv"
    pages = 0

    def crash(page: Page[Any], progress: ExportProgress) -> None:
        nonlocal pages
        pages += 1
        if pages == 7:
            raise Stop

    async with PayrollClient(emu.base_url, emu.token) as client:
        with pytest.raises(Stop):
            await export_to_file(
                client.payroll_connections.list(page_size=50), target, format="csv", on_page=crash
            )
        assert not target.exists()
        progress = ExportProgress()
        result = await export_to_file(
            client.payroll_connections.list(page_size=50),
            target,
            format="csv",
            progress=progress,
        )
    assert result.resumed_from == progress.resumed_from > 0
    lines = target.read_text().splitlines()
    assert lines[0].startswith("id,employerIdentifierId")
    column = [line.split(",")[0] for line in lines[1:]]
    assert column == [emu.data.payroll_connection(i)["id"] for i in range(1234)]


async def test_a_checkpoint_of_another_listing_is_never_resumed(
    emu: Emulator, tmp_path: Path
) -> None:
    target = tmp_path / "c.jsonl"

    def crash(page: Page[Any], progress: ExportProgress) -> None:
        raise Stop

    async with PayrollClient(emu.base_url, emu.token) as client:
        with pytest.raises(Stop):
            await export_to_file(client.payroll_connections.list(), target, on_page=crash)
        with pytest.raises(ExportError, match="belongs to another export") as other:
            await export_to_file(client.employer_identifiers.list(), target)
        with pytest.raises(ExportError, match="interrupted export") as interrupted:
            await export_to_file(client.payroll_connections.list(), target, resume=False)
    # The library speaks its own words (the command maps them to its options).
    for error in (other.value, interrupted.value):
        assert "resume=True" in str(error)
        assert "--" not in str(error)


async def test_bad_arguments_are_typed_errors_before_any_request(tmp_path: Path) -> None:
    async with PayrollClient("http://127.0.0.1:9", "t") as client:
        listing = client.payroll_connections.list()
        with pytest.raises(ExportError, match="format"):
            await export_to_file(listing, tmp_path / "x", format="xml")
        with pytest.raises(ExportError, match="AsyncPaginator"):
            await export_to_file([], tmp_path / "x")  # type: ignore[arg-type]
        with pytest.raises(ExportError, match="directory") as directory:
            await export_to_file(listing, tmp_path)
        assert "-o " not in str(directory.value)


async def test_a_stream_gets_the_items_straight(emu: Emulator) -> None:
    out = io.BytesIO()
    async with PayrollClient(emu.base_url, emu.token) as client:
        result = await export_to_file(
            client.payroll_connections.list(max_items=10), None, stream=out, format="json"
        )
    assert result.path is None
    assert len(json.loads(out.getvalue())) == result.items == 10


async def test_a_listing_says_who_it_is_sent_as_without_showing_the_token() -> None:
    token = "tok_identity_SECRET"
    async with PayrollClient("https://api.example.test", token) as client:
        identity = client.payroll_connections.list().identity
    assert identity.base_url == "https://api.example.test"
    assert token not in repr(identity)
    assert not identity.rotating
    salt = b"0123456789abcdef"
    assert identity.fingerprint(salt) == identity.fingerprint(salt)
    assert token not in (identity.fingerprint(salt) or "")
    assert identity.fingerprint(salt) != identity.fingerprint(b"another salt....")
