"""Operations 1-3: list, create and delete webhook subscriptions."""

from __future__ import annotations

from aiohttp import web
from yarl import URL

from .._core._assumed import EMULATOR_MAX_PATH_LENGTH, EMULATOR_MAX_SUBSCRIPTIONS
from ..models import EVENT_TYPES
from ._http import ApiError, is_loopback, json_object, json_response, path_uuid
from ._listing import envelope, parse_query
from ._state import STATE

__all__ = ["routes"]

WEBHOOK_PAGE_DEFAULT = 20
WEBHOOK_PAGE_MAX = 100

routes = web.RouteTableDef()


@routes.get("/v1/webhooks/subscriptions")
async def list_subscriptions(request: web.Request) -> web.Response:
    state = request.app[STATE]
    query = parse_query(
        request,
        sort_fields=frozenset({"active", "createdAt"}),
        default_sort="createdAt",
        default_limit=WEBHOOK_PAGE_DEFAULT,
        max_limit=WEBHOOK_PAGE_MAX
        if state.max_page_size is None
        else min(WEBHOOK_PAGE_MAX, state.max_page_size),
        filterable={"active": frozenset({"eq", "ne"})},
    )
    subs = state.subscriptions.all()  # creation order == createdAt order
    for op, raw in query.filters.get("active", {}).items():
        if raw not in ("true", "false"):
            raise ApiError(
                400,
                "Invalid request parameters",
                [f"filter[active][{op}]: must be true or false, got {raw!r}"],
            )
        wanted = raw == "true"
        subs = [s for s in subs if (s.active == wanted) == (op == "eq")]
    for field, descending in reversed(query.spec):
        if field == "active":
            subs.sort(key=lambda s: s.active, reverse=descending)
        elif descending:  # createdAt: the list is in creation order already
            subs.reverse()
    page = [s.to_json() for s in subs[query.offset : query.offset + query.limit]]
    return envelope(request, page, query, len(subs))


def _check_path(path: object) -> str | None:
    """Why ``path`` is not a destination the service accepts, or None."""
    if not isinstance(path, str):
        return "path: a URL string is required"
    if len(path) > EMULATOR_MAX_PATH_LENGTH:
        return (
            f"path: at most {EMULATOR_MAX_PATH_LENGTH:,} characters "
            f"(the emulator's bound), got {len(path):,}"
        )
    if not path.isascii() or any(ch.isspace() or not ch.isprintable() for ch in path):
        return f"path: must be an ASCII URI without spaces, got {path!r}"
    try:
        url: URL | None = URL(path)
    except ValueError:
        url = None
    if (
        url is None
        or not url.is_absolute()
        or not url.host
        or not (url.scheme == "https" or (url.scheme == "http" and is_loopback(url.host)))
    ):
        return f"path: must be an absolute https URL, got {path!r}"
    return None


@routes.post("/v1/webhooks/subscriptions")
async def create_subscription(request: web.Request) -> web.Response:
    body = await json_object(request)
    errors: list[str] = []
    event_types = body.get("event_types")
    if not isinstance(event_types, list) or not event_types:
        errors.append("event_types: a non-empty array of event types is required")
        event_types = []
    else:
        for item in event_types:
            if not isinstance(item, str) or item not in EVENT_TYPES:
                errors.append(
                    f"event_types: unknown event type {item!r}; "
                    f"allowed: {', '.join(sorted(EVENT_TYPES))}"
                )
    path = body.get("path")
    problem = _check_path(path)
    if problem is not None:
        errors.append(problem)
    if errors:
        raise ApiError(400, "Invalid request parameters", errors)
    assert isinstance(path, str)
    store = request.app[STATE].subscriptions
    if len(store) >= EMULATOR_MAX_SUBSCRIPTIONS:
        raise ApiError(
            400,
            "Invalid request parameters",
            [
                f"the emulator keeps at most {EMULATOR_MAX_SUBSCRIPTIONS:,} webhook "
                "subscriptions: delete one first"
            ],
        )
    subscription = store.create(event_types, path)
    # ASSUMED: the 201 body is the new subscription.
    return json_response(subscription.to_json(), status=201)


@routes.delete("/v1/webhooks/subscriptions/{id}")
async def delete_subscription(request: web.Request) -> web.Response:
    sid = path_uuid(request, "id", "subscription_id")
    if not request.app[STATE].subscriptions.delete(sid):
        raise ApiError(404, "Webhook subscription not found", [f"no subscription {sid}"])
    return web.Response(status=204)
