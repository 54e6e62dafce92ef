"""A database URL as users write it: read as libpq reads it, checked, shown without its
secrets, and handed to the driver as the values it names.

A PostgreSQL URL is read by libpq's URI grammar (PostgreSQL's manual, "Connection URIs"):
``postgresql://[user[:password]@][host][:port][,host[:port]...][/dbname][?name=value&...]``,
the user-info ending at the first ``@`` before any ``/``, every part percent-decoded and
nothing else (``+`` is a plus, not a space); the query's ``user``, ``password``, ``host``,
``port`` and ``dbname`` override the parts before it. The values read are handed to
asyncpg as its keywords (SQLAlchemy gets a URL with none of them), so no other parser
reads the text again. What is shown of a URL (reprs, ``inbox.url``, every error, the
command's lines) is its host(s), port(s) and database only.

A parameter the driver cannot take, a bad value, a port out of range, a malformed
percent-encoding or a certificate file that is not there is refused (``URLRefused``, which
the database's owner raises as its own bad-URL error) when the URL is read, never a failure
at run time; no refusal quotes what may be a secret.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import quote, unquote_to_bytes, urlencode

import attrs
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

__all__ = ["Target", "URLRefused", "read", "redact"]


class URLRefused(ValueError):
    """A URL the storage cannot use; its text says why, without the URL's secrets."""


@attrs.frozen(repr=False)
class Target:
    """A database URL read: what the engine and the driver get, what is shown, and the
    secrets to keep out of every message."""

    engine_url: URL
    """SQLAlchemy's URL: for PostgreSQL only the driver's name (no credential, no host)."""
    arguments: dict[str, Any] = attrs.field(eq=False)
    """The driver's keywords (asyncpg's: user, password, host, port, database, ...)."""
    shown: str
    """The URL as output shows it: host(s), port(s) and database only."""
    secrets: tuple[str, ...]
    """The URL's credentials, longest first."""

    def __repr__(self) -> str:
        return f"<database {self.shown}>"


def _refuse(message: str) -> NoReturn:
    raise URLRefused(message)


# --- libpq's URI grammar -------------------------------------------------------------------

_POSTGRES = re.compile(r"postgres(?:ql)?(?:\+\w+)?://", re.IGNORECASE)
_BAD_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,39}")
_HOST = re.compile(r"[^:/?,]*")
_PORT = re.compile(r"[^/?,]*")


def _decode(text: str, what: str) -> str:
    """``text`` percent-decoded as libpq decodes it (nothing else: ``+`` stays); ``what``
    names it in a refusal, which never quotes it."""
    if "%" not in text:
        return text
    if _BAD_PERCENT.search(text):
        _refuse(f"the URL's {what} has a '%' without two hex digits after it (write % as %25)")
    raw = unquote_to_bytes(text)
    if b"\0" in raw:
        _refuse(f"the URL's {what} has %00, which PostgreSQL cannot take")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        _refuse(f"the URL's {what} is not UTF-8 once percent-decoded")


def _named(name: str) -> str:
    """A parameter's name as a message may quote it (a name that is not one is not quoted:
    a mistyped URL may have a secret there)."""
    return f"parameter {name!r}" if _NAME.fullmatch(name) else "a parameter"


def _query(text: str, given: dict[str, str]) -> None:
    """libpq's ``name=value&...``: exactly one ``=`` in each; the last value of a name."""
    pieces = text.split("&")
    if pieces and not pieces[-1]:
        pieces.pop()  # a trailing "&", which libpq allows
    for piece in pieces:
        if piece.count("=") != 1:
            problem = "no '='" if "=" not in piece else "a second '=' (write = as %3D)"
            _refuse(f"a URL query parameter has {problem}")
        name, value = piece.split("=")
        name = _decode(name, "parameter name")
        given[name] = _decode(value, _named(name))


