"""Statements compiled once per dialect, their rows then sent to the driver as tuples.

A hot path (a mirror's page, an inbox's accept) compiles its statement once and sends
each row as plain values in stored form (``_values``): no per-call compilation, no
per-value type processing.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Dialect

__all__ = ["compiled"]


def compiled(statement: Any, dialect: Dialect) -> tuple[str, list[str]]:
    """``statement``'s text in ``dialect`` and the names of its parameters, in order."""
    done = statement.compile(dialect=dialect)
    return done.string, list(done.positiontup or [])
