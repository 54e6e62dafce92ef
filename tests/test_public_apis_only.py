"""Only other libraries' public APIs: no private member reached around ruff's SLF001.

ruff's SLF001 (pyproject) refuses ``obj._member``; this test refuses the ways around it that
a linter cannot see: ``getattr(obj, "_member")`` (and ``hasattr``, ``setattr``,
``delattr``), and a class's ``__dict__[...]`` read. A private member of another library can
change at its next release; the floors run proves only the old side of that.
"""

from __future__ import annotations

import ast
from pathlib import Path

import payroll_async

PACKAGE = Path(payroll_async.__file__).parent
_REFLECTION = frozenset({"getattr", "hasattr", "setattr", "delattr"})


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _reaches(tree: ast.AST) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in _REFLECTION
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and _private(node.args[1].value)
        ):
            found.append((node.lineno, f"{node.func.id}(..., {node.args[1].value!r})"))
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "__dict__"
        ):
            found.append((node.lineno, "a __dict__[...] read"))
    return found


def test_no_private_member_is_reached_by_reflection() -> None:
    offenders = [
        f"{path.relative_to(PACKAGE.parent)}:{line}: {what}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for line, what in _reaches(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert offenders == []


def test_the_check_sees_each_way_around() -> None:
    source = 'getattr(driver, "_execute", None)\nhasattr(x, "_conn")\nT.__dict__["links"]\n'
    assert [line for line, _ in _reaches(ast.parse(source))] == [1, 2, 3]
    assert _reaches(ast.parse('getattr(x, "name")\ngetattr(x, "__doc__")\n')) == []
