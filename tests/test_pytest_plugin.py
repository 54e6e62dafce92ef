"""The pytest plugin, used as a user would: a test file of their own, run by pytest."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

USER_TESTS = """
import pytest

from payroll_async import RateLimitError, RetryPolicy


async def test_my_code_against_the_emulator(payroll_client):
    conns = await payroll_client.payroll_connections.list(max_items=3).collect()
    assert len(conns) == 3


@pytest.mark.payroll_emulator(seed=7, payroll_connections=40, employer_identifiers=2)
def test_the_marker_sets_the_emulator(payroll_emulator):
    assert payroll_emulator.data.payroll_connections.size == 40
    assert payroll_emulator.base_url.startswith("http://127.0.0.1:")


@pytest.mark.payroll_emulator(rate_limit=1)
async def test_faults_for_my_retry_handling(payroll_client):
    once = payroll_client.with_options(retry=RetryPolicy(max_attempts=1))
    await once.payroll_connections.list(max_items=1).collect()
    with pytest.raises(RateLimitError):
        await once.payroll_connections.list(max_items=1).collect()


def test_several_emulators(payroll_emulator_factory):
    small = payroll_emulator_factory(payroll_connections=1)
    large = payroll_emulator_factory(payroll_connections=5000)
    assert small.base_url != large.base_url
"""


def test_the_fixtures_work_in_a_users_test_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_users_code=USER_TESTS)
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
