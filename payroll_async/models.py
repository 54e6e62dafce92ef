"""The service's resources as frozen attrs classes.

Attribute names are snake_case; the service's camelCase names and the JSON rules live in
the private converter (``payroll_async._converter``), not here.
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
    webhook_event_types: tuple[EventType | str, ...]
    path: str
    created_at: datetime.datetime
    active: bool


@attrs.frozen
class PayrollConnection:
    """A payroll connection visible to the calling user."""

    id: uuid.UUID
    employer_identifier_id: uuid.UUID
    payroll_platform_id: uuid.UUID
    created_at: datetime.datetime
    status: str
    product: str


@attrs.frozen
class EmployerIdentifier:
    """An employer identifier."""

    id: uuid.UUID
    display_name: str
    identifier: str
    created_at: datetime.datetime


@attrs.frozen
class UpdateGroup:
    """An update group (bulk deduction/loan update) of an employer, in summary form."""

    update_group_id: uuid.UUID
    upload_date: datetime.datetime
    error_count: int


@attrs.frozen
class InviteSession:
    """A fresh onboarding link: valid for 30 minutes, single use, opened in a browser."""

    onboarding_link: str


@attrs.frozen
class ListMeta:
    """The ``meta`` object of a list response."""

    current_count: int
    filters: Mapping[str, Any]
    limit: int
    offset: int
    sort: str
    total_count: int


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
