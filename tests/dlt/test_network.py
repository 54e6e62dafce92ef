"""payroll_source() behind a proxy and a private CA: proxy= and ca_bundle=."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from payroll_async import InvalidArgumentError
from tests._network import SERVICE_HOST, PrivateCA, ServiceFactory, TunnelProxy

from .conftest import MakePipeline, rows

# aiohttp before 3.10 may leave a proxy tunnel's socket to the garbage collector when the
# source's own event loop ends right after the client closes (aiohttp's leak, not one of
# the source's: the client closes its session); at the floors' run that warning is let be.
_OLD_AIOHTTP = tuple(int(n) for n in aiohttp.__version__.split(".")[:2]) < (3, 10)
if _OLD_AIOHTTP:
    pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


@pytest.fixture(autouse=True)
def _collect_the_leak() -> Iterator[None]:
    """The leaked socket is collected here, under this file's filter, not in a later test."""
    yield
    if _OLD_AIOHTTP:
        gc.collect()


@pytest.mark.parametrize("destination", ["duckdb"], indirect=True)
async def test_the_source_loads_through_a_proxy_and_a_private_ca(
    ca: PrivateCA, tls_service: ServiceFactory, make_pipeline: MakePipeline
) -> None:
    from payroll_async.dlt import payroll_source

    service = await tls_service()
    token = service.emulator.token
    async with TunnelProxy(service.port) as proxy:
        source = payroll_source(
            f"https://{SERVICE_HOST}",
            token,
            collections=("webhooks",),
            proxy=proxy.url,
            ca_bundle=str(ca.bundle),
        )
        pipeline = make_pipeline()
        # dlt runs the source's client in a loop of its own: off this loop, which serves.
        await asyncio.to_thread(pipeline.run, source)
    assert rows(pipeline, "SELECT count(*) FROM webhook_subscriptions") == [(3,)]
    assert proxy.tunnels >= 1
    assert token.encode() not in bytes(proxy.seen)


def test_a_bad_proxy_or_ca_bundle_is_refused_before_any_request(tmp_path: Path) -> None:
    from payroll_async.dlt import payroll_source

    with pytest.raises(InvalidArgumentError, match="CA bundle"):
        payroll_source(f"https://{SERVICE_HOST}", "t", ca_bundle=str(tmp_path / "none.pem"))
    with pytest.raises(InvalidArgumentError, match="proxy"):
        payroll_source(f"https://{SERVICE_HOST}", "t", proxy="socks5://proxy:1080")
