"""The pytest plugin, used as a user would: a test file of their own, run by pytest."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

README = Path(__file__).parents[1] / "README.md"


def readme_example() -> str:
    """The README's "Testing your code" example: the suite runs what users read."""
    text = README.read_text()
    start = text.index("<!-- plugin example -->")
    block = text[text.index("```python\n", start) + len("```python\n") :]
    return block[: block.index("```")]


def test_the_fixtures_work_in_a_users_test_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_users_code=readme_example())
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "-o",
        "asyncio_mode=auto",
        "-o",
        "asyncio_default_fixture_loop_scope=function",
        "-W",
        "error",
    )
    result.assert_outcomes(passed=4)


def test_the_marker_is_registered(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--markers")
    result.stdout.fnmatch_lines(["*payroll_emulator(**options)*"])
