"""ASSUMED: GET /v1/payroll-platforms and /v1/payroll-platforms/{id}.

The interface document names the payroll-platforms operation group without showing it.
The emulator serves one listing and one lookup of it, in the service's envelope, so that
the SDK's generic calls (``client.get``, ``client.get_api_list``) have an operation the
SDK does not wrap to run against.
"""

from __future__ import annotations

from aiohttp import web

from .._core._assumed import PAYROLL_PLATFORMS_PATH
from ._http import ApiError, json_response, path_uuid
from ._listing import collection_page
from ._state import STATE

__all__ = ["routes"]

routes = web.RouteTableDef()


@routes.get(PAYROLL_PLATFORMS_PATH)
async def list_platforms(request: web.Request) -> web.Response:
    return collection_page(request, request.app[STATE].data.payroll_platforms)


@routes.get(PAYROLL_PLATFORMS_PATH + "/{platform}")
async def get_platform(request: web.Request) -> web.Response:
    platform_id = path_uuid(request, "platform", "payroll_platform")
    data = request.app[STATE].data
    index = data.platform_index(platform_id)
    if index is None:
        raise ApiError(404, "Payroll platform not found", [f"no payroll platform {platform_id}"])
    return json_response(data.payroll_platform(index))
