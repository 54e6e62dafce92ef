"""The collections the command exports: one table that export, sort checks and CSV read."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from payroll_async import (
    AsyncPaginator,
    EmployerIdentifier,
    PayrollClient,
    PayrollConnection,
    UpdateGroup,
    WebhookSubscription,
)
from payroll_async._core._assumed import WEBHOOK_PAGE_SIZE_MAX
from payroll_async._core._converter import to_camel

__all__ = ["COLLECTIONS", "Collection"]

Lister = Callable[..., AsyncPaginator[Any]]


@attrs.frozen
class Collection:
    """One exportable collection."""

    name: str
    """As the command spells it: ``payroll-connections``."""
    model: type[Any]
    """The SDK model of its items."""
    lister: Callable[[PayrollClient], Lister]
    """The client's list method (update groups take the employer first)."""
    page_size_max: int | None = None
    """The service's page-size limit for this listing, when it states one."""
    needs_employer: bool = False
    """Whether it is listed per employer (``--employer ID``)."""

    @property
    def columns(self) -> list[str]:
        """The CSV columns: the keys of the items' ``to_dict``."""
        return [to_camel(field.name) for field in attrs.fields(self.model)]

    def listing(
        self, client: PayrollClient, employer: str | None, **options: Any
    ) -> AsyncPaginator[Any]:
        """Its paginator; every option is checked now, before anything is written."""
        args = (employer,) if self.needs_employer else ()
        return self.lister(client)(*args, **options)


COLLECTIONS: dict[str, Collection] = {
    c.name: c
    for c in (
        Collection("payroll-connections", PayrollConnection, lambda c: c.payroll_connections.list),
        Collection(
            "employer-identifiers", EmployerIdentifier, lambda c: c.employer_identifiers.list
        ),
        Collection(
            "webhooks",
            WebhookSubscription,
            lambda c: c.webhooks.list,
            page_size_max=WEBHOOK_PAGE_SIZE_MAX,
        ),
        Collection(
            "update-groups",
            UpdateGroup,
            lambda c: c.employer_identifiers.update_groups.list,
            needs_employer=True,
        ),
    )
}
