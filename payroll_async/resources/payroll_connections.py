"""Payroll connections visible to the calling user."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._pagination import AsyncPaginator
from .._types import SortLike
from ..models import PayrollConnection
from ._base import Resource

__all__ = ["PayrollConnections"]


class PayrollConnections(Resource):
    """``client.payroll_connections``."""

    def list(
        self,
        *,
        sort: SortLike | None = None,
        page_size: int | None = None,
        max_items: int | None = None,
        start_offset: int = 0,
        concurrency: int | None = None,
        extra_query: Mapping[str, Any] | None = None,
        extra_headers: Mapping[str, str] | None = None,
    ) -> AsyncPaginator[PayrollConnection]:
        """Every payroll connection available to the current user.

        >>> async for conn in client.payroll_connections.list(sort="-created_at"):
        ...     print(conn.id, conn.status, conn.product)
        """
        return self._paginate(
            "/v1/payroll-connections",
            PayrollConnection,
            sort=sort,
            page_size=page_size,
            max_items=max_items,
            start_offset=start_offset,
            concurrency=concurrency,
            extra_query=extra_query,
            extra_headers=extra_headers,
        )
