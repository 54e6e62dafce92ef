"""The command tree of ``payroll-async``: the root group and where each command lives.

Each command's module is imported only when that command is named (``LazyGroup``), so
that a command starts without the others' imports.
"""

from __future__ import annotations

from ._app import cli
from ._demo import demo_emulator

__all__ = ["cli", "demo_emulator"]

cli.lazy.update(
    {
        "export": "payroll_async.cli._export_cmd:export",
        "mirror": "payroll_async.cli._mirror:mirror",
        "webhooks": "payroll_async.cli._webhooks:webhooks",
        "inbox": "payroll_async.cli._inbox:inbox",
        "invite-link": "payroll_async.cli._invite:invite_link",
        "emulator": "payroll_async.cli._emulator_cmd:emulator",
    }
)
