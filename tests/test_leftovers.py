"""The suite leaves no server behind: every PostgreSQL and redis-server a test starts is
gone when the run ends, and PostgreSQL's files in memory with it (a run of a few such tests
in a child pytest, then a look at what is still running or kept under its temp
directories)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a child pytest that starts PostgreSQL and redis-server

psutil = pytest.importorskip("psutil")

ROOT = Path(__file__).parents[1]


def _under(proc: object, folder: str) -> bool:
    try:
        cwd = proc.cwd()  # type: ignore[attr-defined]
        cmdline = " ".join(proc.cmdline())  # type: ignore[attr-defined]
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return False
    return cwd.startswith(folder) or folder in cmdline


@pytest.fixture
def own_temp() -> Iterator[Path]:
    """A temp directory of this test's outside pytest's own: any pytest that starts takes
    back the traversal of /tmp/pytest-of-<user> that PostgreSQL's user needs."""
    folder = Path(tempfile.mkdtemp(prefix="payroll-leftovers-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_servers_started_by_tests_are_gone_when_the_run_ends(own_temp: Path) -> None:
    base = own_temp / "run"
    memory = own_temp / "memory"  # where the run's PostgreSQL keeps its files (/dev/shm)
    memory.mkdir()
    unused = memory.stat().st_mtime_ns
    selection = [
        "tests/mirror/test_mirror.py::test_an_unchanged_rerun_writes_no_item_row_and_records_nothing",
        "tests/fleet/test_redis_gate.py::test_keys_start_with_the_key_expire_and_hold_no_secret",
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PAYROLL_TEST_MEMORY": str(memory)}
    env.pop("PYTEST_XDIST_WORKER", None)
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-n",
            "0",  # in this process: what it starts is its own
            "-x",
            f"--basetemp={base}",
            "-k",
            "postgresql or keys_start",
            *selection,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "\n2 passed" in run.stdout, run.stdout[-2000:]  # PostgreSQL and redis-server both ran
    # PostgreSQL kept its files in the memory folder (made there, then removed: the
    # folder's time moved; the check can fail) ...
    assert memory.stat().st_mtime_ns != unused
    # ... and nothing of the run is kept there or runs any more.
    assert list(memory.iterdir()) == []
    left = [p for p in psutil.process_iter() if _under(p, str(own_temp))]
    assert left == [], [(p.pid, p.name()) for p in left]
