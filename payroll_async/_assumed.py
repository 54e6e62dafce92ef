"""Every choice the SDK makes where the service's interface document says "not shown".

Each one is marked ASSUMED in API.md and the README; keeping them here makes each a
one-line change once the service's behaviour is known.
"""

from __future__ import annotations

from typing import Final

# ASSUMED: how the `active` filter of GET /v1/webhooks/subscriptions is put in the query.
# The document names the field and its operators (eq, ne), not the encoding.
ACTIVE_FILTER_PARAM: Final = "filter[active][eq]"


def active_filter_value(active: bool) -> str:
    """ASSUMED: booleans in filter values are the JSON literals."""
    return "true" if active else "false"


# ASSUMED: the 201 body of POST /v1/webhooks/subscriptions is the new subscription object.
# When the body is empty the client finds the new subscription by listing, newest first.
CREATE_FALLBACK_SORT: Final = "-createdAt"

# ASSUMED: success statuses of operations 4-7 are not shown; any 2xx is success.
SUCCESS_MIN: Final = 200
SUCCESS_MAX: Final = 299

# ASSUMED: the body of a delivered notification (the document does not show it).
EVENT_ID_KEY: Final = "eventId"
EVENT_TYPE_KEY: Final = "eventType"
EVENT_OCCURRED_AT_KEY: Final = "occurredAt"
EVENT_DATA_KEY: Final = "data"

# Stated by the document for operation 1 only (list webhook subscriptions).
WEBHOOK_PAGE_SIZE_MAX: Final = 100
WEBHOOK_SORT_FIELDS: Final = frozenset({"active", "createdAt"})

# From the common list parameters of the document.
LIMIT_MAX: Final = 4_294_967_295
OFFSET_MAX: Final = 4_294_967_295

# The emulator's own bounds, so that one request cannot overload it (the interface document
# states no page-size cap for operations 5-7). A larger limit is clamped, and the page's
# meta.limit says so; a sort other than the default order (or its reverse) over more items
# than MAX_SORT_ITEMS is refused with a 400 saying why.
EMULATOR_MAX_PAGE_SIZE: Final = 10_000
EMULATOR_MAX_SORT_ITEMS: Final = 1_000_000
