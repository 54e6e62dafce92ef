"""The one place the SDK reads the environment: the service's URL and token."""

from __future__ import annotations

import os
from typing import Final

__all__ = ["BASE_URL", "DEMO_BASE_URL", "MIRROR_URL", "REDIS_URL", "TOKEN", "read"]

BASE_URL: Final = "PAYROLL_BASE_URL"
"""The service root, when ``base_url`` is not given."""
TOKEN: Final = "PAYROLL_TOKEN"
"""The bearer token, when ``token`` is not given."""
DEMO_BASE_URL: Final = "PAYROLL_DEMO_BASE_URL"
"""The demo environment's root, for :meth:`PayrollClient.demo`."""
REDIS_URL: Final = "PAYROLL_REDIS_URL"
"""The Redis of a fleet's shared gate (the command's ``--redis-url``)."""
MIRROR_URL: Final = "PAYROLL_MIRROR_URL"
"""The mirror's database, when ``into`` is not given (the command's ``--into``)."""


def read(name: str) -> str | None:
    """The variable's value, or None when it is unset or empty."""
    return os.environ.get(name) or None
