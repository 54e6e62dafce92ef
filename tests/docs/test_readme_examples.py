"""The README's and the guide's examples run in the suite, as a reader would run them.

Every ```python block of README.md and docs/ is one of:

- a checked example: right after the line ``<!-- checked example -->``, a complete program
  (it starts its own emulator and runs with ``asyncio.run``) followed by a plain
  ``` block with its output. The suite runs it and compares what it prints;
- a complete program (it calls ``asyncio.run``), or a pytest module right after
  ``<!-- plugin example -->`` (run by tests/test_pytest_plugin.py);
- a fragment, labelled so by its first line (``# Fragment: ...``), which says where it runs.

Every block must at least compile (fragments may ``await`` at the top level).
"""

from __future__ import annotations

import ast
import contextlib
import io
import re
import shutil
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

import payroll_async

pytestmark = pytest.mark.slow  # the documented examples run, and mypy over them

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
CHECKED = "<!-- checked example -->"
PLUGIN = "<!-- plugin example -->"
_CHECKED_BLOCK = re.compile(
    re.escape(CHECKED) + r"\n```python\n(?P<code>.*?)```\n+```\n(?P<output>.*?)```", re.DOTALL
)
_PYTHON_BLOCK = re.compile(r"(?P<before>[^\n]*)\n```python\n(?P<code>.*?)```", re.DOTALL)


def _name(page: Path) -> str:
    return str(page.relative_to(ROOT))


def checked_examples() -> list[tuple[str, str, str]]:
    found = []
    for page in PAGES:
        text = page.read_text()
        blocks = [(_name(page), m["code"], m["output"]) for m in _CHECKED_BLOCK.finditer(text)]
        assert len(blocks) == text.count(CHECKED), f"{_name(page)}: a marker without an output"
        found += blocks
    return found


def python_blocks() -> list[tuple[str, str, str]]:
    return [
        (_name(page), m["before"], m["code"])
        for page in PAGES
        for m in _PYTHON_BLOCK.finditer(page.read_text())
    ]


def run_program(code: str) -> str:
    """What a complete program prints, run as ``python3 program.py`` would run it."""
    out = io.StringIO()
    # A module of its own as __main__, so that what looks its names up there (the
    # annotations of a class the example defines, resolved by cattrs) finds them.
    module = types.ModuleType("__main__")
    main = sys.modules["__main__"]
    sys.modules["__main__"] = module
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code, "<example>", "exec"), module.__dict__)
    finally:
        sys.modules["__main__"] = main
    return out.getvalue()


def test_the_readme_and_the_guide_have_checked_examples() -> None:
    pages = {page for page, _, _ in checked_examples()}
    assert "README.md" in pages
    assert len(checked_examples()) >= 7


@pytest.mark.parametrize(
    ("page", "code", "output"),
    checked_examples(),
    ids=lambda v: v.splitlines()[0][:40] if "\n" in v else v,
)
def test_an_example_prints_what_the_page_shows(page: str, code: str, output: str) -> None:
    assert "asyncio.run(" in code, f"{page}: a checked example is a complete program"
    assert run_program(code) == output


@pytest.mark.parametrize(("page", "before", "code"), python_blocks())
def test_every_snippet_is_a_program_or_a_labelled_fragment(
    page: str, before: str, code: str
) -> None:
    label = code.lstrip().splitlines()[0] if code.strip() else ""
    fragment = label.startswith("# Fragment")
    complete = "asyncio.run(" in code or before in (CHECKED, PLUGIN)
    assert fragment or complete, f"{page}: label this snippet '# Fragment: ...'\n{code}"
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT if fragment else 0
    compile(code, page, "exec", flags=flags, dont_inherit=True)


def test_the_documented_patterns_type_check(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    snippet = tmp_path / "snippet.py"
    snippet.write_text(
        textwrap.dedent(
            """
            import contextlib
            from payroll_async import PayrollClient, PayrollConnection

            async def first_active(client: PayrollClient) -> str | None:
                paginator = client.payroll_connections.list()
                async with contextlib.aclosing(aiter(paginator)) as items:
                    async for conn in items:
                        if conn.status == "active":
                            return str(conn.id)
                return None

            async def total(client: PayrollClient) -> int:
                page = await client.payroll_connections.list()  # the first Page
                first: list[PayrollConnection] = list(page.items)
                return page.meta.total_count + len(first)
            """
        )
    )
    package = Path(payroll_async.__file__).resolve().parent.parent
    cache = tmp_path / "cache"
    if (package / ".mypy_cache").is_dir():
        # The checkout's own cache (scripts/check's; .ci/run runs it first), copied: mypy
        # analyses again only the modules changed since, as in a user's incremental run
        # (0.4 s of CPU instead of 4 s: all of the package and its dependencies).
        shutil.copytree(package / ".mypy_cache", cache)
    # mypy in a process of its own, as a user runs it: in this one it would unfreeze the
    # worker's heap (gc.unfreeze(), tests/_start.py) and leave some 750,000 objects behind
    # for every later garbage collection to walk (a second each).
    checked = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--cache-dir",
            str(cache),
            "--python-version",
            "3.10",
            str(snippet),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr + str(package)
