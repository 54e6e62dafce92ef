"""What typed items cost on top of the dict floor, with the floor's own HTTP and walk.

    python benchmarks/typed_floor.py                  # CPU time, 100,000 items, 5 repeats
    python benchmarks/typed_floor.py --callgrind      # instructions (valgrind), 20,000 items
    python benchmarks/typed_floor.py --baseline DIR   # and the SDK of a checkout in DIR

Issue 43 bounds the SDK by the typed floor: its CPU per item at most 1.10x "attrs models,
cheapest route". Each repeat runs every variant once, in turn, so the SDK and the floor of
one repeat are a pair run side by side; the script prints the median of the pairs' ratios
(the same code's CPU moves by up to 30% between runs on a shared machine, and a pair
moves together).

Issue 27 asks the SDK for at most 1.4x the CPU per item of the concurrent dict floor
(``bulk_export.py``: aiohttp + orjson, 8 pages in flight, plain dicts). This script asks
how far typed items alone go towards that bound: the floor's client, unchanged (same
session, same requests, same window, an item-by-item ``for`` over each page), with only
the decode of each page's bytes swapped:

- ``dicts``: ``orjson.loads`` (the floor itself);
- ``structs, ids as str``: msgspec structs, ids left as text, timestamps as ``datetime``;
- ``structs, ids as UUID``: the same structs with ``uuid.UUID`` ids (msgspec's C decode);
- ``attrs models, cheapest``: the promised models (frozen attrs classes, ``uuid.UUID`` ids,
  aware ``datetime``s) by the cheapest route known: the UUID structs converted to the
  attrs classes in C (``msgspec.convert(..., from_attributes=True)``), with no check of
  anything msgspec reads more widely than the SDK's converter;
- ``attrs models, the SDK's decoder``: the SDK's own page decoder (``FastDecoder``);
- ``the SDK's decoder, items by async for``: the same, its items handed out by an ``async
  for`` as the SDK's iterator hands them out;
- ``the floor of the promised work``: that walk plus, each at its cheapest, what the SDK
  promises per request and per page (a retry loop that would read Retry-After, the
  client's pause and a fleet's gate checked, tracing checked off, the body read within a
  bound, the Link header's ``rel="next"`` checked for its origin and scheme, loops and
  the page the walk fetches next): the bound of any SDK that keeps those promises
  (``promised_pages``);
- ``that floor, its requests the SDK's``: the same walk, each page's request sent by the
  SDK's request path; ``and its pages the SDK's parse``: each page also read by the SDK's
  parse and next-page rule (``sdk_request_pages``): the SDK's gap to that floor, part by
  part (its requests, its page parse, and the rest: its walk);
- and, for comparison, the SDK itself as ``bulk_export.py`` runs it (its own walk).

The script prints the SDK's paired ratio against both bounds: "attrs models, cheapest
route" (issue 43's target, at most 1.10x) and "the floor of the promised work".

No SDK code runs in the first five but the decoder of the fifth (and of the next two): no
transport, retries, gates, pagination or iterator. Each variant runs in a fresh process
against the page server of ``_server.py`` (Link headers, every id unique); the repeats
are interleaved and the medians compared. With ``--callgrind`` each variant runs once
under valgrind's callgrind and its instructions are counted, less those of a process that
only imports (instruction counts do not move with the other work of a shared machine).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import re
import subprocess
import sys
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _clients import HEADERS, floor_pages
from _util import HERE, ROOT, TOKEN, instructions, machine, median, process_serving, table

# The baseline variant: another checkout's SDK first. After the imports above, since
# ``_clients`` puts this checkout first as it is imported (before 2026-11-28, session 2,
# the "baseline" measured this checkout's SDK: see RESULTS.md).
if os.environ.get("PAYROLL_BASELINE"):
    sys.path.insert(0, os.environ["PAYROLL_BASELINE"])

PAGE = 100
PATH = "/v1/payroll-connections"
LABELS = {
    "dicts": "dicts (orjson): the floor",
    "structs_str": "msgspec structs, ids as str",
    "structs_uuid": "msgspec structs, ids as uuid.UUID",
    "attrs_cheapest": "attrs models, cheapest route",
    "attrs_sdk": "attrs models, the SDK's decoder",
    "attrs_sdk_async": "the SDK's decoder, items by async for",
    "promised": "the floor of the promised work",
    "sdk_requests": "that floor, its requests the SDK's",
    "sdk_parse": "and its pages the SDK's parse",
    "sdk": "the SDK itself (async for, defaults)",
}
LIMIT = 64 * 2**20  # the SDK's default max_response_size
RETRIED = frozenset({429, 500, 502, 503, 504})


def decoders() -> dict[str, Callable[[bytes], Any]]:
    """Each variant's decode of a page's bytes into its items."""
    import msgspec
    import orjson

    from payroll_async._paging._fastdecode import FastDecoder
    from payroll_async.models import PayrollConnection

    def structs(id_type: Any) -> Callable[[bytes], Any]:
        fields = [
            ("id", id_type),
            ("employer_identifier_id", id_type),
            ("payroll_platform_id", id_type),
            ("created_at", datetime.datetime),
            ("status", str),
            ("product", str),
        ]
        item = msgspec.defstruct("Item", fields, rename="camel", frozen=True, gc=False)
        page = msgspec.defstruct("Page", [("data", list[item])], gc=False)  # type: ignore[valid-type]
        decode = msgspec.json.Decoder(page).decode
        return lambda body: decode(body).data

    with_uuids = structs(uuid.UUID)
    models: Any = list[PayrollConnection]
    sdk = FastDecoder(PayrollConnection)

    def sdk_page(body: bytes) -> Any:
        decoded = sdk.decode_page(body)
        assert decoded is not None
        return decoded[0]

    return {
        "attrs_sdk_async": sdk_page,
        "dicts": lambda body: orjson.loads(body)["data"],
        "structs_str": structs(str),
        "structs_uuid": with_uuids,
        "attrs_cheapest": lambda body: msgspec.convert(
            with_uuids(body), models, from_attributes=True
        ),
        "attrs_sdk": sdk_page,
    }


async def sdk_walk(base: str, concurrency: int) -> int:
    """The SDK's own walk, as ``bulk_export.py`` runs it."""
    from payroll_async import PayrollClient

    count = 0
    async with PayrollClient(base, TOKEN, concurrency=concurrency) as client:
        async for _item in client.payroll_connections.list():
            count += 1
    return count


