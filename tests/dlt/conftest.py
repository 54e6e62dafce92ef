"""Real dlt pipelines for the source's tests: DuckDB (embedded) and PostgreSQL (pgserver).

Each test gets a pipeline of its own, its working directory and DuckDB file in the test's
tmp dir, or a fresh database on the session's PostgreSQL (``tests/_postgres.py``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("dlt", reason="the dlt extra is not installed")

import dlt

from payroll_async import PayrollClient, to_dict
from payroll_async.emulator import Emulator
from tests._postgres import PostgresServer

MakePipeline = Callable[[], Any]


@pytest.fixture(autouse=True)
def _quiet_dlt(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # No telemetry from tests, and dlt's own files in the test's tmp dir, not in ~/.dlt.
    monkeypatch.setenv("RUNTIME__DLTHUB_TELEMETRY", "false")
    monkeypatch.setenv("DLT_DATA_DIR", str(tmp_path / "dlt-data"))


@pytest.fixture(params=["duckdb", "postgres"])
def destination(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """Each test that takes it runs into both destinations."""
    if request.param == "duckdb":
        return dlt.destinations.duckdb(str(tmp_path / "warehouse.duckdb"))
    server: PostgresServer = request.getfixturevalue("postgres_server")
    database = asyncio.run(server.create())
    # dlt requires a password; the test server trusts loopback connections, any will do
    return dlt.destinations.postgres(credentials=server.url(database, password="unused"))


@pytest.fixture
def make_pipeline(destination: Any, tmp_path: Path) -> MakePipeline:
    """A new Pipeline object each call, all of one pipeline (one working directory)."""

    def make() -> Any:
        return dlt.pipeline(
            "payroll_test",
            destination=destination,
            dataset_name="payroll",
            pipelines_dir=str(tmp_path / "pipelines"),
        )

    return make


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
