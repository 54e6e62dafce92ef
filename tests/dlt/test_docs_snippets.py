"""docs/warehouse.md's snippets run on every destination they name (issue 40 item 3).

A block of Python that is not a checked example (tests/docs/test_readme_examples.py runs those)
is marked ``<!-- destinations: duckdb,postgres -->`` and runs here, as written and with
its ``destination=`` set to each other destination it names; each SQL block is marked
``<!-- sql: duckdb,postgres NAME -->`` and runs on what the program loaded.
"""

from __future__ import annotations

import asyncio
import collections
import re
from pathlib import Path
from typing import Any

import pytest

from payroll_async.testing import EmulatorThread
from tests._postgres import PostgresServer, query
from tests.docs.test_readme_examples import CHECKED, run_program

from .conftest import service_items

DOCS = Path(__file__).parents[2] / "docs" / "warehouse.md"
DESTINATIONS = {"duckdb", "postgres"}
_PROGRAM = re.compile(r"<!-- destinations: ([a-z,]+) -->\n```python\n(.*?)```", re.S)
_SQL = re.compile(r"<!-- sql: ([a-z,]+) ([a-z-]+) -->\n```sql\n(.*?)```", re.S)
_DESTINATION = re.compile(r'destination="([a-z]+)"')


def programs() -> list[tuple[set[str], str]]:
    return [(set(on.split(",")), code) for on, code in _PROGRAM.findall(DOCS.read_text())]


def queries() -> list[tuple[set[str], str, str]]:
    return [(set(on.split(",")), name, sql) for on, name, sql in _SQL.findall(DOCS.read_text())]


def test_every_snippet_names_the_destinations_it_runs_on() -> None:
    text = DOCS.read_text()
    assert text.count("```python") == text.count(CHECKED) + len(programs())
    assert text.count("```sql") == len(queries())
    assert programs()
    assert queries()
    for on, code in programs():
        assert on <= DESTINATIONS
        assert len(_DESTINATION.findall(code)) == 1  # the line a reader changes
    assert all(on <= DESTINATIONS for on, _, _ in queries())


def on_destination(code: str, kind: str) -> str:
    """The program with its ``destination=`` changed to ``kind``, as a reader changes it."""
    return _DESTINATION.sub(f'destination="{kind}"', code)


@pytest.mark.parametrize("kind", sorted(DESTINATIONS))
def test_the_pages_programs_and_queries_run_on(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    ran = [code for on, code in programs() if kind in on]
    assert ran
    monkeypatch.chdir(tmp_path)  # DuckDB's file goes to the current directory
    database = ""
    if kind == "postgres":
        server: PostgresServer = request.getfixturevalue("postgres_server")
        database = asyncio.run(server.create())
        # as .dlt/secrets.toml would give them (dlt requires a password; any will do here)
        monkeypatch.setenv(
            "DESTINATION__POSTGRES__CREDENTIALS", server.url(database, password="unused")
        )
    with EmulatorThread(seed=5, payroll_connections=120) as emu:
        monkeypatch.setenv("PAYROLL_BASE_URL", emu.base_url)
        monkeypatch.setenv("PAYROLL_TOKEN", emu.token)
        for code in ran:
            printed = run_program(on_destination(code, kind))
            assert "contains no failed jobs" in printed
        statuses = collections.Counter(
            c["status"] for c in service_items(emu, "payroll-connections")
        )
    answered: dict[str, list[tuple[Any, ...]]] = {}
    for on, name, sql in queries():
        if kind not in on:
            continue
        if kind == "duckdb":
            import duckdb

            with duckdb.connect(str(tmp_path / "payroll_pipeline.duckdb"), read_only=True) as db:
                answered[name] = [tuple(row) for row in db.execute(sql).fetchall()]
        else:
            answered[name] = asyncio.run(query(server.url(database), sql))
    assert dict(answered["status-counts"]) == statuses
