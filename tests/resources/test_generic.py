"""Generic calls (client.get/post/put/patch/delete/request): casts, raw responses, and the
same retries, 429 pauses, token refresh and gate as every built-in operation."""

from __future__ import annotations

import asyncio
import datetime
import encodings.aliases
import json
import logging
import uuid
from typing import Any

import attrs
import pytest
from aiohttp import web
from aioresponses import aioresponses
from hypothesis import given, settings
from hypothesis import strategies as st
from yarl import URL

from payroll_async import (
    APIConnectionError,
    InvalidArgumentError,
    NotFoundError,
    PayrollClient,
    RateLimitError,
    ResponseDecodeError,
    RetryPolicy,
    ServerError,
)
from payroll_async._http._seam import Response
from payroll_async._paging._decode import cast_body
from tests import factories
from tests._http.test_auth import Rotating, auth_app
from tests._http.test_gate import Recording
from tests.conftest import BASE, TOKEN, FakeClock, Serve
from tests.resources.helpers import body_of, calls, only_call

PLATFORMS = f"{BASE}/v1/payroll-platforms"
PID = factories.uid(3, 7)


@attrs.frozen
class Platform:
    id: uuid.UUID
    name: str
    created_at: datetime.datetime


PLATFORM = {"id": PID, "name": "Ledgerly", "createdAt": "2024-01-01T00:00:00Z", "extra": 1}


# --- casts -----------------------------------------------------------------------------------


async def test_an_attrs_class_is_structured_as_the_models_are(
    mock_api: aioresponses, client: PayrollClient
) -> None:
    mock_api.get(f"{PLATFORMS}/{PID}", payload=PLATFORM)
    platform = await client.get(f"/v1/payroll-platforms/{PID}", cast_to=Platform)
    assert platform == Platform(
        uuid.UUID(PID), "Ledgerly", datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
    )
    method, url, kwargs = only_call(mock_api)
    assert (method, url.path) == ("GET", f"/v1/payroll-platforms/{PID}")
    assert kwargs["headers"]["Authorization"] == f"Bearer {TOKEN}"


@pytest.mark.parametrize(
    ("cast_to", "body", "expected"),
    [
        (dict, b'{"a": [1, 2]}', {"a": [1, 2]}),
        (list, b'[{"a": 1}, 2]', [{"a": 1}, 2]),
        (str, "caf\u00e9 \u2713".encode(), "caf\u00e9 \u2713"),
        (bytes, b"\x00\xffraw", b"\x00\xffraw"),
        (None, b'{"ignored": true}', None),
    ],
    ids=["dict", "list", "str", "bytes", "None"],
)
async def test_each_cast(
    mock_api: aioresponses, client: PayrollClient, cast_to: Any, body: bytes, expected: Any
) -> None:
    mock_api.get(PLATFORMS, body=body, content_type="application/json")
    assert await client.get("/v1/payroll-platforms", cast_to=cast_to) == expected


async def test_str_follows_the_charset(mock_api: aioresponses, client: PayrollClient) -> None:
    mock_api.get(
        PLATFORMS, body="caf\u00e9".encode("latin-1"), content_type="text/plain; charset=latin-1"
    )
    assert await client.get("/v1/payroll-platforms", cast_to=str) == "caf\u00e9"


@pytest.mark.parametrize(
    ("cast_to", "body"),
    [(dict, b"[1]"), (list, b"{}"), (dict, b"not json"), (Platform, b'{"id": 1}'), (str, b"\xff")],
    ids=["array-as-dict", "object-as-list", "not-json", "wrong-shape", "not-utf8"],
)
async def test_a_body_that_is_not_the_cast_is_a_decode_error(
    mock_api: aioresponses, client: PayrollClient, cast_to: Any, body: bytes
) -> None:
    mock_api.get(PLATFORMS, body=body, headers={"X-Request-Id": "req-9"})
    with pytest.raises(ResponseDecodeError) as info:
        await client.get("/v1/payroll-platforms", cast_to=cast_to)
    assert (info.value.status, info.value.request_id, info.value.method) == (200, "req-9", "GET")


