"""Webhook subscriptions: list, create, delete, replace without a gap, ensure."""

from __future__ import annotations

import builtins
import logging
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from .. import _assumed
from .. import _validation as check
from .._decode import decode_error, structure_body
from .._exceptions import (
    InvalidArgumentError,
    NotFoundError,
    PayrollError,
    ReplaceIncompleteError,
)
from .._pagination import AsyncPaginator
from .._retry import RetryPolicy
from .._types import NOT_GIVEN, IdLike, NotGiven, RequestOptions, SortLike, TimeoutLike
from ..models import EventType, WebhookSubscription
from ._base import Resource, operation, request_options

__all__ = ["Webhooks"]

logger = logging.getLogger("payroll_async")

_PATH = "/v1/webhooks/subscriptions"


def _matches(sub: WebhookSubscription, event_types: list[str], path: str) -> bool:
    return sub.path == path and {str(t) for t in sub.webhook_event_types} == set(event_types)


def _keywords(options: RequestOptions) -> dict[str, Any]:
    """A call's validated options as the keywords of another operation in the same call."""
    return {
        "timeout": options.timeout,
        "retry": options.retry,
        "extra_query": options.extra_query,
        "extra_headers": options.extra_headers,
    }


class Webhooks(Resource):
    """``client.webhooks``: where the service sends notifications of which events.

    Needs the api-user-webhook-subscription role on the API user; without it every call
    raises PermissionDeniedError.
    """

    _name = "webhooks"

    def list(
        self,
        *,
        active: bool | None = None,
        sort: SortLike | None = None,
        page_size: int | NotGiven | None = NOT_GIVEN,
        max_items: int | None = None,
        start_offset: int = 0,
        concurrency: int | NotGiven | None = NOT_GIVEN,
        timeout: TimeoutLike | NotGiven = NOT_GIVEN,
        retry: RetryPolicy | NotGiven | None = NOT_GIVEN,
        extra_query: Mapping[str, Any] | None = None,
        extra_headers: Mapping[str, str] | None = None,
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
            filters=filters,
            sort=sort,
            sort_fields=_assumed.WEBHOOK_SORT_FIELDS,
            page_size=page_size,
            page_size_max=_assumed.WEBHOOK_PAGE_SIZE_MAX,
            max_items=max_items,
            start_offset=start_offset,
            concurrency=concurrency,
            options=request_options(timeout, retry, extra_query, extra_headers),
        )

    @operation("webhooks.create")
    async def create(
        self,
        *,
        event_types: Iterable[EventType | str],
        path: str,
        timeout: TimeoutLike | NotGiven = NOT_GIVEN,
        retry: RetryPolicy | NotGiven | None = NOT_GIVEN,
        extra_query: Mapping[str, Any] | None = None,
        extra_headers: Mapping[str, str] | None = None,
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
        options = request_options(timeout, retry, extra_query, extra_headers)
        return await self._create(types, path, options)

    async def _create(
        self, types: builtins.list[str], path: str, options: RequestOptions
    ) -> WebhookSubscription:
        response = await self._send(
            "POST", _PATH, json={"event_types": types, "path": path}, options=options
        )
        if response.body.strip():
            return structure_body(WebhookSubscription, response)
        # ASSUMED: an empty 201 body; the new subscription is the newest with these values.
        fallback = attrs.evolve(options, extra_query={})  # the query was the POST's
        async for sub in self.list(sort=_assumed.CREATE_FALLBACK_SORT, **_keywords(fallback)):
            if _matches(sub, types, path):
                return sub
        raise decode_error(
            "the service answered the create with an empty body, and no subscription with "
            "that path and those event types was found by listing",
            response,
        )

    @operation("webhooks.delete")
    async def delete(
        self,
        subscription_id: IdLike,
        *,
        timeout: TimeoutLike | NotGiven = NOT_GIVEN,
        retry: RetryPolicy | NotGiven | None = NOT_GIVEN,
        extra_query: Mapping[str, Any] | None = None,
        extra_headers: Mapping[str, str] | None = None,
    ) -> None:
        """Delete a subscription. To change one,
        [`replace()`][payroll_async.resources.Webhooks.replace] it instead: no gap."""
        sid = check.check_id(subscription_id, "subscription_id")
        options = request_options(timeout, retry, extra_query, extra_headers)
        await self._send("DELETE", f"{_PATH}/{sid}", options=options)

    @operation("webhooks.replace")
    async def replace(
        self,
        subscription_id: IdLike,
        *,
        event_types: Iterable[EventType | str],
        path: str,
        timeout: TimeoutLike | NotGiven = NOT_GIVEN,
        retry: RetryPolicy | NotGiven | None = NOT_GIVEN,
        extra_query: Mapping[str, Any] | None = None,
        extra_headers: Mapping[str, str] | None = None,
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
        options = request_options(timeout, retry, extra_query, extra_headers)
        listing = self.list(**_keywords(options))
        if not [sub async for sub in listing if str(sub.webhook_subscription_id) == sid]:
            raise NotFoundError(
                f"webhook subscription {sid} does not exist; nothing was created",
                status=404,
                method="GET",
                url=self._binding.url(_PATH),
            )
        new = await self._create(types, path, options)
        try:
            await self._send("DELETE", f"{_PATH}/{sid}", options=options)
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

    @operation("webhooks.ensure")
    async def ensure(
        self,
        *,
        event_types: Iterable[EventType | str],
        path: str,
        timeout: TimeoutLike | NotGiven = NOT_GIVEN,
        retry: RetryPolicy | NotGiven | None = NOT_GIVEN,
        extra_query: Mapping[str, Any] | None = None,
        extra_headers: Mapping[str, str] | None = None,
    ) -> WebhookSubscription:
        """The active subscription with exactly these event types and path; created if none.

        Safe to run on every start of a deployment.
        """
        types = check.check_event_types(event_types)
        path = check.check_webhook_path(path)
        options = request_options(timeout, retry, extra_query, extra_headers)
        async for sub in self.list(active=True, **_keywords(options)):
            if sub.active and _matches(sub, types, path):
                return sub
        return await self._create(types, path, options)
