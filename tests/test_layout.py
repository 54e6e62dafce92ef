"""The package's floor plan holds, as contracts rather than quotas: no import cycle
(runtime, type-only or in a function), layers that import only downwards, apps that keep
out of each other's rooms, no private name across packages, and a request a reader can
follow in few modules."""

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


LAYERS: dict[str, int] = {
    # the foundation: imported by everything, importing nothing above it
    "_core": 0,
    "models": 0,
    "_sql": 0,  # storage, beside the foundation: it imports _core only
    "_http": 1,  # one request
    "_paging": 2,  # a listing walked
    "resources": 3,  # the operations
    "_client": 4,
    "_collections": 4,  # the registry of listings: names the client's methods
}
"""The layers below the apps, lowest first: a module imports no layer above its own."""

APPS = ("cli", "dlt", "emulator", "events", "export", "fleet", "inbox", "mirror", "testing")
"""What users run on the client: each imports the layers, and another app only as below."""

APP_EDGES: dict[tuple[str, str], str] = {
    ("cli", "emulator"): "the emulator command serves it",
    ("cli", "events"): "listen receives notifications",
    ("cli", "export"): "export writes files; the changes file shares its file handling",
    ("cli", "fleet"): "listen --redis shares claims across receivers",
    ("cli", "inbox"): "the inbox commands and listen --inbox",
    ("cli", "mirror"): "the mirror command and its change feed",
    ("dlt", "mirror"): "the dlt source is a mirror with a warehouse behind it",
    ("fleet", "events"): "RedisDedupe is the receiver's Dedupe on Redis",
    ("inbox", "events"): "the inbox stores and hands out the receiver's notifications",
    ("testing", "emulator"): "the pytest plugin's fixtures serve an emulator",
}
"""The only imports from one app into another, each through the other's face."""


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _is_private_module(module: str) -> bool:
    """Whether ``module`` is a private module of its package (below the package's face)."""
    return any(part.startswith("_") for part in module.split(".")[2:])


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: _imports(name, path, pkg, known) for name, (path, pkg) in modules.items()}


def test_layers_import_only_downwards() -> None:
    every = set(LAYERS) | set(APPS)
    upward = []
    for name, targets in _graph().items():
        own = _package(name)
        if own == "":  # payroll_async/__init__.py: the face of everything
            continue
        assert own in every, f"{name}: a package of no layer (add it to LAYERS or APPS)"
        for target in targets:
            other = _package(target)
            if other in ("", own) or own in APPS:
                continue
            if other in APPS or LAYERS[other] > LAYERS[own]:
                upward.append(f"{name} imports {target}")
            elif own == "_sql" and other != "_core":
                upward.append(f"{name} imports {target} (storage imports _core only)")
    assert upward == []


def test_apps_keep_out_of_each_other() -> None:
    """An app imports another app only along a declared edge, and only its face."""
    crossing = []
    for name, targets in _graph().items():
        own = _package(name)
        if own not in APPS:
            continue
        for target in targets:
            other = _package(target)
            if other == own or other not in APPS:
                continue
            if (own, other) not in APP_EDGES:
                crossing.append(f"{name} imports {target}: no declared edge {own} -> {other}")
            elif _is_private_module(target):
                crossing.append(f"{name} imports {target}, a private module of {other}")
    assert crossing == []


def _names_a_module(path: Path, node: ast.ImportFrom, name: str) -> bool:
    """Whether ``from <node.module> import <name>`` in ``path`` imports a module."""
    if node.level:
        base = path.parent
        for _ in range(node.level - 1):
            base = base.parent
    else:
        base = PACKAGE.parent
    folder = base.joinpath(*(node.module or "").split("."))
    return (folder / f"{name}.py").is_file() or (folder / name / "__init__.py").is_file()


def test_no_private_name_crosses_a_package() -> None:
    """``from x import _y`` across packages: a private name is its own package's."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        own = _package(".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts))
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom) or node.module is None:
                continue
            if node.level:
                base = path.relative_to(PACKAGE).parts[:-1]
                if node.level - 1 > len(base):
                    continue
                target = [*base[: len(base) - (node.level - 1)], *node.module.split(".")]
                other = target[0] if target else ""
            elif node.module.startswith("payroll_async."):
                other = node.module.split(".")[1]
            else:
                continue
            if other == own or (len(node.module.split(".")) == 1 and node.level == 1):
                continue
            for alias in node.names:
                private = alias.name.startswith("_") and not alias.name.startswith("__")
                if private and not _names_a_module(path, node, alias.name):
                    where = path.relative_to(PACKAGE)
                    found.append(f"{where}:{node.lineno} imports {node.module}.{alias.name}")
    assert found == []


def _client_modules(frame: FrameType | None) -> set[str]:
    """The client's modules on the stack (the emulator serving the request is not one)."""
    modules = set()
    while frame is not None:
        name = frame.f_globals.get("__name__") or ""
        if name.startswith("payroll_async") and not name.startswith("payroll_async.emulator"):
            modules.add(name)
        frame = frame.f_back
    return modules


BREADTH = 14
"""The client's modules one listing of 250 items runs code in (19 before issue 42)."""


@pytest.mark.payroll_emulator(payroll_connections=250)
async def test_a_listing_runs_in_few_modules(payroll_client: PayrollClient) -> None:
    """A ``list()`` of 250 items, from the iterator to the socket and back to the items,
    runs code in at most ``BREADTH`` of the client's modules: the breadth a reader must
    follow (the emulator answering is not counted)."""
    touched: set[str] = set()

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event == "call":
            touched.update(_client_modules(frame))

    listing = payroll_client.payroll_connections.list(page_size=100)
    sys.setprofile(profile)
    try:
        items = [item async for item in listing]
    finally:
        sys.setprofile(None)
    assert len(items) == 250
    assert len(touched) <= BREADTH, sorted(touched)
    packages = {_package(name) for name in touched}
    assert {"_http", "_paging", "resources"} <= packages  # the profile saw the request
