"""The pytest plugin, used as a user would: a test file of their own, run by pytest."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a user's pytest run, as a process

pytest_plugins = ["pytester"]

PAGE = Path(__file__).parents[1] / "docs" / "testing.md"
# This suite's own conformance tool, not a user's: its plugin imports hypothesis and
# schemathesis (about 2 s) in every pytest started here.
NOT_A_USERS = ("-p", "no:schemathesis")


def guide_example(which: int = 0) -> str:
    """Example ``which`` of the "Testing your code" guide: the suite runs what users read
    (0: the fixtures; 1: MockTransport)."""
    text = PAGE.read_text()
    start = -1
    for _ in range(which + 1):
        start = text.index("<!-- plugin example -->", start + 1)
    block = text[text.index("```python\n", start) + len("```python\n") :]
    return block[: block.index("```")]


@pytest.mark.parametrize("mode", ["strict", "auto"])
def test_the_fixtures_work_in_a_users_test_run(pytester: pytest.Pytester, mode: str) -> None:
    # A project of the user's own, with warnings as errors. The loop scope is the setting
    # pytest-asyncio itself asks every project for (it warns while it is unset).
    pytester.makepyfile(test_users_code=guide_example())
    result = pytester.runpytest_subprocess(
        *NOT_A_USERS,
        "-p",
        "no:cacheprovider",
        "-o",
        f"asyncio_mode={mode}",
        "-o",
        "asyncio_default_fixture_loop_scope=function",
        "-W",
        "error",
    )
    result.assert_outcomes(passed=4)


def test_the_fixtures_work_with_no_setting_at_all(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_users_code=guide_example())
    result = pytester.runpytest_subprocess(*NOT_A_USERS, "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)


def test_the_mock_transport_example_runs_in_a_users_test_run(pytester: pytest.Pytester) -> None:
    example = guide_example(1)
    assert "MockTransport" in example
    pytester.makepyfile(test_users_code=example)
    result = pytester.runpytest_subprocess(
        *NOT_A_USERS,
        "-p",
        "no:cacheprovider",
        "-o",
        "asyncio_default_fixture_loop_scope=function",
        "-W",
        "error",
    )
    result.assert_outcomes(passed=1)


def test_the_marker_is_registered(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess(*NOT_A_USERS, "--markers")
    result.stdout.fnmatch_lines(["*payroll_emulator(**options)*"])