class _Items:
    """Items handed out by ``async for`` as the SDK's iterator does (the current page's
    next item without suspending): what any async SDK's item loop costs."""

    __slots__ = ("_items", "_pages")

    def __init__(self, pages: Any) -> None:
        self._pages = pages
        self._items: Any = iter(())

    def __aiter__(self) -> _Items:
        return self

    async def __anext__(self) -> Any:
        for item in self._items:
            return item
        async for items in self._pages:
            if items:
                self._items = iter(items)
                return next(self._items)
        raise StopAsyncIteration


async def walk_async(base: str, decode: Callable[[bytes], Any], concurrency: int) -> int:
    """The floor's walk, each page decoded by ``decode``, its items by ``async for``."""
    import orjson

    count = 0
    pages = floor_pages(
        base, concurrency, decode, lambda body, _items: orjson.loads(body)["meta"]["totalCount"]
    )
    async for _item in _Items(pages):
        count += 1
    return count


async def walk(base: str, decode: Callable[[bytes], Any], concurrency: int) -> int:
    """The floor's walk of bulk_export.py (``_clients.floor``), each page decoded by ``decode``."""
    import orjson

    count = 0
    pages = floor_pages(
        base, concurrency, decode, lambda body, _items: orjson.loads(body)["meta"]["totalCount"]
    )
    async for items in pages:
        for _item in items:
            count += 1
    return count


async def windowed(
    fetch: Callable[[int], Any], page: Callable[[int, Any], Any], concurrency: int
) -> AsyncIterator[Any]:
    """The floor's window: the first page, then ``concurrency`` pages in flight, in order;
    ``page(offset, answer)`` reads each (items, meta)."""
    items, meta = page(0, await fetch(0))
    yield items
    offsets = iter(range(PAGE, meta.total_count, PAGE))
    window: deque[tuple[int, asyncio.Task[Any]]] = deque()
    for offset in offsets:
        window.append((offset, asyncio.create_task(fetch(offset))))
        if len(window) >= concurrency:
            break
    while window:
        offset, task = window.popleft()
        answer = await task
        nxt = next(offsets, None)
        if nxt is not None:
            window.append((nxt, asyncio.create_task(fetch(nxt))))
        yield page(offset, answer)[0]


def link_check(base: str) -> Callable[[int, str | None], None]:
    """The promised check of a page's Link header, at its cheapest: its ``rel="next"`` on
    the client's origin and scheme (one prefix test), not a page already walked (a set of
    the pages' URLs), and the page the walk fetches next."""
    next_link = re.compile(r'<([^>]*)>;\s*rel="next"').search
    origin = base + "/"
    prefix = f"{base}{PATH}?limit={PAGE}&offset="
    visited: set[str] = set()

    def check(offset: int, link: str | None) -> None:
        if link is not None:
            found = next_link(link)
            if found is not None:
                following = found.group(1)
                if not following.startswith(origin) or following in visited:
                    raise ValueError("a next link off the origin, or a loop")
                if following != f"{prefix}{offset + PAGE}":
                    raise ValueError("a next link this walk does not follow")
        visited.add(f"{prefix}{offset}")

    return check


