"""Standard Webhooks signatures: interoperability with the third-party package, edge cases."""

from __future__ import annotations

import asyncio
import base64
import datetime
import hashlib
import hmac
import json
import logging
import sys
import time
import types
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import aiohttp
import pytest
import standardwebhooks
from aiohttp import web
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from hypothesis import given
from hypothesis import strategies as st
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from payroll_async import EventType, InvalidArgumentError, PayrollClient, PayrollError
from payroll_async.emulator import Emulator, _delivery
from payroll_async.events import (
    EventRouter,
    WebhookEvent,
    WebhookVerificationError,
    sign,
    unwrap,
    verify,
)
from payroll_async.events._signature import Signer
from tests.conftest import Serve
from tests.hostile.conftest import assert_secret_free

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
OTHER = "whsec_" + base64.b64encode(b"another key of 24 bytes!").decode()


def notification(event_id: str = "evt_1") -> bytes:
    return json.dumps(
        {
            "eventId": event_id,
            "eventType": "PAYROLL_PROCESSED",
            "occurredAt": "2026-11-22T05:00:00Z",
            "data": {"payrollId": "p1"},
        }
    ).encode()


def mac(secret: str, event_id: str, stamp: int, body: bytes) -> str:
    key = base64.b64decode(secret.removeprefix("whsec_"))
    digest = hmac.new(key, f"{event_id}.{stamp}.".encode() + body, hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


Send = Callable[..., Awaitable[int]]


class Receiver:
    def __init__(self, router: EventRouter) -> None:
        self.router = router
        self.handled: list[str | None] = []

        @router.on()
        async def record(event: WebhookEvent) -> None:
            self.handled.append(event.event_id)


@pytest.fixture
async def receiver(serve: Serve) -> AsyncIterator[Callable[..., Awaitable[tuple[Receiver, Send]]]]:
    sessions: list[aiohttp.ClientSession] = []

    async def start(**options: Any) -> tuple[Receiver, Send]:
        target = Receiver(EventRouter(**options))
        url = await serve(target.router.app(path="/hooks")) + "/hooks"
        session = aiohttp.ClientSession()
        sessions.append(session)

        async def send(body: bytes, headers: dict[str, str]) -> int:
            async with session.post(url, data=body, headers=headers) as response:
                return response.status

        return target, send

    yield start
    for session in sessions:
        await session.close()


async def test_what_standardwebhooks_signs_we_accept(receiver: Any) -> None:
    target, send = await receiver(secret=SECRET)
    body = notification("evt_lib")
    now = datetime.datetime.now(tz=datetime.timezone.utc)
    signature = standardwebhooks.Webhook(SECRET).sign("evt_lib", now, body.decode())
    headers = {
        "webhook-id": "evt_lib",
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": signature,
    }
    assert await send(body, headers) == 200
    assert target.handled == ["evt_lib"]


def test_what_we_sign_standardwebhooks_verifies() -> None:
    body = notification("evt_ours")
    headers = sign(SECRET, "evt_ours", int(time.time()), body)
    assert standardwebhooks.Webhook(SECRET).verify(body, headers)["eventId"] == "evt_ours"
    tampered = body.replace(b"p1", b"p2")
    with pytest.raises(standardwebhooks.WebhookVerificationError):
        standardwebhooks.Webhook(SECRET).verify(tampered, headers)


async def test_what_the_emulator_signs_standardwebhooks_verifies(serve: Serve) -> None:
    arrived: list[tuple[bytes, dict[str, str]]] = []

    async def capture(request: web.Request) -> web.Response:
        arrived.append((await request.read(), dict(request.headers)))
        return web.Response(status=500 if len(arrived) == 1 else 200)  # one redelivery

    app = web.Application()
    app.router.add_post("/in", capture)
    hook = await serve(app) + "/in"
    async with Emulator(webhook_subscriptions=0, delivery_headers={"X-Extra": "kept"}) as emu:
        assert emu.webhook_secret.startswith("whsec_")
        async with PayrollClient(emu.base_url, emu.token) as client:
            await client.webhooks.create(event_types=[EventType.PAYROLL_PROCESSED], path=hook)
        assert await emu.emit(EventType.PAYROLL_PROCESSED, event_id="evt_e") == 1
        verifier = standardwebhooks.Webhook(emu.webhook_secret)
    assert len(arrived) == 2
    for body, headers in arrived:
        assert verifier.verify(body, headers)["eventId"] == "evt_e"
        assert headers["webhook-id"] == "evt_e"  # the same id on the redelivery
        assert headers["X-Extra"] == "kept"  # delivery_headers still added
    with pytest.raises(standardwebhooks.WebhookVerificationError):
        standardwebhooks.Webhook(OTHER).verify(*arrived[0])


async def test_a_redelivery_is_signed_afresh(serve: Serve, monkeypatch: pytest.MonkeyPatch) -> None:
    # A fresh timestamp (and so a fresh signature) on each attempt: a receiver's tolerance
    # never refuses a redelivery of an old event.
    arrived: list[dict[str, str]] = []

    async def capture(request: web.Request) -> web.Response:
        arrived.append(dict(request.headers))
        return web.Response(status=503 if len(arrived) == 1 else 200)

    app = web.Application()
    app.router.add_post("/in", capture)
    hook = await serve(app) + "/in"
    stamps = iter([1_800_000_000.5, 1_800_000_007.5])
    monkeypatch.setattr(_delivery, "time", types.SimpleNamespace(time=lambda: next(stamps)))
    async with Emulator(webhook_subscriptions=0, webhook_secret=SECRET) as emu:
        async with PayrollClient(emu.base_url, emu.token) as client:
            await client.webhooks.create(event_types=[EventType.PAYROLL_PROCESSED], path=hook)
        assert await emu.emit(EventType.PAYROLL_PROCESSED, event_id="same") == 1
    assert [h["webhook-id"] for h in arrived] == ["same", "same"]
    assert [h["webhook-timestamp"] for h in arrived] == ["1800000000", "1800000007"]
    assert arrived[0]["webhook-signature"] != arrived[1]["webhook-signature"]


@pytest.mark.parametrize(
    "secret", [SECRET, SECRET.removeprefix("whsec_")], ids=["prefixed", "bare"]
)
async def test_secrets_with_and_without_the_prefix(receiver: Any, secret: str) -> None:
    _, send = await receiver(secret=secret)
    body = notification()
    assert await send(body, sign(SECRET, "evt_1", int(time.time()), body)) == 200


async def test_key_rotation_accepts_either_secret(receiver: Any) -> None:
    target, send = await receiver(secret=[OTHER, SECRET])
    for n, secret in enumerate([SECRET, OTHER]):
        body = notification(f"r{n}")
        assert await send(body, sign(secret, f"r{n}", int(time.time()), body)) == 200
    third = "whsec_" + base64.b64encode(b"a third, unknown secret!").decode()
    body = notification("r2")
    assert await send(body, sign(third, "r2", int(time.time()), body)) == 401
    assert target.handled == ["r0", "r1"]


def _headers(event_id: str, stamp: int, signature: str) -> dict[str, str]:
    return {"webhook-id": event_id, "webhook-timestamp": str(stamp), "webhook-signature": signature}


async def test_the_specs_edge_cases(receiver: Any, caplog: pytest.LogCaptureFixture) -> None:
    target, send = await receiver(secret=SECRET)
    now = int(time.time())

    def case(event_id: str, signature: str, stamp: int = now, sign_as: str | None = None) -> tuple:
        body = notification(event_id)
        good = mac(SECRET, sign_as or event_id, stamp, body)
        return body, _headers(event_id, stamp, signature.format(good=good))

    accepted = [
        case("several", "v1,AAAA v1,{good} v1,bm90IGl0"),  # every listed signature is tried
        case("versions", "v1a,{good} v2,{good} v1,{good}"),  # unknown versions are skipped
        case("early", "v1,{good}", stamp=now - 290),
        case("late", "v1,{good}", stamp=now + 290),
    ]
    refused = [
        case("only-unknown-versions", "v1a,{good} v2,{good}"),
        case("malformed-base64", "v1,!!!{good}"),
        case("no-comma", "{good}"),
        case("empty", ""),
        case("too-old", "v1,{good}", stamp=now - 400),
        case("too-new", "v1,{good}", stamp=now + 400),
        case("id-mismatch", "v1,{good}", sign_as="other"),
    ]
    for body, headers in accepted:
        assert await send(body, headers) == 200, headers
    caplog.clear()
    caplog.set_level(logging.DEBUG, logger="payroll_async.events")
    for body, headers in refused:
        assert await send(body, headers) == 401, headers
    body = notification("tampered")
    headers = sign(SECRET, "tampered", now, body)
    assert await send(body.replace(b"p1", b"p9"), headers) == 401
    assert await send(body, {}) == 401  # no headers at all
    # a webhook-id that is signed correctly but is not the body's eventId
    other = notification("body-id")
    assert await send(other, sign(SECRET, "header-id", now, other)) == 401
    assert target.handled == ["several", "versions", "early", "late"]
    records = [r for r in caplog.records if "rejected" in r.getMessage()]
    lines = [r.getMessage() for r in records]
    assert len(lines) == len(refused) + 3  # one line per refusal
    assert all("failed verification" in line for line in lines)
    # each cause once as a WARNING from this sender; its repeats at DEBUG
    warned = [r.refusal for r in records if r.levelno == logging.WARNING]  # type: ignore[attr-defined]
    assert sorted(warned) == sorted({r.refusal for r in records})  # type: ignore[attr-defined]
    assert len(warned) == 5
    assert not any(SECRET.removeprefix("whsec_") in line for line in caplog.text.splitlines())


async def test_an_unverified_request_never_reaches_the_dedupe_memory(receiver: Any) -> None:
    target, send = await receiver(secret=SECRET)
    body = notification("victim")
    forged = _headers("victim", int(time.time()), "v1," + mac(OTHER, "victim", 0, body))
    assert await send(body, forged) == 401
    # had the forgery been remembered as handled, the real delivery would be skipped
    assert await send(body, sign(SECRET, "victim", int(time.time()), body)) == 200
    assert target.handled == ["victim"]


def test_a_router_needs_a_choice() -> None:
    with pytest.raises(InvalidArgumentError, match=r"secret=.*verify=.*insecure=True"):
        EventRouter()
    with pytest.raises(InvalidArgumentError, match="contradicts"):
        EventRouter(secret=SECRET, insecure=True)
    with pytest.raises(InvalidArgumentError, match="at least one"):
        EventRouter(secret=[])
    with pytest.raises(InvalidArgumentError, match="tolerance"):
        EventRouter(secret=SECRET, tolerance=0)
    with pytest.raises(InvalidArgumentError) as refused:
        EventRouter(secret="whsec_not*base64")
    assert "not*base64" not in str(refused.value)  # a mistyped secret is not echoed
    assert "MfKQ" not in repr(EventRouter(secret=SECRET).__dict__)


def test_insecure_is_said_out_loud(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="payroll_async.events"):
        EventRouter(insecure=True)
    assert "not verified" in caplog.text


async def test_a_non_utf8_webhook_id_is_refused_with_one_warning(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    # What aiohttp's client will not send: a raw request whose webhook-id holds byte 0xff
    url = URL(await serve(EventRouter(secret=SECRET).app(path="/hooks")))
    body = notification("evt_1")
    stamp = int(time.time())
    head = (
        f"POST /hooks HTTP/1.1\r\nHost: {url.host}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\nwebhook-timestamp: {stamp}\r\n"
        f"webhook-signature: v1,{mac(SECRET, 'evt_1', stamp, body)}\r\n"
    ).encode()
    caplog.set_level(logging.INFO)
    reader, writer = await asyncio.open_connection(url.host, url.port)
    writer.write(head + b"webhook-id: evt_\xff1\r\n\r\n" + body)
    await writer.drain()
    status_line = await reader.readline()
    writer.close()
    await writer.wait_closed()
    assert status_line.split()[1] == b"401"
    ours = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [(r.name, r.levelname) for r in ours] == [("payroll_async.events", "WARNING")]
    assert "webhook-id is not UTF-8" in ours[0].getMessage()
    assert ours[0].exc_info is None


@given(
    st.dictionaries(
        st.sampled_from(["webhook-id", "webhook-timestamp", "webhook-signature"]),
        # lone surrogates too: aiohttp hands a non-UTF-8 header byte on as one
        st.text(st.characters(exclude_categories=()), max_size=80),
    ),
    st.binary(max_size=64),
)
def test_any_headers_are_refused_cleanly(headers: dict[str, str], body: bytes) -> None:
    outcome = Signer(SECRET, 300).check(headers, body, time.time())
    assert isinstance(outcome, str)


# v1a: Standard Webhooks' asymmetric signatures (Ed25519), held to the scheme's own
# construction, written here from the spec with cryptography's calls: the signed content is
# `{webhook-id}.{webhook-timestamp}.{body}`, an entry is `v1a,<base64 of the 64-byte
# signature>`, a public key is `whpk_<base64 of the raw 32-byte key>`, a private key
# `whsk_<base64 of its 32-byte seed>`.

# RFC 8032, 7.1, TEST 1: a seed, its public key, and its signature of the empty message.
RFC_SEED = bytes.fromhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
RFC_PUBLIC = bytes.fromhex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
RFC_EMPTY_SIGNATURE = bytes.fromhex(
    "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
)
WHSK = "whsk_" + base64.b64encode(RFC_SEED).decode()
WHPK = "whpk_" + base64.b64encode(RFC_PUBLIC).decode()
OTHER_SEED = hashlib.sha256(b"another Ed25519 seed").digest()


def spec_v1a_sign(seed: bytes, event_id: str, stamp: int, body: bytes) -> str:
    private = Ed25519PrivateKey.from_private_bytes(seed)
    return "v1a," + base64.b64encode(private.sign(f"{event_id}.{stamp}.".encode() + body)).decode()


def spec_v1a_verifies(whpk: str, headers: dict[str, str], body: bytes) -> bool:
    public = Ed25519PublicKey.from_public_bytes(base64.b64decode(whpk.removeprefix("whpk_")))
    content = f"{headers['webhook-id']}.{headers['webhook-timestamp']}.".encode() + body
    for entry in headers["webhook-signature"].split():
        version, _, value = entry.partition(",")
        if version == "v1a":
            try:
                public.verify(base64.b64decode(value), content)
            except InvalidSignature:
                continue
            return True
    return False


def test_the_spec_construction_reproduces_rfc_8032() -> None:
    private = Ed25519PrivateKey.from_private_bytes(RFC_SEED)
    assert private.sign(b"") == RFC_EMPTY_SIGNATURE
    assert private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw) == RFC_PUBLIC


async def test_v1a_what_the_spec_signs_we_accept(receiver: Any) -> None:
    target, send = await receiver(secret=WHPK)
    now = int(time.time())
    body = notification("evt_a")
    signed = _headers("evt_a", now, spec_v1a_sign(RFC_SEED, "evt_a", now, body))
    assert await send(body, signed) == 200
    assert await send(body.replace(b"p1", b"p2"), signed) == 401  # tampered
    body = notification("evt_b")
    other = _headers("evt_b", now, spec_v1a_sign(OTHER_SEED, "evt_b", now, body))
    assert await send(body, other) == 401  # another key
    old = _headers("evt_b", now - 400, spec_v1a_sign(RFC_SEED, "evt_b", now - 400, body))
    assert await send(body, old) == 401  # replayed after the tolerance
    v1_only = sign(SECRET, "evt_b", now, body)
    assert await send(body, v1_only) == 401  # a v1 entry is not checked with a whpk_
    assert target.handled == ["evt_a"]


def test_v1a_what_we_sign_the_spec_verifies() -> None:
    body = notification("evt_ours")
    headers = sign(WHSK, "evt_ours", int(time.time()), body)
    assert headers["webhook-signature"].startswith("v1a,")
    assert spec_v1a_verifies(WHPK, headers, body)
    assert not spec_v1a_verifies(WHPK, headers, body.replace(b"p1", b"p2"))
    other = (
        "whpk_"
        + base64.b64encode(
            Ed25519PrivateKey.from_private_bytes(OTHER_SEED)
            .public_key()
            .public_bytes(Encoding.Raw, PublicFormat.Raw)
        ).decode()
    )
    assert not spec_v1a_verifies(other, headers, body)
    # libsodium's 64-byte layout (the seed, then the public key) signs alike
    long_form = "whsk_" + base64.b64encode(RFC_SEED + RFC_PUBLIC).decode()
    assert sign(long_form, "evt_ours", 1, body) == sign(WHSK, "evt_ours", 1, body)


async def test_the_emulator_signs_v1a_with_a_whsk_key(serve: Serve) -> None:
    arrived: list[tuple[bytes, dict[str, str]]] = []
    router = EventRouter(secret=WHPK)
    handled: list[str | None] = []

    @router.on()
    async def record(event: WebhookEvent) -> None:
        handled.append(event.event_id)

    async def capture(request: web.Request) -> web.StreamResponse:
        arrived.append((await request.read(), dict(request.headers)))
        return await router.handle(request)

    app = web.Application()
    app.router.add_post("/in", capture)
    hook = await serve(app) + "/in"
    async with Emulator(webhook_subscriptions=0, webhook_secret=WHSK) as emu:
        assert emu.webhook_public_key == WHPK  # derived as the spec says
        async with PayrollClient(emu.base_url, emu.token) as client:
            await client.webhooks.create(event_types=[EventType.PAYROLL_PROCESSED], path=hook)
        assert await emu.emit(EventType.PAYROLL_PROCESSED, event_id="evt_e") == 1
    [(body, headers)] = arrived
    assert headers["webhook-signature"].startswith("v1a,")
    assert spec_v1a_verifies(WHPK, headers, body)
    assert handled == ["evt_e"]


async def test_a_rotation_mixes_whsec_and_whpk_keys(receiver: Any) -> None:
    target, send = await receiver(secret=[SECRET, WHPK])
    now = int(time.time())
    one, two, both = notification("v1"), notification("v1a"), notification("both")
    assert await send(one, sign(SECRET, "v1", now, one)) == 200
    assert await send(two, sign(WHSK, "v1a", now, two)) == 200
    entries = f"{sign(OTHER, 'both', now, both)['webhook-signature']} " + spec_v1a_sign(
        RFC_SEED, "both", now, both
    )
    assert await send(both, _headers("both", now, entries)) == 200  # any entry may match
    stranger = notification("stranger")
    forged = _headers("stranger", now, spec_v1a_sign(OTHER_SEED, "stranger", now, stranger))
    assert await send(stranger, forged) == 401
    assert target.handled == ["v1", "v1a", "both"]


@pytest.mark.parametrize(
    ("key", "match"),
    [
        ("whsig_" + base64.b64encode(b"k" * 24).decode(), "unknown webhook key prefix 'whsig_'"),
        ("Bearer_abc", "unknown webhook key prefix"),
        ("whpk_" + base64.b64encode(RFC_PUBLIC[:31]).decode(), "32-byte Ed25519 public key"),
        ("whpk_" + base64.b64encode(RFC_PUBLIC + b"\0").decode(), "32-byte"),
        ("whpk_not*base64", "base64"),
        ("whpk_", "32-byte"),
        (WHSK, "give the receiver its 'whpk_' public key"),
    ],
    ids=["unknown-prefix", "unknown-word", "short", "long", "not-base64", "empty", "whsk"],
)
def test_bad_keys_are_refused_when_the_router_is_built(key: str, match: str) -> None:
    with pytest.raises(InvalidArgumentError, match=match) as refused:
        EventRouter(secret=[SECRET, key])
    body = key.partition("_")[2]
    assert not body or body not in str(refused.value)  # the key itself is never shown
    with pytest.raises(InvalidArgumentError):
        verify(b"{}", {}, secret=key)


@pytest.mark.parametrize(
    "junk",
    ["hunter2", "notasecret", "whsec_hunter2", "whsec_" + base64.b64encode(b"k" * 15).decode()],
)
def test_a_secret_too_short_to_be_a_generated_key_is_refused_saying_what_a_key_is(
    junk: str,
) -> None:
    with pytest.raises(
        InvalidArgumentError, match=r"'whsec_' followed by the base64 of at least 16"
    ) as refused:
        EventRouter(secret=junk)
    assert junk.removeprefix("whsec_") not in str(refused.value)
    for refuse in (
        lambda: EventRouter(secret=[SECRET, junk]),
        lambda: verify(b"{}", {}, secret=junk),
        lambda: sign(junk, "e", 1, b""),
    ):
        with pytest.raises(InvalidArgumentError, match="at least 16"):
            refuse()
    with pytest.raises(ValueError, match="at least 16"):
        Emulator(webhook_secret=junk)
    EventRouter(secret="whsec_" + base64.b64encode(b"k" * 16).decode())  # 16 bytes will do


def test_signing_refuses_a_public_key_and_unknown_prefixes() -> None:
    with pytest.raises(InvalidArgumentError, match="only verifies"):
        sign(WHPK, "e", 1, b"")
    with pytest.raises(InvalidArgumentError, match="unknown webhook key prefix"):
        sign("whzz_AAAA", "e", 1, b"")
    with pytest.raises(ValueError, match="public key, which cannot sign"):
        Emulator(webhook_secret=WHPK)


def test_without_cryptography_a_whpk_key_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "cryptography.hazmat.primitives.asymmetric.ed25519", None)
    with pytest.raises(InvalidArgumentError, match=r"pip install 'payroll-async\[webhooks\]'"):
        EventRouter(secret=WHPK)
    EventRouter(secret=SECRET)  # v1 needs nothing


