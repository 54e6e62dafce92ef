"""The inbox's page (docs/webhooks.md) holds a complete program (receiver, worker in a
FastAPI lifespan, closing, a drain); run as a user runs it, in a process of its own with
Python's development mode, it prints what the page shows and leaves nothing unclosed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.test_readme_examples import checked_examples

ROOT = Path(__file__).parents[2]
pytestmark = pytest.mark.slow  # a program with a server, an emulator and a database


def _inbox_programs() -> list[tuple[str, str]]:
    return [
        (code, output)
        for page, code, output in checked_examples()
        if page == "docs/webhooks.md" and "from payroll_async.inbox import Inbox" in code
    ]


def test_the_page_has_a_complete_inbox_program_that_closes_and_drains() -> None:
    (code, _), *_ = _inbox_programs()
    assert "async with inbox:" in code
    assert "lifespan" in code
    assert "drain=True" in code


@pytest.mark.parametrize(("code", "output"), _inbox_programs())
def test_each_inbox_program_prints_what_the_page_shows_and_leaves_nothing_open(
    code: str, output: str, tmp_path: Path
) -> None:
    program = tmp_path / "program.py"
    program.write_text(code)
    done = subprocess.run(
        [sys.executable, "-X", "dev", "-W", "error::ResourceWarning", str(program)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONASYNCIODEBUG": "0"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == output
    assert "ResourceWarning" not in done.stderr
    assert "unclosed" not in done.stderr.lower()
    assert list(tmp_path.iterdir()) == [program]  # no database left in the working folder