async def promised_pages(base: str, concurrency: int) -> AsyncIterator[Any]:
    """The floor's walk with, each at its cheapest, the work the SDK promises per request
    and per page, and nothing more: the pages' models as the SDK's decoder makes them (ids
    checked 8-4-4-4-12); per request a retry loop that would read Retry-After, a check of
    the client's pause and of a fleet's gate (there is none), a check that tracing is off
    (one read of the API's global), the body read within a bound; per page its Link
    header's ``rel="next"``, checked: on the client's origin and scheme (one prefix test),
    not a page already walked (a set of the pages' URLs), and the page the walk fetches
    next (else the walk would follow the link instead). No token provider, no options, no
    typed errors, no objects of its own: what no SDK keeping these promises can skip."""
    import aiohttp
    from opentelemetry import trace
    from yarl import URL

    from payroll_async._paging._fastdecode import FastDecoder
    from payroll_async.models import PayrollConnection

    decode = FastDecoder(PayrollConnection).decode_page
    prefix = f"{base}{PATH}?limit={PAGE}&offset="
    check = link_check(base)
    gate: Any = None  # a fleet's gate: none given
    paused_until = 0.0  # a 429's pause of the whole client: none
    loop = asyncio.get_running_loop()
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(headers=HEADERS, connector=connector) as session:

        async def fetch(offset: int) -> tuple[bytes, str | None]:
            url = URL(f"{prefix}{offset}", encoded=True)
            attempt = 1
            while True:  # the retry loop
                if gate is not None:
                    await gate.acquire()
                if paused_until and paused_until > loop.time():
                    await asyncio.sleep(paused_until - loop.time())
                if trace._TRACER_PROVIDER is not None:  # tracing is on: a span to make
                    raise SystemExit("this floor is for tracing off")
                async with session.get(url) as r:
                    if 200 <= r.status < 300:
                        length = r.content_length
                        if length is not None and length > LIMIT:
                            raise ValueError("the body is larger than its bound")
                        body = await r.read()
                        if len(body) > LIMIT:
                            raise ValueError("the body is larger than its bound")
                        return body, r.headers.get("Link")
                    if attempt >= 3 or r.status not in RETRIED:
                        raise ValueError(f"status {r.status}")
                    wait = float(r.headers.get("Retry-After") or 0.5)
                await asyncio.sleep(wait)
                attempt += 1

        def page(offset: int, body: bytes, link: str | None) -> Any:
            decoded = decode(body)
            if decoded is None:
                raise ValueError("not a page")
            check(offset, link)
            return decoded

        async for items in windowed(fetch, lambda offset, got: page(offset, *got), concurrency):
            yield items


async def promised_walk(base: str, concurrency: int) -> int:
    """The floor of the promised work (``promised_pages``), its items by ``async for``."""
    count = 0
    async for _item in _Items(promised_pages(base, concurrency)):
        count += 1
    return count


async def sdk_request_pages(base: str, concurrency: int, parse: bool) -> AsyncIterator[Any]:
    """The floor of the promised work's walk (its window, its Link check), each page's
    request sent by the SDK (``build_request`` and ``BoundClient.send``: the retry loop,
    the attempt, the transport); with ``parse``, each page read by the SDK too
    (``ListRequest.parse``: the decode, the Link header, the ``Page``; then the next-page
    rule). What is left between the second and the SDK itself is the SDK's walk (its
    window of tasks, ``Walk``, the iterator's layers)."""
    from yarl import URL

    from payroll_async import PayrollClient
    from payroll_async._http._attempt import build_request
    from payroll_async._paging._fastdecode import FastDecoder
    from payroll_async._paging._page import NextRequest
    from payroll_async.models import PayrollConnection

    decode = FastDecoder(PayrollConnection).decode_page
    prefix = f"{base}{PATH}?limit={PAGE}&offset="
    check = link_check(base)
    async with PayrollClient(base, TOKEN, concurrency=concurrency) as client:
        binding = client.payroll_connections._binding
        options = binding.options
        listing = client.payroll_connections.list()._listing()

        async def fetch(offset: int) -> Any:
            url = URL(f"{prefix}{offset}", encoded=True)
            return await binding.send(build_request("GET", url, options))

        def page(offset: int, response: Any) -> Any:
            if parse:
                read = listing.parse(response, NextRequest(None, offset, PAGE, 0, PAGE, None))
                assert read._next_context is not None
                read._next_context.following(read, frozenset())
                return read.items, read.meta
            decoded = decode(response.body)
            if decoded is None:
                raise ValueError("not a page")
            check(offset, response.headers.get("Link"))
            return decoded

        async for items in windowed(fetch, page, concurrency):
            yield items


