"""The one place the SDK reads the environment: the service's URL and token."""

from __future__ import annotations

import os
from typing import Final

__all__ = ["BASE_URL", "DEMO_BASE_URL", "REDIS_URL", "TOKEN", "WEBHOOK_SECRET", "read"]

BASE_URL: Final = "PAYROLL_BASE_URL"
"""The service root, when ``base_url`` is not given."""
TOKEN: Final = "PAYROLL_TOKEN"
"""The bearer token, when ``token`` is not given."""
DEMO_BASE_URL: Final = "PAYROLL_DEMO_BASE_URL"
"""The demo environment's root, for [`PayrollClient.demo()`][payroll_async.PayrollClient.demo]."""
REDIS_URL: Final = "PAYROLL_REDIS_URL"
"""The Redis of a fleet's shared gate (the command's ``--redis-url``)."""
WEBHOOK_SECRET: Final = "PAYROLL_WEBHOOK_SECRET"
"""The ``whsec_`` secret notifications are signed with (``webhooks listen --secret``)."""


def read(name: str) -> str | None:
    """The variable's value, or None when it is unset or empty."""
    return os.environ.get(name) or None
