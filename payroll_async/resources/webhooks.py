"""Webhook subscriptions: list, create, delete, replace without a gap, ensure."""

from __future__ import annotations

import builtins
import datetime
import logging
from collections.abc import Iterable, Mapping
from typing import Final

from .._core import _assumed
from .._core import _validation as check
from .._core._exceptions import (
    InvalidArgumentError,
    NotFoundError,
    PayrollError,
    ReplaceIncompleteError,
)
from .._core._types import IdLike, SortLike
from .._http._attempt import build_request
from .._http._options import CallOptions, FinalOptions, ListOptions, Unpack
from .._paging._decode import decode_error, structure_body
from .._paging._pagination import AsyncPaginator
from ..models import EventType, WebhookSubscription
from ._base import RawView, Resource, operation, raw
from ._once import create_once, service_since

__all__ = ["Webhooks", "WebhooksWithRawResponse"]

logger: logging.Logger = logging.getLogger("payroll_async")

_PATH = "/v1/webhooks/subscriptions"


def _matches(sub: WebhookSubscription, event_types: list[str], path: str) -> bool:
    return sub.path == path and {str(t) for t in sub.webhook_event_types} == set(event_types)


class Webhooks(Resource):
    """``client.webhooks``: where the service sends notifications of which events.

    Needs the api-user-webhook-subscription role on the API user; without it every call
    raises PermissionDeniedError.
    """

    _name = "webhooks"

    @property
    def with_raw_response(self) -> WebhooksWithRawResponse:
        """These operations, each returning a RawResponse (as any resource's)."""
        return WebhooksWithRawResponse(self)

    def list(
        self,
        *,
        active: bool | None = None,
        sort: SortLike | None = None,
        **options: Unpack[ListOptions],
    ) -> AsyncPaginator[WebhookSubscription]:
        """Webhook subscriptions, optionally only active (or inactive) ones.

        ``sort`` takes ``active`` and ``createdAt`` (or ``created_at``), ``-`` for descending;
        ``page_size`` at most 100, the service's maximum for this listing.

        ```pycon
        >>> async for sub in client.webhooks.list(active=True, sort="-createdAt"):
        ...     print(sub.webhook_subscription_id, sub.path)
        ```
        """
        filters: dict[str, str] = {}
        if active is not None:
            if not isinstance(active, bool):
                raise InvalidArgumentError(f"active must be True, False or None, got {active!r}")
            filters[_assumed.ACTIVE_FILTER_PARAM] = _assumed.active_filter_value(active)
        return self._paginate(
            _PATH,
            WebhookSubscription,
            options,
            filters=filters,
            sort=sort,
            sort_fields=_assumed.WEBHOOK_SORT_FIELDS,
            page_size_max=_assumed.WEBHOOK_PAGE_SIZE_MAX,
        )

    @operation
    async def create(
        self,
        *,
        event_types: Iterable[EventType | str],
        path: str,
        **options: Unpack[CallOptions],
    ) -> WebhookSubscription:
        """Subscribe ``path`` (an https URL) to ``event_types``; returns the new subscription.

        ```pycon
        >>> sub = await client.webhooks.create(
        ...     event_types=[EventType.PAYROLL_PROCESSED],
        ...     path="https://example.com/hooks",
        ... )
        ```
        """
        types = check.check_event_types(event_types)
        path = check.check_webhook_path(path)
        return await self._create(types, path, options, self._options("create", options))

    async def _create(
        self, types: builtins.list[str], path: str, keywords: CallOptions, options: FinalOptions
    ) -> WebhookSubscription:
        # Exactly once: a POST whose answer was lost is looked for before it is sent again.
        binding = self._binding
        response = await binding.send_recovering(
            build_request(
                "POST", binding.url(_PATH), options, json={"event_types": types, "path": path}
            ),
            create_once(
                lambda since: self._created_since(types, path, since, keywords),
                options.timeout,
                f"POST {_PATH}",
            ),
        )
        if isinstance(response, WebhookSubscription):
            return response
        if response.body.strip():
            return structure_body(WebhookSubscription, response)
        # ASSUMED: an empty 201 body; the new subscription is the newest with these values.
        fallback: CallOptions = {**keywords, "extra_query": {}}  # the query was the POST's
        async for sub in self.list(sort=_assumed.CREATE_FALLBACK_SORT, **fallback):
            if _matches(sub, types, path):
                return sub
        raise decode_error(
            "the service answered the create with an empty body, and no subscription with "
            "that path and those event types was found by listing",
            response,
        )

    async def _created_since(
        self,
        types: builtins.list[str],
        path: str,
        began: datetime.datetime,
        keywords: CallOptions,
    ) -> WebhookSubscription | None:
        """The newest subscription with these values created since ``began`` (this
        machine's clock), compared on the service's clock (its ``Date``, else the newest
        item listed) less a minute of leeway.

        Every page is read: a lost answer is rare, and a service that ignored the sort
        order must not hide the subscription the lost attempt made.
        """
        lookup: CallOptions = {**keywords, "extra_query": {}}  # the query was the POST's
        matches: builtins.list[WebhookSubscription] = []
        newest: datetime.datetime | None = None
        headers: Mapping[str, str] = {}
        received = datetime.datetime.now(datetime.timezone.utc)
        pages = self.list(sort=_assumed.CREATE_FALLBACK_SORT, **lookup).pages()
        async for page in pages:
            if not headers:
                headers, received = page.headers, datetime.datetime.now(datetime.timezone.utc)
            for sub in page.items:
                newest = sub.created_at if newest is None else max(newest, sub.created_at)
                if _matches(sub, types, path):
                    matches.append(sub)
        since = service_since(began, headers, newest, received)
        return max(
            (sub for sub in matches if sub.created_at >= since),
            key=lambda sub: sub.created_at,
            default=None,
        )

    @operation
    async def delete(self, subscription_id: IdLike, **options: Unpack[CallOptions]) -> None:
        """Delete a subscription. To change one,
        [`replace()`][payroll_async.resources.Webhooks.replace] it instead: no gap."""
        sid = check.check_id(subscription_id, "subscription_id")
        await self._send("DELETE", f"{_PATH}/{sid}", self._options("delete", options))

    @operation
    async def replace(
        self,
        subscription_id: IdLike,
        *,
        event_types: Iterable[EventType | str],
        path: str,
        **options: Unpack[CallOptions],
    ) -> WebhookSubscription:
        """Swap a subscription for a new one with no gap: create the new, then delete the old.

        The old subscription is looked up first: if it does not exist, NotFoundError is
        raised and nothing is created (so running the same replace twice cannot leave two
        new subscriptions). A 404 on the final delete means it is already gone. If the
        delete fails otherwise, raises ReplaceIncompleteError carrying ``new_subscription``
        (both are then live; retry the delete). Returns the new subscription.
        """
        sid = check.check_id(subscription_id, "subscription_id")
        types = check.check_event_types(event_types)
        path = check.check_webhook_path(path)
        final = self._options("replace", options)
        listing = self.list(**options)
        if not [sub async for sub in listing if str(sub.webhook_subscription_id) == sid]:
            raise NotFoundError.missing(
                f"webhook subscription {sid} does not exist; nothing was created"
            )
        new = await self._create(types, path, options, final)
        try:
            await self._send("DELETE", f"{_PATH}/{sid}", final)
        except NotFoundError:
            logger.info("webhook subscription %s was already deleted", sid)
        except PayrollError as exc:
            raise ReplaceIncompleteError(
                f"created subscription {new.webhook_subscription_id} but could not delete "
                f"{sid} ({type(exc).__name__}); both are active: delete {sid} again",
                new_subscription=new,
                old_subscription_id=sid,
            ) from exc
        logger.info("replaced webhook subscription %s with %s", sid, new.webhook_subscription_id)
        return new

    @operation
    async def ensure(
        self,
        *,
        event_types: Iterable[EventType | str],
        path: str,
        **options: Unpack[CallOptions],
    ) -> WebhookSubscription:
        """The active subscription with exactly these event types and path; created if none.

        Safe to run on every start of a deployment.
        """
        types = check.check_event_types(event_types)
        path = check.check_webhook_path(path)
        final = self._options("ensure", options)
        async for sub in self.list(active=True, **options):
            if sub.active and _matches(sub, types, path):
                return sub
        return await self._create(types, path, options, final)


class WebhooksWithRawResponse(RawView[Webhooks]):
    """``client.webhooks.with_raw_response``: each operation's RawResponse."""

    create: Final = raw(Webhooks.create)
    delete: Final = raw(Webhooks.delete)
    replace: Final = raw(Webhooks.replace)
    ensure: Final = raw(Webhooks.ensure)
