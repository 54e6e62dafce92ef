"""How each process of a test run starts: on every core when pytest-xdist is there,
compiled modules kept, and collection without the cyclic garbage collector.

Loaded before any other plugin (``-p tests._start`` in pytest's ``addopts``).

Every core: ``-n auto --dist worksteal`` is added to the command (as pytest's guide adds
``-n`` from a plugin, in ``pytest_load_initial_conftests``) when pytest-xdist is loaded and
the command says nothing of workers itself. Not in ``addopts``: there a run without xdist
(``-p no:xdist``, or not installed) would stop at an unknown ``-n``, and ``-n 0``,
``-n 2`` or ``--dist load`` of a contributor would have to undo it.

Bytecode: where ``PYTHONDONTWRITEBYTECODE`` is set, every process compiles each module it
imports from source, and pytest rewrites the asserts of every plugin's package
(schemathesis, hypothesis, anyio: some 560 modules) again: half of each worker's
collection, and a tenth of the start of every command a test runs as a process. Instead
the bytecode goes to ``.pytest_cache/pycache`` (``PYTHONPYCACHEPREFIX``), not next to the
sources, for this process, the xdist workers and every process a test starts (they
inherit the environment). A prefix set by the user is kept as it is.

The garbage collector: loading the plugins and collecting the tests imports some 2,500
modules, whose objects mostly live as long as the process. The cyclic collector would
walk that growing heap again and again (two fifths of a worker's collection). It is off
until the tests are collected; then one collection frees what the imports left behind,
the survivors are moved out of the collector's way (``gc.freeze()``: later full
collections do not walk them again), and the tests run with it on, as usual. The tests
grow the heap again (dlt, SQLAlchemy's dialects, DuckDB: modules and caches that stay):
a sixth of a worker's CPU went to full collections walking it. So once one has run, the
teardown of the test in hand collects and freezes what is left, and the next full
collections walk only what came after.

Certificates: importing aiohttp makes two SSL contexts, each loading the system's CA
bundle (``SSL_CERT_FILE``, about 290 certificates here: 35 ms of CPU each), a fifth of
the start of every command, fleet worker or receiver a test runs as a process. Every
server of the suite is plain HTTP on loopback, so no test needs one: this process, the
workers and every process a test starts (they inherit the environment) load an empty
bundle (``os.devnull``) instead. A TLS connection made by a test would fail to verify,
not pass unverified.

Temp dirs in memory: pytest's ``tmp_path`` folders, and every temp file of this process, the
workers and the processes a test starts (they inherit ``TMPDIR``), are made under
``/dev/shm`` (``PAYROLL_TEST_MEMORY`` names another folder; empty: the system's temp dir),
as the PostgreSQL of ``tests/_postgres.py`` keeps its files. A dlt pipeline makes and
removes some 500 folders and files a run, SQLite and the exports create, rename and sync
theirs: on a disk shared with other work each ``rmdir`` took milliseconds, a fifth of the
dlt tests' time. Nothing a test writes needs to outlive the run; a ``TMPDIR`` set by the
user, or a ``--basetemp``, is kept as it is.
"""

from __future__ import annotations

import gc
import os
import sys
import tempfile
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

if sys.dont_write_bytecode and not sys.pycache_prefix:
    _PREFIX = str(Path(__file__).resolve().parents[1] / ".pytest_cache" / "pycache")
    sys.pycache_prefix = _PREFIX
    sys.dont_write_bytecode = False
    os.environ["PYTHONPYCACHEPREFIX"] = _PREFIX
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

os.environ["SSL_CERT_FILE"] = os.devnull


def memory() -> str | None:
    """The folder in memory for the run's files (see the module's docstring), or None."""
    folder = os.environ.get("PAYROLL_TEST_MEMORY", "/dev/shm")
    if folder and os.path.isdir(folder) and os.access(folder, os.W_OK | os.X_OK):
        return folder
    return None


if "TMPDIR" not in os.environ and (_MEMORY := memory()) is not None:
    os.environ["TMPDIR"] = _MEMORY
    tempfile.tempdir = None  # gettempdir() looks again, and finds TMPDIR

_TURNED_OFF = gc.isenabled()  # one that a program turned off itself stays off
if _TURNED_OFF:
    gc.disable()


def pytest_load_initial_conftests(early_config: pytest.Config, args: list[str]) -> None:
    given = early_config.known_args_namespace
    if (
        early_config.pluginmanager.has_plugin("xdist")
        and "PYTEST_XDIST_WORKER" not in os.environ  # a worker is told by its controller
        and getattr(given, "numprocesses", None) is None
        and getattr(given, "dist", "no") == "no"
    ):
        args[:] = ["-n", "auto", "--dist", "worksteal", *args]


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Generator[None, object, object]:
    try:
        return (yield)
    finally:
        if _TURNED_OFF:
            gc.collect()
            gc.freeze()
            gc.enable()
            gc.callbacks.append(_on_collection)


_grown = False
"""A full collection ran since the heap was last frozen: what is left is long-lived."""


def _on_collection(phase: str, info: dict[str, int]) -> None:
    global _grown
    if phase == "stop" and info["generation"] == 2:
        _grown = True


@pytest.fixture(autouse=True)
def _freeze_what_outlives_tests() -> Iterator[None]:
    """Set up before, and torn down after, every other fixture of a test's own: once a full
    collection has run (the heap grew by a quarter: modules imported by tests, caches), one
    more frees the test's garbage and the survivors are frozen too, so that later full
    collections do not walk them again. Inside the test's teardown: an object of the test
    that its collection finalizes (an unclosed socket) is reported against that test."""
    yield
    freeze_survivors()


def freeze_survivors() -> None:
    """If a full collection ran since the last freeze: collect, and freeze what is left."""
    global _grown
    if _grown and _TURNED_OFF:
        gc.collect()
        gc.freeze()
        _grown = False
