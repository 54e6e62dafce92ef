"""The command run in-process, as a user types it, against an emulator (or no service)."""

from __future__ import annotations

from click.testing import CliRunner, Result

from payroll_async.cli import _commands
from payroll_async.emulator import Emulator


def invoke(emu: Emulator | None, *args: str, token: str | None = None) -> Result:
    """`payroll-async --base-url EMU --token TOKEN ARGS...` (no service options without emu)."""
    prefix = [] if emu is None else ["--base-url", emu.base_url, "--token", token or emu.token]
    return CliRunner().invoke(
        _commands.cli, [*prefix, *args], prog_name="payroll-async", catch_exceptions=False
    )
