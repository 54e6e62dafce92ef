"""export_to_file against hostile neighbours: planted links, loose modes, foreign checkpoints,
a second writer, formulas in CSV cells, and what the service sent, byte for byte."""

from __future__ import annotations

import asyncio
import csv
import json
import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from payroll_async import Page, PayrollClient, PayrollError, ResponseDecodeError
from payroll_async._paging import _decode as decode_module
from payroll_async.emulator import Emulator
from payroll_async.export import (
    CheckpointError,
    ExportError,
    ExportProgress,
    OutputLockedError,
    ResumeMismatchError,
    export_to_file,
)
from payroll_async.export._checkpoint import read_checkpoint
from tests.checkpoints import JOB, forge, interrupted
from tests.conftest import Serve, StartEmulator

N = 300


@pytest.fixture
async def emu(start_emulator: StartEmulator) -> Emulator:
    return await start_emulator(payroll_connections=N, seed=4)


@pytest.fixture(autouse=True)
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)  # the usual umask: what turned payroll files into 0644
    yield
    os.umask(old)


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def ids(path: Path) -> list[str]:
    return [json.loads(line)["id"] for line in path.read_text().splitlines()]


def expected(emu: Emulator, count: int = N) -> list[str]:
    return [emu.data.payroll_connection(i)["id"] for i in range(count)]


def partial_of(target: Path) -> Path:
    (partial,) = target.parent.glob(f"{target.name}.*.partial")
    return partial


# --- 1. no write through a planted link ----------------------------------------------------


@pytest.mark.parametrize("side", [".partial", ".checkpoint.tmp", ".tmp", ".new"])
async def test_a_link_planted_at_a_side_name_is_never_written_through(
    emu: Emulator, tmp_path: Path, side: str
) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    target = tmp_path / "c.jsonl"
    (tmp_path / f"c.jsonl{side}").symlink_to(victim)
    async with PayrollClient(emu.base_url, emu.token) as client:
        await export_to_file(client.payroll_connections.list(page_size=50), target)
    assert victim.read_text() == "precious\n"
    assert not target.is_symlink()
    assert ids(target) == expected(emu)


async def test_a_link_at_the_checkpoint_or_the_lock_is_refused_untouched(
    emu: Emulator, tmp_path: Path
) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    target = tmp_path / "c.jsonl"
    async with PayrollClient(emu.base_url, emu.token) as client:
        for side in (".checkpoint", ".lock"):
            link = tmp_path / f"c.jsonl{side}"
            link.symlink_to(victim)
            with pytest.raises(ExportError, match="symbolic link"):
                await export_to_file(client.payroll_connections.list(), target)
            assert victim.read_text() == "precious\n"
            link.unlink()
    assert names(tmp_path) == ["victim"]


async def test_a_checkpoint_cannot_point_the_export_at_another_file(
    emu: Emulator, tmp_path: Path
) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    target = tmp_path / "c.jsonl"
    async with PayrollClient(emu.base_url, emu.token) as client:
        for name in ("victim", "../victim", "c.jsonl", "c.jsonl.x.partial/../../victim"):
            forge(target, base_url=emu.base_url, token=emu.token, name=name, make_partial=False)
            with pytest.raises(CheckpointError, match="not a partial file"):
                await export_to_file(client.payroll_connections.list(), target, job=JOB)
    assert victim.read_text() == "precious\n"


