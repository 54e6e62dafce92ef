"""The inbox's own log lines are scrubbed of every secret held, tracebacks included."""

from __future__ import annotations

import logging

import pytest

import payroll_async.inbox  # noqa: F401  (the inbox's logger and its filters)
from payroll_async._core._secrets import hold

SECRET = "whsec_c2VjcmV0LW9mLXRoZS1pbmJveC1sb2c="


class Holder:
    """Stands for a router or a client holding a secret."""


def test_a_worker_failure_logged_with_its_traceback_shows_no_secret(
    caplog: pytest.LogCaptureFixture,
) -> None:
    holder = Holder()
    hold(holder, SECRET)
    try:
        raise RuntimeError(f"the handler quoted {SECRET}")
    except RuntimeError as exc:
        failure = exc
    with caplog.at_level(logging.ERROR, logger="payroll_async.inbox"):
        logging.getLogger("payroll_async.inbox").error(
            "an inbox worker task failed: %s", failure, exc_info=failure
        )
    (record,) = caplog.records
    shown = caplog.text + (record.exc_text or "")
    assert SECRET not in shown
    assert "***" in record.getMessage()
    assert "***" in (record.exc_text or "")
