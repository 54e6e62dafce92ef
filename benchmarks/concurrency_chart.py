"""Items per second against concurrency, for the SDK and the floor, at 20 ms latency.

    python benchmarks/concurrency_chart.py            # writes benchmarks/concurrency.png

Each point is the median of ``--repeats`` runs of the bulk-export clients (see
bulk_export.py) over ``--items`` payroll connections, page size 100.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from _util import HERE, machine, median, process_serving, table
from bulk_export import run_client

LEVELS = [1, 2, 4, 8, 16, 32, 64]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--latency", type=float, default=0.02)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--output", type=Path, default=HERE / "concurrency.png")
    args = parser.parse_args()
    rates: dict[str, list[float]] = {"sdk": [], "floor": []}
    server = [
        "benchmarks/_server.py",
        "--items",
        str(args.items),
        "--latency",
        str(args.latency),
        "--links",  # as the service and the emulator send
        "--unique",
    ]
    with tempfile.TemporaryDirectory() as tmp, process_serving(server, "PORT") as base:
        for level in LEVELS:
            for name in rates:
                walls = [
                    run_client(name, base, args.items, level, Path(tmp))["wall"]
                    for _ in range(args.repeats)
                ]
                rates[name].append(args.items / median(walls))
    rows = [
        [
            str(level),
            f"{rates['sdk'][i]:,.0f}",
            f"{rates['floor'][i]:,.0f}",
            f"{rates['sdk'][i] / rates['floor'][i]:.2f}",
        ]
        for i, level in enumerate(LEVELS)
    ]
    print(f"Items/s against concurrency at {args.latency * 1000:.0f} ms latency; {machine()}\n")
    print(table(["concurrency", "SDK items/s", "floor items/s", "SDK / floor"], rows))
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ax.plot(LEVELS, rates["sdk"], marker="o", label="payroll-async (typed attrs objects)")
    ax.plot(
        LEVELS, rates["floor"], marker="s", linestyle="--", label="floor: aiohttp + orjson, dicts"
    )
    ax.set_xscale("log", base=2)
    ax.set_xticks(LEVELS, [str(x) for x in LEVELS])
    ax.set_xlabel("concurrency (pages in flight)")
    ax.set_ylabel("items per second")
    ax.set_title(
        f"Bulk export, {args.items:,} items, page 100, {args.latency * 1000:.0f} ms latency"
    )
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.output, dpi=110)
    print(f"\nwrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
