"""A database URL as users write it: checked, shown without its secrets, and split into
SQLAlchemy's URL and the driver's arguments (libpq's parameters mapped to asyncpg's).

Every credential (the user-info's password, a secret of the query such as ``?password=``)
is only ever shown as ``***`` and reaches the driver outside the engine's URL. A
parameter the driver cannot take, a bad value, a port out of range or a certificate file
that is not there is refused (``URLRefused``, which the database's owner raises as its own
bad-URL error) when the URL is read, never a failure at run time.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import quote, quote_plus, urlencode

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from .._core._redact import REDACTED

__all__ = ["URLRefused", "for_the_driver", "parse", "redact", "secrets_of", "shown_url"]


class URLRefused(ValueError):
    """A URL the storage cannot use; its text says why, without the URL's secrets."""


# A query parameter that carries a credential (libpq's and asyncpg's ``password``,
# ``sslpassword``, and the like); a path to one (``passfile``, ``sslkey``) is not secret.
_SECRET_PARAMETER = re.compile(
    r"pass(?:word|wd|phrase)?$|pwd|secret|token|credential|^key$", re.IGNORECASE
)


def _is_secret(name: str) -> bool:
    return _SECRET_PARAMETER.search(name) is not None


def _parameters(parsed: URL) -> list[tuple[str, str]]:
    """The query's (name, value) pairs, a repeated name once per value."""
    return [
        (name, str(one))
        for name, value in parsed.query.items()
        for one in (value if isinstance(value, tuple) else (value,))
    ]


def shown_url(parsed: URL) -> str:
    """``parsed`` as output shows it: the password and every secret parameter ``***``."""
    bare = parsed.set(query={}).render_as_string(hide_password=True)
    pairs = [(name, REDACTED if _is_secret(name) else value) for name, value in _parameters(parsed)]
    return f"{bare}?{urlencode(pairs, safe='*/')}" if pairs else bare


def redact(url: str) -> str:
    """``url`` with its password and secret query parameters replaced by ``***``."""
    try:
        return shown_url(make_url(url))
    except (ArgumentError, ValueError):
        return "<a database URL that cannot be parsed>"


def secrets_of(parsed: URL) -> tuple[str, ...]:
    """Every credential of ``parsed`` in each form a message may quote it, longest first."""
    values = [str(parsed.password)] if parsed.password else []
    values += [value for name, value in _parameters(parsed) if _is_secret(name) and value]
    forms = {form for value in values for form in (value, quote(value, ""), quote_plus(value))}
    return tuple(sorted(forms, key=len, reverse=True))


# libpq's URL parameters that asyncpg reads from a DSN of its own (``asyncpg.connect(dsn=)``:
# the SSL files and mode, and what the server gets at the start of a session), as users
# copy them from their provider's dashboard; SQLAlchemy would pass them as keywords, which
# ``asyncpg.connect`` does not take.
_LIBPQ = frozenset(
    {
        "sslmode",
        "sslrootcert",
        "sslcert",
        "sslkey",
        "sslcrl",
        "sslpassword",
        "ssl_min_protocol_version",
        "ssl_max_protocol_version",
        "application_name",
        "options",
        "target_session_attrs",
        "passfile",
        "krbsrvname",
        "gsslib",
    }
)
_FILES = ("sslrootcert", "sslcert", "sslkey", "sslcrl")  # read when connecting: they must exist
_TLS = ("TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3")
_SSLMODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")
_CHOICES = {
    "sslmode": _SSLMODES,
    "ssl": _SSLMODES,  # asyncpg's keyword, as SQLAlchemy's documentation writes it
    "target_session_attrs": (
        "any",
        "primary",
        "standby",
        "prefer-standby",
        "read-write",
        "read-only",
    ),
    "ssl_min_protocol_version": _TLS,
    "ssl_max_protocol_version": _TLS,
}
# What SQLAlchemy's asyncpg dialect or asyncpg's own keywords take, as the URL writes them.
_KEYWORDS: dict[str, Callable[[str], Any]] = {
    "ssl": str,
    "command_timeout": float,
    "prepared_statement_cache_size": int,
    "statement_cache_size": int,
}
_CONNECT_TIMEOUT_NONE = 365 * 86400.0  # libpq's connect_timeout=0: no limit
_TAKEN = ("host", "port", "password", "connect_timeout", *sorted(_LIBPQ), *_KEYWORDS)


def _refuse(message: str) -> NoReturn:
    raise URLRefused(message)