async def test_a_partial_file_that_became_a_link_is_refused(emu: Emulator, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    target = tmp_path / "c.jsonl"
    await interrupted(emu, target)
    partial = partial_of(target)
    partial.unlink()
    partial.symlink_to(victim)
    async with PayrollClient(emu.base_url, emu.token) as client:
        with pytest.raises(CheckpointError, match="symbolic link"):
            await export_to_file(client.payroll_connections.list(page_size=50), target)
    assert victim.read_text() == "precious\n"


async def test_the_partial_name_is_random_and_new_each_run(emu: Emulator, tmp_path: Path) -> None:
    names_seen = set()
    for attempt in range(3):
        target = tmp_path / str(attempt) / "c.jsonl"
        target.parent.mkdir()
        await interrupted(emu, target)
        names_seen.add(partial_of(target).name.removeprefix("c.jsonl."))
    assert len(names_seen) == 3


async def test_a_dangling_link_as_the_target_is_refused(emu: Emulator, tmp_path: Path) -> None:
    link = tmp_path / "out.jsonl"
    link.symlink_to(tmp_path / "nowhere" / "planted.jsonl")
    (tmp_path / "nowhere").mkdir()
    async with PayrollClient(emu.base_url, emu.token) as client:
        with pytest.raises(ExportError, match="dangling symbolic link"):
            await export_to_file(client.payroll_connections.list(), link)
    assert names(tmp_path / "nowhere") == []
    assert link.is_symlink()


async def test_a_file_of_the_users_at_the_locks_name_is_left_alone(
    emu: Emulator, tmp_path: Path
) -> None:
    target = tmp_path / "c.jsonl"
    notes = tmp_path / "c.jsonl.lock"
    notes.write_text("my notes about the lock-in period\n")
    async with PayrollClient(emu.base_url, emu.token) as client:
        with pytest.raises(ExportError, match="not an export's lock file"):
            await export_to_file(client.payroll_connections.list(), target)
    assert notes.read_text() == "my notes about the lock-in period\n"
    assert names(tmp_path) == ["c.jsonl.lock"]


# --- 2. modes that fit payroll data ----------------------------------------------------------


async def test_a_new_output_and_every_side_file_are_0600(emu: Emulator, tmp_path: Path) -> None:
    target = tmp_path / "c.jsonl"
    modes: dict[str, int] = {}

    def look(page: Page[Any], progress: ExportProgress) -> None:
        for path in tmp_path.iterdir():
            modes[path.name.split(".", 2)[-1]] = stat.S_IMODE(path.stat().st_mode)

    async with PayrollClient(emu.base_url, emu.token) as client:
        await export_to_file(client.payroll_connections.list(page_size=50), target, on_page=look)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert {name.rsplit(".", 1)[-1] for name in modes} >= {"partial", "checkpoint", "lock"}
    assert set(modes.values()) == {0o600}


@pytest.mark.parametrize("mode", [0o600, 0o400, 0o640])
async def test_a_replaced_file_keeps_its_own_mode(emu: Emulator, tmp_path: Path, mode: int) -> None:
    target = tmp_path / "c.jsonl"
    target.write_text("old\n")
    target.chmod(mode)
    async with PayrollClient(emu.base_url, emu.token) as client:
        await export_to_file(client.payroll_connections.list(page_size=50), target)
    assert stat.S_IMODE(target.stat().st_mode) == mode
    assert ids(target) == expected(emu)


# --- 3. a resume belongs to one service and one account -----------------------------------


async def test_a_resume_against_another_service_is_refused_and_appends_nothing(
    emu: Emulator, start_emulator: StartEmulator, tmp_path: Path
) -> None:
    target = tmp_path / "c.jsonl"
    await interrupted(emu, target)
    partial = partial_of(target)
    before = partial.read_bytes()
    other = await start_emulator(payroll_connections=N, seed=99, token=emu.token)
    async with PayrollClient(other.base_url, other.token) as client:
        with pytest.raises(ResumeMismatchError, match=f"written from {emu.base_url}"):
            await export_to_file(client.payroll_connections.list(page_size=50), target)
    assert partial.read_bytes() == before
    assert not target.exists()


async def test_a_resume_with_another_token_is_refused_and_the_token_is_not_stored(
    emu: Emulator, tmp_path: Path
) -> None:
    target = tmp_path / "c.jsonl"
    await interrupted(emu, target)
    checkpoint = tmp_path / "c.jsonl.checkpoint"
    assert emu.token not in checkpoint.read_text()
    partial = partial_of(target)
    before = partial.read_bytes()
    async with PayrollClient(emu.base_url, emu.token_without_webhook_role) as client:
        with pytest.raises(ResumeMismatchError, match="another token"):
            await export_to_file(client.payroll_connections.list(page_size=50), target)
    assert partial.read_bytes() == before
    async with PayrollClient(emu.base_url, emu.token) as client:  # its own account resumes
        result = await export_to_file(client.payroll_connections.list(page_size=50), target)
    assert result.resumed_from == 100
    assert ids(target) == expected(emu)


# --- 4. one writer per output ---------------------------------------------------------------


async def test_a_second_export_to_the_same_file_is_refused_at_once(
    emu: Emulator, tmp_path: Path
) -> None:
    target = tmp_path / "c.jsonl"
    refused: list[BaseException] = []

    async def second() -> None:
        async with PayrollClient(emu.base_url, emu.token) as other:
            await export_to_file(other.employer_identifiers.list(), target)

    def run_second() -> None:
        try:
            asyncio.run(second())
        except OutputLockedError as exc:
            refused.append(exc)

    seen = 0

    def meanwhile(page: Page[Any], progress: ExportProgress) -> None:
        # The first export is paused here, between two pages, holding its lock: a second
        # export (its own event loop, in a thread) runs now and must be refused at once.
        nonlocal seen
        seen += 1
        if seen == 2:
            thread = threading.Thread(target=run_second)
            thread.start()
            thread.join(30)

    async with PayrollClient(emu.base_url, emu.token) as client:
        await export_to_file(
            client.payroll_connections.list(page_size=50), target, on_page=meanwhile
        )
    assert len(refused) == 1
    assert f"writing to {target}" in str(refused[0])
    assert f"process {os.getpid()}" in str(refused[0])
    assert ids(target) == expected(emu)
    assert names(tmp_path) == ["c.jsonl"]


# --- 5. tampered and foreign checkpoints ---------------------------------------------------


def _valid_state(partial: str, size: int) -> dict[str, Any]:
    return {
        "version": 2,
        "job": JOB,
        "service": {"baseUrl": "http://x", "salt": "00", "credentials": None},
        "items": 1,
        "writer": {"partial": partial, "bytes": size},
        "done": False,
    }


@pytest.mark.parametrize(
    "change",
    [
        {"items": -1},
        {"items": "12"},
        {"items": 1.0},
        {"items": True},
        {"items": 2**80},
        {"version": 1},
        {"version": "2"},
        {"job": []},
        {"service": None},
        {"service": {"baseUrl": 5, "salt": "00", "credentials": None}},
        {"service": {"baseUrl": "http://x", "salt": "not hex", "credentials": None}},
        {"writer": "x"},
        {"done": "yes"},
    ],
)
def test_a_tampered_field_is_a_checkpoint_error(tmp_path: Path, change: dict[str, Any]) -> None:
    path = tmp_path / "c.jsonl.checkpoint"
    path.write_text(json.dumps({**_valid_state("c.jsonl.a.partial", 1), **change}))
    with pytest.raises(CheckpointError, match="not a checkpoint this version can resume"):
        read_checkpoint(path)


@pytest.mark.parametrize("key", ["version", "job", "service", "items", "writer"])
def test_a_missing_key_is_a_checkpoint_error(tmp_path: Path, key: str) -> None:
    path = tmp_path / "c.jsonl.checkpoint"
    state = _valid_state("c.jsonl.a.partial", 1)
    del state[key]
    path.write_text(json.dumps(state))
    with pytest.raises(CheckpointError):
        read_checkpoint(path)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


# No deadline: each example writes a file, and on a shared machine the first write in a
# new directory has stalled for over 400 ms (wall, not CPU) in full runs of the suite.
@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    junk=st.one_of(
        st.binary(max_size=300),
        json_values.map(lambda v: json.dumps(v).encode()),
        st.dictionaries(
            st.sampled_from(["version", "job", "service", "items", "writer", "done"]),
            json_values,
        ).map(lambda d: json.dumps({"version": 2, **d}).encode()),
    )
)
def test_junk_in_a_checkpoint_is_a_checkpoint_error_or_a_checkpoint(
    tmp_path: Path, junk: bytes
) -> None:
    path = tmp_path / "junk.checkpoint"
    path.write_bytes(junk)
    try:
        state = read_checkpoint(path)
    except CheckpointError:
        return  # refused, as it should be: anything else (KeyError, TypeError) fails
    assert state is not None
    assert type(state.items) is int
    assert state.items >= 0


