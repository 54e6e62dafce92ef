"""The pytest plugin, used as a user would: a test file of their own, run by pytest."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

PAGE = Path(__file__).parents[1] / "docs" / "testing.md"


def guide_example() -> str:
    """The "Testing your code" example of the guide: the suite runs what users read."""
    text = PAGE.read_text()
    start = text.index("<!-- plugin example -->")
    block = text[text.index("```python\n", start) + len("```python\n") :]
    return block[: block.index("```")]


@pytest.mark.parametrize("mode", ["strict", "auto"])
def test_the_fixtures_work_in_a_users_test_run(pytester: pytest.Pytester, mode: str) -> None:
    # A project of the user's own: no configuration but pytest-asyncio's mode (strict is
    # its default), warnings as errors.
    pytester.makepyfile(test_users_code=guide_example())
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-o", f"asyncio_mode={mode}", "-W", "error"
    )
    result.assert_outcomes(passed=4)


def test_the_fixtures_work_with_pytest_asyncios_defaults(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_users_code=guide_example())
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)


def test_the_marker_is_registered(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--markers")
    result.stdout.fnmatch_lines(["*payroll_emulator(**options)*"])
