"""payroll_source() end to end: real dlt pipelines from the emulator into DuckDB and PostgreSQL."""

from __future__ import annotations

import contextlib
import datetime
import importlib
import logging
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from payroll_async import InvalidArgumentError
from payroll_async.emulator import Emulator

from .conftest import EMULATOR, FirstLoad, MakePipeline, rows, service_items

pytestmark = [pytest.mark.payroll_emulator(**EMULATOR), pytest.mark.slow]  # dlt pipelines

CONNECTIONS = (
    "SELECT id, employer_identifier_id, payroll_platform_id, created_at, status, product "
    "FROM payroll_connections"
)
EVENT_TYPES = (
    "SELECT s.webhook_subscription_id, e.value FROM webhook_subscriptions AS s "
    "JOIN webhook_subscriptions__webhook_event_types AS e ON e._dlt_parent_id = s._dlt_id "
    "ORDER BY s.webhook_subscription_id, e._dlt_list_idx"
)


def at(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


def connections_of_service(emu: Emulator) -> set[tuple[Any, ...]]:
    return {
        (
            c["id"],
            c["employerIdentifierId"],
            c["payrollPlatformId"],
            at(c["createdAt"]),
            c["status"],
            c["product"],
        )
        for c in service_items(emu, "payroll-connections")
    }


def connections_loaded(pipeline: Any) -> set[tuple[Any, ...]]:
    found = rows(pipeline, CONNECTIONS)
    assert len(found) == len({row[0] for row in found})  # nothing doubled
    return {(str(r[0]), str(r[1]), str(r[2]), r[3], r[4], r[5]) for r in found}


def event_types_of_service(emu: Emulator) -> list[tuple[str, str]]:
    subscriptions = sorted(service_items(emu, "webhooks"), key=lambda s: s["webhookSubscriptionId"])
    return [(s["webhookSubscriptionId"], t) for s in subscriptions for t in s["webhookEventTypes"]]


def loaded(pipeline: Any) -> dict[str, int]:
    """The rows of each table that the pipeline's last run loaded (dlt's own state left out)."""
    normalized = pipeline.last_trace.last_normalize_info
    counts = dict(normalized.row_counts) if normalized is not None else {}
    counts.pop("_dlt_pipeline_state", None)
    return counts


def source(emu: Emulator, **options: Any) -> Any:
    from payroll_async.dlt import payroll_source

    return payroll_source(emu.base_url, emu.token, **options)


def test_a_first_load_copies_every_collection(
    payroll_emulator: Emulator, make_pipeline: MakePipeline, first_load: FirstLoad
) -> None:
    first_load()  # made by the fixture, as the tests that begin with one have it
    pipeline = make_pipeline()
    info = pipeline.last_trace.last_load_info

    assert not info.has_failed_jobs
    sizes = {
        "payroll_connections": len(service_items(payroll_emulator, "payroll-connections")),
        "employer_identifiers": len(service_items(payroll_emulator, "employer-identifiers")),
        "webhook_subscriptions": len(service_items(payroll_emulator, "webhooks")),
        "update_groups": len(service_items(payroll_emulator, "update-groups")),
    }
    assert sizes["payroll_connections"] == 300
    counts = loaded(pipeline)
    assert {table: counts[table] for table in sizes} == sizes
    for table, size in sizes.items():
        assert rows(pipeline, f"SELECT count(*) FROM {table}") == [(size,)]
    assert connections_loaded(pipeline) == connections_of_service(payroll_emulator)
    # a list is a child table, in the service's order
    found = [(str(s), t) for s, t in rows(pipeline, EVENT_TYPES)]
    assert found == event_types_of_service(payroll_emulator)
    # an update group says whose it is
    employers = {e["id"] for e in service_items(payroll_emulator, "employer-identifiers")}
    groups = rows(pipeline, "SELECT DISTINCT employer_identifier_id FROM update_groups")
    assert {str(e) for (e,) in groups} <= employers
    schema = pipeline.default_schema.tables["payroll_connections"]
    assert schema["write_disposition"] == "merge"
    assert schema["columns"]["id"]["primary_key"] is True
    assert schema["columns"]["mirror_deleted_at"]["hard_delete"] is True


def test_a_reload_with_nothing_changed_loads_no_row(
    payroll_emulator: Emulator, make_pipeline: MakePipeline, first_load: FirstLoad
) -> None:
    first_load()

    pipeline = make_pipeline()  # as the next scheduled run would
    info = pipeline.run(source(payroll_emulator))

    assert info.loads_ids == []  # no load package at all
    assert loaded(pipeline) == {}
    assert connections_loaded(pipeline) == connections_of_service(payroll_emulator)


def test_the_services_changes_are_loaded_exactly(
    payroll_emulator: Emulator, make_pipeline: MakePipeline, first_load: FirstLoad
) -> None:
    emu = payroll_emulator
    first_load()
    before = connections_loaded(make_pipeline())
    churned = emu.churn("payroll-connections", inserted=3, updated=4, deleted=5)
    subscriptions = emu.churn("webhooks", inserted=1, updated=1, deleted=1)
    emu.churn("employer-identifiers", updated=2)

    pipeline = make_pipeline()
    info = pipeline.run(source(emu))

    assert not info.has_failed_jobs
    counts = loaded(pipeline)
    assert counts["payroll_connections"] == 3 + 4 + 5  # the changed items only
    assert counts["webhook_subscriptions"] == 3
    assert counts["employer_identifiers"] == 2
    assert "update_groups" not in counts
    after = connections_loaded(pipeline)
    assert after == connections_of_service(emu)
    ids = {row[0] for row in after}
    assert set(churned.inserted) <= ids
    assert not set(churned.deleted) & ids
    changed = {row for row in after - before if row[0] not in churned.inserted}
    assert {row[0] for row in changed} == set(churned.updated)
    found = [(str(s), t) for s, t in rows(pipeline, EVENT_TYPES)]
    assert found == event_types_of_service(emu)  # the deleted one's list went with it
    assert subscriptions.deleted[0] not in {s for s, _ in found}
    names = dict(rows(pipeline, "SELECT id, display_name FROM employer_identifiers"))
    service = {e["id"]: e["displayName"] for e in service_items(emu, "employer-identifiers")}
    assert {str(k): v for k, v in names.items()} == service


class Interrupted(Exception):
    pass


def test_a_load_interrupted_during_extraction_is_finished_by_the_next(
    payroll_emulator: Emulator, make_pipeline: MakePipeline, first_load: FirstLoad
) -> None:
    from dlt.pipeline.exceptions import PipelineStepFailed

    emu = payroll_emulator
    first_load()
    before = connections_loaded(make_pipeline())
    emu.churn("payroll-connections", inserted=20, updated=20, deleted=20)
    emu.churn("employer-identifiers", updated=3)

    def interrupt(page: Any) -> Any:
        raise Interrupted  # the last resource: the others were mirrored and extracted

    broken = source(emu)
    broken.update_groups.add_map(interrupt)
    emu.churn("update-groups", updated=1)  # so that update_groups has a page to fail on
    with pytest.raises(PipelineStepFailed) as failed:
        make_pipeline().run(broken)
    assert isinstance(failed.value.__cause__.__cause__, Interrupted)  # type: ignore[union-attr]
    assert connections_loaded(make_pipeline()) == before  # nothing of it was loaded

    pipeline = make_pipeline()
    pipeline.run(source(emu))

    assert loaded(pipeline) == {
        "payroll_connections": 60,
        "employer_identifiers": 3,
        "update_groups": 1,
    }
    assert connections_loaded(pipeline) == connections_of_service(emu)


@pytest.fixture
def refuse_writes(destination: Any, tmp_path: Path) -> Iterator[Any]:
    """``refuse()`` makes the destination fail every write; ``allow()`` heals it."""
    if destination.destination_name == "duckdb":
        # another process holding the database file: DuckDB lets one process write
        path = tmp_path / "warehouse.duckdb"
        holder: list[subprocess.Popen[str]] = []

        def refuse() -> None:
            script = (
                "import duckdb, sys; c = duckdb.connect(sys.argv[1]); "
                "print('ready', flush=True); sys.stdin.read()"
            )
            process = subprocess.Popen(
                [sys.executable, "-c", script, str(path)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            holder.append(process)
            assert process.stdout is not None
            assert process.stdout.readline().strip() == "ready"

        def allow() -> None:
            process = holder.pop()
            process.communicate("")  # its stdin closed: it exits, releasing the file

        yield refuse, allow
        for process in holder:
            process.kill()
            process.communicate()
        return

    import psycopg2

    url = destination.config_params["credentials"]
    database = url.rsplit("/", 1)[1]

    def alter(setting: str) -> None:
        conn = psycopg2.connect(url)
        try:
            conn.autocommit = True
            with conn.cursor() as cursor:
                cursor.execute("SET default_transaction_read_only = off")  # this session
                cursor.execute(
                    f'ALTER DATABASE "{database}" SET default_transaction_read_only = {setting}'
                )
        finally:
            conn.close()

    yield (lambda: alter("on")), (lambda: alter("off"))


# dlt itself says "pending packages first" through logging's deprecated Logger.warn
@pytest.mark.filterwarnings("ignore:The 'warn' method is deprecated:DeprecationWarning")
def test_a_load_the_destination_refused_is_finished_by_the_next(
    payroll_emulator: Emulator, make_pipeline: MakePipeline, refuse_writes: Any
) -> None:
    from dlt.pipeline.exceptions import PipelineStepFailed

    emu = payroll_emulator
    refuse, allow = refuse_writes
    pipeline = make_pipeline()
    pipeline.run(source(emu, collections=("payroll-connections",)))
    emu.churn("payroll-connections", inserted=7, updated=8, deleted=9)

    refuse()
    with pytest.raises(PipelineStepFailed) as failed:
        pipeline.run(source(emu, collections=("payroll-connections",)))
    assert failed.value.step == "load"  # extracted, normalized, then refused
    allow()

    pipeline = make_pipeline()
    info = pipeline.run(source(emu, collections=("payroll-connections",)))
    assert not info.has_failed_jobs
    assert connections_loaded(pipeline) == connections_of_service(emu)
    again = make_pipeline()
    info = again.run(source(emu, collections=("payroll-connections",)))
    assert info.loads_ids == []  # the pending load was the whole change: nothing doubled
    assert connections_loaded(again) == connections_of_service(emu)


class Said(logging.Handler):
    """The lines a logger said."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.mark.parametrize("lost", ["state database", "working directory"])
def test_a_lost_state_reloads_the_collection_exactly(
    payroll_emulator: Emulator, make_pipeline: MakePipeline, first_load: FirstLoad, lost: str
) -> None:
    emu = payroll_emulator
    first_load(("payroll-connections", "webhooks"))
    pipeline = make_pipeline()
    churned = emu.churn("payroll-connections", inserted=2, deleted=3)
    gone = emu.churn("webhooks", deleted=1).deleted
    if lost == "state database":
        for path in Path(pipeline.working_dir).glob("payroll_mirror.db*"):
            path.unlink()
    else:  # an ephemeral container: dlt restores its state from the destination
        shutil.rmtree(pipeline.working_dir)

    pipeline = make_pipeline()
    said = Said()
    logging.getLogger("dlt").addHandler(said)
    try:
        pipeline.run(source(emu, collections=("payroll-connections", "webhooks")))
    finally:
        logging.getLogger("dlt").removeHandler(said)

    # dlt applies hard_delete when merging only: a replace says nothing of it
    assert not [line for line in said.lines if "hard_delete" in line]
    assert loaded(pipeline) == {  # every item, once
        "payroll_connections": 299,
        "webhook_subscriptions": 2,
        "webhook_subscriptions__webhook_event_types": 2,
    }
    after = connections_loaded(pipeline)
    assert after == connections_of_service(emu)  # the deletions in between too
    assert not set(churned.deleted) & {row[0] for row in after}
    found = [(str(s), t) for s, t in rows(pipeline, EVENT_TYPES)]
    assert found == event_types_of_service(emu)
    assert gone[0] not in {s for s, _ in found}
    emu.churn("payroll-connections", updated=1, deleted=1)
    emu.churn("webhooks", updated=1)
    pipeline = make_pipeline()
    pipeline.run(source(emu, collections=("payroll-connections", "webhooks")))
    assert loaded(pipeline) == {  # merging again
        "payroll_connections": 2,
        "webhook_subscriptions": 1,
        "webhook_subscriptions__webhook_event_types": 1,
    }
    assert connections_loaded(pipeline) == connections_of_service(emu)
    assert [(str(s), t) for s, t in rows(pipeline, EVENT_TYPES)] == event_types_of_service(emu)


def test_the_token_is_kept_nowhere(
    payroll_emulator: Emulator, make_pipeline: MakePipeline, tmp_path: Path
) -> None:
    pipeline = make_pipeline()
    pipeline.run(source(payroll_emulator, collections=("webhooks",)))

    token = payroll_emulator.token.encode()
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert written
    assert [p for p in written if token in p.read_bytes()] == []
    assert payroll_emulator.token not in str(pipeline.last_trace)


def test_bad_arguments_are_refused_before_any_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from payroll_async.dlt import payroll_source

    with pytest.raises(InvalidArgumentError, match="collections"):
        payroll_source("http://127.0.0.1:9", "t", collections=("payroll_connections",))
    with pytest.raises(InvalidArgumentError, match="collections"):
        payroll_source("http://127.0.0.1:9", "t", collections=())
    with pytest.raises(InvalidArgumentError, match="max_deletions must be 0 or more"):
        payroll_source("http://127.0.0.1:9", "t", max_deletions=-1)
    with pytest.raises(InvalidArgumentError, match=r"max_deletions must be an integer .*, or None"):
        payroll_source("http://127.0.0.1:9", "t", max_deletions="all")  # type: ignore[arg-type]
    monkeypatch.delenv("PAYROLL_BASE_URL", raising=False)
    monkeypatch.delenv("PAYROLL_TOKEN", raising=False)
    with pytest.raises(InvalidArgumentError, match="PAYROLL_BASE_URL"):
        payroll_source(token="t")
    with pytest.raises(InvalidArgumentError, match="PAYROLL_TOKEN"):
        payroll_source("http://127.0.0.1:9")


def test_the_environment_gives_the_service(
    payroll_emulator: Emulator, make_pipeline: MakePipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PAYROLL_BASE_URL", payroll_emulator.base_url)
    monkeypatch.setenv("PAYROLL_TOKEN", payroll_emulator.token)
    from payroll_async.dlt import payroll_source

    pipeline = make_pipeline()
    pipeline.run(payroll_source(collections=("employer-identifiers",)))
    assert loaded(pipeline) == {"employer_identifiers": 50}


def test_without_the_extra_the_import_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "dlt", None)  # as if dlt were not installed
    monkeypatch.delitem(sys.modules, "payroll_async.dlt", raising=False)
    with pytest.raises(ImportError, match=r"pip install 'payroll-async\[dlt\]'"):
        importlib.import_module("payroll_async.dlt")


def test_with_resources_loads_and_mirrors_only_those(
    payroll_emulator: Emulator, make_pipeline: MakePipeline
) -> None:
    pipeline = make_pipeline()
    pipeline.run(source(payroll_emulator).with_resources("webhook_subscriptions"))
    assert loaded(pipeline) == {
        "webhook_subscriptions": 3,
        "webhook_subscriptions__webhook_event_types": 3,
    }
    state = Path(pipeline.working_dir) / "payroll_mirror.db"
    assert rows(pipeline, "SELECT count(*) FROM webhook_subscriptions") == [(3,)]
    with contextlib.closing(sqlite3.connect(state)) as db:
        assert db.execute("SELECT DISTINCT collection FROM mirror_runs").fetchall() == [
            ("webhooks",)
        ]


def test_resources_are_named_after_their_tables(payroll_emulator: Emulator) -> None:
    import dlt

    names = list(source(payroll_emulator).resources)
    assert names == [
        "payroll_connections",
        "employer_identifiers",
        "webhook_subscriptions",
        "update_groups",
    ]
    assert dlt.__version__ >= "1"


async def test_a_pipeline_run_from_a_coroutine_mirrors_on_a_thread(
    payroll_emulator: Emulator, make_pipeline: MakePipeline
) -> None:
    # dlt's run blocks; the source's mirror cannot use the caller's running loop
    pipeline = make_pipeline()
    pipeline.run(source(payroll_emulator, collections=("employer-identifiers",)))
    assert loaded(pipeline) == {"employer_identifiers": 50}


def test_an_empty_answer_deletes_nothing_at_the_destination(
    make_pipeline: MakePipeline, first_load: FirstLoad
) -> None:
    """Another account's token, a sandbox, an emptied replica: an empty listing is a proven
    walk, and without the deletion guard one run would delete all 300 rows."""
    from dlt.pipeline.exceptions import PipelineStepFailed

    from payroll_async.mirror import MirrorDeletionsError
    from payroll_async.testing import EmulatorThread

    first_load(("payroll-connections",))
    with EmulatorThread(seed=9, payroll_connections=0) as emptied:
        pipeline = make_pipeline()
        with pytest.raises(PipelineStepFailed) as failed:
            pipeline.run(source(emptied, collections=("payroll-connections",)))
        assert failed.value.step == "extract"
        chain: list[BaseException] = [failed.value]
        while (cause := chain[-1].__cause__) is not None:
            chain.append(cause)
        refused = chain[-1]  # what the docs say: the chain of causes ends in it
        assert isinstance(refused, MirrorDeletionsError)
        assert refused.__context__ is None
        assert "would mark 300 of the 300 live rows deleted" in str(refused)
        assert "max_deletions=300" in str(refused)
        assert rows(make_pipeline(), "SELECT count(*) FROM payroll_connections") == [(300,)]

        # told so, the next run deletes them
        pipeline = make_pipeline()
        pipeline.run(source(emptied, collections=("payroll-connections",), max_deletions=None))
        assert loaded(pipeline) == {"payroll_connections": 300}  # 300 tombstones
        assert rows(pipeline, "SELECT count(*) FROM payroll_connections") == [(0,)]


@pytest.mark.parametrize("answered", [0, 5])
def test_a_lost_state_and_a_short_answer_delete_nothing_at_the_destination(
    make_pipeline: MakePipeline, first_load: FirstLoad, answered: int
) -> None:
    """An ephemeral container (no state database: a reload that replaces the table) and a
    sandbox's token that lists 5 items (or none): without the guard, the reload would
    replace the 300 rows loaded with those 5."""
    from dlt.pipeline.exceptions import PipelineStepFailed

    from payroll_async.mirror import MirrorDeletionsError
    from payroll_async.testing import EmulatorThread

    first_load(("payroll-connections",))
    shutil.rmtree(make_pipeline().working_dir)
    with EmulatorThread(seed=9, payroll_connections=answered) as sandbox:
        pipeline = make_pipeline()
        with pytest.raises(PipelineStepFailed) as failed:
            pipeline.run(source(sandbox, collections=("payroll-connections",)))
        refused = failed.value
        while refused.__cause__ is not None:
            refused = refused.__cause__
        assert isinstance(refused, MirrorDeletionsError)
        assert f"would mark {300 - answered} of the 300 live rows deleted" in str(refused)
        assert rows(make_pipeline(), "SELECT count(*) FROM payroll_connections") == [(300,)]
        if answered:  # told so, the reload replaces them
            pipeline = make_pipeline()
            pipeline.run(source(sandbox, collections=("payroll-connections",), max_deletions=None))
            assert rows(pipeline, "SELECT count(*) FROM payroll_connections") == [(answered,)]
