"""The emulator over TLS: a certificate authority of its own, made for it (trustme), and
its CA file, so that a client can trust it as it would a company's private CA."""

from __future__ import annotations

import shutil
import ssl
import tempfile
from collections.abc import Iterable
from pathlib import Path

__all__ = ["TLS_EXTRA", "LocalCA"]

TLS_EXTRA = "emulator-tls"
"""The extra that brings what ``tls=True`` needs (trustme)."""

_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


class LocalCA:
    """A certificate authority made for one emulator, and a certificate it issued for the
    emulator's names; ``write()`` puts the CA in a file of a new private directory."""

    def __init__(self, host: str) -> None:
        try:
            import trustme
        except ImportError:
            raise ValueError(
                f"tls=True needs the '{TLS_EXTRA}' extra (trustme, which makes the emulator's "
                f"certificates): python3 -m pip install 'payroll-async[{TLS_EXTRA}]'"
            ) from None
        self._ca = trustme.CA(organization_name="payroll-async emulator")
        self._leaf = self._ca.issue_cert(*_names(host))
        self._folder: Path | None = None

    def server_context(self) -> ssl.SSLContext:
        """What the emulator serves with: the certificate issued for its names."""
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._leaf.configure_cert(context)
        return context

    def write(self) -> str:
        """The CA's certificate, written to ``ca.pem`` in a new private directory: its path."""
        if self._folder is None:
            self._folder = Path(tempfile.mkdtemp(prefix="payroll-emulator-"))
        path = self._folder / "ca.pem"
        self._ca.cert_pem.write_to_path(str(path))
        return str(path)

    def remove(self) -> None:
        """Delete the CA file and its directory (the emulator is closed)."""
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None


def _names(host: str) -> Iterable[str]:
    """The names a client may call the emulator by: loopback's, and ``host`` when it is one
    address (not every address: ``0.0.0.0``, ``::``, or empty)."""
    names = list(_LOOPBACK_NAMES)
    if host not in ("", "0.0.0.0", "::") and host not in names:
        names.append(host)
    return names
