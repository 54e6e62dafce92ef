"""Helpers shared by the benchmark scripts: servers in their own processes, medians, tables."""

from __future__ import annotations

import contextlib
import os
import platform
import statistics
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


@contextlib.contextmanager
def process_serving(args: Sequence[str], ready_prefix: str) -> Iterator[str]:
    """Start ``args``, wait for its ``ready_prefix`` line, yield the base URL; stop it after."""
    proc = subprocess.Popen(
        [sys.executable, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith(ready_prefix):
                port = (
                    line.split()[-1] if ready_prefix == "PORT" else line.rsplit(":", 1)[1].strip()
                )
                yield f"http://127.0.0.1:{port}"
                break
        else:
            raise RuntimeError(f"server did not start: {proc.stderr.read() if proc.stderr else ''}")
    finally:
        proc.terminate()
        proc.wait(10)


TOKEN = "bench-token"


@contextlib.contextmanager
def serving_emulator(*flags: str) -> Iterator[str]:
    """The emulator in its own process with these extra flags; yields its base URL."""
    command = ["-m", "payroll_async.emulator", "--port", "0", "--token", TOKEN, *flags]
    with process_serving(command, "Payroll emulator listening on") as base:
        yield base


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def machine() -> str:
    return (
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}"
    )


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    line = "| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + " |"
    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    body = [
        "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in rows
    ]
    return "\n".join([line, rule, *body])


def report_targets(checks: Sequence[tuple[str, float, float]]) -> int:
    """Print PASS/FAIL for each (label, measured, upper limit); 1 if any failed, else 0."""
    print("\nTargets")
    failed = 0
    for label, value, limit in checks:
        ok = value <= limit
        failed += not ok
        print(f"  {'PASS' if ok else 'FAIL'}  {label} = {value:.2f} (target <= {limit:g})")
    return 1 if failed else 0
