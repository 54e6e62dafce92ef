"""Real dlt pipelines for the source's tests: DuckDB (embedded) and PostgreSQL (pgserver).

Each test gets a pipeline of its own, its working directory and DuckDB file in the test's
tmp dir, or a fresh database on the session's PostgreSQL (``tests/_postgres.py``).

A test that begins where a first load ends takes ``first_load``: the first load of the
test's emulator data into its destination is made once a session (per worker) for each
destination and set of collections, and each test gets its own copy of what it left (the
pipeline's working directory, and the DuckDB file or a PostgreSQL database made from it as
a template). A first load costs some 0.8 s of CPU; a copy, a few milliseconds.

dlt (some 0.7 s of a worker's collection) is imported by the fixtures and tests that use
it, not when the tests are collected.
"""

from __future__ import annotations

import asyncio
import importlib.util
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from payroll_async import PayrollClient, to_dict
from payroll_async.emulator import Emulator
from payroll_async.testing import EmulatorThread
from tests._postgres import PostgresServer

HAVE_DLT = importlib.util.find_spec("dlt") is not None

MakePipeline = Callable[[], Any]
FirstLoad = Callable[..., None]

PIPELINE = "payroll_test"
DATASET = "payroll"
EMULATOR = {"seed": 5, "payroll_connections": 300}
"""The emulator of every test of the source (its ``payroll_emulator`` marker)."""


def _quiet(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    # No telemetry from tests, and dlt's own files in the test's tmp dir, not in ~/.dlt.
    monkeypatch.setenv("RUNTIME__DLTHUB_TELEMETRY", "false")
    monkeypatch.setenv("DLT_DATA_DIR", str(folder / "dlt-data"))


@pytest.fixture(autouse=True)
def _quiet_dlt(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    if not HAVE_DLT:
        pytest.skip("the dlt extra is not installed")
    _quiet(monkeypatch, tmp_path)


def _destination(kind: str, request: pytest.FixtureRequest, folder: Path) -> Any:
    """A destination of ``kind``: a DuckDB file in ``folder``, or a new PostgreSQL database."""
    import dlt

    if kind == "duckdb":
        return dlt.destinations.duckdb(str(folder / "warehouse.duckdb"))
    server: PostgresServer = request.getfixturevalue("postgres_server")
    database = asyncio.run(server.create())
    # dlt requires a password; the test server trusts loopback connections, any will do
    return dlt.destinations.postgres(credentials=server.url(database, password="unused"))


def _pipeline(destination: Any, folder: Path) -> Any:
    import dlt

    return dlt.pipeline(
        PIPELINE,
        destination=destination,
        dataset_name=DATASET,
        pipelines_dir=str(folder / "pipelines"),
    )


@pytest.fixture(params=["duckdb", "postgres"])
def destination(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """Each test that takes it runs into both destinations."""
    return _destination(request.param, request, tmp_path)


@pytest.fixture
def make_pipeline(destination: Any, tmp_path: Path) -> MakePipeline:
    """A new Pipeline object each call, all of one pipeline (one working directory)."""
    return lambda: _pipeline(destination, tmp_path)


def _database(destination: Any) -> str:
    """The PostgreSQL database of a postgres destination."""
    url: str = destination.config_params["credentials"]
    return url.rsplit("/", 1)[1]


@pytest.fixture(scope="session")
def _first_loads(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Callable[[str, tuple[str, ...] | None], tuple[Path, Any]]:
    """``made(kind, collections)``: the folder and destination of the first load of the
    tests' emulator data into a destination of ``kind``, made on the first call."""
    from payroll_async.dlt import payroll_source

    made: dict[tuple[str, tuple[str, ...] | None], tuple[Path, Any]] = {}

    def first(kind: str, collections: tuple[str, ...] | None) -> tuple[Path, Any]:
        if (kind, collections) not in made:
            folder = tmp_path_factory.mktemp(f"dlt-first-load-{kind}")
            with pytest.MonkeyPatch.context() as monkeypatch:
                _quiet(monkeypatch, folder)
                destination = _destination(kind, request, folder)
                options = {} if collections is None else {"collections": collections}
                with EmulatorThread(**EMULATOR) as emu:
                    source = payroll_source(emu.base_url, emu.token, **options)
                    _pipeline(destination, folder).run(source)
            made[kind, collections] = folder, destination
        return made[kind, collections]

    return first


@pytest.fixture
def first_load(
    request: pytest.FixtureRequest,
    _first_loads: Callable[[str, tuple[str, ...] | None], tuple[Path, Any]],
    destination: Any,
    tmp_path: Path,
) -> FirstLoad:
    """``first_load(collections=None)``: the test's pipeline and destination as a first
    load of those collections (all by default) of the tests' emulator data left them: a
    copy of a first load made once (see the module's docstring). The test's emulator has
    the same data, so the next run finds nothing changed, as after its own first load."""

    def copy(collections: tuple[str, ...] | None = None) -> None:
        kind = destination.destination_name
        folder, template = _first_loads(kind, collections)
        shutil.copytree(folder / "pipelines", tmp_path / "pipelines")
        if kind == "duckdb":
            for path in folder.glob("warehouse.duckdb*"):
                shutil.copy(path, tmp_path / path.name)
            return
        server: PostgresServer = request.getfixturevalue("postgres_server")
        asyncio.run(server.replace(_database(destination), _database(template)))

    return copy


async def _items(emu: Emulator, collection: str) -> list[dict[str, Any]]:
    async with PayrollClient(emu.base_url, emu.token) as client:
        if collection == "payroll-connections":
            return [to_dict(c) for c in await client.payroll_connections.list().collect()]
        if collection == "employer-identifiers":
            return [to_dict(e) for e in await client.employer_identifiers.list().collect()]
        if collection == "webhooks":
            return [to_dict(s) for s in await client.webhooks.list().collect()]
        groups = []
        for employer in await client.employer_identifiers.list().collect():
            listing = client.employer_identifiers.update_groups.list(employer.id)
            groups += [to_dict(g) for g in await listing.collect()]
        return groups


def service_items(emu: Emulator, collection: str) -> list[dict[str, Any]]:
    """The collection's items as the service lists them now (a client of its own)."""
    return asyncio.run(_items(emu, collection))


def rows(pipeline: Any, sql: str) -> list[tuple[Any, ...]]:
    """The rows of one query on the pipeline's dataset."""
    with pipeline.sql_client() as client:
        return [tuple(row) for row in client.execute_sql(sql)]