# verify() and unwrap(): any framework's headers


def _starlette(headers: dict[str, str]) -> Mapping[str, str]:
    from starlette.datastructures import Headers

    return Headers(raw=[(k.lower().encode(), v.encode()) for k, v in headers.items()])


def _werkzeug(headers: dict[str, str]) -> Mapping[str, str]:
    from werkzeug.datastructures import EnvironHeaders

    environ = {"HTTP_" + k.upper().replace("-", "_"): v for k, v in headers.items()}
    return EnvironHeaders(environ)  # type: ignore[return-value]  # Flask's request.headers


HEADER_KINDS: dict[str, Callable[[dict[str, str]], Mapping[str, str]]] = {
    "dict": dict,
    "dict-title-case": lambda h: {k.title(): v for k, v in h.items()},
    "dict-upper-case": lambda h: {k.upper(): v for k, v in h.items()},
    "aiohttp": lambda h: CIMultiDictProxy(CIMultiDict({k.title(): v for k, v in h.items()})),
    "starlette": _starlette,
    "flask": _werkzeug,
}


@pytest.mark.parametrize("kind", HEADER_KINDS)
@pytest.mark.parametrize("key", [SECRET, WHSK], ids=["v1", "v1a"])
def test_verify_and_unwrap_read_any_framework_s_headers(kind: str, key: str) -> None:
    body = notification("evt_any")
    headers = HEADER_KINDS[kind](sign(key, "evt_any", int(time.time()), body))
    secret = WHPK if key == WHSK else SECRET
    assert verify(body, headers, secret=secret) is None
    event = unwrap(body, headers, secret=[OTHER, secret])
    assert (event.event_id, event.event_type) == ("evt_any", EventType.PAYROLL_PROCESSED)
    with pytest.raises(WebhookVerificationError, match="no signature matches"):
        verify(body.replace(b"p1", b"p2"), headers, secret=secret)


