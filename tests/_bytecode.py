"""Compiled modules for every process of a test run, kept in a cache of the run's own.

Loaded before any other plugin (``-p tests._bytecode`` in pytest's ``addopts``). Where
``PYTHONDONTWRITEBYTECODE`` is set, every process compiles each module it imports from
source, and pytest rewrites the asserts of every plugin's package (schemathesis,
hypothesis, anyio: some 560 modules) again: half of each worker's collection, and a
tenth of the start of every command a test runs as a process. Instead the bytecode goes
to ``.pytest_cache/pycache`` (``PYTHONPYCACHEPREFIX``), not next to the sources, for this
process, the xdist workers and every process a test starts (they inherit the
environment). A prefix set by the user is kept as it is.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

if sys.dont_write_bytecode and not sys.pycache_prefix:
    _PREFIX = str(Path(__file__).resolve().parents[1] / ".pytest_cache" / "pycache")
    sys.pycache_prefix = _PREFIX
    sys.dont_write_bytecode = False
    os.environ["PYTHONPYCACHEPREFIX"] = _PREFIX
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
