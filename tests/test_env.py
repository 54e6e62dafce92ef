"""PAYROLL_LOG turns the SDK's logging on without code, as OPENAI_LOG and STRIPE_LOG do."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "tok_secret_never_logged_1234"

PROGRAM = textwrap.dedent(
    f"""
    import asyncio

    from payroll_async import PayrollClient, RetryPolicy
    from payroll_async.emulator import Emulator


    async def main() -> None:
        async with Emulator(token={TOKEN!r}) as emu:
            retry = RetryPolicy(max_attempts=1)
            async with PayrollClient(emu.base_url, emu.token, retry=retry) as client:
                await client.payroll_connections.list(max_items=1).collect()
            async with PayrollClient(emu.base_url, "wrong-" + emu.token, retry=retry) as bad:
                try:
                    await bad.payroll_connections.list(max_items=1).collect()
                except Exception as exc:
                    print(type(exc).__name__)


    asyncio.run(main())
    """
)


def run(log: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAYROLL_")}
    env["PYTHONPATH"] = str(ROOT)
    if log is not None:
        env["PAYROLL_LOG"] = log
    return subprocess.run(
        [sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, timeout=60
    )


def test_debug_logs_each_attempt_on_stderr_without_the_token() -> None:
    result = run("debug")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "AuthenticationError\n"
    assert "payroll_async DEBUG] GET /v1/payroll-connections" in result.stderr
    assert "-> 200" in result.stderr
    assert "-> 401" in result.stderr
    assert TOKEN not in result.stderr


@pytest.mark.parametrize("value", ["info", "INFO"])
def test_info_leaves_out_the_debug_records(value: str) -> None:
    result = run(value)
    assert result.returncode == 0, result.stderr
    assert "DEBUG" not in result.stderr


@pytest.mark.parametrize("value", [None, "", "verbose"])
def test_without_a_known_level_the_sdk_logs_nothing(value: str | None) -> None:
    result = run(value)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