def _libpq(rest: str) -> tuple[dict[str, str], str | None]:
    """The values of a PostgreSQL URL (what follows ``postgresql://``), by libpq's names,
    and the user-info's password (which the query's may override)."""
    given: dict[str, str] = {}
    first = None
    p = 0
    marker = re.search(r"[@/]", rest)
    if marker is not None and marker[0] == "@":
        credentials = rest[: marker.start()]
        if "?" in credentials:
            # libpq would take "host?password=..." as the user name and what follows the
            # "@" as the host: surely a mistake, and one that would show a secret's end.
            _refuse(
                "the URL has an '@' in its query but no '/' before the query: write "
                "postgresql://HOST/DB?..., or @ as %40"
            )
        user, colon, password = credentials.partition(":")
        if user:
            given["user"] = _decode(user, "user name")
        if colon and password:
            given["password"] = first = _decode(password, "password")
        p = marker.end()
    hosts: list[str] = []
    ports: list[str] = []
    while True:
        if rest.startswith("[", p):  # an IPv6 address
            end = rest.find("]", p)
            if end < 0:
                _refuse("the URL's IPv6 host has no closing ']'")
            if end == p + 1:
                _refuse("the URL's IPv6 host is empty")
            hosts.append(rest[p + 1 : end])
            p = end + 1
            if p < len(rest) and rest[p] not in ":/?,":
                _refuse("the URL's IPv6 host must be followed by ':', '/', '?' or ','")
        else:
            match = _HOST.match(rest, p)
            assert match is not None
            hosts.append(match[0])
            p = match.end()
        port = ""
        if rest.startswith(":", p):
            match = _PORT.match(rest, p + 1)
            assert match is not None
            port, p = match[0], match.end()
        ports.append(port)
        if not rest.startswith(",", p):
            break
        p += 1
    # As libpq: the list decoded as one text (a "%2C" separates hosts too)
    if any(hosts):
        given["host"] = _decode(",".join(hosts), "host")
    if any(ports):
        given["port"] = _decode(",".join(ports), "port")
    if rest.startswith("/", p):
        end = rest.find("?", p)
        end = len(rest) if end < 0 else end
        if end > p + 1:
            given["dbname"] = _decode(rest[p + 1 : end], "database name")
        p = end
    if rest.startswith("?", p):
        _query(rest[p + 1 :], given)
    return given, first


# --- what the driver takes ------------------------------------------------------------------

# libpq's URL parameters that asyncpg reads from a DSN of its own (``asyncpg.connect(dsn=)``:
# the SSL files and mode, and what the server gets at the start of a session), as users
# copy them from their provider's dashboard.
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
_SECRET = ("password", "sslpassword")  # a path to one (passfile, sslkey) is not secret
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
_KEYWORDS: dict[str, type[str | float | int]] = {
    "ssl": str,
    "command_timeout": float,
    "prepared_statement_cache_size": int,
    "statement_cache_size": int,
}
_CONNECT_TIMEOUT_NONE = 365 * 86400.0  # libpq's connect_timeout=0: no limit
_TAKEN = (
    "user",
    "password",
    "host",
    "port",
    "dbname",
    "connect_timeout",
    *sorted(_LIBPQ),
    *_KEYWORDS,
)


def _ports(text: str, hosts: int) -> list[int | None]:
    """Each host's port (None: the default), as libpq matches a port list to the hosts."""
    ports: list[int | None] = []
    for one in text.split(","):
        one = one.strip()
        if not one:
            ports.append(None)
            continue
        if not one.isdigit() or not 0 < int(one) < 65536:
            got = f", got {one}" if one.isdigit() else ""  # anything else may be a secret
            _refuse(f"the port must be a number from 1 to 65535{got}")
        ports.append(int(one))
    if len(ports) not in (1, hosts):
        _refuse(f"the URL gives {len(ports)} ports for {hosts} hosts (one each, or one for all)")
    return ports * hosts if len(ports) == 1 else ports


def _checked(given: dict[str, str]) -> None:
    unknown = sorted(set(given) - set(_TAKEN))
    if unknown:
        _refuse(
            f"the URL {_named(unknown[0])} is not one the PostgreSQL driver takes; "
            f"those it takes: {', '.join(_TAKEN)}"
        )
    for name, allowed in _CHOICES.items():
        if name in given and given[name] not in allowed:
            _refuse(f"{name} must be one of {', '.join(allowed)}, got {given[name]!r}")
    if given.get("sslrootcert") == "system":
        _refuse(
            "sslrootcert=system is libpq's, which the PostgreSQL driver (asyncpg) does not "
            "take: give the path of the CA file"
        )
    verified = {given.get(name, "") for name in ("sslmode", "ssl")} & {"verify-ca", "verify-full"}
    named = "sslrootcert" in given or os.environ.get("PGSSLROOTCERT")
    default_root = Path(os.path.expanduser("~/.postgresql/root.crt"))
    if verified and not named and not default_root.is_file():
        _refuse(
            f"sslmode={' or '.join(sorted(verified))} needs the CA's certificate: give "
            f"sslrootcert=PATH (there is no {default_root})"
        )
    for name in _FILES:
        if name in given and not Path(given[name]).expanduser().is_file():
            _refuse(f"{name}: there is no file {given[name]}")


