"""Operations 4, 5 and 7: employer identifiers, their update groups, invite sessions."""

from __future__ import annotations

from aiohttp import web

from ._http import ApiError, json_response, path_uuid, request_url
from ._listing import collection_page
from ._state import STATE

__all__ = ["routes"]

routes = web.RouteTableDef()


def _employer(request: web.Request) -> int:
    employer_id = path_uuid(request, "employer", "employer_identifier")
    index = request.app[STATE].data.employer_index(employer_id)
    if index is None:
        raise ApiError(
            404, "Employer identifier not found", [f"no employer identifier {employer_id}"]
        )
    return index


@routes.get("/v1/employer-identifiers")
async def list_employers(request: web.Request) -> web.Response:
    return collection_page(request, request.app[STATE].data.employer_identifiers)


@routes.get("/v1/employer-identifiers/{employer}/update-groups")
async def list_update_groups(request: web.Request) -> web.Response:
    return collection_page(request, request.app[STATE].data.update_groups(_employer(request)))


@routes.post("/v1/employer-identifiers/{employer}/invites/{invite}/session")
async def create_invite_session(request: web.Request) -> web.Response:
    state = request.app[STATE]
    employer = _employer(request)
    invite = path_uuid(request, "invite", "invite")
    if invite != state.data.invite_id(employer):
        raise ApiError(404, "Invite not found", [f"no invite {invite} for this employer"])
    token = state.links.make(invite)
    link = request_url(request).with_path("/onboarding").with_query(token=token)
    return json_response({"onboardingLink": str(link)})


@routes.get("/onboarding")
async def onboarding(request: web.Request) -> web.Response:
    """Where an onboarding link leads: a page the first time, 410 after that or once expired."""
    status, text = request.app[STATE].links.open(request.query.get("token", ""))
    if status != 200:
        return web.Response(status=status, text=text + "\n")
    return web.Response(
        content_type="text/html",
        text=(
            "<!doctype html><title>Onboarding</title>"
            f"<p>Onboarding started for invite {text}.</p>\n"
        ),
    )
