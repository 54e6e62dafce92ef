"""The package's floor plan holds: no import cycle (runtime or type-only), few top-level
modules (the rest in packages by job), and no module a reader cannot hold (400 lines)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from types import FrameType

import pytest

from payroll_async import PayrollClient

PACKAGE = Path(__file__).parents[1] / "payroll_async"


def _modules() -> dict[str, tuple[Path, bool]]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        found[".".join(parts)] = (path, is_package)
    return found


def _imports(name: str, path: Path, is_package: bool, known: set[str]) -> set[str]:
    """The package's modules ``name`` imports (type-only imports included)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            candidates = [target, *(f"{target}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        else:
            continue
        # a module importing its own package's __init__ is how re-exports work, not a cycle
        out.update(
            c for c in candidates if c in known and c != name and not name.startswith(c + ".")
        )
    return out


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle() -> None:
    modules = _modules()
    known = set(modules)
    graph = {name: _imports(name, path, pkg, known) for name, (path, pkg) in modules.items()}
    assert _cycles(graph) == []


def test_at_most_twelve_top_level_modules() -> None:
    top = [p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py"]
    assert len(top) <= 12, sorted(top)


def test_no_module_over_400_lines() -> None:
    long = {
        str(path.relative_to(PACKAGE)): n
        for path, _ in _modules().values()
        if (n := len(path.read_text().splitlines())) > 400
    }
    assert long == {}


def _path_of_modules(frame: FrameType | None) -> tuple[str, ...]:
    """The package's modules on the stack, outermost first, each once."""
    modules: list[str] = []
    while frame is not None:
        name = frame.f_globals.get("__name__") or ""
        if name.startswith("payroll_async") and name not in modules:
            modules.append(name)
        frame = frame.f_back
    return tuple(reversed(modules))


@pytest.mark.payroll_emulator(payroll_connections=250)
async def test_a_listing_crosses_at_most_seven_rooms(payroll_client: PayrollClient) -> None:
    """A ``list()`` request, from the iterator to the socket and back to the items, passes
    through at most seven modules in a row, in at most seven packages (a room being what a
    reader opens to follow it)."""
    paths: set[tuple[str, ...]] = set()

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event == "call":
            paths.add(_path_of_modules(frame))

    listing = payroll_client.payroll_connections.list(page_size=100)
    sys.setprofile(profile)
    try:
        items = [item async for item in listing]
    finally:
        sys.setprofile(None)
    assert len(items) == 250
    deepest = max(paths, key=len)
    assert len(deepest) <= 7, " -> ".join(deepest)
    packages = {name.split(".")[1] for path in paths for name in path if name.count(".") >= 1}
    assert len(packages) <= 7, sorted(packages)
    assert {"_http", "_paging", "resources"} <= packages  # the profile saw the request
