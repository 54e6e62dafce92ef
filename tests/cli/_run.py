"""The command run as a user types it, against an emulator: in-process, or as a process."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from payroll_async.cli import _commands
from payroll_async.emulator import Emulator

ROOT = Path(__file__).parents[2]


def invoke(emu: Emulator | None, *args: str, token: str | None = None) -> Result:
    """`payroll-async --base-url EMU --token TOKEN ARGS...` (no service options without emu)."""
    prefix = [] if emu is None else ["--base-url", emu.base_url, "--token", token or emu.token]
    return CliRunner().invoke(
        _commands.cli, [*prefix, *args], prog_name="payroll-async", catch_exceptions=False
    )


async def start(
    emu: Emulator | None, *args: str, env: dict[str, str | None] | None = None, **streams: Any
) -> asyncio.subprocess.Process:
    """The same command as a process of its own (this checkout's package), for signals.

    ``env`` sets variables over this process's (``None`` removes one); ``streams`` go to
    `asyncio.create_subprocess_exec` (``stdout=``, ``stderr=``).
    """
    prefix = [] if emu is None else ["--base-url", emu.base_url, "--token", emu.token]
    environ = {**os.environ, "PYTHONPATH": str(ROOT)}
    for name, value in (env or {}).items():
        if value is None:
            environ.pop(name, None)
        else:
            environ[name] = value
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "payroll_async.cli", *prefix, *args, env=environ, **streams
    )
