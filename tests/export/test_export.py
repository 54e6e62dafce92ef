"""payroll_async.export.export_to_file: whole files, resumed exports, typed errors."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

from payroll_async import Page, PayrollClient
from payroll_async.emulator import Emulator
from payroll_async.export import (
    CheckpointError,
    ExportError,
    ExportProgress,
    ResumeMismatchError,
    export_to_file,
)
from tests.checkpoints import JOB, Stop, forge, interrupted
from tests.conftest import StartEmulator


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
    await interrupted(emu, target, pages=7, format="csv")
    async with PayrollClient(emu.base_url, emu.token) as client:
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


# --- issue 40.1: a service known by its data; refusals that name the way out ---------------


async def test_an_export_known_by_its_service_resumes_from_another_address_and_token(
    start_emulator: StartEmulator, tmp_path: Path
) -> None:
    """Two emulators of the same seed and sizes hold the same data on other ports with
    other tokens: an export given the same ``service`` resumes from one to the other."""
    first = await start_emulator(payroll_connections=600, seed=3)
    second = await start_emulator(payroll_connections=600, seed=3)
    third = await start_emulator(payroll_connections=600, seed=4)
    target = tmp_path / "c.jsonl"
    await interrupted(first, target, pages=4, service="emulator seed 3")
    async with PayrollClient(third.base_url, third.token) as client:
        with pytest.raises(ResumeMismatchError, match="written from emulator seed 3, not em"):
            await export_to_file(
                client.payroll_connections.list(page_size=50), target, service="emulator seed 4"
            )
    async with PayrollClient(second.base_url, second.token) as client:
        with pytest.raises(ResumeMismatchError, match=f"not {second.base_url}"):
            await export_to_file(client.payroll_connections.list(page_size=50), target)
        result = await export_to_file(
            client.payroll_connections.list(page_size=50), target, service="emulator seed 3"
        )
    assert result.resumed_from == 200
    assert ids(target) == [first.data.payroll_connection(i)["id"] for i in range(600)]
    assert names(tmp_path) == ["c.jsonl"]


async def test_an_export_of_an_in_process_emulator_resumes_on_the_next_one(
    tmp_path: Path,
) -> None:
    """docs/fleets.md's export, tried with the emulator: each run starts one afresh (another
    port, another token); ``service=emu.service`` resumes it, and without it the refusal
    names that way out, not the resume=True that was given already."""
    target = tmp_path / "c.jsonl"
    options = {"seed": 3, "payroll_connections": 600}
    async with Emulator(**options) as first:
        await interrupted(first, target, pages=4)
    async with Emulator(**options) as second, PayrollClient(second.base_url, second.token) as c:
        with pytest.raises(ResumeMismatchError) as caught:
            await export_to_file(c.payroll_connections.list(page_size=50), target)
    refusal = str(caught.value)
    assert "resume=True" not in refusal  # the default, given: no way out
    assert f"to continue it, run it against {first.base_url} with the token it" in refusal
    assert refusal.endswith(
        "resumes when every run passes the same service= (an Emulator's is emu.service)"
    )
    for name in os.listdir(tmp_path):
        (tmp_path / name).unlink()  # started over, as the refusal says
    async with Emulator(**options) as first:
        await interrupted(first, target, pages=4, service=first.service)
    async with Emulator(**options) as second, PayrollClient(second.base_url, second.token) as c:
        listing = c.payroll_connections.list(page_size=50)
        with pytest.raises(ResumeMismatchError) as unnamed:
            await export_to_file(listing, target)  # service= left out: it is the way back
        assert f"to continue it, run it with service={second.service!r}, or delete" in str(
            unnamed.value
        )
        with pytest.raises(ResumeMismatchError) as again:
            await export_to_file(listing, target, resume=False)
        assert f"with service={second.service!r} and resume=True, or delete" in str(again.value)
        result = await export_to_file(listing, target, service=second.service)
    assert second.service == first.service
    assert result.resumed_from == 200
    assert ids(target) == [second.data.payroll_connection(i)["id"] for i in range(600)]
    assert Emulator(seed=4, payroll_connections=600).service != second.service


async def test_a_service_that_is_no_text_is_refused_before_any_request(tmp_path: Path) -> None:
    async with PayrollClient("http://127.0.0.1:9", "t") as client:
        for service in ("", "x" * 4097, 3):
            with pytest.raises(ExportError, match="service must be a text"):
                await export_to_file(
                    client.payroll_connections.list(),
                    tmp_path / "c.jsonl",
                    service=service,  # type: ignore[arg-type]
                )
    assert names(tmp_path) == []


async def test_every_refusal_names_the_files_to_delete_and_offers_no_resume_that_fails(
    emu: Emulator, tmp_path: Path
) -> None:
    target = tmp_path / "c.jsonl"
    checkpoint = tmp_path / "c.jsonl.checkpoint"
    partial = forge(target, base_url=emu.base_url, token=emu.token, job={"other": 1})
    start_over = f"delete {checkpoint} and {partial} to start over"
    async with PayrollClient(emu.base_url, emu.token) as client:
        listing = client.payroll_connections.list()
        # Another export's checkpoint: resume=True would be refused, so it is not offered.
        with pytest.raises(ResumeMismatchError) as other:
            await export_to_file(listing, target, resume=False, job=JOB)
        assert "run that export with resume=True" in str(other.value)
        assert "pass resume=True" not in str(other.value)
        assert start_over in str(other.value)
        # Another service's: resuming it there is the way, or deleting both files.
        forge(target, base_url="http://127.0.0.1:1", token=emu.token, job=JOB)
        with pytest.raises(ResumeMismatchError) as elsewhere:
            await export_to_file(listing, target, resume=False, job=JOB)
        text = str(elsewhere.value)
        assert "run it with resume=True against http://127.0.0.1:1 with the token it" in text
        assert start_over in text
        # This export's own: resume=True is the way.
        forge(target, base_url=emu.base_url, token=emu.token, job=JOB)
        with pytest.raises(ExportError, match="pass resume=True to continue it") as own:
            await export_to_file(listing, target, resume=False, job=JOB)
        assert start_over in str(own.value)
        # A checkpoint that cannot be read: the partial files beside it are named.
        checkpoint.write_text("{")
        with pytest.raises(CheckpointError) as unreadable:
            await export_to_file(listing, target, job=JOB)
        assert start_over in str(unreadable.value)
        # A checkpoint naming a file that is not its partial file: delete the checkpoint.
        forge(target, base_url=emu.base_url, token=emu.token, job=JOB, name="../elsewhere")
        with pytest.raises(CheckpointError) as misnamed:
            await export_to_file(listing, target, job=JOB)
        assert f"'../elsewhere', not a partial file of it; delete {checkpoint} to" in str(
            misnamed.value
        )
    assert partial.exists()  # every refusal leaves the files as they were
