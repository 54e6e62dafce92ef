"""payroll_async: the async Python SDK of the Payroll Onboarding and Webhook Service.

```pycon
>>> from payroll_async import PayrollClient
>>> async with PayrollClient("https://api.example.com", token) as client:
...     async for conn in client.payroll_connections.list():
...         print(conn.id)
```
"""

import importlib as _importlib
import logging as _logging
from typing import TYPE_CHECKING as _TYPE_CHECKING

from ._core import _env, _visible
from ._core._clock import Clock
from ._core._exceptions import (
    APIConnectionError,
    APIStatusError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ClientClosedError,
    CoordinationError,
    InvalidArgumentError,
    NotFoundError,
    PaginationError,
    PayrollError,
    PermissionDeniedError,
    ProxyError,
    RateLimitError,
    ReplaceIncompleteError,
    ResponseDecodeError,
    ServerError,
)
from ._core._types import NOT_GIVEN, NotGiven, QueryLike, SortLike
from ._core._version import __version__
from ._http._gate import Gate, LocalGate
from .models import (
    EmployerIdentifier,
    EventType,
    InviteSession,
    ListMeta,
    PayrollConnection,
    UpdateGroup,
    WebhookSubscription,
)

if _TYPE_CHECKING:
    from ._client import ClientState, PayrollClient
    from ._core._converter import from_dict, to_dict, to_json
    from ._core._types import RetryPolicy
    from ._http._auth import TokenProvider
    from ._http._options import CallOptions, ListOptions
    from ._http._seam import (
        AsyncTransport,
        RawResponse,
        Timeout,
        TransportRequest,
        TransportResponse,
    )
    from ._paging._pagination import AsyncPaginator, Page, PageInfo

# The client and what it needs (aiohttp sessions, tenacity, cattrs) load on first use, so
# that `payroll_async.emulator` and `payroll_async.events` do not load the transport.
_LAZY = {
    "AsyncPaginator": "._paging._pagination",
    "AsyncTransport": "._http._seam",
    "CallOptions": "._http._options",
    "ClientState": "._client",
    "ListOptions": "._http._options",
    "Page": "._paging._pagination",
    "PageInfo": "._paging._pagination",
    "PayrollClient": "._client",
    "RawResponse": "._http._seam",
    "RetryPolicy": "._core._types",
    "Timeout": "._http._seam",
    "TokenProvider": "._http._auth",
    "TransportRequest": "._http._seam",
    "TransportResponse": "._http._seam",
    "from_dict": "._core._converter",
    "to_dict": "._core._converter",
    "to_json": "._core._converter",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'payroll_async' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


# A library logs; the application decides where it goes (the logging HOWTO's advice).
_logging.getLogger("payroll_async").addHandler(_logging.NullHandler())
# What a server or a sender wrote reaches any handler escaped: no line break, no ESC
_logging.getLogger("payroll_async").addFilter(_visible.EscapingFilter())
_env.configure_logging()  # PAYROLL_LOG=debug|info: the SDK's log on stderr, no code needed

__all__ = [
    "APIConnectionError",
    "APIStatusError",
    "APITimeoutError",
    "AsyncPaginator",
    "AsyncTransport",
    "AuthenticationError",
    "BadRequestError",
    "CallOptions",
    "ClientClosedError",
    "ClientState",
    "Clock",
    "CoordinationError",
    "EmployerIdentifier",
    "EventType",
    "Gate",
    "InvalidArgumentError",
    "InviteSession",
    "ListMeta",
    "ListOptions",
    "LocalGate",
    "NOT_GIVEN",
    "NotFoundError",
    "NotGiven",
    "Page",
    "PageInfo",
    "PaginationError",
    "PayrollClient",
    "PayrollConnection",
    "PayrollError",
    "PermissionDeniedError",
    "ProxyError",
    "QueryLike",
    "RateLimitError",
    "RawResponse",
    "ReplaceIncompleteError",
    "ResponseDecodeError",
    "RetryPolicy",
    "ServerError",
    "SortLike",
    "Timeout",
    "TokenProvider",
    "TransportRequest",
    "TransportResponse",
    "UpdateGroup",
    "WebhookSubscription",
    "__version__",
    "from_dict",
    "to_dict",
    "to_json",
]
