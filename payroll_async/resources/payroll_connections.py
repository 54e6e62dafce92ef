"""Payroll connections visible to the calling user."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._pagination import AsyncPaginator
from .._retry import RetryPolicy
from .._types import NOT_GIVEN, NotGiven, SortLike, TimeoutLike
from ..models import PayrollConnection
from ._base import Resource, request_options

__all__ = ["PayrollConnections"]


class PayrollConnections(Resource):
    """``client.payroll_connections``."""

    _name = "payroll_connections"

    def list(
        self,
        *,
        sort: SortLike | None = None,
        page_size: int | NotGiven | None = NOT_GIVEN,
        max_items: int | None = None,
        start_offset: int = 0,
        concurrency: int | NotGiven | None = NOT_GIVEN,
        timeout: TimeoutLike | NotGiven = NOT_GIVEN,
        retry: RetryPolicy | NotGiven | None = NOT_GIVEN,
        extra_query: Mapping[str, Any] | None = None,
        extra_headers: Mapping[str, str] | None = None,
    ) -> AsyncPaginator[PayrollConnection]:
        """Every payroll connection available to the current user.

        ```pycon
        >>> async for conn in client.payroll_connections.list(sort="-created_at"):
        ...     print(conn.id, conn.status, conn.product)
        ```
        """
        return self._paginate(
            "/v1/payroll-connections",
            PayrollConnection,
            sort=sort,
            page_size=page_size,
            max_items=max_items,
            start_offset=start_offset,
            concurrency=concurrency,
            options=request_options(timeout, retry, extra_query, extra_headers),
        )
