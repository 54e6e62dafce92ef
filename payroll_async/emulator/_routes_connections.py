"""Operation 6: GET /v1/payroll-connections."""

from __future__ import annotations

from aiohttp import web

from ._listing import collection_page
from ._state import STATE

__all__ = ["routes"]

routes = web.RouteTableDef()


@routes.get("/v1/payroll-connections")
async def list_connections(request: web.Request) -> web.Response:
    return collection_page(request, request.app[STATE].data.payroll_connections)
