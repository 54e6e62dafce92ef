"""OpenTelemetry: operation spans over attempt spans, events, metrics; nothing without it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from aiohttp import web

pytest.importorskip("opentelemetry.sdk")

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from payroll_async import PayrollClient, RetryPolicy
from payroll_async._http import _otel
from tests import factories
from tests.conftest import TOKEN, Serve, StartEmulator

EXPORTER = InMemorySpanExporter()
READER = InMemoryMetricReader()
_PROVIDERS: list[Any] = []


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    if not _PROVIDERS:  # global providers can be set once per process
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(SimpleSpanProcessor(EXPORTER))
        trace.set_tracer_provider(tracer_provider)
        metrics.set_meter_provider(MeterProvider(metric_readers=[READER]))
        _PROVIDERS.append(tracer_provider)
    EXPORTER.clear()
    yield EXPORTER
    EXPORTER.clear()


def metric_points() -> dict[str, list[Any]]:
    data = READER.get_metrics_data()
    points: dict[str, list[Any]] = {}
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                points.setdefault(metric.name, []).extend(metric.data.data_points)
    return points


def by_name(finished: tuple[ReadableSpan, ...], name: str) -> list[ReadableSpan]:
    return [s for s in finished if s.name == name]


async def test_a_listing_is_one_span_over_its_attempts(
    spans: InMemorySpanExporter, start_emulator: StartEmulator
) -> None:
    emu = await start_emulator(payroll_connections=250, seed=3)
    async with PayrollClient(emu.base_url, emu.token) as client:
        got = [c async for c in client.payroll_connections.list(page_size=100)]
    finished = spans.get_finished_spans()
    (walk,) = by_name(finished, "payroll_connections.list")
    attempts = by_name(finished, "GET")
    assert len(got) == 250
    assert walk.attributes == {"payroll_async.pages": 3, "payroll_async.items": 250}
    assert len(attempts) == 3
    for span in attempts:
        assert span.kind is trace.SpanKind.CLIENT
        assert span.parent is not None
        assert span.parent.span_id == walk.context.span_id
        assert span.attributes["http.request.method"] == "GET"
        assert span.attributes["http.response.status_code"] == 200
        assert span.attributes["url.full"] == f"{emu.base_url}/v1/payroll-connections"
        assert "?" not in span.attributes["url.full"]  # no query in the URL recorded
        assert span.attributes["server.address"] == "127.0.0.1"
        assert emu.token not in str(span.attributes)
    points = metric_points()
    assert sum(p.value for p in points["payroll_async.items"]) >= 250
    assert points["http.client.request.duration"]


async def test_a_mirror_walk_is_one_span_over_its_page_requests(
    spans: InMemorySpanExporter, start_emulator: StartEmulator, tmp_path: Any
) -> None:
    pytest.importorskip("sqlalchemy", reason="the mirror extra is not installed")
    from payroll_async.mirror import mirror

    emu = await start_emulator(payroll_connections=250, seed=3)
    async with PayrollClient(emu.base_url, emu.token) as client:
        result = await mirror(
            client, "payroll-connections", into=f"sqlite:///{tmp_path / 'm.db'}", page_size=100
        )
    assert result.complete
    finished = spans.get_finished_spans()
    (walk,) = by_name(finished, "payroll_connections.list")
    attempts = by_name(finished, "GET")
    # Pages at offsets 0, 99 and 198 (overlapping by one item): one request each.
    assert walk.attributes == {"payroll_async.pages": 3, "payroll_async.items": 252}
    assert len(attempts) == 3
    for span in attempts:
        assert span.parent is not None
        assert span.parent.span_id == walk.context.span_id


async def test_generic_calls_and_listings_have_spans_of_their_own(
    spans: InMemorySpanExporter, start_emulator: StartEmulator
) -> None:
    emu = await start_emulator(seed=3)
    async with PayrollClient(emu.base_url, emu.token) as client:
        await client.get("/v1/payroll-platforms", cast_to=dict, params={"sort": "name"})
        platforms = await client.get_api_list("/v1/payroll-platforms", model=dict).collect()
    finished = spans.get_finished_spans()
    (call,) = by_name(finished, "client.get")
    assert call.attributes == {"url.path": "/v1/payroll-platforms"}
    (walk,) = by_name(finished, "client.get_api_list")
    assert walk.attributes == {"payroll_async.pages": 1, "payroll_async.items": len(platforms)}
    parents = {s.parent.span_id for s in by_name(finished, "GET") if s.parent is not None}
    assert parents == {call.context.span_id, walk.context.span_id}


async def test_no_span_records_the_token_a_path_holds(
    spans: InMemorySpanExporter, serve: Serve
) -> None:
    async def echo(request: web.Request) -> web.Response:
        return web.json_response({})

    app = web.Application()
    app.router.add_get("/v1/things/{rest}", echo)
    base = await serve(app)
    async with PayrollClient(base, TOKEN) as client:
        await client.get(f"/v1/things/{TOKEN}", cast_to=dict)
    finished = spans.get_finished_spans()
    (call,) = by_name(finished, "client.get")
    (attempt,) = by_name(finished, "GET")
    assert call.attributes == {"url.path": "/v1/things/***"}
    assert attempt.attributes["url.full"] == f"{base}/v1/things/***"


async def test_retries_and_429s_are_events_and_counted(
    spans: InMemorySpanExporter, serve: Serve
) -> None:
    answers = iter(
        [
            web.json_response({"message": "busy"}, status=503),
            web.json_response({"message": "slow down"}, status=429, headers={"Retry-After": "0"}),
            web.Response(status=204),
        ]
    )

    async def handle(request: web.Request) -> web.Response:
        return next(answers)

    app = web.Application()
    app.router.add_delete("/v1/webhooks/subscriptions/{sid}", handle)
    base = await serve(app)
    async with PayrollClient(base, TOKEN, retry=RetryPolicy(backoff_initial=0)) as client:
        await client.webhooks.delete(factories.uid(1, 5))
    finished = spans.get_finished_spans()
    (operation,) = by_name(finished, "webhooks.delete")
    deletes = by_name(finished, "DELETE")
    assert [d.attributes["http.response.status_code"] for d in deletes] == [503, 429, 204]
    assert [d.attributes.get("http.request.resend_count") for d in deletes] == [None, 1, 2]
    assert deletes[0].attributes["error.type"] == "503"
    names = [e.name for e in operation.events]
    assert names.count("payroll_async.retry") == 2
    assert names.count("payroll_async.rate_limited") == 1
    assert {d.parent.span_id for d in deletes if d.parent} == {operation.context.span_id}
    points = metric_points()
    assert sum(p.value for p in points["payroll_async.retries"]) >= 2
    assert sum(p.value for p in points["payroll_async.rate_limited"]) >= 1


async def test_nothing_is_recorded_when_telemetry_is_off(
    spans: InMemorySpanExporter, start_emulator: StartEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_otel, "ENABLED", False)  # as when opentelemetry is not installed
    emu = await start_emulator(payroll_connections=10)
    async with PayrollClient(emu.base_url, emu.token) as client:
        await client.payroll_connections.list().collect()
    assert spans.get_finished_spans() == ()


_LATER = """
import asyncio
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from payroll_async import PayrollClient
from payroll_async.testing import MockTransport, page_response

async def main():
    transport = MockTransport(lambda request: page_response([]))
    async with PayrollClient("https://api.example.com", "tok", transport=transport) as client:
        listing = client.payroll_connections.list()
        await listing  # telemetry off: nothing is recorded, nothing is kept of the check
        exporter, reader = InMemorySpanExporter(), InMemoryMetricReader()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
        await listing  # the first page alone: no walk, no operation span
        print(sorted(span.name for span in exporter.get_finished_spans()))
        data = reader.get_metrics_data()
        scopes = [s for r in data.resource_metrics for s in r.scope_metrics]
        print(sorted(m.name for s in scopes for m in s.metrics))

asyncio.run(main())
"""


def test_providers_set_after_the_client_made_requests_get_spans_at_once() -> None:
    """Each request reads the providers as they are now: a tracer and a meter installed
    after a client has already sent requests record its very next one."""
    out = subprocess.run(
        [sys.executable, "-c", _LATER], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 0, out.stderr
    spans, instruments = out.stdout.splitlines()
    assert spans == "['GET']"
    assert instruments == "['http.client.request.duration']"
