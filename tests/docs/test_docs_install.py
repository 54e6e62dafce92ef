"""Every complete program of the README and docs/ runs after the install line it names
(issue 40 item 7).

A program that needs more than ``pip install payroll-async`` (an extra, or another
package such as uvicorn) names its install line in its first comment lines, as
``# Needs: python3 -m pip install 'payroll-async[mirror]'``; each module it imports must
come with that line: the standard library, the distributions the line names with their
extras, and what those require in turn (read from the installed packages' metadata).
A module of this package that needs an extra (``payroll_async.mirror`` needs
``mirror``) needs every distribution of that extra.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import shlex
import sys

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.docs.test_readme_examples import CHECKED, PLUGIN, python_blocks

PACKAGE = "payroll-async"
NEEDS = re.compile(r"#\s*Needs:\s*(.*pip install\s+.*)")
# The package's modules that need an extra (importing them without it says which).
EXTRA_OF = {
    "payroll_async.cli": "cli",
    "payroll_async.mirror": "mirror",
    "payroll_async.inbox": "mirror",
    "payroll_async.dlt": "dlt",
}


def programs() -> list[tuple[str, str]]:
    """The complete programs (not fragments) of the README and docs/: page, code."""
    found = []
    for page, before, code in python_blocks():
        if code.lstrip().startswith("# Fragment"):
            continue
        assert "asyncio.run(" in code or before in (CHECKED, PLUGIN), page
        found.append((page, code))
    return found


def install_line(code: str) -> str | None:
    """The install line a program names in its leading comments, if any."""
    for line in code.splitlines():
        if not line.startswith("#"):
            return None
        if (named := NEEDS.match(line)) is not None:
            return named[1]
    return None


def requirements(line: str) -> list[Requirement]:
    """What ``pip install ...`` installs, as requirements (``.[x]`` of a checkout is the
    package with its extras)."""
    words = shlex.split(line.split("pip install", 1)[1].split("#", 1)[0])
    found = []
    for word in words:
        if word.startswith("-"):
            continue
        found.append(Requirement(PACKAGE + word[1:] if word.startswith(".") else word))
    return found


def with_dependencies(wanted: list[Requirement]) -> set[str]:
    """The distributions ``wanted`` installs: each, with its extras' and its own
    requirements, all the way down (as the installed packages' metadata says)."""
    seen: set[tuple[str, frozenset[str]]] = set()
    todo = [(r.name, frozenset(r.extras)) for r in wanted]
    while todo:
        name, extras = todo.pop()
        if (canonicalize_name(name), extras) in seen:
            continue
        seen.add((canonicalize_name(name), extras))
        try:
            required = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        for text in required:
            requirement = Requirement(text)
            marker = requirement.marker
            if marker is None or any(marker.evaluate({"extra": e}) for e in {"", *extras}):
                todo.append((requirement.name, frozenset(requirement.extras)))
    return {name for name, _ in seen}


def imports(code: str) -> set[str]:
    """The modules a program imports (``from a.b import c``: ``a.b``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return found


def needed(module: str) -> set[str]:
    """The distributions that importing ``module`` needs (stdlib: none)."""
    top = module.split(".")[0]
    if top in sys.stdlib_module_names or top == "__future__":
        return set()
    if top == "payroll_async":
        extra = next((x for m, x in EXTRA_OF.items() if f"{module}.".startswith(f"{m}.")), None)
        if extra is None:
            return {PACKAGE}
        return with_dependencies([Requirement(f"{PACKAGE}[{extra}]")]) - with_dependencies(
            [Requirement(PACKAGE)]
        ) | {PACKAGE}
    distributions = importlib.metadata.packages_distributions().get(top)
    assert distributions, f"{module}: not installed, so its distribution is unknown"
    return {canonicalize_name(d) for d in distributions}


def missing(code: str) -> set[str]:
    """The distributions a program needs that its install line (or the base install)
    does not bring."""
    line = install_line(code)
    wanted = requirements(line) if line is not None else [Requirement(PACKAGE)]
    brought = with_dependencies(wanted)
    return {d for module in imports(code) for d in needed(module)} - brought


@pytest.mark.parametrize(("page", "code"), programs(), ids=lambda v: v.splitlines()[0][:40])
def test_each_program_runs_after_the_install_line_it_names(page: str, code: str) -> None:
    assert not missing(code), (
        f"{page}: name the install line in the program's first comments, "
        f"as '# Needs: python3 -m pip install ...': it does not bring {sorted(missing(code))}"
    )


def test_the_check_can_fail() -> None:
    fastapi_app = "import asyncio\n\nimport uvicorn\nfrom fastapi import FastAPI\n"
    assert missing(fastapi_app) == {"uvicorn", "fastapi"}
    named = "# Needs: python3 -m pip install payroll-async fastapi uvicorn\n" + fastapi_app
    assert missing(named) == set()
    mirror = "from payroll_async.mirror import mirror\nimport asyncio\n"
    assert "sqlalchemy" in missing(mirror)
    assert missing("# Needs: python3 -m pip install -e '.[mirror]'\n" + mirror) == set()
    assert missing("# Needs: python3 -m pip install 'payroll-async[dlt]'\n" + mirror) == set()
    assert missing("# Needs: python3 -m pip install 'payroll-async[cli]'\n" + mirror)