def test_what_verify_and_unwrap_raise_says_why_never_the_secret() -> None:
    now = int(time.time())
    body = notification("evt_1")
    cases = {
        "missing webhook-id": {},
        "not integer Unix seconds": _headers("evt_1", now, "v1,AAAA") | {"webhook-timestamp": "x"},
        "more than 300s from this machine's clock": sign(SECRET, "evt_1", now - 301, body),
        "no v1 or v1a signature": _headers("evt_1", now, "v2,AAAA"),
        "no signature matches": sign(OTHER, "evt_1", now, body),
    }
    for why, headers in cases.items():
        with pytest.raises(WebhookVerificationError, match=why) as raised:
            unwrap(body, headers, secret=[SECRET, WHPK])
        assert isinstance(raised.value, PayrollError)
        assert why in raised.value.reason
        assert_secret_free(raised.value, SECRET.removeprefix("whsec_"))
    garbage = b"not json"
    with pytest.raises(InvalidArgumentError, match="not JSON"):
        unwrap(garbage, sign(SECRET, "e", now, garbage), secret=SECRET)
    with pytest.raises(InvalidArgumentError, match="raw bytes"):
        verify(body.decode(), sign(SECRET, "evt_1", now, body), secret=SECRET)  # type: ignore[arg-type]


