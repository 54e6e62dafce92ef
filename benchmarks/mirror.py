"""The mirror against the export, same server, same run.

    python benchmarks/mirror.py                       # the targets of issue 43 (5 pairs)
    python benchmarks/mirror.py --items 20000 --no-million    # a quick look
    python benchmarks/mirror.py --only-postgres               # export vs PostgreSQL only

The page server runs in its own process (100,000 payroll connections, 20 ms latency, Link
headers on, every id unique; ``_server.py``). Each measurement runs in a fresh client
process, timing wall clock and CPU (user + system) of that process:

- ``export``: the SDK's export to a JSON Lines file (the baseline);
- ``mirror``: into a new SQLite file; again with nothing changed; into PostgreSQL (the
  ``pgserver`` wheel's server, a fresh database, ``synchronous_commit`` as the server
  says: on);
- ``bare``: the rows that first mirror wrote (item rows and changes), upserted into a new
  file by bare ``sqlite3`` in the same statements: the floor SQLite itself sets;
- after 1% churn (the emulator in its own process, churned between two runs): the run's
  ``mirror_changes`` must hold exactly the churned ids;
- 1,000,000 connections into SQLite (no latency), sampling the client's RSS.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import _util
from _util import HERE, ROOT, TOKEN, machine, median, process_serving, report_targets, table


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


async def child(kind: str, base: str, target: str) -> dict[str, Any]:
    from payroll_async import PayrollClient
    from payroll_async.export import export_to_file
    from payroll_async.mirror import mirror

    peak = rss()
    stop = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not stop.wait(0.05):
            peak = max(peak, rss())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    async with PayrollClient(base, TOKEN) as client:
        if kind == "export":
            result = await export_to_file(client.payroll_connections.list(), target)
            info: dict[str, Any] = {"items": result.items}
        else:
            done = await mirror(client, "payroll-connections", into=target)
            info = {
                "items": done.items,
                "inserted": done.inserted,
                "updated": done.updated,
                "deleted": done.deleted,
                "run_id": str(done.run_id),
                "complete": done.complete,
            }
    wall = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    stop.set()
    return {**info, "wall": wall, "cpu": cpu, "peak_rss": peak}


def bare_upsert(source: str, target: str) -> dict[str, Any]:
    """The floor SQLite sets: the rows a first mirror wrote (its item rows and its changes),
    upserted again into a new file by bare ``sqlite3`` (same DDL, same pragmas, same
    multi-row statements of 250 rows, a commit as often as the mirror's: every
    ``COMMIT_ROWS`` items, and the close, whose last checkpoint copies the WAL into the
    file as the mirror's close does): wall and CPU of that alone."""
    import sqlite3

    from payroll_async._sql import MIRROR_PRAGMAS
    from payroll_async.mirror._store import COMMIT_ROWS

    every = COMMIT_ROWS

    src = sqlite3.connect(source.removeprefix("sqlite:///"))
    ddl = [
        sql
        for (sql,) in src.execute(
            "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND "
            "tbl_name IN ('payroll_connections', 'mirror_changes')"
        )
    ]
    items = src.execute("SELECT * FROM payroll_connections").fetchall()
    changes = src.execute(
        "SELECT run_id, collection, item_id, change, at, before, after FROM mirror_changes"
    ).fetchall()
    src.close()
    db = sqlite3.connect(target, isolation_level=None)
    for pragma in MIRROR_PRAGMAS:
        db.execute(f"PRAGMA {pragma}")
    for sql in ddl:
        db.execute(sql)
    columns = len(items[0])
    names = [r[1] for r in db.execute("PRAGMA table_info(payroll_connections)")]
    kept = {"id", "mirror_first_seen_at"}
    update = ", ".join(f"{n} = excluded.{n}" for n in names if n not in kept)

    def many(head: str, width: int, count: int, tail: str = "") -> str:
        row = f"({', '.join('?' * width)})"
        return f"{head} VALUES {', '.join([row] * count)}{tail}"

    cpu0 = time.process_time()
    t0 = time.perf_counter()
    for start in range(0, len(items), every):
        db.execute("BEGIN IMMEDIATE")
        for part in range(start, min(start + every, len(items)), 250):
            chunk = items[part : part + 250]
            db.execute(
                many(
                    "INSERT INTO payroll_connections",
                    columns,
                    len(chunk),
                    f" ON CONFLICT (id) DO UPDATE SET {update}",
                ),
                [v for row in chunk for v in row],
            )
            rows = changes[part : part + 250]
            db.execute(
                many(
                    "INSERT INTO mirror_changes "
                    "(run_id, collection, item_id, change, at, before, after)",
                    7,
                    len(rows),
                ),
                [v for row in rows for v in row],
            )
        db.execute("COMMIT")
    db.close()  # its last checkpoint (the WAL into the file), as the mirror's run closes
    wall = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    return {"items": len(items), "wall": wall, "cpu": cpu, "peak_rss": rss()}


def run_child(kind: str, base: str, target: str) -> dict[str, Any]:
    return _util.run_child(__file__, kind, base, target)


def table_dump(url: str, table_name: str) -> list[tuple[Any, ...]]:
    """Every row of a table, to tell whether a run wrote any."""
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    with engine.connect() as conn:
        rows = [tuple(r) for r in conn.execute(text(f"SELECT * FROM {table_name} ORDER BY 1"))]
    engine.dispose()
    return rows


def changes(url: str, run_id: str) -> dict[str, set[str]]:
    import uuid

    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    found: dict[str, set[str]] = {"inserted": set(), "updated": set(), "deleted": set()}
    with engine.connect() as conn:
        key = run_id if url.startswith("postgresql") else str(uuid.UUID(run_id))
        for change, item in conn.execute(
            text("SELECT change, item_id FROM mirror_changes WHERE run_id = :r"), {"r": key}
        ):
            found[change].add(str(uuid.UUID(str(item))))
    engine.dispose()
    return found


def postgres(folder: Path) -> tuple[Any, str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver
    server = pgserver.get_server(folder / "pg", cleanup_mode="stop")
    server.psql("CREATE DATABASE bench;")
    uri = server.get_uri("bench")  # postgresql://postgres:@/bench?host=SOCKETDIR
    return server, uri


CHURN_SERVER = """
import asyncio, json, sys
from payroll_async.emulator import Emulator
async def main():
    async with Emulator(seed=1, payroll_connections=int(sys.argv[1]), latency=0.02,
                        token=sys.argv[2], port=0) as emu:
        print("PORT", emu.port, flush=True)
        loop = asyncio.get_running_loop()
        while line := await loop.run_in_executor(None, sys.stdin.readline):
            n = int(line)
            churn = emu.churn("payroll-connections", inserted=n, updated=n, deleted=n)
            print(json.dumps([churn.inserted, churn.updated, churn.deleted]), flush=True)
asyncio.run(main())
"""


def churn_check(items: int, folder: Path) -> tuple[bool, str]:
    """Mirror, churn 1% (a third each new, updated, deleted), mirror: exactly those ids?"""
    proc = subprocess.Popen(
        [sys.executable, "-c", CHURN_SERVER, str(items), TOKEN],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert proc.stdout is not None
        assert proc.stdin is not None
        port = proc.stdout.readline().split()[1]
        base = f"http://127.0.0.1:{port}"
        url = f"sqlite:///{folder / 'churn.db'}"
        run_child("mirror", base, url)
        proc.stdin.write(f"{items // 300}\n")
        proc.stdin.flush()
        inserted, updated, deleted = json.loads(proc.stdout.readline())
        second = run_child("mirror", base, url)
        got = changes(url.replace("sqlite:", "sqlite:", 1), second["run_id"])
        ok = got == {"inserted": set(inserted), "updated": set(updated), "deleted": set(deleted)}
        text = (
            f"churned {len(inserted)} new, {len(updated)} updated, {len(deleted)} deleted; "
            f"recorded {len(got['inserted'])}, {len(got['updated'])}, {len(got['deleted'])}; "
            f"second run {second['wall']:.2f} s"
        )
        return ok, text
    finally:
        proc.terminate()
        proc.wait(10)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--latency", type=float, default=0.02)
    parser.add_argument("--repeats", type=int, default=5, help="interleaved pairs (at least 5)")
    parser.add_argument("--no-million", action="store_true")
    parser.add_argument("--only-million", action="store_true")
    parser.add_argument(
        "--only-postgres", action="store_true", help="the export and the PostgreSQL mirror only"
    )
    parser.add_argument("--child", nargs=3, metavar=("KIND", "BASE", "TARGET"))
    args = parser.parse_args()
    if args.child:
        kind, base, target = args.child
        done = bare_upsert(base, target) if kind == "bare" else asyncio.run(child(*args.child))
        print(json.dumps(done))
        return 0
    folder = Path(tempfile.mkdtemp(prefix="mirror-bench-"))
    try:
        if args.only_million:
            return million(folder, None, [])
        return compare(args, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def compare(args: argparse.Namespace, folder: Path) -> int:
    """Export, mirror, re-mirror, PostgreSQL, churn (and the million unless told not)."""
    print(f"Mirror vs export, {args.items:,} payroll connections, {args.latency * 1000:g} ms")
    print(machine())
    server, pg_base = postgres(folder)
    flags = ["--items", str(args.items), "--latency", str(args.latency), "--links", "--unique"]
    kinds = (
        ("export", "postgres")
        if args.only_postgres
        else ("export", "sqlite", "bare", "again", "postgres")
    )
    runs: dict[str, list[dict[str, Any]]] = {k: [] for k in kinds}
    unchanged_rows = True
    with process_serving([str(HERE / "_server.py"), *flags, "--overlap"], "PORT") as base:
        for r in range(args.repeats):
            runs["export"].append(run_child("export", base, str(folder / f"e{r}.jsonl")))
            if args.only_postgres:
                pg = pg_base.replace("/bench?", f"/r{r}?")
                server.psql(f"CREATE DATABASE r{r};")
                runs["postgres"].append(run_child("mirror", base, pg))
                continue
            url = f"sqlite:///{folder / f'm{r}.db'}"
            runs["sqlite"].append(run_child("mirror", base, url))
            runs["bare"].append(run_child("bare", url, str(folder / f"b{r}.db")))
            before = table_dump(url, "payroll_connections")
            again = run_child("mirror", base, url)
            runs["again"].append(again)
            unchanged_rows &= (
                again["inserted"] == again["updated"] == 0
                and table_dump(url, "payroll_connections") == before
            )
            pg = pg_base.replace("/bench?", f"/r{r}?")
            server.psql(f"CREATE DATABASE r{r};")
            runs["postgres"].append(run_child("mirror", base, pg))
    wall = {k: median([x["wall"] for x in v]) for k, v in runs.items()}
    cpu = {k: median([x["cpu"] for x in v]) for k, v in runs.items()}
    rows = [
        [
            k,
            f"{wall[k]:.2f}",
            f"{wall[k] / wall['export']:.2f}x",
            f"{cpu[k] / args.items * 1e6:.1f}",
        ]
        for k in runs
    ]
    print(table(["run", "wall s (median)", "vs export", "CPU µs/item"], rows))
    for k, v in runs.items():
        walls = ", ".join(f"{x['wall']:.2f}" for x in v)
        print(f"{k} wall s: {walls}")
    if args.only_postgres:
        server.cleanup()
        ratio = wall["postgres"] / wall["export"]
        return report_targets([("PostgreSQL first mirror / export, wall", ratio, 1.25)])
    print(f"re-mirror unchanged: item rows written = {0 if unchanged_rows else 'SOME'}")
    churn_ok, churn_text = churn_check(args.items, folder)
    print(f"after 1% churn: {'exact' if churn_ok else 'NOT EXACT'} ({churn_text})")
    floor = cpu["export"] + cpu["bare"]
    print(
        f"export + bare sqlite3 upsert of the same rows, CPU: {floor / args.items * 1e6:.1f} "
        f"µs/item; first mirror / that: {cpu['sqlite'] / floor:.2f}x"
    )

    def paired(ratio: Any) -> float:
        """The median of the ratio over the interleaved pairs (run r of each kind)."""
        values = [ratio(r) for r in range(args.repeats)]
        print(f"  pairs: {', '.join(f'{v:.2f}' for v in values)}")
        return median(values)

    def of(kind: str, what: str) -> Any:
        return lambda r: runs[kind][r][what]

    ratios = {
        "first mirror into SQLite, CPU vs export + bare sqlite3 upsert": (
            lambda r: of("sqlite", "cpu")(r) / (of("export", "cpu")(r) + of("bare", "cpu")(r)),
            1.25,
        ),
        "first mirror into PostgreSQL, durable commits, wall vs export": (
            lambda r: of("postgres", "wall")(r) / of("export", "wall")(r),
            1.15,
        ),
        "first mirror into SQLite, wall vs export": (
            lambda r: of("sqlite", "wall")(r) / of("export", "wall")(r),
            1.10,
        ),
        "re-mirror with nothing changed, CPU vs export": (
            lambda r: of("again", "cpu")(r) / of("export", "cpu")(r),
            1.20,
        ),
    }
    checks = []
    for label, (ratio, limit) in ratios.items():
        print(f"{label}:")
        checks.append((label, paired(ratio), limit))
    checks += [
        ("item rows written by the unchanged re-mirror", 0.0 if unchanged_rows else 1.0, 0),
        ("churned ids not exactly in mirror_changes", 0.0 if churn_ok else 1.0, 0),
        ("lines in payroll_async/mirror/", float(mirror_lines()), 2600),
    ]
    server.cleanup()
    if not args.no_million:
        small = median([x["peak_rss"] for x in runs["sqlite"]]) / 2**20
        return million(folder, small, checks)
    return report_targets(checks)


def mirror_lines() -> int:
    """Lines of the mirror's modules (``wc -l payroll_async/mirror/*.py``)."""
    folder = ROOT / "payroll_async" / "mirror"
    return sum(len(path.read_text().splitlines()) for path in folder.glob("*.py"))


def million(folder: Path, small: float | None, checks: list[tuple[str, float, float]]) -> int:
    """1,000,000 connections into SQLite (no latency): the client's peak RSS."""
    flags = ["--items", "1000000", "--latency", "0", "--links", "--unique", "--overlap"]
    with process_serving([str(HERE / "_server.py"), *flags], "PORT") as base:
        big = run_child("mirror", base, f"sqlite:///{folder / 'million.db'}")
    mb = big["peak_rss"] / 2**20
    at = "" if small is None else f" ({small:.0f} MB at 100,000)"
    print(
        f"1,000,000 into SQLite: peak RSS {mb:.0f} MB{at}, {big['wall']:.1f} s, "
        f"complete={big['complete']}"
    )
    checks.append(("a million items into SQLite, peak RSS MB", mb, 150))
    if small is not None:
        checks.append(("RSS growth from 100,000 to 1,000,000 items, MB", mb - small, 20))
    return report_targets(checks)


if __name__ == "__main__":
    sys.exit(main())
