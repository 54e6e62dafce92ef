"""The package's layer contract (ARCHITECTURE.md, "The contract"), checked on every import
statement of ``payroll_async/``: runtime, ``TYPE_CHECKING`` and function-local, absolute
and relative.

- (a) Layers: ``models`` (the service's data, importing nothing of the package) <
  ``_core`` and ``_sql`` < ``_http`` < ``_paging`` < ``resources`` < ``_client``,
  ``_collections`` and the package's face < the apps. No module imports a layer above its
  own, and ``_sql`` imports only ``_core`` (and ``models``).
- (b) The apps (``APPS``) are independent of one another except for the edges of
  ``APP_EDGES``, each with its reason, and those go through the other app's face (its
  ``__init__``), never its private modules.
- (c) No module imports another package's underscore-private name (``from x import _y``
  where ``_y`` is not a module).
- (d) No import cycle.
- Faces only re-export: a package's ``__init__`` defines no function or class.
- (e) One request is narrow: a ``payroll_connections.list(page_size=100)`` of 250 items
  runs code in at most ``MAX_BREADTH`` modules of the client (the emulator's excluded).

Each failure names the importing module, its line, and what it imports.
"""

from __future__ import annotations

import ast
import functools
import sys
from pathlib import Path
from types import FrameType

import attrs
import pytest

from payroll_async import PayrollClient

PACKAGE = Path(__file__).parents[1] / "payroll_async"
ROOT = "payroll_async"

APPS = frozenset(
    {
        "cli",
        "dlt",
        "emulator",
        "events",
        "export",
        "fleet",
        "inbox",
        "mirror",
        "pytest_plugin",
        "testing",
    }
)
"""The applications built on the client: each is a package (or a module) of its own."""

LAYERS: dict[str, int] = {
    "models": 0,
    "_core": 1,
    "_sql": 1,
    "_http": 2,
    "_paging": 3,
    "resources": 4,
    "_client": 5,
    "_collections": 5,
    "": 5,  # the package's face, payroll_async/__init__.py
    **dict.fromkeys(APPS, 6),
}
"""Each first-level module or package of ``payroll_async`` and its layer."""

APP_EDGES: dict[tuple[str, str], str] = {
    ("cli", "export"): "the command's export runs export_to_file",
    ("cli", "mirror"): "the command's mirror and changes commands run the mirror",
    ("cli", "emulator"): "--emulator serves the command from an emulator",
    ("cli", "events"): "the command's webhook listen receives and verifies notifications",
    ("cli", "inbox"): "the command's inbox commands keep and drain the durable inbox",
    ("cli", "fleet"): "--redis shares the fleet's gate between commands",
    ("dlt", "mirror"): "the dlt source loads what the mirror reads",
    ("inbox", "events"): "the inbox accepts what the receiver verified, and routes it",
    ("fleet", "events"): "RedisDedupe is the receiver's dedupe store (events.Claim) on Redis",
    ("testing", "emulator"): "EmulatorThread serves the emulator from a thread of its own",
    ("pytest_plugin", "emulator"): "the pytest plugin serves the emulator to tests",
    ("pytest_plugin", "testing"): "the pytest plugin's emulator runs on an EmulatorThread",
}
"""The only imports from one app to another, each through the other's face."""

MAX_BREADTH = 15
"""The most modules of the client one listing of 250 items may run code in (15 since the
Link header is read by the SDK's own parse, in a module of its own: ``_paging._links``)."""


@attrs.frozen
class Import:
    """One import statement's target, as written at ``line`` of ``source``."""

    source: str
    line: int
    module: str  # the package's module it loads
    name: str | None  # the name taken from it (``from module import name``), if not a module

    def __str__(self) -> str:
        what = self.module if self.name is None else f"{self.module}.{self.name}"
        return f"{self.source} (line {self.line}) imports {what}"


def _modules() -> dict[str, tuple[Path, bool]]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        found[".".join(parts)] = (path, is_package)
    return found


MODULES = _modules()