def _postgres_arguments(given: dict[str, str]) -> dict[str, Any]:
    """asyncpg's keywords for libpq's values ``given``; URLRefused naming one that
    PostgreSQL's driver cannot take, or a bad value."""
    _checked(given)
    arguments: dict[str, Any] = {}
    hosts = given["host"].split(",") if given.get("host") else []
    ports = _ports(given["port"], max(len(hosts), 1)) if given.get("port") else []
    if hosts:
        arguments["host"] = hosts
    if any(port is not None for port in ports):
        default = int(os.environ.get("PGPORT", "") or 5432)  # an empty one, as libpq reads it
        arguments["port"] = [default if port is None else port for port in ports]
    for name, keyword in (("user", "user"), ("dbname", "database"), ("password", "password")):
        if given.get(name):  # an empty value is none, as in libpq
            arguments[keyword] = given[name]
    libpq = [(name, value) for name, value in given.items() if name in _LIBPQ]
    if libpq:
        arguments["dsn"] = f"postgresql://?{urlencode(libpq, quote_via=quote)}"
    if "connect_timeout" in given:
        seconds = given["connect_timeout"].strip()
        if not seconds.isdigit():
            _refuse(f"connect_timeout must be whole seconds (0: no limit), got {seconds!r}")
        arguments["timeout"] = float(seconds) or _CONNECT_TIMEOUT_NONE
    for name, make in _KEYWORDS.items():
        if name in given:
            try:
                arguments[name] = make(given[name])
            except ValueError:
                _refuse(f"{name} must be a number, got {given[name]!r}")
    return arguments


def _shown_host(host: str) -> str:
    if ":" in host:  # IPv6, in brackets as a URL writes it
        return f"[{host}]"
    return quote(host, safe="-._~!$'()*;")  # a socket folder: %2F, as libpq's manual writes it


def _postgres_shown(given: dict[str, str], arguments: dict[str, Any]) -> str:
    hosts: list[str] = arguments.get("host", [""])
    ports: list[int] = arguments.get("port", [])
    places = [
        _shown_host(host) + (f":{ports[i]}" if i < len(ports) else "")
        for i, host in enumerate(hosts)
    ]
    database = quote(given.get("dbname", ""), safe="-._~!$'()*;")
    return f"postgresql://{','.join(places)}/{database}"


def _secrets(*values: str | None) -> tuple[str, ...]:
    return tuple(sorted({value for value in values if value}, key=len, reverse=True))


def _postgres(url: str, scheme: re.Match[str]) -> Target:
    given, first = _libpq(url[scheme.end() :])
    # The user-info's password even where the query's overrides it: never sent, never shown.
    secrets = _secrets(first, *(given.get(name) for name in _SECRET))
    arguments = _postgres_arguments(given)
    return Target(
        engine_url=URL.create("postgresql+asyncpg"),
        arguments=arguments,
        shown=_postgres_shown(given, arguments),
        secrets=secrets,
    )


def _sqlite(url: str) -> Target:
    """SQLite: SQLAlchemy's URL; credentials (which SQLite has none of) are dropped."""
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        _refuse("not a database URL (sqlite:///PATH or postgresql://USER@HOST/DB)")
    if not parsed.database or parsed.database == ":memory:":
        _refuse("sqlite:///PATH needs the path of a database file")
    secret = {name for name in parsed.query if _SQLITE_SECRET.search(name)}
    values: list[str] = []
    for name in secret:
        value = parsed.query[name]
        values += value if isinstance(value, tuple) else [value]
    return Target(
        engine_url=parsed.set(drivername="sqlite+aiosqlite", password=None).difference_update_query(
            secret
        ),
        arguments={},
        shown=f"sqlite:///{parsed.database}",
        secrets=_secrets(parsed.password, *values),
    )


# A query parameter of a SQLite URL that looks like a credential (SQLite takes none: such a
# parameter is a user's mistake, dropped and never shown).
_SQLITE_SECRET = re.compile(r"pass|pwd|secret|token|credential|^key$", re.IGNORECASE)


def read(url: str) -> Target:
    """``url`` read (PostgreSQL: as libpq reads it), or URLRefused."""
    scheme = _POSTGRES.match(url)
    if scheme is not None:
        return _postgres(url, scheme)
    backend = url.partition(":")[0].partition("+")[0].lower()
    if backend == "sqlite":
        return _sqlite(url)
    if not re.fullmatch(r"[a-z][a-z0-9.-]*", backend) or "://" not in url:
        _refuse("not a database URL (sqlite:///PATH or postgresql://USER@HOST/DB)")
    _refuse(
        f"{url.partition('://')[0]!r} databases are not supported; "
        "use sqlite:///PATH or postgresql://USER@HOST/DB"
    )


def redact(url: str) -> str:
    """``url`` as output shows it (host, port and database only), or a placeholder."""
    try:
        return read(url).shown
    except URLRefused:
        return "<a database URL that cannot be used>"