@settings(max_examples=60, deadline=None)
@given(
    items=st.one_of(st.integers(), st.text(max_size=5), st.none()),
    size=st.one_of(st.integers(), st.floats(allow_nan=False), st.text(max_size=5), st.none()),
    data=st.binary(max_size=200),
)
async def test_junk_counts_beside_a_partial_file_never_resume_falsely(
    tmp_path_factory: pytest.TempPathFactory, items: Any, size: Any, data: bytes
) -> None:
    folder = tmp_path_factory.mktemp("junk")
    target = folder / "c.jsonl"
    partial = forge(target, base_url="http://127.0.0.1:9", token="t", data=data)
    state = json.loads((folder / "c.jsonl.checkpoint").read_text())
    state["items"], state["writer"]["bytes"] = items, size
    (folder / "c.jsonl.checkpoint").write_text(json.dumps(state))
    consistent = (
        type(items) is int
        and type(size) is int
        and 0 <= size <= len(data)
        and items == data[:size].count(b"\n")
    )
    async with PayrollClient("http://127.0.0.1:9", "t", retry=None) as client:
        try:
            await export_to_file(client.payroll_connections.list(), target, job=JOB)
        except ExportError:
            assert partial.read_bytes() == data  # refused: nothing cut, nothing appended
        except PayrollError:
            assert consistent  # resumed (then no service answered): only a sound checkpoint
        else:
            raise AssertionError("no service answered, yet the export succeeded")
    assert not target.exists()


