"""OpenTelemetry, when installed (extra ``otel``): spans, span events and metrics.

One span per SDK operation (``payroll_connections.list``, ``webhooks.create``, ...) wraps
one CLIENT span per HTTP attempt, named and described by the HTTP client semantic
conventions (``http.request.method``, ``url.full`` without its query, ``server.address``,
``server.port``, ``http.response.status_code``, ``http.request.resend_count``,
``error.type``). Retries, 429 pauses (with their Retry-After) and waits at the gate are
events of the span they happen in. Metrics: ``http.client.request.duration`` (seconds),
``payroll_async.retries``, ``payroll_async.rate_limited`` (429s) and
``payroll_async.items`` (items a listing yielded).

Without opentelemetry-api every function here is a no-op; with the API but no SDK
configured, OpenTelemetry's own no-op tracer and meter record nothing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from yarl import URL

from .._core._redact import shown_url
from .._core._version import __version__

__all__ = [
    "ENABLED",
    "attempt",
    "configure",
    "end",
    "event",
    "finish",
    "items",
    "operation",
    "rate_limited",
    "retried",
    "start",
    "using",
]

try:
    from opentelemetry import metrics, trace
except ImportError:  # pragma: no cover - exercised where the otel extra is not installed
    ENABLED = False
else:
    ENABLED = True

_NAME = "payroll_async"


def configure() -> None:
    """Let the API load a provider its environment variables name (it does so when first
    asked for one): once per SDK operation, walk, or page asked for by hand. Each check
    asks the API's public getters (OpenTelemetry's globals are private to it)."""
    if ENABLED:
        trace.get_tracer_provider()
        metrics.get_meter_provider()


def _tracing() -> bool:
    """Whether an SDK's tracer provider is configured (the API's default records nothing)."""
    if not ENABLED:
        return False
    provider = trace.get_tracer_provider()
    return not isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider))


def _metering() -> bool:
    """Whether an SDK's meter provider is configured (the API's default records nothing):
    the API's own providers (its proxy, its no-op) are defined in its own package."""
    if not ENABLED:
        return False
    return not type(metrics.get_meter_provider()).__module__.startswith("opentelemetry.metrics")


def _tracer() -> Any:
    return trace.get_tracer(_NAME, __version__)


_instruments: dict[str, Any] = {}
_METRICS_ONLY: Any = object()  # an attempt with a meter but no tracer: durations only


def _instrument(kind: str, name: str, unit: str, description: str) -> Any:
    # Made on first use, from the meter provider configured by then.
    instrument = _instruments.get(name)
    if instrument is None:
        meter = metrics.get_meter(_NAME, __version__)
        make = meter.create_histogram if kind == "histogram" else meter.create_counter
        instrument = _instruments[name] = make(name, unit=unit, description=description)
    return instrument


@contextlib.contextmanager
def operation(name: str, **attributes: Any) -> Iterator[Any]:
    """The span of one SDK operation (the current span while it runs), or None."""
    configure()
    if not _tracing():
        yield None
        return
    with _tracer().start_as_current_span(name, attributes=attributes) as span:
        yield span


def attempt(
    method: str, url: str | URL, number: int, secret: str | None = None
) -> contextlib.AbstractContextManager[Any]:
    """The CLIENT span of one HTTP attempt, or None; ``finish(span, status)`` ends it.

    Its ``url.full`` has no query, and ``secret`` (the token sent) redacted from its path.

    Without a tracer or a meter configured, a shared context that yields None (no
    generator to make for every request).
    """
    if not _tracing():
        return _NO_SPAN if not _metering() else _METRICS_ONLY_SPAN
    return _attempt_span(method, url, number, secret)


_NO_SPAN: contextlib.nullcontext[None] = contextlib.nullcontext()
_METRICS_ONLY_SPAN: contextlib.nullcontext[Any] = contextlib.nullcontext(_METRICS_ONLY)


@contextlib.contextmanager
def _attempt_span(method: str, url: str | URL, number: int, secret: str | None) -> Iterator[Any]:
    target = url if isinstance(url, URL) else URL(url)
    attributes: dict[str, Any] = {
        "http.request.method": method,
        "url.full": shown_url(target.with_query(None).with_fragment(None), secret),
        "server.address": target.host or "",
    }
    if target.port is not None:
        attributes["server.port"] = target.port
    if number > 1:
        attributes["http.request.resend_count"] = number - 1
    with _tracer().start_as_current_span(
        method, kind=trace.SpanKind.CLIENT, attributes=attributes, record_exception=False
    ) as span:
        yield span


def finish(span: Any, method: str, status: int | None, seconds: float, error: str | None) -> None:
    """Record an attempt's outcome on its span and in the duration histogram."""
    if span is None:
        return
    recording = span is not _METRICS_ONLY
    attributes: dict[str, Any] = {"http.request.method": method}
    if status is not None:
        attributes["http.response.status_code"] = status
        if recording:
            span.set_attribute("http.response.status_code", status)
    if error is not None:
        attributes["error.type"] = error
        if recording:
            span.set_attribute("error.type", error)
            span.set_status(trace.StatusCode.ERROR)
    _instrument(
        "histogram", "http.client.request.duration", "s", "Duration of HTTP client requests."
    ).record(seconds, attributes)


def event(name: str, **attributes: Any) -> None:
    """An event on the current span (a retry, a 429 pause, a wait at the gate)."""
    if _tracing():
        trace.get_current_span().add_event(name, attributes)


def retried(method: str, wait: float, reason: str) -> None:
    """A retry is about to wait ``wait`` seconds."""
    event("payroll_async.retry", **{"retry.wait_s": wait, "retry.reason": reason})
    if not _metering():
        return
    _instrument("counter", "payroll_async.retries", "{retry}", "Requests sent again.").add(
        1, {"http.request.method": method}
    )


def rate_limited(method: str, retry_after: float | None) -> None:
    """A 429 arrived (and pauses the client for ``retry_after`` seconds)."""
    event("payroll_async.rate_limited", **({"retry_after_s": retry_after} if retry_after else {}))
    if not _metering():
        return
    _instrument("counter", "payroll_async.rate_limited", "{response}", "429 answers.").add(
        1, {"http.request.method": method}
    )


def items(operation_name: str, count: int) -> None:
    """A listing yielded ``count`` items."""
    if count and _metering():
        _instrument("counter", "payroll_async.items", "{item}", "Items listings yielded.").add(
            count, {"payroll_async.operation": operation_name}
        )


def start(name: str) -> Any:
    """A span for a listing's walk, not made current (a walk is an async generator)."""
    configure()
    return _tracer().start_span(name) if _tracing() else None


@contextlib.contextmanager
def using(span: Any) -> Iterator[None]:
    """``span`` as the current span for one request of its walk."""
    if span is None:
        yield
        return
    with trace.use_span(span, end_on_exit=False):
        yield


def end(span: Any, **attributes: Any) -> None:
    """End a walk's span with what it did (pages, items)."""
    if span is not None:
        span.set_attributes(attributes)
        span.end()
