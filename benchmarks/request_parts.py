"""Instructions per request of each layer of the SDK's request path, by valgrind's callgrind.

    python benchmarks/request_parts.py                    # this checkout
    python benchmarks/request_parts.py --baseline DIR     # and the SDK of a checkout in DIR

Sequential GETs of one page of 100 items against the page server of ``_server.py``, each
layer on its own (instruction counts, which the other work of a shared machine does not
move; the kernel's share of a send is not counted):

- ``floor``: aiohttp's own request (``session.get(url)``, ``read()``), as the floor sends;
- ``wire``: the SDK's transport below the seam (``AiohttpTransport``: its gated connector,
  the body read within its bound; before session 3 of issue 43, the ``TransportRequest``
  and ``TransportResponse`` made for each send);
- ``send``: the whole request path above it too (``build_request``, ``BoundClient.send``,
  ``Requester.loop``, the attempt and the exchange);
- ``ready``: the path above the seam alone, over a transport whose answer is ready.

Each layer runs 300 and 1,300 requests in two processes; the difference over 1,000 is its
cost per request (the imports, the client and the first connection cancel out).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _util import HERE, TOKEN, instructions, process_serving

if os.environ.get("PAYROLL_BASELINE"):  # another checkout's SDK first
    sys.path.insert(0, os.environ["PAYROLL_BASELINE"])

PATH = "/v1/payroll-connections"
LAYERS = ("floor", "wire", "send", "ready")


async def requests(layer: str, base: str, count: int) -> None:
    """``count`` GETs through ``layer``."""
    import aiohttp
    from multidict import CIMultiDict, CIMultiDictProxy
    from yarl import URL

    from payroll_async import PayrollClient, TransportRequest, TransportResponse
    from payroll_async._http._attempt import build_request

    def url(i: int) -> URL:
        return URL(f"{base}{PATH}?limit=100&offset={(i % 900) * 100}", encoded=True)

    if layer == "floor":
        headers = {"Authorization": f"Bearer {TOKEN}", "Accept": "application/json"}
        connector = aiohttp.TCPConnector(limit=8)
        async with aiohttp.ClientSession(headers=headers, connector=connector) as session:
            for i in range(count):
                async with session.get(url(i)) as response:
                    await response.read()
        return
    ready = TransportResponse(
        status=200,
        headers=CIMultiDictProxy(CIMultiDict({"Content-Type": "application/json"})),
        body=b'{"data":[],"meta":{}}',
    )

    class Ready:
        async def handle_async_request(self, request: TransportRequest) -> TransportResponse:
            return ready

        async def aclose(self) -> None:
            pass

    transport: Any = Ready() if layer == "ready" else None
    async with PayrollClient(base, TOKEN, transport=transport) as client:
        binding = client.payroll_connections._binding
        options = binding.options
        if layer == "wire":
            wire: Any = binding.transport.wire
            sent = {**options.headers, "Authorization": f"Bearer {TOKEN}"}
            timeout, limit = options.timeout, options.max_response_size
            if hasattr(wire, "send"):  # what the client's attempts call (since session 3)
                for i in range(count):
                    await wire.send("GET", url(i), sent, None, timeout, limit)
                return
            for i in range(count):  # a checkout before it: the seam's objects, each send
                await wire.handle_async_request(
                    TransportRequest(
                        method="GET",
                        url=url(i),
                        headers=sent,
                        content=None,
                        timeout=timeout,
                        max_response_size=limit,
                    )
                )
            return
        for i in range(count):
            await binding.send(build_request("GET", url(i), options))


def layer_instructions(layer: str, base: str, count: int, baseline: str | None) -> int:
    """The instructions of a process that sends ``count`` requests through ``layer``."""
    env = dict(os.environ)
    if baseline is not None:
        env.update(PYTHONPATH=baseline, PAYROLL_BASELINE=baseline)
    return instructions([sys.executable, __file__, "--child", layer, base, str(count)], env)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--baseline", help="a checkout whose SDK is measured too")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        layer, base, count = args.child
        asyncio.run(requests(layer, base, int(count)))
        return 0
    checkouts: list[tuple[str, str | None]] = [("this checkout", None)]
    if args.baseline:
        checkouts.append((args.baseline, args.baseline))
    server = [str(HERE / "_server.py"), "--items", "100000", "--links", "--unique"]
    with process_serving(server, "PORT") as base:
        for name, baseline in checkouts:
            for layer in LAYERS:
                if layer == "floor" and baseline is not None:
                    continue  # no SDK code: the same for every checkout
                few = layer_instructions(layer, base, 300, baseline)
                many = layer_instructions(layer, base, 1300, baseline)
                print(f"{name}: {layer}: {(many - few) / 1000:,.0f} instructions/request")
    return 0


if __name__ == "__main__":
    sys.exit(main())
