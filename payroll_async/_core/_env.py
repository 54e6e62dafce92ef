"""The one place the SDK reads the environment: the service's URL and token, proxies and
certificates, and logging."""

from __future__ import annotations

import logging
import os
import sys
import urllib.request
from typing import Final

from ._exceptions import InvalidArgumentError
from ._visible import VisibleFormatter

__all__ = [
    "BASE_URL",
    "DEMO_BASE_URL",
    "INBOX_URL",
    "LOG",
    "MIRROR_URL",
    "REDIS_URL",
    "TOKEN",
    "WEBHOOK_SECRET",
    "CERT_VARIABLES",
    "configure_logging",
    "proxies",
    "read",
]

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
MIRROR_URL: Final = "PAYROLL_MIRROR_URL"
"""The mirror's database, when ``into`` is not given (the command's ``--into``)."""
INBOX_URL: Final = "PAYROLL_INBOX_URL"
"""The inbox's database (the command's ``inbox --into`` and ``webhooks listen --inbox``)."""
LOG: Final = "PAYROLL_LOG"
"""``debug`` or ``info``: log the SDK's records of that level and above to stderr."""

CERT_VARIABLES: Final = ("SSL_CERT_FILE", "SSL_CERT_DIR")
"""OpenSSL's trust store settings: when one is set, it is the trust store (not truststore's)."""

_LEVELS: Final = {"debug": logging.DEBUG, "info": logging.INFO}


def read(name: str) -> str | None:
    """The variable's value, or None when it is unset or empty."""
    return os.environ.get(name) or None


def proxies() -> tuple[dict[str, str], bool]:
    """The ``*_PROXY`` variables as urllib reads them (``{"https": ..., "all": ..., "no":
    ...}``, lower-case names first), and whether ``NO_PROXY`` is set but empty (on purpose)."""
    found = urllib.request.getproxies_environment()
    emptied = "no" not in found and ("no_proxy" in os.environ or "NO_PROXY" in os.environ)
    return found, emptied


def require(name: str, parameter: str) -> str:
    """The variable's value, for a ``parameter`` not given; InvalidArgumentError if unset."""
    found = read(name)
    if found is None:
        raise InvalidArgumentError(f"no {parameter}: pass {parameter}= or set {name}")
    return found


class _EnvHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """The stderr handler that ``PAYROLL_LOG`` installs (one, however often imported)."""


def configure_logging() -> None:
    """Log the ``payroll_async`` logger's records to stderr when ``PAYROLL_LOG`` asks for it.

    As ``OPENAI_LOG`` and ``STRIPE_LOG`` do: ``debug`` (each attempt, its status and
    duration) or ``info`` (rate-limit pauses, retries); any other value leaves logging to
    the application. The SDK's records never hold the token.
    """
    value = read(LOG)
    level = _LEVELS.get(value.strip().lower()) if value else None
    if level is None:
        return
    logger = logging.getLogger("payroll_async")
    if not any(isinstance(h, _EnvHandler) for h in logger.handlers):
        handler = _EnvHandler(sys.stderr)
        handler.setFormatter(VisibleFormatter("[%(asctime)s %(name)s %(levelname)s] %(message)s"))
        logger.addHandler(handler)
    logger.setLevel(level)
