"""Peak memory while streaming a large collection through ``async for``.

    python benchmarks/memory.py                      # 100,000 and 1,000,000 items

The emulator serves a million payroll connections from its own process (Link headers
off, so the SDK fetches ahead concurrently with its defaults). For each size a fresh client
process streams that many items, sampling its RSS as it goes. Targets: peak RSS under
100 MB at 1,000,000 items, and not growing with N (1M within 10 MB of 100k).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys

from _util import HERE, TOKEN, machine, report_targets, serving_emulator, table


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


async def stream(base: str, count: int) -> dict[str, object]:
    from payroll_async import PayrollClient

    samples: list[tuple[int, int]] = []
    seen = 0
    async with PayrollClient(base, TOKEN) as client:
        async for _conn in client.payroll_connections.list(max_items=count):
            seen += 1
            if seen % (count // 20) == 0:
                samples.append((seen, rss()))
    return {
        "items": seen,
        "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "samples": samples,
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--client", nargs=2, metavar=("BASE_URL", "COUNT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        print(json.dumps(asyncio.run(stream(args.client[0], int(args.client[1])))))
        return 0
    sizes = [int(s) for s in args.sizes.split(",")]
    results = {}
    with serving_emulator("--payroll-connections", str(max(sizes)), "--no-link-headers") as base:
        for size in sizes:
            out = subprocess.run(
                [sys.executable, str(HERE / "memory.py"), "--client", base, str(size)],
                check=True,
                capture_output=True,
                text=True,
            )
            results[size] = json.loads(out.stdout)
            assert results[size]["items"] == size
    print(f"Streaming payroll connections through async for; {machine()}\n")
    rows = []
    for size, r in results.items():
        samples = r["samples"]
        rows.append(
            [
                f"{size:,}",
                f"{samples[len(samples) // 10][1] / 2**20:.1f}",
                f"{samples[len(samples) // 2][1] / 2**20:.1f}",
                f"{samples[-1][1] / 2**20:.1f}",
                f"{r['peak_rss'] / 2**20:.1f}",
            ]
        )
    print(table(["items", "RSS at 10% MB", "RSS at 50% MB", "RSS at 100% MB", "peak RSS MB"], rows))
    peaks = [results[s]["peak_rss"] / 2**20 for s in sizes]
    checks = [(f"peak RSS at {sizes[-1]:,} items (MB)", peaks[-1], 100.0)]
    if len(sizes) > 1:
        checks.append(
            (f"growth from {sizes[0]:,} to {sizes[-1]:,} items (MB)", peaks[-1] - peaks[0], 10.0)
        )
    return report_targets(checks)


if __name__ == "__main__":
    raise SystemExit(main())
