"""A process whose ``PayrollConnection`` has one field more, written in one place: the model.

Run by ``test_new_field.py`` as ``python -m tests.mirror._new_field BASE TOKEN URL...``: the
model gains ``cost_centre`` before anything of the SDK derives from it, then the process
structures an item (cattrs), decodes a page (msgspec), opens each database ``URL`` twice
at once (the schema's check and migration) and mirrors the collection into it. It prints
what it saw as one JSON line.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from typing import Any

import aiohttp
import attrs

import payroll_async
import payroll_async.models as models


@attrs.frozen
class PayrollConnection(models.PayrollConnection):
    """A payroll connection with the field the service has started to send."""

    cost_centre: str
    """The one place the new field is written."""


models.PayrollConnection = PayrollConnection  # type: ignore[misc]
payroll_async.PayrollConnection = PayrollConnection  # type: ignore[misc]


class Added(logging.Handler):
    """The migration's log lines that say columns were added."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if "columns added" in record.getMessage():
            self.lines.append(record.getMessage())


async def main(base: str, token: str, urls: list[str]) -> dict[str, Any]:
    from payroll_async import PayrollClient, from_dict
    from payroll_async._paging._fastdecode import FastDecoder
    from payroll_async.mirror import mirror
    from payroll_async.mirror._migrate import connected, ensure_schema

    added = Added()
    logging.getLogger("payroll_async").addHandler(added)
    logging.getLogger("payroll_async").setLevel(logging.INFO)
    seen: dict[str, Any] = {"migrated": []}
    async with PayrollClient(base, token) as client:
        page = await client.payroll_connections.list(page_size=100)  # the SDK's decoder
        async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {token}"}) as http:
            async with http.get(f"{base}/v1/payroll-connections?limit=100") as response:
                body = await response.read()
        items = json.loads(body)["data"]
        seen["structured"] = [from_dict(PayrollConnection, item).cost_centre for item in items]
        fast = FastDecoder(PayrollConnection)
        decoded = fast.decode_page(body)
        assert decoded is not None, "the msgspec path refused the page"
        seen["decoded"] = [item.cost_centre for item in decoded[0]]
        seen["listed"] = [item.cost_centre for item in page.items]

        async def opened(url: str) -> None:
            async with connected(url) as (db, conn):
                await ensure_schema(db, conn)

        for url in urls:
            before = len(added.lines)
            await asyncio.gather(opened(url), opened(url))  # two at once: added once
            seen["migrated"].append(added.lines[before:])
            result = await mirror(client, "payroll-connections", into=url)
            seen.setdefault("results", []).append([result.inserted, result.deleted])
    return seen


if __name__ == "__main__":
    base, token, *urls = sys.argv[1:]
    print(json.dumps(asyncio.run(main(base, token, urls))))
