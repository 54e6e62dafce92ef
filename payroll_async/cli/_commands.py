"""The command tree of ``payroll-async``: the root group with every command attached."""

from __future__ import annotations

from ._app import cli, demo_emulator
from ._emulator_cmd import emulator
from ._export_cmd import export
from ._inbox import inbox
from ._invite import invite_link
from ._listen import listen
from ._mirror import mirror
from ._webhooks import webhooks

__all__ = ["cli", "demo_emulator"]

webhooks.add_command(listen)
for command in (export, mirror, webhooks, inbox, invite_link, emulator):
    cli.add_command(command)
