"""The dlt source into DuckDB against the export and the mirror, same server, same run.

    python benchmarks/dlt_load.py                    # issue 31's targets (100,000 items, 20 ms)
    python benchmarks/dlt_load.py --items 10000      # a quick look

The page server runs in its own process (``_server.py``: payroll connections, 20 ms
latency, Link headers, every id unique). Each measurement is a fresh client process,
timing wall clock and CPU (user + system) after its imports, interleaved in each repeat:

- ``export``: the SDK's export to a JSON Lines file (the baseline);
- ``dlt load``: ``pipeline.run(payroll_source(...))`` into a new DuckDB file, a new
  pipeline (the mirror into its state database, then dlt's extract, normalize and load);
- ``mirror``: the mirror into a new SQLite file, then ``re-mirror`` with nothing changed;
- ``dlt re-load``: the same pipeline again with nothing changed (rows loaded must be 0).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import _util
from _util import HERE, TOKEN, against_export, machine, process_serving, report_targets


def dlt_child(base: str, folder: str) -> dict[str, Any]:
    os.environ["RUNTIME__DLTHUB_TELEMETRY"] = "false"
    import dlt

    from payroll_async.dlt import payroll_source

    cpu0 = time.process_time()
    t0 = time.perf_counter()
    pipeline = dlt.pipeline(
        "payroll_bench",
        destination=dlt.destinations.duckdb(f"{folder}/warehouse.duckdb"),
        dataset_name="payroll",
        pipelines_dir=f"{folder}/pipelines",
    )
    info = pipeline.run(payroll_source(base, TOKEN, collections=("payroll-connections",)))
    wall = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    normalized = pipeline.last_trace.last_normalize_info
    counts = dict(normalized.row_counts) if normalized is not None else {}
    with pipeline.sql_client() as sql:
        [(rows,)] = sql.execute_sql("SELECT count(*) FROM payroll_connections")
    return {
        "wall": wall,
        "cpu": cpu,
        "loaded": counts.get("payroll_connections", 0),
        "packages": len(info.loads_ids),
        "rows": rows,
    }


async def client_child(kind: str, base: str, target: str) -> dict[str, Any]:
    from payroll_async import PayrollClient
    from payroll_async.export import export_to_file
    from payroll_async.mirror import mirror

    cpu0 = time.process_time()
    t0 = time.perf_counter()
    async with PayrollClient(base, TOKEN) as client:
        if kind == "export":
            items = (await export_to_file(client.payroll_connections.list(), target)).items
        else:
            items = (await mirror(client, "payroll-connections", into=target)).items
    return {"wall": time.perf_counter() - t0, "cpu": time.process_time() - cpu0, "items": items}


def run_child(kind: str, base: str, target: str) -> dict[str, Any]:
    return _util.run_child(__file__, kind, base, target)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--latency", type=float, default=0.02)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child", nargs=3, metavar=("KIND", "BASE", "TARGET"))
    args = parser.parse_args()
    if args.child:
        kind, base, target = args.child
        if kind == "dlt":
            print(json.dumps(dlt_child(base, target)))
        else:
            print(json.dumps(asyncio.run(client_child(kind, base, target))))
        return 0
    folder = Path(tempfile.mkdtemp(prefix="dlt-bench-"))
    try:
        return compare(args, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def compare(args: argparse.Namespace, folder: Path) -> int:
    print(f"dlt source vs export and mirror, {args.items:,} payroll connections, ", end="")
    print(f"{args.latency * 1000:g} ms\n{machine()}")
    flags = ["--items", str(args.items), "--latency", str(args.latency), "--links", "--unique"]
    kinds = ("export", "dlt load", "mirror", "re-mirror", "dlt re-load")
    runs: dict[str, list[dict[str, Any]]] = {k: [] for k in kinds}
    with process_serving([str(HERE / "_server.py"), *flags, "--overlap"], "PORT") as base:
        for r in range(args.repeats):
            runs["export"].append(run_child("export", base, str(folder / f"e{r}.jsonl")))
            pipeline = folder / f"p{r}"
            pipeline.mkdir()
            runs["dlt load"].append(run_child("dlt", base, str(pipeline)))
            url = f"sqlite:///{folder / f'm{r}.db'}"
            runs["mirror"].append(run_child("mirror", base, url))
            runs["re-mirror"].append(run_child("mirror", base, url))
            runs["dlt re-load"].append(run_child("dlt", base, str(pipeline)))
    wall, _cpu = against_export(runs, args.items)
    first = runs["dlt load"]
    again = runs["dlt re-load"]
    print(f"dlt load: rows loaded {[x['loaded'] for x in first]}, in table {first[0]['rows']:,}")
    print(f"dlt re-load: rows loaded {[x['loaded'] for x in again]}, packages ", end="")
    print(f"{[x['packages'] for x in again]}")
    complete = all(x["loaded"] == x["rows"] == args.items for x in first)
    reloaded = max(x["loaded"] for x in again) + max(x["packages"] for x in again)
    return report_targets(
        [
            ("dlt first load into DuckDB / export, wall", wall["dlt load"] / wall["export"], 2.0),
            (
                "dlt re-load unchanged / re-mirror, wall",
                wall["dlt re-load"] / wall["re-mirror"],
                1.3,
            ),
            ("rows (and load packages) of the unchanged re-load", float(reloaded), 0),
            ("first load short of the service's items", 0.0 if complete else 1.0, 0),
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