@pytest.mark.parametrize(
    ("charset", "body"),
    [
        ("undefined", b"text"),
        ("punycode", b"\xff"),
        ("punycode", b"abc-9999999999"),
        ("x\x00", b"a"),
    ],
    ids=["undefined", "punycode-byte", "punycode-overflow", "nul"],
)
async def test_a_charset_that_cannot_decode_the_body_is_a_decode_error(
    mock_api: aioresponses, client: PayrollClient, charset: str, body: bytes
) -> None:
    mock_api.get(PLATFORMS, body=body, headers={"Content-Type": f"text/plain; charset={charset}"})
    with pytest.raises(ResponseDecodeError, match="response is not text in") as info:
        await client.get("/v1/payroll-platforms", cast_to=str)
    assert info.value.status == 200


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(sorted({*encodings.aliases.aliases.values(), "undefined", "punycode", "idna"}))
    | st.text(max_size=12),
    st.binary(max_size=40),
)
def test_str_is_the_text_or_a_decode_error_whatever_the_charset(charset: str, body: bytes) -> None:
    response = Response(
        method="GET",
        status=200,
        url=URL(PLATFORMS),
        headers={"Content-Type": f"text/plain; charset={charset}"},
        body=body,
    )
    try:
        text = cast_body(str, response)
    except ResponseDecodeError:
        return
    assert isinstance(text, str)


@pytest.mark.parametrize("cast_to", [int, "dict", dict[str, Any], object, 3])
async def test_an_unknown_cast_is_refused_before_any_request(
    mock_api: aioresponses, client: PayrollClient, cast_to: Any
) -> None:
    with pytest.raises(InvalidArgumentError, match="cast_to"):
        await client.get("/v1/payroll-platforms", cast_to=cast_to)
    assert calls(mock_api) == []


async def test_every_method_sends_its_body_params_and_options(
    mock_api: aioresponses, client: PayrollClient
) -> None:
    for method in ("post", "put", "patch", "delete"):
        getattr(mock_api, method)(f"{PLATFORMS}?tag=x&n=2&flag=true", payload={"ok": method})
    assert await client.post(
        "/v1/payroll-platforms",
        cast_to=dict,
        params={"tag": "x", "n": 2, "flag": True},
        json={"name": "new"},
        extra_headers={"X-Team": "payroll"},
    ) == {"ok": "post"}
    for verb in ("put", "patch", "delete"):
        call = getattr(client, verb)
        assert await call(
            "/v1/payroll-platforms", cast_to=dict, params={"tag": "x", "n": 2, "flag": True}
        ) == {"ok": verb}
    sent = calls(mock_api)
    assert [m for m, _, _ in sent] == ["POST", "PUT", "PATCH", "DELETE"]
    assert body_of(sent[0][2]) == {"name": "new"}
    assert sent[0][2]["headers"]["X-Team"] == "payroll"
    assert sent[0][2]["headers"]["Content-Type"] == "application/json"


async def test_request_takes_the_method_in_any_case_and_refuses_others(
    mock_api: aioresponses, client: PayrollClient
) -> None:
    mock_api.get(PLATFORMS, payload=[])
    assert await client.request("get", "/v1/payroll-platforms", cast_to=list) == []
    for method in ("HEAD", "TRACE", "CONNECT", "GET\r\nX: y", 1):
        with pytest.raises(InvalidArgumentError, match="method"):
            await client.request(method, "/v1/payroll-platforms", cast_to=None)  # type: ignore[arg-type]
    assert len(calls(mock_api)) == 1


async def test_options_are_checked_as_for_every_operation(client: PayrollClient) -> None:
    with pytest.raises(TypeError, match="timeuot"):
        await client.get("/v1/x", cast_to=dict, timeuot=5)  # type: ignore[call-overload]
    with pytest.raises(InvalidArgumentError, match="timeout"):
        await client.get("/v1/x", cast_to=dict, timeout=-1)
    with pytest.raises(InvalidArgumentError, match="params"):
        await client.get("/v1/x", cast_to=dict, params={"a": object()})  # type: ignore[dict-item]


# --- raw responses ---------------------------------------------------------------------------


