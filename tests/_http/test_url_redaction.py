"""No secret in any URL the SDK shows: the token's text wherever a URL holds it (a Link that
echoes it, a query the caller wrote), and the values of credential-like query parameters,
in exceptions (text, ``url``, ``repr``), the PAYROLL_LOG debug line and raw responses."""

from __future__ import annotations

import logging
import socket
from typing import Any
from urllib.parse import quote, quote_plus, unquote, unquote_plus

import pytest
from aiohttp import web
from hypothesis import assume, given
from hypothesis import strategies as st
from yarl import URL

from payroll_async import (
    APIConnectionError,
    NotFoundError,
    PaginationError,
    PayrollClient,
    ServerError,
)
from payroll_async._core._redact import CREDENTIAL_KEYS, REDACTED, shown_url
from tests import factories
from tests.conftest import ONCE, TOKEN, Serve

# A token with characters that a URL writes percent-encoded, as some providers issue them.
ODD_TOKEN = "tok/secret+0123=456 789"
KEY = "k3y-98765-qwerty"


def _everything(exc: BaseException) -> str:
    return " ".join((str(exc), repr(exc), repr(exc.args), str(getattr(exc, "url", ""))))


def _assert_clean(text: str, *secrets: str) -> None:
    for secret in secrets:
        for form in {secret, quote(secret, safe=""), quote_plus(secret), quote(secret)}:
            assert form not in text, (form, text)


def _page() -> dict[str, Any]:
    return factories.envelope([factories.connection(1)], offset=0, limit=10, total=5)