def _imports(name: str) -> list[Import]:
    """Every import of the package's modules in module ``name``, each once per name."""
    path, is_package = MODULES[name]
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if target not in MODULES:
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in MODULES:
                    out.append(Import(name, node.lineno, sub, None))
                else:
                    out.append(Import(name, node.lineno, target, alias.name))
        elif isinstance(node, ast.Import):
            out.extend(
                Import(name, node.lineno, alias.name, None)
                for alias in node.names
                if alias.name in MODULES
            )
    return out


@functools.cache
def _all_imports() -> list[Import]:
    """Every import of the package's modules, read when a test first asks (not when every
    worker of a run collects this file)."""
    return [i for name in sorted(MODULES) for i in _imports(name)]


def _room(module: str) -> str:
    """The first-level module or package of ``payroll_async`` that ``module`` is in."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _is_private_module(module: str) -> bool:
    """A module under a package's face: a part of its path after the first starts with _."""
    return any(part.startswith("_") for part in module.split(".")[2:])


def test_every_first_level_module_has_a_layer() -> None:
    rooms = {_room(name) for name in MODULES}
    assert rooms - LAYERS.keys() == set(), "give each new package a layer in LAYERS"


def test_no_module_imports_a_layer_above_its_own() -> None:
    upward = [
        f"{i} (layer {LAYERS[_room(i.source)]} imports layer {LAYERS[_room(i.module)]})"
        for i in _all_imports()
        if LAYERS[_room(i.module)] > LAYERS[_room(i.source)]
    ]
    assert upward == [], "\n".join(upward)


def test_models_import_nothing_and_sql_only_core() -> None:
    wrong = [
        str(i)
        for i in _all_imports()
        if (_room(i.source) == "models" and _room(i.module) != "models")
        or (_room(i.source) == "_sql" and _room(i.module) not in {"_sql", "_core", "models"})
    ]
    assert wrong == [], "\n".join(wrong)


def test_apps_import_one_another_only_by_declared_edges() -> None:
    wrong = [
        f"{i}: no edge {_room(i.source)} -> {_room(i.module)} in APP_EDGES"
        for i in _all_imports()
        if _room(i.source) in APPS
        and _room(i.module) in APPS
        and _room(i.source) != _room(i.module)
        and (_room(i.source), _room(i.module)) not in APP_EDGES
    ]
    assert wrong == [], "\n".join(wrong)


def test_every_declared_edge_is_used() -> None:
    used = {
        (_room(i.source), _room(i.module))
        for i in _all_imports()
        if _room(i.source) in APPS and _room(i.module) in APPS
    }
    assert APP_EDGES.keys() - used == set(), "drop the edges no import needs"


def test_an_app_is_entered_only_through_its_face() -> None:
    """Nothing outside an app imports the app's private modules: only its ``__init__``."""
    wrong = [
        f"{i}: import it from {ROOT}.{_room(i.module)}"
        for i in _all_imports()
        if _room(i.module) in APPS
        and _room(i.source) != _room(i.module)
        and _is_private_module(i.module)
    ]
    assert wrong == [], "\n".join(wrong)


def test_no_private_name_of_another_package_is_imported() -> None:
    """``from x import _y`` where ``_y`` is a name (not a module) of another package."""
    wrong = [
        str(i)
        for i in _all_imports()
        if i.name is not None
        and i.name.startswith("_")
        and not i.name.startswith("__")
        and _room(i.module) != _room(i.source)
    ]
    assert wrong == [], "\n".join(wrong)


def test_the_checks_see_every_kind_of_import() -> None:
    """Function-local, TYPE_CHECKING, relative and absolute imports are all read."""
    seen = {(i.source, i.module) for i in _all_imports()}
    assert ("payroll_async.cli._entry", "payroll_async.cli._commands") in seen  # local
    assert ("payroll_async._collections", "payroll_async._client") in seen  # TYPE_CHECKING
    assert ("payroll_async._core._converter", "payroll_async.models") in seen  # relative ..
    assert ("payroll_async.cli._app", "payroll_async.export") in seen  # absolute


def test_faces_only_re_export() -> None:
    """A package's ``__init__`` holds its docstring and imports; its code is in modules
    (the package's own face keeps only its lazy loader: ``__getattr__``, ``__dir__``)."""
    lazy_loader = {"__getattr__", "__dir__"}
    wrong = [
        f"{name} (line {node.lineno}) defines {node.name}"
        for name, (path, is_package) in sorted(MODULES.items())
        if is_package
        for node in ast.parse(path.read_text()).body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        and not (name == ROOT and node.name in lazy_loader)
    ]
    assert wrong == [], "\n".join(wrong)


