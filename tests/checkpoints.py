"""Interrupted exports as a test needs them: made by hand (a partial file and its
checkpoint), or by an export stopped at a page as a crash would stop it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from payroll_async import Page, PayrollClient
from payroll_async._http._auth import Identity
from payroll_async.emulator import Emulator
from payroll_async.export import ExportProgress, export_to_file
from payroll_async.export._checkpoint import Checkpoint, Service, write_checkpoint

JOB = {"collection": "payroll-connections", "format": "jsonl", "sort": None, "employer": None}


def forge(
    target: Path,
    *,
    base_url: str,
    token: str | None,
    job: dict[str, Any] | None = None,
    items: int = 0,
    data: bytes = b"",
    done: bool = False,
    name: str | None = None,
    make_partial: bool = True,
) -> Path:
    """An interrupted export of ``job`` to ``target``: (its partial file is returned)."""
    name = name or f"{target.name}.test01.partial"
    partial = target.parent / ("not-made" if "/" in name else name)
    if make_partial and not done and "/" not in name:
        partial.write_bytes(data)
        os.chmod(partial, 0o600)
    checkpoint = Checkpoint(
        job=JOB if job is None else job,
        service=Service.of(Identity(base_url, token=token)),
        items=items,
        writer={"partial": name, "bytes": len(data)},
        done=done,
    )
    write_checkpoint(target.with_name(target.name + ".checkpoint"), checkpoint)
    return partial


class Stop(Exception):
    """Stands for a crash in the middle of an export."""


def crash_after(pages: int) -> Any:
    """An ``on_page`` that stops the export (as a crash would) at its ``pages``-th page."""
    seen = 0

    def on_page(page: Page[Any], progress: ExportProgress) -> None:
        nonlocal seen
        seen += 1
        if seen == pages:
            raise Stop

    return on_page


async def interrupted(emu: Emulator, target: Path, *, pages: int = 2, **options: Any) -> None:
    """An export of ``emu``'s payroll connections to ``target``, 50 a page, stopped at a page."""
    async with PayrollClient(emu.base_url, emu.token) as client:
        with pytest.raises(Stop):
            await export_to_file(
                client.payroll_connections.list(page_size=50),
                target,
                on_page=crash_after(pages),
                **options,
            )