def _port(value: object) -> None:
    if not isinstance(value, int) or not 0 < value < 65536:
        _refuse(f"the port must be a number from 1 to 65535, got {value}")


def _postgres_arguments(parsed: URL, pairs: dict[str, str]) -> dict[str, Any]:
    """asyncpg's keywords for the URL's parameters (``pairs``, each name's last value);
    URLRefused naming one that PostgreSQL's driver cannot take, or a bad value."""
    unknown = sorted(set(pairs) - set(_TAKEN))
    if unknown:
        _refuse(
            f"the URL parameter {unknown[0]!r} is not one the PostgreSQL driver takes; "
            f"those it takes: {', '.join(_TAKEN)}"
        )
    if parsed.port is not None:
        _port(parsed.port)
    for port in pairs.get("port", "").split(",") if "port" in pairs else ():
        _port(int(port) if port.strip().isdigit() else port)
    for name, allowed in _CHOICES.items():
        if name in pairs and pairs[name] not in allowed:
            _refuse(f"{name} must be one of {', '.join(allowed)}, got {pairs[name]!r}")
    if pairs.get("sslrootcert") == "system":
        _refuse(
            "sslrootcert=system is libpq's, which the PostgreSQL driver (asyncpg) does not "
            "take: give the path of the CA file"
        )
    verified = {pairs.get(name, "") for name in ("sslmode", "ssl")} & {"verify-ca", "verify-full"}
    given = "sslrootcert" in pairs or os.environ.get("PGSSLROOTCERT")
    default_root = Path(os.path.expanduser("~/.postgresql/root.crt"))
    if verified and not given and not default_root.is_file():
        _refuse(
            f"sslmode={' or '.join(sorted(verified))} needs the CA's certificate: give "
            f"sslrootcert=PATH (there is no {default_root})"
        )
    for name in _FILES:
        if name in pairs and not Path(pairs[name]).expanduser().is_file():
            _refuse(f"{name}: there is no file {pairs[name]}")
    arguments: dict[str, Any] = {}
    libpq = [(name, value) for name, value in pairs.items() if name in _LIBPQ]
    if libpq:
        arguments["dsn"] = f"postgresql://?{urlencode(libpq)}"
    if "connect_timeout" in pairs:
        seconds = pairs["connect_timeout"].strip()
        if not seconds.isdigit():
            _refuse(f"connect_timeout must be whole seconds (0: no limit), got {seconds!r}")
        arguments["timeout"] = float(seconds) or _CONNECT_TIMEOUT_NONE
    for name, make in _KEYWORDS.items():
        if name in pairs:
            try:
                arguments[name] = make(pairs[name])
            except ValueError:
                _refuse(f"{name} must be a number, got {pairs[name]!r}")
    return arguments


def for_the_driver(parsed: URL) -> tuple[URL, dict[str, Any]]:
    """The engine's URL without the parameters it cannot pass, and the driver's arguments.

    PostgreSQL: ``?password=`` becomes the URL's password (which SQLAlchemy's reprs hide;
    as a query parameter it overrides the user-info's, as in libpq); ``host`` and ``port``
    stay (SQLAlchemy reads them: ``host=/socket/dir``); libpq's other parameters go to
    asyncpg as a DSN of their own, ``connect_timeout`` as its ``timeout``; anything else is
    refused by name. SQLite has no credentials: they are ignored, as SQLAlchemy ignores
    them.
    """
    if parsed.get_backend_name() == "sqlite":
        secret = {name for name, _ in _parameters(parsed) if _is_secret(name)}
        return (parsed.difference_update_query(secret) if secret else parsed), {}
    pairs = dict(_parameters(parsed))  # a repeated name: its last value, as libpq takes it
    arguments = _postgres_arguments(parsed, pairs)
    clean = parsed.difference_update_query(set(pairs) - {"host", "port"})
    if "password" in pairs:
        clean = clean.set(password=pairs["password"])
    return clean, arguments


def parse(url: str) -> URL:
    """``url`` as SQLAlchemy's URL with the async driver, or URLRefused."""
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        _refuse("not a database URL (sqlite:///PATH or postgresql://USER@HOST/DB)")
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        if not parsed.database or parsed.database == ":memory:":
            _refuse("sqlite:///PATH needs the path of a database file")
        return parsed.set(drivername="sqlite+aiosqlite")
    if backend in ("postgresql", "postgres"):
        return parsed.set(drivername="postgresql+asyncpg")
    _refuse(
        f"{parsed.drivername!r} databases are not supported; "
        "use sqlite:///PATH or postgresql://USER@HOST/DB"
    )
