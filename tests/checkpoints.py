"""Interrupted exports made by hand, as a test needs them: a partial file and its checkpoint."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from payroll_async._checkpoint import Checkpoint, Service, write_checkpoint

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
) -> Path:
    """An interrupted export of ``job`` to ``target``: (its partial file is returned)."""
    partial = target.with_name(name or f"{target.name}.test01.partial")
    if not done:
        partial.write_bytes(data)
        os.chmod(partial, 0o600)
    checkpoint = Checkpoint(
        job=JOB if job is None else job,
        service=Service.of(base_url, token),
        items=items,
        writer={"partial": partial.name, "bytes": len(data)},
        done=done,
    )
    write_checkpoint(target.with_name(target.name + ".checkpoint"), checkpoint)
    return partial