async def test_a_webhook_id_other_than_the_eventid_is_refused_everywhere(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A valid signature made for another id does not vouch for this body: verify(), unwrap()
    and the router all refuse it, and only after the signature holds is the body read."""
    now = int(time.time())
    body = notification("evt_1")
    mismatch = sign(SECRET, "evt_2", now, body)
    for check in (verify, unwrap):
        with pytest.raises(WebhookVerificationError, match="differs from the body's eventId"):
            check(body, mismatch, secret=SECRET)
    router = EventRouter(secret=SECRET)
    handled: list[WebhookEvent] = []

    @router.on()
    async def record(event: WebhookEvent) -> None:
        handled.append(event)

    with caplog.at_level(logging.WARNING, logger="payroll_async.events"):
        reply = await router.receive(body, mismatch)
    assert (reply.status, handled) == (401, [])
    assert "webhook-id differs from the body's eventId" in caplog.text
    # The signature first: a forged copy is refused for its signature, not for its body.
    forged = sign(OTHER, "evt_2", now, b"not json")
    for check in (verify, unwrap):
        with pytest.raises(WebhookVerificationError, match="no signature matches"):
            check(b"not json", forged, secret=SECRET)
    # A signed body that is not a notification: verify() says so as unwrap() does.
    with pytest.raises(InvalidArgumentError, match="not JSON"):
        verify(b"not json", sign(SECRET, "e", now, b"not json"), secret=SECRET)
    assert verify(body, sign(SECRET, "evt_1", now, body), secret=SECRET) is None


@given(
    st.dictionaries(
        st.sampled_from(["webhook-id", "Webhook-Timestamp", "WEBHOOK-SIGNATURE", "other"]),
        st.text(max_size=80),
    ),
    st.binary(max_size=64),
)
def test_verify_raises_only_its_own_error(headers: dict[str, str], body: bytes) -> None:
    with pytest.raises(WebhookVerificationError):
        verify(body, headers, secret=[SECRET, WHPK])
