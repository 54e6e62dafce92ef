"""The command's ``--emulator``: its data, what a checkpoint knows it by, and the note
after a write that says it is gone with the command."""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING, Any, TypedDict

from payroll_async import __version__

from ._errors import BadInput, stderr

if TYPE_CHECKING:
    from payroll_async.emulator import Emulator

__all__ = ["DEMO_DATA", "DEMO_SERVICE", "EPHEMERAL_NOTE", "demo_emulator", "note_if_ephemeral"]


class _Data(TypedDict):
    seed: int
    payroll_connections: int
    employer_identifiers: int


# What --emulator's data is made of: the same data on every run, whatever its port.
DEMO_DATA: _Data = {"seed": 1, "payroll_connections": 25_000, "employer_identifiers": 200}
DEMO_SERVICE = (
    f"payroll-async --emulator {__version__} (seed {DEMO_DATA['seed']}, "
    f"{DEMO_DATA['payroll_connections']:,} connections, "
    f"{DEMO_DATA['employer_identifiers']:,} employers)"
)
"""What an export's checkpoint knows --emulator by: its data, not its port or token."""


def demo_emulator(*, tls: bool = False, option: str = "", **options: Any) -> Emulator:
    """The in-process service of --emulator: enough data to watch the progress bar work.

    ``tls``: served over TLS, for the ``option`` that needs it (--proxy); without the
    extra that makes its certificates, that is bad input that names the extra."""
    from payroll_async.emulator import Emulator

    if tls and importlib.util.find_spec("trustme") is None:
        raise BadInput(
            f"{option} with --emulator serves the emulator over TLS, which needs the "
            "'emulator-tls' extra (trustme): python3 -m pip install 'payroll-async[emulator-tls]'"
        )
    return Emulator(**DEMO_DATA, latency=0.01, tls=tls, **options)


EPHEMERAL_NOTE = (
    "note: the --emulator service lived only for this command, so this change does not last "
    "(the next command starts a fresh one, from the same seed); for one that stays, run "
    "payroll-async emulator and use the PAYROLL_BASE_URL and PAYROLL_TOKEN it prints"
)


def note_if_ephemeral(emulator: bool) -> None:
    """After a write against --emulator: one line saying that it is gone with the command."""
    if emulator:
        stderr.print(EPHEMERAL_NOTE, markup=False)
