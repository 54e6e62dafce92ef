"""The service's resources as frozen attrs classes.

Attribute names are snake_case; the service's camelCase names and the JSON rules live in
the private converter (``payroll_async._core._converter``), not here.
"""

from __future__ import annotations

import datetime
import enum
import uuid
from collections.abc import Mapping
from typing import Any

import attrs

__all__ = [
    "EVENT_TYPES",
    "EmployerIdentifier",
    "EventType",
    "InviteSession",
    "ListMeta",
    "PayrollConnection",
    "UpdateGroup",
    "WebhookEvent",
    "WebhookSubscription",
    "event_type",
]


class EventType(str, enum.Enum):
    """An event the service notifies webhook subscriptions of.

    Members compare equal to their string values: ``EventType.PAYROLL_PROCESSED ==
    "PAYROLL_PROCESSED"``. An event type the SDK does not know arrives as a plain ``str``.
    """

    PAYROLL_PROCESSED = "PAYROLL_PROCESSED"
    """A payroll job has finished processing."""
    UPDATE_GROUP_PROCESSED = "UPDATE_GROUP_PROCESSED"
    """A bulk deduction/loan update group has been processed."""
    EMPLOYEE_CENSUS_HIRED = "EMPLOYEE_CENSUS_HIRED"
    """A new employee has been added to the census."""
    EMPLOYEE_CENSUS_UPDATED = "EMPLOYEE_CENSUS_UPDATED"
    """Employee census data has been updated."""
    EMPLOYEE_CENSUS_TERMINATED = "EMPLOYEE_CENSUS_TERMINATED"
    """An employee has been marked as terminated, deceased, or retired."""

    def __str__(self) -> str:
        return self.value


EVENT_TYPES: Mapping[str, EventType] = {member.value: member for member in EventType}
"""Every known event type by its text."""


def event_type(value: str) -> EventType | str:
    """The EventType named ``value``, or ``value`` itself for a type this SDK does not know."""
    return EVENT_TYPES.get(value, value)


@attrs.frozen
class WebhookSubscription:
    """A webhook subscription: where notifications of which events are sent."""

    webhook_subscription_id: uuid.UUID
    """The subscription's identifier: what ``webhooks.delete`` and ``webhooks.replace`` take."""
    webhook_event_types: tuple[EventType | str, ...]
    """The events notified, in the service's order (a type this SDK does not know is a str)."""
    path: str
    """The URL the service POSTs each notification to."""
    created_at: datetime.datetime
    """When the subscription was created (timezone-aware, UTC)."""
    active: bool
    """Whether the subscription is active and receiving notifications."""


@attrs.frozen
class PayrollConnection:
    """A payroll connection visible to the calling user."""

    id: uuid.UUID
    """The connection's identifier."""
    employer_identifier_id: uuid.UUID
    """The employer it belongs to: an [`EmployerIdentifier`][payroll_async.EmployerIdentifier]'s
    ``id``."""
    payroll_platform_id: uuid.UUID
    """The payroll platform it connects to."""
    created_at: datetime.datetime
    """When the connection was created (timezone-aware, UTC)."""
    status: str
    """Its state, as the service names it (the emulator uses ``active``, ``pending``,
    ``disconnected`` and ``error``; the service's own list is not published)."""
    product: str
    """The product it serves, as the service names it (the emulator uses ``deductions``,
    ``loans`` and ``earned_wage_access``)."""


@attrs.frozen
class EmployerIdentifier:
    """An employer identifier."""

    id: uuid.UUID
    """The employer identifier's ID: what ``update_groups.list`` and ``invites`` take."""
    display_name: str
    """The employer's human-readable name."""
    identifier: str
    """The employer's identifier value (for example a tax ID such as ``12-3456789``)."""
    created_at: datetime.datetime
    """When it was created (timezone-aware, UTC)."""


@attrs.frozen
class UpdateGroup:
    """An update group (bulk deduction/loan update) of an employer, in summary form."""

    update_group_id: uuid.UUID
    """The update group's identifier."""
    upload_date: datetime.datetime
    """When the group was uploaded (timezone-aware, UTC)."""
    error_count: int
    """How many of its updates failed (0 when all went through)."""


@attrs.frozen
class InviteSession:
    """A fresh onboarding link: valid for 30 minutes, single use, opened in a browser."""

    onboarding_link: str
    """The URL that starts the employer's onboarding. It carries a token: treat it as a
    secret, and open it in the employer's browser."""


@attrs.frozen
class ListMeta:
    """The ``meta`` object of a list response."""

    current_count: int
    """How many items this page holds."""
    filters: Mapping[str, Any]
    """The filters applied, by field name (e.g. ``{"active": {"eq": "true"}}``)."""
    limit: int
    """The page size the service used (it may be smaller than the one asked for)."""
    offset: int
    """The position of this page's first item in the whole listing."""
    sort: str
    """The sort order applied, in the service's camelCase (``-createdAt``: newest first)."""
    total_count: int
    """How many items the whole listing holds."""


@attrs.frozen
class WebhookEvent:
    """One notification from the service (see ``payroll_async.events``).

    Structured from the notification's JSON body by the SDK's converter:
    ``from_dict(WebhookEvent, body)``; ``to_dict(event)`` gives the body back.
    """

    event_type: EventType | str
    """An EventType, or the plain string of a type this SDK does not know."""
    event_id: str | None
    """The delivery's identifier, used to drop repeated deliveries (None if absent)."""
    occurred_at: datetime.datetime | None
    """When the event occurred (None if absent or unreadable)."""
    data: Mapping[str, Any]
    """The event's data, plus any other top-level fields of the body."""