async def test_with_raw_response_gives_status_headers_and_request_id(
    mock_api: aioresponses, client: PayrollClient
) -> None:
    mock_api.post(PLATFORMS, status=201, payload=PLATFORM, headers={"X-Request-Id": "req-1"})
    raw = await client.with_raw_response.post("/v1/payroll-platforms", cast_to=Platform)
    assert (raw.status, raw.request_id, raw.method) == (201, "req-1", "POST")
    assert raw.parsed.name == "Ledgerly"
    mock_api.delete(f"{PLATFORMS}/{PID}", status=204)
    gone = await client.with_raw_response.request(
        "DELETE", f"/v1/payroll-platforms/{PID}", cast_to=None
    )
    assert (gone.parsed, gone.status) == (None, 204)
    for verb in ("get", "put", "patch", "delete"):
        getattr(mock_api, verb)(PLATFORMS, payload={"v": verb})
        raw_dict = await getattr(client.with_raw_response, verb)(
            "/v1/payroll-platforms", cast_to=dict
        )
        assert (raw_dict.parsed, raw_dict.method) == ({"v": verb}, verb.upper())


# --- retries, 429, the token, the gate -------------------------------------------------------


async def test_a_get_is_retried_after_a_5xx_and_waits_out_a_429(
    mock_api: aioresponses, client: PayrollClient, clock: FakeClock
) -> None:
    mock_api.get(PLATFORMS, status=503)
    mock_api.get(PLATFORMS, status=429, headers={"Retry-After": "7"})
    mock_api.get(PLATFORMS, payload={"data": []})
    assert await client.get("/v1/payroll-platforms", cast_to=dict) == {"data": []}
    assert len(calls(mock_api)) == 3
    assert 7.0 in clock.sleeps


async def test_a_post_is_retried_on_a_429_but_not_on_a_5xx(
    mock_api: aioresponses, client: PayrollClient, clock: FakeClock
) -> None:
    mock_api.post(PLATFORMS, status=429, headers={"Retry-After": "2"})
    mock_api.post(PLATFORMS, status=201, payload=PLATFORM)
    assert (await client.post("/v1/payroll-platforms", cast_to=Platform)).name == "Ledgerly"
    mock_api.post(PLATFORMS, status=502)
    with pytest.raises(ServerError) as info:
        await client.post("/v1/payroll-platforms", cast_to=dict)
    assert (info.value.status, info.value.method) == (502, "POST")
    assert len(calls(mock_api)) == 3


async def test_a_429_past_the_policy_is_a_rate_limit_error_with_its_request_id(
    mock_api: aioresponses, client: PayrollClient
) -> None:
    mock_api.get(PLATFORMS, status=429, headers={"Retry-After": "3600", "X-Request-Id": "r-5"})
    with pytest.raises(RateLimitError) as info:
        await client.get("/v1/payroll-platforms", cast_to=dict)
    assert (info.value.retry_after, info.value.request_id) == (3600.0, "r-5")


async def test_a_404_is_a_not_found_error(mock_api: aioresponses, client: PayrollClient) -> None:
    mock_api.get(f"{PLATFORMS}/{PID}", status=404, payload=factories.error_body("no such"))
    with pytest.raises(NotFoundError, match="no such"):
        await client.get(f"/v1/payroll-platforms/{PID}", cast_to=dict)


async def test_a_401_refreshes_the_token_once(serve: Serve) -> None:
    seen: list[str] = []
    base = await serve(auth_app({"token-v2"}, seen))
    provider = Rotating()
    async with PayrollClient(base, provider) as client:
        assert await client.get("/v1/payroll-connections", cast_to=dict) == factories.envelope([])
    assert seen == ["token-v1", "token-v2"]
    assert provider.refreshes == 1


async def test_the_gate_is_passed_and_told_of_a_429(
    mock_api: aioresponses, clock: FakeClock
) -> None:
    gate = Recording()
    mock_api.get(PLATFORMS, status=429, headers={"Retry-After": "4"})
    mock_api.get(PLATFORMS, payload={})
    async with PayrollClient(BASE, TOKEN, clock=clock, gate=gate) as client:
        await client.get("/v1/payroll-platforms", cast_to=dict)
    assert gate.acquired == 2
    assert gate.paused == [4.0]


