"""The inbox's classes talk to each other's public faces: the worker to its store (as
procrastinate's worker to its job manager), the router to any ``InboxLike``; and only
other libraries' public APIs."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from payroll_async.inbox import _claims

PACKAGES = [Path(_claims.__file__).parent, Path(_claims.__file__).parent.parent / "events"]


def _private_reads(path: Path) -> list[str]:
    """Where a module reads an object's private member other than its own (``self._x``
    and ``cls._x`` are its own), or asks for one by name (``getattr(obj, "_x")``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            own = isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
            if not own and not node.attr.startswith("__"):
                found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr", "setattr")
            and len(node.args) > 1
            and isinstance(node.args[1], ast.Constant)
            and str(node.args[1].value).startswith("_")
            and not str(node.args[1].value).startswith("__")
        ):
            found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    return found


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.name)
def test_no_class_reads_another_objects_private_members(package: Path) -> None:
    assert [read for path in sorted(package.glob("*.py")) for read in _private_reads(path)] == []


def test_no_library_object_is_built_from_its_internals() -> None:
    """tenacity's ``RetryCallState`` is the state of its own retry loop: not ours to build."""
    for package in PACKAGES:
        for path in package.glob("*.py"):
            assert "RetryCallState" not in path.read_text(), path


def test_the_backoff_doubles_with_jitter_up_to_its_longest() -> None:
    for attempt, low in ((1, 1.0), (2, 2.0), (3, 4.0), (6, 32.0)):
        waits = [_claims.backoff(attempt, 1.0, 3600.0) for _ in range(200)]
        assert low <= min(waits)
        assert max(waits) <= low + 1.0
        assert max(waits) - min(waits) > 0.5  # jitter
    assert _claims.backoff(10_000, 1.0, 3600.0) == 3600.0  # past any float: the longest
    assert _claims.backoff(12, 0.05, 0.2) == 0.2
