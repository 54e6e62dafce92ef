"""Bulk export, side by side: the SDK against what a user would pick instead.

    python benchmarks/bulk_export.py                 # 100,000 items, latencies 0 and 20 ms
    python benchmarks/bulk_export.py --items 20000 --repeats 1    # a quick look

The server (pre-rendered pages) and every client run in processes of
their own; each client walks every payroll connection, page size 100, ``--repeats`` times,
and the median is reported: wall time, client CPU time per item and peak RSS, with ratios
against the SDK. The targets are then checked (exit code 1 if one is missed):

- at 20 ms latency: SDK wall <= 1.15x the concurrent floor, <= 0.25x the hand-written
  sequential loop;
- at 0 latency: SDK CPU per item <= 1.4x the dict floor (issue 27), <= 0.25x the
  generated client.

By default the server sends Link headers (as the service and the emulator do) and no
identifier repeats across items (as in most real exports); ``--no-links`` and
``--ids repeating`` give the other modes.

``--baseline DIR`` adds the SDK of another checkout (``git archive REV | tar -x -C DIR``),
run the same way, interleaved with the others: before and after in one run.

The generated client is made by openapi-python-client from the project's OpenAPI document
into a temporary folder at every run (never committed).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from _util import HERE, ROOT, machine, median, process_serving, report_targets, table

CLIENTS = ["sdk", "floor", "hand_sequential", "httpx_sequential", "generated"]
LABELS = {
    "sdk": "payroll-async (async for, defaults)",
    "baseline": "payroll-async of the baseline checkout",
    "sdk_no_otel": "payroll-async, OpenTelemetry hooks off",
    "floor": "floor: aiohttp + orjson, concurrent, dicts",
    "hand_sequential": "hand-written aiohttp + json, sequential",
    "httpx_sequential": "httpx.AsyncClient, sequential",
    "generated": "openapi-python-client, sequential",
}


def generate_client(folder: Path) -> Path:
    spec = ROOT / "payroll_async" / "emulator" / "openapi.yaml"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "openapi_python_client",
            "generate",
            "--path",
            str(spec),
            "--output-path",
            str(folder / "payroll_generated"),
            "--meta",
            "none",
        ],
        check=True,
        capture_output=True,
    )
    return folder


def run_client(
    name: str,
    base: str,
    items: int,
    concurrency: int,
    generated: Path,
    baseline: Path | None = None,
) -> dict[str, float]:
    clients = HERE / "_clients.py"
    if name == "baseline":  # the checkout's own SDK client, which imports its own package
        assert baseline is not None
        name, clients = "sdk", baseline / "benchmarks" / "_clients.py"
    out = subprocess.run(
        [
            sys.executable,
            str(clients),
            name,
            base,
            str(items),
            str(concurrency),
            str(generated),
        ],
        check=False,
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        raise RuntimeError(f"{name} at concurrency {concurrency} failed:\n{out.stderr[-3000:]}")
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--latencies", default="0,0.02", help="seconds, comma-separated")
    parser.add_argument("--clients", default=",".join(CLIENTS))
    parser.add_argument(
        "--links",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="pages carry Link rel=next headers, as the service's do (default: on)",
    )
    parser.add_argument(
        "--ids",
        choices=["unique", "repeating"],
        default="unique",
        help="unique: no identifier repeats across items (default); repeating: the "
        "emulator's data, whose employer and platform ids repeat",
    )
    parser.add_argument("--json", type=Path, help="also write the medians to this file")
    parser.add_argument("--baseline", type=Path, help="also run the SDK of this checkout")
    args = parser.parse_args()
    clients = args.clients.split(",")
    baseline = None if args.baseline is None else args.baseline.resolve()
    if baseline is not None:
        clients.insert(clients.index("sdk") + 1 if "sdk" in clients else 0, "baseline")
    results: dict[float, dict[str, dict[str, float]]] = {}
    mode = f"Link headers {'on' if args.links else 'off'}, identifiers {args.ids}"
    print(
        f"Bulk export of {args.items:,} payroll connections, page size 100, concurrency "
        f"{args.concurrency}, median of {args.repeats}; {mode}; {machine()}\n"
    )
    with tempfile.TemporaryDirectory() as tmp:
        generated = generate_client(Path(tmp)) if "generated" in clients else Path(tmp)
        for latency in (float(x) for x in args.latencies.split(",")):
            server = [
                "benchmarks/_server.py",
                "--items",
                str(args.items),
                "--latency",
                str(latency),
                *(["--links"] if args.links else []),
                *(["--unique"] if args.ids == "unique" else []),
            ]
            with process_serving(server, "PORT") as base:
                runs: dict[str, list[dict[str, float]]] = {name: [] for name in clients}
                for _ in range(args.repeats):
                    for name in clients:  # interleaved, so drift affects every client alike
                        runs[name].append(
                            run_client(
                                name, base, args.items, args.concurrency, generated, baseline
                            )
                        )
            medians = {
                name: {key: median([r[key] for r in rs]) for key in ("wall", "cpu", "peak_rss")}
                for name, rs in runs.items()
            }
            results[latency] = medians
            print_table(latency, medians, args.items)
    if args.json:
        args.json.write_text(json.dumps({str(k): v for k, v in results.items()}, indent=2))
    return check_targets(results, args.items)


def print_table(latency: float, medians: dict[str, dict[str, float]], items: int) -> None:
    sdk = medians.get("sdk")
    rows = []
    for name, m in medians.items():
        rows.append(
            [
                LABELS[name],
                f"{m['wall']:.2f}",
                f"{items / m['wall']:,.0f}",
                f"{m['cpu'] / items * 1e6:.2f}",
                f"{m['peak_rss'] / 2**20:.0f}",
                f"{m['wall'] / sdk['wall']:.2f}x" if sdk else "-",
                f"{m['cpu'] / sdk['cpu']:.2f}x" if sdk else "-",
            ]
        )
    print(f"Latency {latency * 1000:.0f} ms")
    print(
        table(
            [
                "client",
                "wall s",
                "items/s",
                "CPU µs/item",
                "peak RSS MB",
                "wall vs SDK",
                "CPU vs SDK",
            ],
            rows,
        )
    )
    print()


def check_targets(results: dict[float, dict[str, dict[str, float]]], items: int) -> int:
    checks = []
    slow = results.get(0.02, {})
    fast = results.get(0.0, {})
    if {"sdk", "floor"} <= slow.keys():
        checks.append(
            ("20 ms: SDK wall / floor wall", slow["sdk"]["wall"] / slow["floor"]["wall"], 1.15)
        )
    if {"sdk", "hand_sequential"} <= slow.keys():
        checks.append(
            (
                "20 ms: SDK wall / hand-written sequential wall",
                slow["sdk"]["wall"] / slow["hand_sequential"]["wall"],
                0.25,
            )
        )
    if {"sdk", "floor"} <= fast.keys():
        checks.append(
            (
                "0 ms: SDK CPU per item / floor CPU per item",
                fast["sdk"]["cpu"] / fast["floor"]["cpu"],
                1.4,
            )
        )
    if {"sdk", "generated"} <= fast.keys():
        checks.append(
            (
                "0 ms: SDK CPU per item / generated client CPU per item",
                fast["sdk"]["cpu"] / fast["generated"]["cpu"],
                0.25,
            )
        )
    return report_targets(checks)


if __name__ == "__main__":
    raise SystemExit(main())
