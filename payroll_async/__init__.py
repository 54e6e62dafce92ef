"""payroll_async: the async Python SDK of the Payroll Onboarding and Webhook Service.

>>> from payroll_async import PayrollClient
>>> async with PayrollClient(base_url="https://api.example.com", token="...") as client:
...     async for conn in client.payroll_connections.list():
...         print(conn.id)
"""

import logging as _logging

from ._auth import TokenProvider
from ._client import PayrollClient
from ._converter import to_dict
from ._exceptions import (
    APIConnectionError,
    APIStatusError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ClientClosedError,
    InvalidArgumentError,
    NotFoundError,
    PaginationError,
    PayrollError,
    PermissionDeniedError,
    RateLimitError,
    ReplaceIncompleteError,
    ResponseDecodeError,
    ServerError,
)
from ._pagination import AsyncPaginator, Page
from ._retry import RetryPolicy
from ._types import NOT_GIVEN, NotGiven
from ._version import __version__
from .models import (
    EmployerIdentifier,
    EventType,
    InviteSession,
    ListMeta,
    PayrollConnection,
    UpdateGroup,
    WebhookSubscription,
)

# A library logs; the application decides where it goes (the logging HOWTO's advice).
_logging.getLogger("payroll_async").addHandler(_logging.NullHandler())

__all__ = [
    "APIConnectionError",
    "APIStatusError",
    "APITimeoutError",
    "AsyncPaginator",
    "AuthenticationError",
    "BadRequestError",
    "ClientClosedError",
    "EmployerIdentifier",
    "EventType",
    "InvalidArgumentError",
    "InviteSession",
    "ListMeta",
    "NOT_GIVEN",
    "NotFoundError",
    "NotGiven",
    "Page",
    "PaginationError",
    "PayrollClient",
    "PayrollConnection",
    "PayrollError",
    "PermissionDeniedError",
    "RateLimitError",
    "ReplaceIncompleteError",
    "ResponseDecodeError",
    "RetryPolicy",
    "ServerError",
    "TokenProvider",
    "UpdateGroup",
    "WebhookSubscription",
    "__version__",
    "to_dict",
]
