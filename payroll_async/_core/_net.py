"""The network's rules below the transport: which hosts are this machine (the rule behind
plain http and the emulator's deliveries), and a CA bundle made a TLS context."""

from __future__ import annotations

import ipaddress
import os
import ssl

from ._exceptions import InvalidArgumentError

__all__ = ["check_ca_bundle", "is_loopback"]


def is_loopback(host: str | None) -> bool:
    """True for localhost and the loopback addresses (127.0.0.0/8, ::1)."""
    if not host:
        return False
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_ca_bundle(path: str, name: str) -> ssl.SSLContext:
    """A context that trusts the certificate authorities of the bundle at ``path`` (a PEM
    file, or a directory of hashed certificates as ``c_rehash`` makes): ``name``'s value."""
    problem = None
    if not path.strip():  # create_default_context(cafile="") would trust the default store
        raise InvalidArgumentError(f"{name}: an empty path is no CA bundle")
    try:
        if os.path.isdir(path):
            return ssl.create_default_context(capath=path)
        return ssl.create_default_context(cafile=path)
    except OSError as exc:  # ssl.SSLError is an OSError too
        problem = exc.strerror or str(exc)
        if isinstance(exc, ssl.SSLError):
            problem = f"no PEM certificate could be read ({exc.reason or exc})"
    raise InvalidArgumentError(f"{name}: cannot use the CA bundle {path!r}: {problem}")
