"""Interrupted exports made by hand, as a test needs them: a partial file and its checkpoint."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from payroll_async._http._auth import Identity
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
