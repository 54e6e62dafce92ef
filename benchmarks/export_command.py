"""The ``export`` command's CPU per item, against the same command of a baseline checkout.

    python benchmarks/export_command.py --baseline /tmp/export-baseline
    git archive 74e0fcc | tar -x -C /tmp/export-baseline      # a baseline, e.g. before 21.5

Two measures, each the median of ``--repeats`` interleaved runs, CPU time (user + system)
of the command's process divided by the items exported:

- ``--emulator``: ``payroll-async --emulator export payroll-connections -o FILE`` (25,000
  items), as issue 21 states it: the in-process emulator's work and the imports included.
- ``client``: the same command against an emulator in a process of its own (``--items``,
  page size 100, no latency), with the command's imports subtracted (``--help``): the
  export's own cost per item.

Without ``--baseline`` only this tree is measured.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

from _util import ROOT, TOKEN, machine, median, serving_emulator, table


def cpu_of(tree: Path, args: list[str], cwd: Path) -> float:
    """CPU seconds (user + system) of ``python -m payroll_async.cli ARGS`` from ``tree``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        [sys.executable, "-m", "payroll_async.cli", *args],
        check=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(tree)},
        capture_output=True,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline", type=Path, help="a checkout to compare with")
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    options = parser.parse_args()
    trees = {"this tree": ROOT}
    if options.baseline is not None:
        trees = {"baseline": options.baseline.resolve(), **trees}
    print(machine())
    results: dict[str, dict[str, list[float]]] = {n: {"emu": [], "client": []} for n in trees}
    with (
        tempfile.TemporaryDirectory() as folder,
        serving_emulator("--payroll-connections", str(options.items)) as base,
    ):
        work = Path(folder)
        target = str(work / "x.jsonl")
        for _ in range(options.repeats):
            for name, tree in trees.items():
                demo = ["--emulator", "export", "payroll-connections", "-o", target]
                emu = cpu_of(tree, demo, work)
                results[name]["emu"].append(emu / 25_000)
                start = cpu_of(tree, ["export", "--help"], work)
                against = ["--base-url", base, "--token", TOKEN, "export", "payroll-connections"]
                full = cpu_of(tree, [*against, "-o", target, "--page-size", "100"], work)
                results[name]["client"].append((full - start) / options.items)
    first = next(iter(trees))
    rows = []
    for name in trees:
        emu, client = median(results[name]["emu"]), median(results[name]["client"])
        rows.append(
            [
                name,
                f"{emu * 1e6:.1f}",
                f"{emu / median(results[first]['emu']):.2f}x",
                f"{client * 1e6:.2f}",
                f"{client / median(results[first]['client']):.2f}x",
            ]
        )
    print(
        table(
            ["tree", "--emulator µs/item", "vs first", "client µs/item", "vs first"],
            rows,
        )
    )


if __name__ == "__main__":
    main()
