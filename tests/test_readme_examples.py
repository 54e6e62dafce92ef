"""The README's tour runs in the suite: each example marked as checked is executed against
the demo emulator, and what it prints must be the output the README shows under it.

A checked example is a ```python block right after the line ``<!-- checked example -->``,
followed by a plain ``` block with its output. The code may ``await`` at the top level and
uses ``client`` (a PayrollClient on the emulator of ``payroll-async --emulator``).
"""

from __future__ import annotations

import contextlib
import io
import re
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

import payroll_async
from payroll_async import PayrollClient
from payroll_async.emulator import Emulator

README = Path(__file__).resolve().parent.parent / "README.md"
MARKER = "<!-- checked example -->"
_BLOCK = re.compile(
    re.escape(MARKER) + r"\n```python\n(?P<code>.*?)```\n+```\n(?P<output>.*?)```", re.DOTALL
)


def examples() -> list[tuple[str, str]]:
    found = [(m["code"], m["output"]) for m in _BLOCK.finditer(README.read_text())]
    assert len(found) == README.read_text().count(MARKER), "a marker without code and output"
    return found


def test_the_readme_has_checked_examples() -> None:
    assert len(examples()) >= 5


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def demo() -> AsyncIterator[PayrollClient]:
    # The same service as `payroll-async --emulator` (without its latency).
    async with (
        Emulator(seed=1, payroll_connections=25_000, employer_identifiers=200) as emu,
        PayrollClient(emu.base_url, emu.token) as client,
    ):
        yield client


async def run_example(code: str, client: PayrollClient) -> str:
    namespace: dict[str, Any] = {"client": client}
    exec("from payroll_async import *", namespace)
    exec("import contextlib", namespace)
    body = textwrap.indent(code, "    ")
    exec(f"async def __example():\n{body}\n    pass\n", namespace)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        await namespace["__example"]()
    return out.getvalue()


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize(("code", "output"), examples(), ids=lambda v: v.splitlines()[0][:40])
async def test_a_readme_example_prints_what_the_readme_shows(
    demo: PayrollClient, code: str, output: str
) -> None:
    assert await run_example(code, demo) == output


def test_the_immediate_cancellation_pattern_type_checks(tmp_path: Path) -> None:
    api = pytest.importorskip("mypy.api")
    snippet = tmp_path / "snippet.py"
    snippet.write_text(
        textwrap.dedent(
            """
            import contextlib
            from payroll_async import PayrollClient

            async def first_active(client: PayrollClient) -> str | None:
                paginator = client.payroll_connections.list()
                async with contextlib.aclosing(aiter(paginator)) as items:
                    async for conn in items:
                        if conn.status == "active":
                            return str(conn.id)
                return None
            """
        )
    )
    package = Path(payroll_async.__file__).resolve().parent.parent
    stdout, stderr, status = api.run(
        [
            "--strict",
            "--no-incremental",
            "--cache-dir",
            str(tmp_path / "cache"),
            "--python-version",
            "3.10",
            str(snippet),
        ]
    )
    assert status == 0, stdout + stderr + str(package)
