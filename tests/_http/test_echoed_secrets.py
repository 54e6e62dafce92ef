"""A token the service echoes is never shown, however its encoder escaped it, and a short
token never takes letters out of other words (issue 53, item 6).

A PHP service writes ``/`` as ``\\/``, Gson writes ``=`` and ``+`` as ``\\u003d`` and
``\\u002b``, any JSON encoder may write any character as ``\\uXXXX``, a URL percent-encodes
in either case: the error's text, its excerpt of the body, its URL and repr show none of
them. A token of one character is replaced where it stands whole only.
"""

from __future__ import annotations

import re
from urllib.parse import quote, unquote

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from payroll_async import (
    APIStatusError,
    PayrollClient,
    ResponseDecodeError,
    TransportRequest,
    TransportResponse,
)
from payroll_async._core._redact import REDACTED, redact, shown_url
from payroll_async.testing import MockTransport
from tests.conftest import ONCE

BASE = "https://api.example.com"
TOKEN = "abc/DEF+ghi=jkl"  # base64's '/', '+' and '='


def _answer(status: int, body: bytes, content_type: str = "application/json") -> MockTransport:
    def handler(request: TransportRequest) -> TransportResponse:
        return TransportResponse(status=status, headers={"Content-Type": content_type}, body=body)

    return MockTransport(handler)


async def _error(token: str, status: int, body: bytes) -> APIStatusError:
    async with PayrollClient(BASE, token, transport=_answer(status, body), retry=ONCE) as client:
        with pytest.raises(APIStatusError) as raised:
            await client.get("/v1/things", cast_to=dict)
    return raised.value


def _shown(exc: APIStatusError) -> str:
    return " ".join((str(exc), repr(exc), repr(exc.args), exc.url or "", exc.message))


def _decoded(text: str) -> str:
    """``text`` with JSON's escapes and percent-encoding undone, as a reader would."""
    short = {"/": "/", '"': '"', "\\": "\\", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}

    def one(match: re.Match[str]) -> str:
        if match[1]:
            return chr(int(match[1], 16))
        return short.get(match[2], match[0])

    text = re.sub(r"\\u([0-9A-Fa-f]{4})|\\(.)", one, text)
    # a surrogate pair, as JSON writes a character beyond the BMP
    text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return unquote(text)


ESCAPED = {
    "PHP": TOKEN.replace("/", "\\/"),
    "Gson": TOKEN.replace("=", "\\u003d").replace("+", "\\u002b"),
    "every character": "".join(f"\\u{ord(c):04X}" for c in TOKEN),
    "percent, lower case": re.sub(r"%[0-9A-F]{2}", lambda m: m[0].lower(), quote(TOKEN, safe="")),
}


@pytest.mark.parametrize("encoder", ESCAPED)
@pytest.mark.parametrize("keyed", ["message", "no message"])
async def test_a_json_escaped_token_in_an_error_body_is_not_shown(encoder: str, keyed: str) -> None:
    key = "message" if keyed == "message" else "detail"
    body = f'{{"{key}":"the token {ESCAPED[encoder]} is not valid here"}}'.encode()
    exc = await _error(TOKEN, 400, body)
    shown = _shown(exc)
    assert REDACTED in shown
    assert TOKEN not in _decoded(shown)
    assert "is not valid here" in shown


async def test_a_json_escaped_token_in_a_2xx_body_that_cannot_be_read_is_not_shown() -> None:
    body = f'{{"id": 3, "echo": "{ESCAPED["Gson"]}", "x": [}}'.encode()  # not JSON
    async with PayrollClient(BASE, TOKEN, transport=_answer(200, body), retry=ONCE) as client:
        with pytest.raises(ResponseDecodeError) as raised:
            await client.get("/v1/things", cast_to=dict)
    assert TOKEN not in _decoded(f"{raised.value} {raised.value.body_excerpt}")


async def test_a_one_character_token_takes_no_letter_out_of_other_words() -> None:
    body = b'{"detail": "e is not a token of api.example.com; see https://docs.example.com/e"}'
    exc = await _error("e", 403, body)
    assert "api.example.com" in str(exc)
    assert "https://docs.example.com/***" in str(exc)  # standing whole: replaced
    assert str(exc).count(REDACTED) == 2
    assert exc.url == f"{BASE}/v1/things"
    assert "xampl" not in REDACTED.join(str(exc).split("example"))  # never api.***xampl***


def test_a_short_token_is_replaced_where_it_stands_whole_only() -> None:
    assert redact("api.example.com", "e") == "api.example.com"
    assert redact("token: e.", "e") == f"token: {REDACTED}."
    assert redact('{"t":"\\u0065"}', "e") == f'{{"t":"{REDACTED}"}}'
    assert redact("q=a%20e%20b", "e") == f"q=a%20{REDACTED}%20b"  # after an escape: whole
    assert redact("t=ab12", "ab") == "t=ab12"
    assert shown_url("https://api.example.com/v1/x?q=e", "e") == (
        f"https://api.example.com/v1/x?q={REDACTED}"
    )


# A token as services issue them: base64 or base64url text, of any length.
tokens = st.text(
    st.sampled_from("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_."),
    min_size=1,
    max_size=40,
).filter(lambda t: t.strip("=+/-_.") != "")


def _escape(token: str, style: str, which: list[bool]) -> str:
    """``token`` as one encoder writes it; ``which`` picks the characters it escapes."""
    out = []
    for char, escaped in zip(token, which + [False] * len(token), strict=False):
        if not escaped:
            out.append("\\/" if char == "/" and style == "php" else char)
        elif style == "percent":
            out.append(quote(char, safe="").lower() if len(out) % 2 else quote(char, safe=""))
        else:
            out.append(f"\\u{ord(char):04x}" if len(out) % 2 else f"\\u{ord(char):04X}")
    return "".join(out)


@given(
    token=tokens,
    style=st.sampled_from(["php", "json", "percent"]),
    which=st.lists(st.booleans(), max_size=40),
    before=st.sampled_from(["", " ", '"', "=", ":", "/", "%20", "\\u0022", "\\n"]),
    after=st.sampled_from(["", " ", '"', "&", ".", ",", "%2C", "\\u0022", "\\n"]),
)
def test_no_spelling_of_a_token_standing_whole_survives(
    token: str, style: str, which: list[bool], before: str, after: str
) -> None:
    text = f"rejected{before}{_escape(token, style, which)}{after}"
    shown = _decoded(redact(text, token))
    whole = re.compile(rf"(?<![^\W_]){re.escape(token)}(?![^\W_])")
    assert not whole.search(shown), (text, shown)


short_tokens = tokens.filter(lambda t: len(t) < 8)
# Text without '%' or '\\': no escape in it, so what stands whole is plain to see.
words = st.text(st.characters(codec="ascii", exclude_characters="%\\"), max_size=60)


alnum = st.text(st.sampled_from("abcxyzABC0189"), max_size=4)


@given(token=short_tokens, left=alnum, right=alnum, filler=words)
def test_a_short_token_changes_nothing_where_it_does_not_stand_whole(
    token: str, left: str, right: str, filler: str
) -> None:
    text = f"{filler} {left}{token}{right} {filler}"
    whole = re.compile(rf"(?<![^\W_]){re.escape(token)}(?![^\W_])")
    assume(not whole.search(text))
    assert redact(text, token) == text