async def test_a_count_the_file_does_not_hold_is_refused(emu: Emulator, tmp_path: Path) -> None:
    target = tmp_path / "c.jsonl"
    forge(target, base_url=emu.base_url, token=emu.token, items=100_000_000)
    async with PayrollClient(emu.base_url, emu.token) as client:
        with pytest.raises(CheckpointError, match="holds 0 items, not the 100,000,000"):
            await export_to_file(client.payroll_connections.list(), target, job=JOB)
        forge(target, base_url=emu.base_url, token=emu.token, items=3, data=b"{}\n" * 2)
        with pytest.raises(CheckpointError, match="holds 2 items, not the 3"):
            await export_to_file(client.payroll_connections.list(), target, job=JOB)
        forge(target, base_url=emu.base_url, token=emu.token, items=N, data=b"{}\n", done=True)
        target.write_text("not what was exported\n")
        with pytest.raises(CheckpointError, match="not the file it finished"):
            await export_to_file(client.payroll_connections.list(), target, job=JOB)


async def test_a_run_killed_before_its_final_rename_is_finished(
    emu: Emulator, tmp_path: Path
) -> None:
    target = tmp_path / "c.jsonl"
    async with PayrollClient(emu.base_url, emu.token) as client:
        await export_to_file(client.payroll_connections.list(page_size=50), target, job=JOB)
        whole = target.read_bytes()
        target.unlink()
        partial = forge(target, base_url=emu.base_url, token=emu.token, items=N, data=whole)
        forge(target, base_url=emu.base_url, token=emu.token, items=N, data=whole, done=True)
        result = await export_to_file(client.payroll_connections.list(), target, job=JOB)
    assert (result.items, result.resumed_from) == (N, N)
    assert not partial.exists()
    assert target.read_bytes() == whole
    assert names(tmp_path) == ["c.jsonl"]


async def test_a_checkpoint_of_another_user_or_with_hard_links_is_refused(
    emu: Emulator, tmp_path: Path
) -> None:
    target = tmp_path / "c.jsonl"
    partial = forge(target, base_url=emu.base_url, token=emu.token, items=1, data=b"{}\n")
    os.link(partial, tmp_path / "elsewhere")
    async with PayrollClient(emu.base_url, emu.token) as client:
        with pytest.raises(CheckpointError, match="hard links"):
            await export_to_file(client.payroll_connections.list(), target, job=JOB)


# --- 6. CSV for spreadsheets ---------------------------------------------------------------

FORMULAS = ["=1+1", "+1", "-1", "@SUM(A1)", "\tx", "\rx", '=HYPERLINK("http://x")']


def meta(total: int) -> dict[str, Any]:
    return {
        "currentCount": total,
        "filters": {},
        "limit": 100,
        "offset": 0,
        "sort": "createdAt",
        "totalCount": total,
    }


def page_of(items: list[dict[str, Any]], total: int) -> dict[str, Any]:
    return {"data": items, "meta": meta(total)}


