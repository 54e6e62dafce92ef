"""The suite as a contributor runs it (CONTRIBUTING.md): one file alone with plain pytest,
with or without pytest-xdist; the inner loop (``-m "not slow"``) leaves out every test
that starts a real server."""

from __future__ import annotations

import contextlib
import gc
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

import pytest

from tests import _start

pytestmark = pytest.mark.slow  # child pytest runs

ROOT = Path(__file__).parents[1]
ONE_FILE = "tests/_core/test_errors.py"  # small, and writes nothing (no hypothesis database)
ONE_MODULE = "tests/mirror/test_mirror.py"  # with tests on PostgreSQL and on SQLite


def _start_pytest(*args: str, workers: str | None = None) -> subprocess.Popen[str]:
    """``python -m pytest ARGS`` in the checkout, as a contributor types it (no cache),
    started; ``workers``: the ``PYTEST_XDIST_AUTO_NUM_WORKERS`` of the run."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("PYTEST_XDIST", "PYTEST_ADDOPTS"))
    }
    if workers is not None:
        env["PYTEST_XDIST_AUTO_NUM_WORKERS"] = workers
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _ended(run: subprocess.Popen[str]) -> subprocess.CompletedProcess[str]:
    """The run of ``_start_pytest``, once it has ended (300 s at most: not a hang)."""
    try:
        out, err = run.communicate(timeout=300)
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
    return subprocess.CompletedProcess(run.args, run.returncode, out, err)


def _kill_running(processes: Iterable[subprocess.Popen[str]]) -> None:
    for process in processes:
        if process.poll() is None:
            process.kill()


def _pytest(*args: str, workers: str | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m pytest ARGS`` run to its end (see ``_start_pytest``)."""
    return _ended(_start_pytest(*args, workers=workers))


def test_one_file_runs_alone_without_xdist() -> None:
    run = _pytest("-p", "no:xdist", ONE_FILE)
    assert run.returncode == 0, run.stdout + run.stderr
    assert " passed" in run.stdout
    assert "workers" not in run.stdout


def test_one_file_runs_on_every_core_with_xdist() -> None:
    # What addopts did before: the -n auto moved to tests/_start.py is still there. One
    # worker (the count -n auto takes from PYTEST_XDIST_AUTO_NUM_WORKERS, as
    # tests/conftest.py lets it): each more would only collect again what one runs.
    run = _pytest(ONE_FILE, workers="1")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "created: 1/1 worker" in run.stdout  # -n auto, added by tests/_start.py


def test_the_inner_loop_leaves_out_the_tests_that_start_servers() -> None:
    collected = {}
    with contextlib.ExitStack() as started:  # the two at once; each closed and waited for
        runs = {
            marks: started.enter_context(
                _start_pytest("-p", "no:xdist", "-q", "--co", "-m", marks, ONE_MODULE)
            )
            for marks in ("slow", "not slow")
        }
        started.callback(_kill_running, runs.values())  # first: the other, if one failed
        for marks, process in runs.items():
            run = _ended(process)
            assert run.returncode == 0, run.stdout + run.stderr
            collected[marks] = [line for line in run.stdout.splitlines() if "::" in line]
    assert collected["slow"]
    assert all("postgresql" in test for test in collected["slow"])
    assert collected["not slow"]
    assert not any("postgresql" in test for test in collected["not slow"])


def test_the_runs_temp_files_are_in_memory(tmp_path: Path) -> None:
    # tests/_start.py: tmp_path and every temp file in /dev/shm, not on a shared disk
    folder = _start.memory()
    if folder is None:
        pytest.skip("no folder in memory here (/dev/shm, or PAYROLL_TEST_MEMORY)")
    if os.environ.get("TMPDIR", folder) != folder:
        pytest.skip("TMPDIR set by the user: kept as it is")
    assert os.environ["TMPDIR"] == folder  # the processes a test starts too
    assert tmp_path.resolve().is_relative_to(Path(folder).resolve())
    assert Path(tempfile.gettempdir()).resolve() == Path(folder).resolve()


def test_what_outlives_a_test_after_a_full_collection_is_frozen(
    request: pytest.FixtureRequest,
) -> None:
    # tests/_start.py: later full collections do not walk the long-lived heap again
    assert "_freeze_what_outlives_tests" in request.fixturenames  # every test's teardown
    kept = [["long-lived"]]  # a container of containers: tracked by the collector
    gc.collect()  # a full collection: what it leaves is long-lived
    _start.freeze_survivors()  # what this test's teardown does
    assert not any(found is kept for found in gc.get_objects())  # frozen: out of the way
