"""Payroll connections visible to the calling user."""

from __future__ import annotations

from .._core._types import SortLike
from .._http._options import ListOptions, Unpack
from .._paging._pagination import AsyncPaginator
from ..models import PayrollConnection
from ._base import Resource

__all__ = ["PayrollConnections"]


class PayrollConnections(Resource):
    """``client.payroll_connections``."""

    _name = "payroll_connections"

    def list(
        self, *, sort: SortLike | None = None, **options: Unpack[ListOptions]
    ) -> AsyncPaginator[PayrollConnection]:
        """Every payroll connection available to the current user.

        ```pycon
        >>> async for conn in client.payroll_connections.list(sort="-created_at"):
        ...     print(conn.id, conn.status, conn.product)
        ```
        """
        return self._paginate("/v1/payroll-connections", PayrollConnection, options, sort=sort)
