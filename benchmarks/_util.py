"""Helpers shared by the benchmark scripts: servers in their own processes, medians, tables."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import re
import statistics
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

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


def against_export(
    runs: Mapping[str, Sequence[Mapping[str, Any]]], items: int
) -> tuple[dict[str, float], dict[str, float]]:
    """Print each kind of run's median wall against the export's, its CPU per item and
    every run's wall; return the median walls and CPU seconds by kind."""
    wall = {k: median([x["wall"] for x in v]) for k, v in runs.items()}
    cpu = {k: median([x["cpu"] for x in v]) for k, v in runs.items()}
    rows = [
        [k, f"{wall[k]:.2f}", f"{wall[k] / wall['export']:.2f}x", f"{cpu[k] / items * 1e6:.1f}"]
        for k in runs
    ]
    print(table(["run", "wall s (median)", "vs export", "CPU µs/item"], rows))
    for k, v in runs.items():
        walls = ", ".join(f"{x['wall']:.2f}" for x in v)
        print(f"{k} wall s: {walls}")
    return wall, cpu


def run_child(script: str, kind: str, base: str, target: str) -> dict[str, Any]:
    """Run ``script --child KIND BASE TARGET`` in a fresh process; the JSON of its last line."""
    out = subprocess.run(
        [sys.executable, script, "--child", kind, base, target],
        check=False,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    if out.returncode != 0:
        raise RuntimeError(f"{kind} into {target} failed:\n{out.stderr}")
    result: dict[str, Any] = json.loads(out.stdout.splitlines()[-1])
    return result


def instructions(command: Sequence[str], env: Mapping[str, str] | None = None) -> int:
    """The instructions ``command`` runs, as valgrind's callgrind counts them (the
    machine's load does not move them)."""
    out = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
    )
    found = re.search(r"Collected : (\d+)", out.stderr)
    if found is None:
        raise RuntimeError(f"no instruction count from callgrind:\n{out.stderr}")
    return int(found.group(1))
