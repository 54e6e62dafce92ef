"""The service's collections, one registry: what the command, the export, the mirror and the
tests read of each (its name, model, list method, id, page maximum, whether it is listed
per employer)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

from ._core._assumed import WEBHOOK_PAGE_SIZE_MAX
from ._core._converter import columns
from .models import EmployerIdentifier, PayrollConnection, UpdateGroup, WebhookSubscription

if TYPE_CHECKING:
    from ._client import PayrollClient
    from ._paging._pagination import AsyncPaginator

__all__ = ["COLLECTIONS", "Collection"]

Lister = Callable[..., "AsyncPaginator[Any]"]


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
    key: str = "id"
    """The attribute of an item that identifies it."""

    @property
    def columns(self) -> list[str]:
        """The CSV columns: the keys of the items' ``to_dict``."""
        return columns(self.model)

    def page_size_error(self, page_size: int | None) -> str | None:
        """Why ``page_size`` is more than the service lists of it at once, or None."""
        limit = self.page_size_max
        if page_size is None or limit is None or page_size <= limit:
            return None
        return f"{self.name} are listed at most {limit} a page"

    def listing(
        self, client: PayrollClient, employer: object | None, **options: Any
    ) -> AsyncPaginator[Any]:
        """Its paginator; every option is checked now, before anything is written."""
        args = (employer,) if self.needs_employer else ()
        return self.lister(client)(*args, **options)

    def list_method(self, client: PayrollClient, employer: object | None) -> Lister:
        """Its list method, bound to ``employer`` when it is listed per employer."""
        method = self.lister(client)
        if not self.needs_employer:
            return method
        if employer is None:
            raise ValueError(f"{self.name} are listed one employer at a time")
        return lambda **options: method(employer, **options)


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
            key="webhook_subscription_id",
        ),
        Collection(
            "update-groups",
            UpdateGroup,
            lambda c: c.employer_identifiers.update_groups.list,
            needs_employer=True,
            key="update_group_id",
        ),
    )
}
