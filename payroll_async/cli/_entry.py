"""main: the ``payroll-async`` console script's entry point, which needs the ``cli`` extra
and loads the commands."""

from __future__ import annotations

import gc
import sys

__all__ = ["main"]

_MISSING_EXTRA = (
    "payroll-async: the command needs the 'cli' extra: python3 -m pip install 'payroll-async[cli]'"
)


def main() -> None:
    """Entry point of the ``payroll-async`` console script."""
    try:
        import click  # noqa: F401
        import rich  # noqa: F401
    except ImportError:
        print(_MISSING_EXTRA, file=sys.stderr)
        raise SystemExit(1) from None
    # Starting is importing: objects that live as long as the process, none of them
    # garbage, which the cyclic collector would only walk again and again (a sixth of the
    # start). The root command turns it back on before any command runs.
    gc.disable()
    try:
        from ._commands import cli

        cli(prog_name="payroll-async")
    finally:
        gc.enable()
