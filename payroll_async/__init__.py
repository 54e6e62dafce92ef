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

from . import _env, _visible
from ._clock import Clock
from ._exceptions import (
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
    RateLimitError,
    ReplaceIncompleteError,
    ResponseDecodeError,
    ServerError,
)
from ._gate import Gate, LocalGate
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

if _TYPE_CHECKING:
    from ._auth import TokenProvider
    from ._client import ClientState, PayrollClient
    from ._converter import from_dict, to_dict, to_json
    from ._pagination import AsyncPaginator, Page
    from ._raw import RawResponse
    from ._retry import RetryPolicy

# The client and what it needs (aiohttp sessions, tenacity, cattrs) load on first use, so
# that `payroll_async.emulator` and `payroll_async.events` do not load the transport.
_LAZY = {
    "AsyncPaginator": "._pagination",
    "ClientState": "._client",
    "Page": "._pagination",
    "PayrollClient": "._client",
    "RawResponse": "._raw",
    "RetryPolicy": "._retry",
    "TokenProvider": "._auth",
    "from_dict": "._converter",
    "to_dict": "._converter",
    "to_json": "._converter",
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
    "AuthenticationError",
    "BadRequestError",
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
    "LocalGate",
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
    "RawResponse",
    "ReplaceIncompleteError",
    "ResponseDecodeError",
    "RetryPolicy",
    "ServerError",
    "TokenProvider",
    "UpdateGroup",
    "WebhookSubscription",
    "__version__",
    "from_dict",
    "to_dict",
    "to_json",
]