def connection(i: int, **fields: Any) -> dict[str, Any]:
    return {
        "id": f"00000000-0000-4000-8000-{i:012d}",
        "employerIdentifierId": "00000000-0000-4000-8000-000000000001",
        "payrollPlatformId": "00000000-0000-4000-8000-000000000002",
        "createdAt": "2024-01-01T00:00:00Z",
        "status": "pending",
        "product": "loans",
        **fields,
    }


async def serving(serve: Serve, body: bytes) -> str:
    async def listing(request: web.Request) -> web.Response:
        if request.query.get("offset", "0") != "0":
            return web.json_response(page_of([], 0))
        return web.Response(body=body, content_type="application/json")

    app = web.Application()
    app.router.add_get("/v1/payroll-connections", listing)
    return await serve(app)


async def test_csv_cells_that_a_spreadsheet_would_run_are_text(
    serve: Serve, tmp_path: Path
) -> None:
    items = [connection(i, status=value) for i, value in enumerate(FORMULAS)]
    base = await serving(serve, json.dumps(page_of(items, len(items))).encode())
    async with PayrollClient(base, "t") as client:
        await export_to_file(client.payroll_connections.list(), tmp_path / "a.csv", format="csv")
        await export_to_file(
            client.payroll_connections.list(), tmp_path / "b.csv", format="csv", csv_raw=True
        )
    with (tmp_path / "a.csv").open(newline="") as file:
        safe = [row["status"] for row in csv.DictReader(file)]
    with (tmp_path / "b.csv").open(newline="") as file:
        raw = [row["status"] for row in csv.DictReader(file)]
    assert safe == ["'" + value for value in FORMULAS]
    assert raw == FORMULAS


# --- 21.5: the export writes what it read --------------------------------------------------


async def test_jsonl_holds_each_items_bytes_as_sent(serve: Serve, tmp_path: Path) -> None:
    sent = [
        b'{"product":"loans","id":"00000000-0000-4000-8000-000000000001","extra":{"k":[1,2]},'
        b'"employerIdentifierId":"00000000-0000-4000-8000-000000000001",'
        b'"payrollPlatformId":"00000000-0000-4000-8000-000000000002",'
        b'"createdAt":"2024-01-01T00:00:00.000+00:00","status":"pending"}',
        json.dumps(connection(2), indent=2).encode(),  # spans lines: made compact
    ]
    body = b'{"data": [' + b", ".join(sent) + b'], "meta": ' + json.dumps(meta(2)).encode() + b"}"
    base = await serving(serve, body)
    async with PayrollClient(base, "t") as client:
        await export_to_file(client.payroll_connections.list(), tmp_path / "c.jsonl")
        await export_to_file(client.payroll_connections.list(), tmp_path / "c.json", format="json")
    lines = (tmp_path / "c.jsonl").read_bytes().splitlines()
    assert lines[0] == sent[0]  # key order, unknown fields, timestamp text: as sent
    assert json.loads(lines[1]) == connection(2)
    assert b"\n" not in lines[1]
    assert json.loads((tmp_path / "c.json").read_bytes()) == [json.loads(s) for s in sent]


async def test_a_malformed_item_still_fails_the_export(serve: Serve, tmp_path: Path) -> None:
    items = [connection(1), connection(2, id="not-a-uuid")]
    base = await serving(serve, json.dumps(page_of(items, 2)).encode())
    async with PayrollClient(base, "t") as client:
        with pytest.raises(ResponseDecodeError):
            await export_to_file(client.payroll_connections.list(), tmp_path / "c.jsonl")
    assert names(tmp_path) == []


async def test_without_msgspec_the_items_are_the_same(
    emu: Emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with PayrollClient(emu.base_url, emu.token) as client:
        await export_to_file(client.payroll_connections.list(), tmp_path / "fast.jsonl")
        monkeypatch.setattr(decode_module, "_FAST", None)
        monkeypatch.setattr(decode_module, "_fast_decoders", {})
        await export_to_file(client.payroll_connections.list(), tmp_path / "slow.jsonl")
    assert (tmp_path / "fast.jsonl").read_bytes() == (tmp_path / "slow.jsonl").read_bytes()