async def test_a_token_a_query_holds_is_not_in_the_error_nor_the_debug_line(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    async def missing(request: web.Request) -> web.Response:
        return web.json_response({"message": "no such thing"}, status=404)

    app = web.Application()
    app.router.add_get("/v1/things", missing)
    base = await serve(app)
    params = {"access_token": ODD_TOKEN, "API-Key": KEY, "echo": ODD_TOKEN, "page": "2"}
    async with PayrollClient(base_url=base, token=ODD_TOKEN, retry=ONCE) as client:
        with caplog.at_level(logging.DEBUG, logger="payroll_async"):
            with pytest.raises(NotFoundError) as raised:
                await client.get("/v1/things", cast_to=dict, params=params)
    shown = _everything(raised.value)
    _assert_clean(shown, ODD_TOKEN, KEY)
    assert f"access_token={REDACTED}" in raised.value.url
    assert f"API-Key={REDACTED}" in raised.value.url
    assert "page=2" in raised.value.url  # the rest of the URL is still there to read
    lines = [r.getMessage() for r in caplog.records if "/v1/things" in r.getMessage()]
    assert lines, caplog.text
    _assert_clean(caplog.text, ODD_TOKEN, KEY)
    assert f"access_token={REDACTED}" in lines[0]


async def test_a_next_link_that_echoes_the_token_is_shown_without_it(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    """The server puts the token in its Link (``?access_token=``, and under a name of its
    own): the failing page's error, the debug lines and the page's repr never show it."""

    async def first(request: web.Request) -> web.Response:
        nxt = f"{request.url.origin()}/v1/payroll-connections/next?access_token={TOKEN}&t={TOKEN}"
        return web.json_response(_page(), headers={"Link": f'<{nxt}>; rel="next"'})

    async def failing(request: web.Request) -> web.Response:
        return web.json_response({"message": f"echo {request.url}"}, status=500)

    app = web.Application()
    app.router.add_get("/v1/payroll-connections", first)
    app.router.add_get("/v1/payroll-connections/next", failing)
    base = await serve(app)
    async with PayrollClient(base_url=base, token=TOKEN, retry=ONCE) as client:
        with caplog.at_level(logging.DEBUG, logger="payroll_async"):
            with pytest.raises(ServerError) as walked:
                async for _ in client.payroll_connections.list():
                    pass
            page = await client.payroll_connections.list()
            with pytest.raises(ServerError) as stepped:
                await page.get_next_page()
    for error in (walked.value, stepped.value):
        _assert_clean(_everything(error), TOKEN)
        assert f"access_token={REDACTED}&t={REDACTED}" in error.url
    _assert_clean(caplog.text, TOKEN)
    # the page's repr too (its links and headers); its links keep the URL as it came
    _assert_clean(repr(page), TOKEN)
    assert f"access_token={REDACTED}&t={REDACTED}" in repr(page)
    assert page.links["next"].endswith(f"t={TOKEN}")


async def test_a_looping_link_that_echoes_the_token_is_refused_without_showing_it(
    serve: Serve,
) -> None:
    async def looping(request: web.Request) -> web.Response:
        again = f"{request.url.origin()}/v1/payroll-connections?x={TOKEN}"
        return web.json_response(_page(), headers={"Link": f'<{again}>; rel="next"'})

    app = web.Application()
    app.router.add_get("/v1/payroll-connections", looping)
    base = await serve(app)
    async with PayrollClient(base_url=base, token=TOKEN, retry=ONCE) as client:
        with pytest.raises(PaginationError, match="already visited") as raised:
            async for _ in client.payroll_connections.list(extra_query={"x": TOKEN}):
                pass
        raw = await client.with_raw_response.get(
            "/v1/payroll-connections", cast_to=dict, params={"token": "abc123xyz"}
        )
    _assert_clean(_everything(raised.value), TOKEN)
    _assert_clean(repr(raw) + raw.url, TOKEN, "abc123xyz")
    assert raw.url.endswith(f"?token={REDACTED}")


async def test_a_connection_error_shows_its_url_without_credentials() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    async with PayrollClient(base_url=base, token=TOKEN, retry=ONCE) as client:
        with pytest.raises(APIConnectionError) as raised:
            await client.get("/v1/x", cast_to=None, params={"password": KEY, "q": TOKEN})
    _assert_clean(_everything(raised.value), TOKEN, KEY)
    assert raised.value.url == f"{base}/v1/x?password={REDACTED}&q={REDACTED}"


_TEXT = st.text(st.characters(codec="utf-8", exclude_characters="[]\x00"), min_size=1, max_size=12)
_TOKENS = st.text(
    st.characters(codec="utf-8", exclude_characters="[]\x00", exclude_categories=("Cs",)),
    min_size=8,
    max_size=40,
)


@given(
    token=_TOKENS,
    key=st.sampled_from(sorted(CREDENTIAL_KEYS)).flatmap(
        lambda k: st.sampled_from([k, k.upper(), k.replace("_", "-"), k.title()])
    ),
    value=_TOKENS,
    other=st.dictionaries(st.from_regex(r"[a-z]{1,6}", fullmatch=True), _TEXT, max_size=3),
    path=_TEXT,
    where=st.sampled_from(["query", "path", "fragment", "name"]),
)
def test_no_url_shows_the_token_or_a_credential_value(
    token: str, key: str, value: str, other: dict[str, str], path: str, where: str
) -> None:
    if where == "path":
        path = f"{path}/{token}"
    url = URL.build(scheme="https", host="api.example.test", path=f"/v1/{path}")
    query = dict(other)
    if where == "query":
        query["echo"] = token
    elif where == "name":
        query[token] = "1"
    url = url.with_query(query)
    if where == "fragment":
        url = url.with_fragment(f"access_token={token}")
    rest = str(url)
    assume(not any(value in form for form in (rest, unquote(rest), unquote_plus(rest))))
    url = url.update_query({key: value})
    shown = shown_url(url, token)
    for text in (shown, unquote(shown), unquote_plus(shown)):
        assert value not in text.replace(REDACTED, "\0")
        assert token not in text.replace(REDACTED, "\0")


def test_one_marker_for_every_secret_the_sdk_hides() -> None:
    """A token in an exception's URL, a secret in kept text, a URL's password: all ``***``."""
    from payroll_async._core._secrets import scrub
    from payroll_async._core._visible import redact_url

    assert REDACTED == "***"
    assert shown_url("https://h/v1/x?token=abc") == "https://h/v1/x?token=***"
    assert scrub("failed with tok-12345678", also=("tok-12345678",)) == "failed with ***"
    assert redact_url("https://user:pw@h/x?a=1#f") == "https://***@h/x?a=***#***"
