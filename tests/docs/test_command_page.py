"""docs/command.md's synopsis names every command and every option of each (the
emulator's many options end in "...", which its --help lists)."""

from __future__ import annotations

import re
from pathlib import Path

import click

from payroll_async.cli import _commands

ROOT = Path(__file__).resolve().parents[2]
GROUPS = ("webhooks", "inbox")
ELIDED = {"emulator"}  # its line ends in "...": `payroll-async emulator --help` lists the rest


def _synopsis() -> dict[str, set[str]]:
    """The words of each command's lines of the synopsis, by its path (``inbox run``)."""
    page = (ROOT / "docs" / "command.md").read_text()
    block = page.split("```\n", 2)[1]
    words: dict[str, set[str]] = {}
    current = ""
    for line in block.splitlines():
        if line.startswith("payroll-async") or (not current and line.startswith("   ")):
            continue  # the global options
        if not line.startswith("   "):  # a command's first line; deeper ones go on with it
            first = line.split()
            current = " ".join(first[:2]) if first[0] in GROUPS else first[0]
        words.setdefault(current, set()).update(re.split(r"[\s\[\]|]+", line))
    return words


def _leaves(group: click.Group, ctx: click.Context, prefix: str = "") -> dict[str, click.Command]:
    found: dict[str, click.Command] = {}
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None
        if isinstance(command, click.Group):
            found.update(_leaves(command, ctx, f"{prefix}{name} "))
        else:
            found[prefix + name] = command
    return found


def test_the_synopsis_names_every_command_and_its_options() -> None:
    synopsis = _synopsis()
    commands = _leaves(_commands.cli, click.Context(_commands.cli))
    assert sorted(synopsis) == sorted(commands)
    for path, command in commands.items():
        if path in ELIDED:
            assert "..." in synopsis[path]
            continue
        missing = [
            param.opts[-1]
            for param in command.params
            if isinstance(param, click.Option)
            and param.name != "help"
            and not synopsis[path] & {*param.opts, *param.secondary_opts}
        ]
        assert missing == [], f"{path}: {missing} not in the synopsis"
