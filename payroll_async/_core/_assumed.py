"""Every choice the SDK makes where the service's interface document says "not shown".

The document is the service's "Payroll Onboarding and Webhook Service Interface"; each
constant names the section it fills a gap of. Each choice is listed in docs/assumptions.md
and in ``emulator/openapi.yaml`` (``x-assumed``); keeping them here makes each a one-line
change once the service's behaviour is known.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

# ASSUMED (Endpoints, 1. List webhook subscriptions): how the `active` filter is put in
# the query. The document names the field and its operators (eq, ne), not the encoding.
ACTIVE_FILTER_PARAM: Final = "filter[active][eq]"


def active_filter_value(active: bool) -> str:
    """ASSUMED: booleans in filter values are the JSON literals."""
    return "true" if active else "false"


# ASSUMED (Endpoints, 2. Create a webhook subscription): the 201 body is the new
# subscription object.
# When the body is empty the client finds the new subscription by listing, newest first.
CREATE_FALLBACK_SORT: Final = "-createdAt"

# ASSUMED (Endpoints, 4-7): their success statuses are not shown; any 2xx is success.
SUCCESS_MIN: Final = 200
SUCCESS_MAX: Final = 299

# ASSUMED (Events): the body of a delivered notification is not shown.
EVENT_ID_KEY: Final = "eventId"
EVENT_TYPE_KEY: Final = "eventType"
EVENT_OCCURRED_AT_KEY: Final = "occurredAt"
EVENT_DATA_KEY: Final = "data"

# ASSUMED (Events): how notifications are signed is not shown. We assume the Standard
# Webhooks scheme (OpenAI, Svix, Anthropic and others use it): these three headers, HMAC-
# SHA256 over "{id}.{timestamp}.{raw body}", and secrets written "whsec_<base64>".
SIGNATURE_ID_HEADER: Final = "webhook-id"
SIGNATURE_TIMESTAMP_HEADER: Final = "webhook-timestamp"
SIGNATURE_HEADER: Final = "webhook-signature"
WEBHOOK_SECRET_PREFIX: Final = "whsec_"
# A secret decoding to fewer bytes did not come from a key generator (Standard Webhooks
# keys are 24 to 64 random bytes): a password or a placeholder, refused where it is given.
WEBHOOK_SECRET_MIN_BYTES: Final = 16

# Stated by the document (Endpoints, 1. List webhook subscriptions) for that operation only.
WEBHOOK_PAGE_SIZE_MAX: Final = 100
WEBHOOK_SORT_FIELDS: Final = frozenset({"active", "createdAt"})

# From the document's common list parameters (List envelope; Limits).
LIMIT_MAX: Final = 4_294_967_295
OFFSET_MAX: Final = 4_294_967_295

# The emulator's own bounds, so that one request cannot overload it (the interface document
# states no page-size cap for operations 5-7). A larger limit is clamped, and the page's
# meta.limit says so; a sort other than the default order (or its reverse) over more items
# than MAX_SORT_ITEMS is refused with a 400 saying why.
EMULATOR_MAX_PAGE_SIZE: Final = 10_000
EMULATOR_MAX_SORT_ITEMS: Final = 1_000_000
# And its memory: at most this many webhook subscriptions (a create past it is a 400), paths
# of at most this many characters (the de facto URL limit of browsers and CDNs), and the
# latest this many deliveries kept in ``Emulator.deliveries``.
EMULATOR_MAX_SUBSCRIPTIONS: Final = 1_000
EMULATOR_MAX_PATH_LENGTH: Final = 2_048
EMULATOR_DELIVERIES_KEPT: Final = 1_000

# ASSUMED (operation group payroll-platforms, named by the document, not shown): the
# emulator serves a listing of the platforms the connections refer to (``{id, name,
# createdAt}``) and a lookup by id, for the SDK's generic calls to run against. The SDK
# wraps neither: ``client.get_api_list(PAYROLL_PLATFORMS_PATH, model=...)`` reaches it.
PAYROLL_PLATFORMS_PATH: Final = "/v1/payroll-platforms"

# ASSUMED (List envelope; operations 1, 5-7): the default order of every listing
# (createdAt, uploadDate for update groups) is a stable total order: it never changes for
# an existing item and never ties. The mirror's deletion proof rests on it (mirror/_walk.py):
# it walks each listing in that order with overlapping pages, and checks it where the data
# shows it: a walk that sees the order go down, or two items with the same key at a page's
# edge, is not proven.
MIRROR_ORDER: Final = None
"""The sort the mirror asks for: None sends none, so the service's default applies."""

# The field of each collection's items that MIRROR_ORDER sorts by (the model's attribute
# name), which the mirror's walk checks the order against.
MIRROR_ORDER_FIELDS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "payroll-connections": "created_at",
        "employer-identifiers": "created_at",
        "webhooks": "created_at",
        "update-groups": "upload_date",
    }
)
