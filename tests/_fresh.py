"""Python code run in a fresh interpreter: what a user's first import sees."""

from __future__ import annotations

import subprocess
import sys


def fresh_python(code: str) -> str:
    """The standard output of ``python -c code`` in a new interpreter (it must succeed)."""
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout


def modules_after(statements: str) -> str:
    """The ``payroll_async`` modules a fresh interpreter has loaded after ``statements``,
    as the printed sorted list of their names."""
    return fresh_python(
        f"import sys; {statements}; "
        "print(sorted(m for m in sys.modules if m.startswith('payroll_async')))"
    )