def _names_of(name: str) -> set[str]:
    """Every module module ``name`` imports (outside the package too), and every name it
    reads as ``x.y`` or ``y``."""
    tree = ast.parse(MODULES[name][0].read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
        elif isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.update(word for word in node.value.split() if word.startswith("aiohttp."))
    return found


def test_the_seam_and_the_core_name_no_aiohttp() -> None:
    """The seam's types and ``_core`` are the SDK's own: aiohttp is below the seam
    (``_http/_aiohttp.py``) and at the boundary that reads ``timeout=`` (``_options``)."""
    wrong = [
        name
        for name in MODULES
        if name == f"{ROOT}._http._seam" or _room(name) == "_core"
        if any(n == "aiohttp" or n.startswith("aiohttp.") for n in _names_of(name))
    ]
    assert wrong == []


def test_nothing_above_the_seam_asks_which_transport_it_is() -> None:
    """Every transport crosses the seam alike: the aiohttp transport is only made by the
    requester (the default), never told apart from another."""
    asks = [
        f"{name} (line {node.lineno})"
        for name, (path, _) in sorted(MODULES.items())
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in {"isinstance", "issubclass", "type"}
        and any(isinstance(a, ast.Name) and a.id == "AiohttpTransport" for a in ast.walk(node))
    ]
    assert asks == []
    users = {i.source for i in _all_imports() if i.name == "AiohttpTransport"}
    assert users == {f"{ROOT}._http._requester"}


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
    graph: dict[str, set[str]] = {name: set() for name in MODULES}
    for i in _all_imports():
        # a module importing its own package's __init__ is how re-exports work, not a cycle
        if not i.source.startswith(i.module + "."):
            graph[i.source].add(i.module)
    cycles = _cycles(graph)
    assert cycles == [], "\n".join("import cycle among " + ", ".join(c) for c in cycles)


def _private_members_of(folder: Path) -> set[str]:
    """The private attributes and methods the classes of ``folder`` define."""
    names: set[str] = set()
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                for item in ast.walk(node):
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        names.add(item.name)
                    elif (
                        isinstance(item, ast.Attribute)
                        and isinstance(item.value, ast.Name)
                        and item.value.id == "self"
                    ):
                        names.add(item.attr)
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def test_no_private_member_of_a_paginator_or_page_is_used_outside_paging() -> None:
    """The export and the mirror ask for pages through the paginator's public seams
    (``with_decoder``, ``page_source``), never its private members."""
    private = _private_members_of(PACKAGE / "_paging")
    used = []
    for path in PACKAGE.rglob("*.py"):
        if path.parent.name == "_paging":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Attribute)
                and node.attr in private
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
            ):
                used.append(f"{path.relative_to(PACKAGE)} (line {node.lineno}) uses .{node.attr}")
    assert used == []


@pytest.mark.payroll_emulator(payroll_connections=250)
async def test_one_listing_runs_code_in_at_most_max_breadth_modules(
    payroll_client: PayrollClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``list()`` of 250 items, from the iterator to the socket and back to the items,
    runs code in at most ``MAX_BREADTH`` modules of the client (the emulator's excluded),
    as a client runs by default: without OpenTelemetry tracing (an earlier test of the
    same process may have installed a tracer provider, which cannot be taken back)."""
    from payroll_async._http import _otel

    monkeypatch.setattr(_otel, "ENABLED", False)
    modules: set[str] = set()

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event == "call":
            name = frame.f_globals.get("__name__") or ""
            if name.startswith(ROOT) and not name.startswith(f"{ROOT}.emulator"):
                modules.add(name)

    listing = payroll_client.payroll_connections.list(page_size=100)
    sys.setprofile(profile)
    try:
        items = [item async for item in listing]
    finally:
        sys.setprofile(None)
    assert len(items) == 250
    assert {f"{ROOT}._paging._pagination", f"{ROOT}._http._requester"} <= modules
    assert len(modules) <= MAX_BREADTH, f"{len(modules)} modules: " + ", ".join(sorted(modules))