async def sdk_request_walk(base: str, concurrency: int, parse: bool) -> int:
    """``sdk_request_pages``, its items by ``async for``."""
    count = 0
    async for _item in _Items(sdk_request_pages(base, concurrency, parse)):
        count += 1
    return count


def child(variant: str, base: str, items: int, concurrency: int) -> None:
    """One walk in this process (after the imports): print its CPU seconds as JSON."""
    decode = decoders().get(variant)  # None for "imports": everything imported, no walk
    import aiohttp  # noqa: F401  (imported before the clock, as bulk_export.py's clients do)

    import payroll_async._client  # (the SDK's client, which loads lazily)

    if variant == "baseline":  # the checkout asked for, not this one
        baseline = Path(os.environ["PAYROLL_BASELINE"]).resolve()
        assert Path(payroll_async._client.__file__).resolve().is_relative_to(baseline)

    cpu = time.process_time()
    if variant != "imports":
        if variant in ("sdk", "baseline"):
            count = asyncio.run(sdk_walk(base, concurrency))
        elif variant == "promised":
            count = asyncio.run(promised_walk(base, concurrency))
        elif variant in ("sdk_requests", "sdk_parse"):
            count = asyncio.run(sdk_request_walk(base, concurrency, variant == "sdk_parse"))
        elif variant == "attrs_sdk_async":
            assert decode is not None
            count = asyncio.run(walk_async(base, decode, concurrency))
        else:
            assert decode is not None
            count = asyncio.run(walk(base, decode, concurrency))
        if count != items:
            raise SystemExit(f"{variant} walked {count} items, expected {items}")
    print(json.dumps({"cpu": time.process_time() - cpu}))


def run(
    variant: str,
    base: str,
    items: int,
    concurrency: int,
    callgrind: bool,
    baseline: str | None = None,
) -> float:
    """CPU seconds of one walk, or with ``callgrind`` the instructions of its process.

    ``baseline``: the checkout whose ``payroll_async`` the ``baseline`` variant imports."""
    command = [sys.executable, __file__, "--child", variant, base, str(items), str(concurrency)]
    env = None
    if variant == "baseline" and baseline is not None:
        env = {**os.environ, "PYTHONPATH": baseline, "PAYROLL_BASELINE": baseline}
    if not callgrind:
        out = subprocess.run(command, check=True, capture_output=True, text=True, cwd=ROOT, env=env)
        return float(json.loads(out.stdout.splitlines()[-1])["cpu"])
    return float(instructions(command, env))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--items", type=int, default=None, help="100,000 (20,000 with callgrind)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--callgrind", action="store_true", help="count instructions instead")
    parser.add_argument("--baseline", help="a checkout whose SDK runs as one more variant")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        variant, base, items, concurrency = args.child
        child(variant, base, int(items), int(concurrency))
        return 0
    items = args.items or (20_000 if args.callgrind else 100_000)
    repeats = 1 if args.callgrind else args.repeats
    unit = "instructions/item" if args.callgrind else "CPU µs/item"
    print(f"{machine()}; {items:,} items, page size {PAGE}, {args.concurrency} in flight; {unit}")
    server = [str(HERE / "_server.py"), "--items", str(items), "--links", "--unique"]
    labels = dict(LABELS)
    if args.baseline:
        labels["baseline"] = f"the SDK of {args.baseline}"
    measured: dict[str, list[float]] = {v: [] for v in labels}
    with process_serving(server, "PORT") as base:
        start = run("imports", base, items, args.concurrency, True) if args.callgrind else 0.0
        for _ in range(repeats):
            for variant in labels:
                total = run(variant, base, items, args.concurrency, args.callgrind, args.baseline)
                measured[variant].append((total - start) / items * (1 if args.callgrind else 1e6))
    floor = median(measured["dicts"])
    rows = [
        [
            labels[v],
            f"{median(measured[v]):,.0f}" if args.callgrind else f"{median(measured[v]):.2f}",
            f"{median(measured[v]) / floor:.2f}x",
        ]
        for v in labels
    ]
    print(table(["decode of each page", unit, "vs the floor"], rows))
    for bound in ("attrs_cheapest", "promised"):
        for variant in (
            "sdk",
            "attrs_sdk_async",
            "promised",
            "sdk_requests",
            "sdk_parse",
            "baseline",
        ):
            if variant in measured and variant != bound:
                ratios = [a / b for a, b in zip(measured[variant], measured[bound], strict=True)]
                shown = ", ".join(f"{r:.2f}" for r in sorted(ratios))
                print(
                    f"{labels[variant]} / {labels[bound]}, paired: median "
                    f"{median(ratios):.2f}x of {len(ratios)} pairs ({shown})"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