async def test_calls_share_the_clients_cap_on_requests_in_flight(serve: Serve) -> None:
    in_flight = most = 0

    async def handle(request: web.Request) -> web.Response:
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        await asyncio.sleep(0.005)
        in_flight -= 1
        return web.json_response({})

    app = web.Application()
    app.router.add_get("/v1/payroll-platforms", handle)
    base = await serve(app)
    async with PayrollClient(base, TOKEN, concurrency=3) as client:
        await asyncio.gather(
            *(client.get("/v1/payroll-platforms", cast_to=dict) for _ in range(12))
        )
    assert most == 3


async def test_a_post_whose_answer_was_lost_is_not_sent_again(serve: Serve) -> None:
    posts = 0

    async def handle(request: web.Request) -> web.StreamResponse:
        nonlocal posts
        posts += 1
        await request.read()
        assert request.transport is not None
        request.transport.close()  # the request arrived; its answer never leaves
        return web.Response()

    app = web.Application()
    app.router.add_post("/v1/payroll-platforms", handle)
    base = await serve(app)
    async with PayrollClient(base, TOKEN, retry=RetryPolicy(backoff_initial=0)) as client:
        with pytest.raises(APIConnectionError) as info:
            await client.post("/v1/payroll-platforms", cast_to=dict, json={"name": "x"})
    assert info.value.request_sent
    assert posts == 1


async def test_the_base_urls_path_is_kept(mock_api: aioresponses, clock: FakeClock) -> None:
    mock_api.get(f"{BASE}/api/v1/users?role=admin", body=json.dumps([1]), repeat=True)
    async with PayrollClient(f"{BASE}/api", TOKEN, clock=clock) as client:
        assert await client.get("/v1/users", cast_to=list, params={"role": "admin"}) == [1]
        assert await client.get("/v1/users?role=admin", cast_to=list) == [1]


async def test_a_copys_options_apply_and_the_debug_log_has_the_request_id(
    mock_api: aioresponses, client: PayrollClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="payroll_async")
    mock_api.get(f"{PLATFORMS}?team=payroll", payload={}, headers={"X-Request-Id": "req-77"})
    copy = client.with_options(extra_headers={"X-Team": "payroll"}, extra_query={"team": "payroll"})
    assert await copy.get("/v1/payroll-platforms", cast_to=dict) == {}
    (_, url, kwargs) = only_call(mock_api)
    assert kwargs["headers"]["X-Team"] == "payroll"
    assert url.query["team"] == "payroll"
    assert any("req-77" in r.getMessage() for r in caplog.records)
    assert TOKEN not in caplog.text
    with pytest.raises(InvalidArgumentError, match="team"):
        await copy.get("/v1/payroll-platforms?team=x", cast_to=dict)


def test_help_shows_each_generic_calls_parameters() -> None:
    """The verbs are written once, but ``help(client.get)`` still names their parameters."""
    import inspect

    client = PayrollClient(BASE, TOKEN)
    verb = "(path, *, cast_to, params=None, json=None, **options)"
    for name in ("get", "post", "put", "patch", "delete"):
        assert str(inspect.signature(getattr(client, name))) == verb
        assert getattr(client, name).__name__ == name
        assert inspect.iscoroutinefunction(getattr(PayrollClient, name))
    request = "(method: 'str', path: 'str', *, cast_to: 'Any', params: 'QueryLike | None' = None,"
    assert str(inspect.signature(client.request)).startswith(request)


async def test_a_generic_call_refuses_a_wrong_number_of_positional_arguments() -> None:
    async with PayrollClient(BASE, TOKEN) as client:
        with pytest.raises(TypeError, match=r"get\(\) takes 2 positional arguments"):
            await client.get("/v1/a", "/v1/b", cast_to=dict)  # type: ignore[call-overload]
        with pytest.raises(TypeError, match=r"request\(\) missing 1 required positional"):
            await client.request("/v1/a", cast_to=dict)  # type: ignore[call-overload]
