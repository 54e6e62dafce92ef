"""A minimal page server for benchmarks: pre-rendered pages, optional latency and Link headers.

Run in its own process so that the client, not the server, is what is measured:
``python benchmarks/_server.py --items 100000 --latency 0.02 --links --unique`` prints
``PORT <n>`` when ready. The items are the emulator's (same seed, same shapes); with
``--unique`` every identifier of every item is different (the employer and platform ids of
the emulator's data repeat across items, which flatters any cache of parsed ids). With
``--links`` each page carries a Link header with ``rel="next"``, as the service and the
emulator send. Pages for other offsets or limits are rendered on first request and cached.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import uuid

import orjson
from aiohttp import web

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from _util import TOKEN

from payroll_async.emulator import Emulator


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--page-size", type=int, default=100)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--links", action="store_true", help="Link headers with rel=next")
    parser.add_argument("--unique", action="store_true", help="no identifier repeats")
    parser.add_argument(
        "--overlap", action="store_true", help="also pre-render pages overlapping by one item"
    )
    args = parser.parse_args()
    data = Emulator(seed=1, payroll_connections=args.items).data
    total = args.items
    cache: dict[tuple[int, int], bytes] = {}

    def render(offset: int, limit: int) -> bytes:
        key = (offset, limit)
        page = cache.get(key)
        if page is None:
            items = [data.payroll_connection(i) for i in range(offset, min(offset + limit, total))]
            if args.unique:
                for i, item in enumerate(items, start=offset):
                    item["employerIdentifierId"] = str(uuid.UUID(int=(1 << 124) | i, version=4))
                    item["payrollPlatformId"] = str(uuid.UUID(int=(2 << 124) | i, version=4))
            meta = {
                "currentCount": len(items),
                "filters": {},
                "limit": limit,
                "offset": offset,
                "sort": "createdAt",
                "totalCount": total,
            }
            page = cache[key] = orjson.dumps({"data": items, "meta": meta})
        return page

    for offset in range(0, total, args.page_size):  # pre-render the pages clients will ask for
        render(offset, args.page_size)
    if args.overlap:  # the mirror's walk: each page starts at the previous page's last item
        for offset in range(0, total, args.page_size - 1):
            render(offset, args.page_size)

    async def handle(request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != f"Bearer {TOKEN}":
            return web.json_response({"message": "Invalid token", "errors": []}, status=401)
        if args.latency:
            await asyncio.sleep(args.latency)
        offset = int(request.query.get("offset", 0))
        limit = int(request.query.get("limit", 20))
        headers = None
        if args.links and offset + limit < total:
            following = request.url.update_query(limit=limit, offset=offset + limit)
            headers = {"Link": f'<{following}>; rel="next", <{request.url}>; rel="self"'}
        return web.Response(
            body=render(offset, limit), content_type="application/json", headers=headers
        )

    async def serve() -> None:
        app = web.Application()
        app.router.add_get("/v1/payroll-connections", handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", args.port, backlog=1024)
        await site.start()
        print(f"PORT {runner.addresses[0][1]}", flush=True)
        await asyncio.Event().wait()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve())


if __name__ == "__main__":
    main()
