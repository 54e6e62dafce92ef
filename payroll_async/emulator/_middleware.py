"""The emulator's middlewares: error bodies, injected faults (latency, 429, 5xx, drops), auth."""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Awaitable, Callable

from aiohttp import web

from ._http import ApiError, json_response
from ._state import STATE, WEBHOOK_ROLE

__all__ = ["auth", "errors", "faults"]

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """ApiError and aiohttp's own 4xx/5xx answered with the service's error body."""
    try:
        return await handler(request)
    except ApiError as exc:
        return json_response(
            {"message": exc.message, "errors": exc.errors}, exc.status, exc.headers
        )
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return json_response(
            {"message": exc.reason, "errors": [f"{request.method} {request.path}"]}, exc.status
        )


@web.middleware
async def faults(request: web.Request, handler: Handler) -> web.StreamResponse:
    """The seeded faults: drops, latency, the rate limit (429 with Retry-After), 5xx."""
    if not request.path.startswith("/v1/"):
        return await handler(request)
    state = request.app[STATE]
    state.stats["requests"] += 1
    if state.drop_rate and state.rng.random() < state.drop_rate:
        state.stats["dropped"] += 1
        if state.rng.random() < 0.5:
            # Half the drops lose the answer after the work was done, as a connection that
            # breaks on the way back does: a create has created, a delete has deleted.
            state.stats["dropped_after"] += 1
            with contextlib.suppress(ApiError, web.HTTPException):
                await handler(request)
        if request.transport is not None:
            request.transport.close()
        raise asyncio.CancelledError  # ends the handler without an answer
    if state.latency:
        await asyncio.sleep(state.latency)
    if state.bucket is not None:
        wait = state.bucket.take()
        if wait is not None:
            state.stats["rate_limited"] += 1
            seconds = max(1, math.ceil(wait))
            raise ApiError(
                429,
                "Rate limit exceeded",
                [f"retry after {seconds} seconds"],
                {"Retry-After": str(seconds)},
            )
    if state.error_rate and state.rng.random() < state.error_rate:
        state.stats["errors"] += 1
        status = state.rng.choice((500, 503))
        raise ApiError(
            status,
            "Internal server error" if status == 500 else "Service unavailable",
            ["injected fault"],
        )
    return await handler(request)


@web.middleware
async def auth(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Bearer tokens (401 with WWW-Authenticate) and the webhook role (403)."""
    if not request.path.startswith("/v1/"):
        return await handler(request)
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token:
        raise ApiError(
            401,
            "Missing bearer token",
            ["Authorization: Bearer <token> is required"],
            {"WWW-Authenticate": 'Bearer realm="payroll"'},
        )
    roles = request.app[STATE].roles.get(token.strip())
    if roles is None:
        raise ApiError(
            401,
            "Invalid token",
            ["the access token is invalid or expired"],
            {"WWW-Authenticate": 'Bearer realm="payroll", error="invalid_token"'},
        )
    if request.path.startswith("/v1/webhooks/") and WEBHOOK_ROLE not in roles:
        raise ApiError(
            403, "Insufficient permissions", [f"the API user lacks the role {WEBHOOK_ROLE}"]
        )
    return await handler(request)
