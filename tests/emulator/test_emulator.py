"""The emulator speaks the service's protocol: checked with a bare aiohttp session."""

import asyncio
import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from payroll_async.emulator import Emulator

EVENT = "PAYROLL_PROCESSED"
HOOK = "https://hooks.example.com/payroll"
META_KEYS = {"currentCount", "filters", "limit", "offset", "sort", "totalCount"}


@pytest.fixture
async def emu() -> AsyncIterator[Emulator]:
    async with Emulator(
        seed=3,
        payroll_connections=250,
        employer_identifiers=12,
        update_groups=4,
        webhook_subscriptions=5,
    ) as e:
        yield e


@pytest.fixture
async def http(emu: Emulator) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(
        base_url=emu.base_url, headers={"Authorization": f"Bearer {emu.token}"}
    ) as session:
        yield session


async def get_json(http: aiohttp.ClientSession, path: str, status: int = 200, **kwargs: Any) -> Any:
    async with http.get(path, **kwargs) as response:
        assert response.status == status, await response.text()
        assert response.content_type == "application/json"
        return await response.json()


async def test_list_envelope_has_exactly_the_documented_shape(http: aiohttp.ClientSession) -> None:
    for path in (
        "/v1/payroll-connections",
        "/v1/employer-identifiers",
        "/v1/webhooks/subscriptions",
        "/v1/payroll-platforms",  # ASSUMED: not shown by the document
    ):
        body = await get_json(http, path)
        assert set(body) == {"data", "meta"}
        assert set(body["meta"]) == META_KEYS
        assert body["meta"]["currentCount"] == len(body["data"])


async def test_items_have_the_documented_fields(http: aiohttp.ClientSession, emu: Emulator) -> None:
    conn = (await get_json(http, "/v1/payroll-connections?limit=1"))["data"][0]
    assert set(conn) == {
        "id",
        "employerIdentifierId",
        "payrollPlatformId",
        "createdAt",
        "status",
        "product",
    }
    employer = (await get_json(http, "/v1/employer-identifiers?limit=1"))["data"][0]
    assert set(employer) == {"id", "displayName", "identifier", "createdAt"}
    groups = await get_json(http, f"/v1/employer-identifiers/{employer['id']}/update-groups")
    assert set(groups["data"][0]) == {"updateGroupId", "uploadDate", "errorCount"}
    assert groups["meta"]["totalCount"] == 4
    sub = (await get_json(http, "/v1/webhooks/subscriptions?limit=1"))["data"][0]
    assert set(sub) == {"webhookSubscriptionId", "webhookEventTypes", "path", "createdAt", "active"}
    assert conn["employerIdentifierId"] in {emu.data.employer_id(j) for j in range(12)}


async def test_paging_offsets_and_totals(http: aiohttp.ClientSession) -> None:
    body = await get_json(http, "/v1/payroll-connections?limit=100&offset=200")
    assert len(body["data"]) == 50
    assert body["meta"] | {"filters": None} == {
        "currentCount": 50,
        "filters": None,
        "limit": 100,
        "offset": 200,
        "sort": "createdAt",
        "totalCount": 250,
    }
    assert (await get_json(http, "/v1/payroll-connections?offset=999"))["data"] == []


async def test_default_page_sizes(http: aiohttp.ClientSession) -> None:
    assert len((await get_json(http, "/v1/payroll-connections"))["data"]) == 20
    assert (await get_json(http, "/v1/webhooks/subscriptions?limit=500"))["meta"]["limit"] == 100


async def test_sorting_ascending_and_descending(http: aiohttp.ClientSession) -> None:
    asc = (await get_json(http, "/v1/payroll-connections?limit=250"))["data"]
    desc = (await get_json(http, "/v1/payroll-connections?limit=250&sort=-createdAt"))["data"]
    assert desc == asc[::-1]
    assert [c["createdAt"] for c in asc] == sorted(c["createdAt"] for c in asc)
    by_status = (await get_json(http, "/v1/payroll-connections?limit=250&sort=status,-createdAt"))[
        "data"
    ]
    assert by_status == sorted(
        asc, key=lambda c: (c["status"], [-ord(ch) for ch in c["createdAt"]])
    )
    names = (await get_json(http, "/v1/employer-identifiers?sort=-displayName&limit=50"))["data"]
    assert [e["displayName"] for e in names] == sorted(
        (e["displayName"] for e in names), reverse=True
    )


async def test_active_filter_and_webhook_sort(http: aiohttp.ClientSession, emu: Emulator) -> None:
    everything = (await get_json(http, "/v1/webhooks/subscriptions"))["data"]
    active = await get_json(http, "/v1/webhooks/subscriptions?filter[active][eq]=true")
    assert active["meta"]["filters"] == {"active": {"eq": "true"}}
    assert [s for s in everything if s["active"]] == active["data"]
    inactive = (await get_json(http, "/v1/webhooks/subscriptions?filter[active][ne]=true"))["data"]
    assert inactive == [s for s in everything if not s["active"]]
    assert inactive
    by_active = (await get_json(http, "/v1/webhooks/subscriptions?sort=-active,-createdAt"))["data"]
    assert [s["active"] for s in by_active] == sorted(
        (s["active"] for s in everything), reverse=True
    )


async def test_link_headers(http: aiohttp.ClientSession, emu: Emulator) -> None:
    async with http.get("/v1/payroll-connections?limit=100&offset=100&sort=-createdAt") as response:
        links = {rel: str(link["url"]) for rel, link in response.links.items()}
    assert set(links) == {"self", "first", "last", "prev", "next"}
    assert (
        links["next"]
        == f"{emu.base_url}/v1/payroll-connections?limit=100&offset=200&sort=-createdAt"
    )
    assert links["last"].endswith("offset=200&sort=-createdAt")
    async with http.get("/v1/payroll-connections?limit=100&offset=200") as response:
        assert "next" not in response.links
    emu.link_headers = False
    async with http.get("/v1/payroll-connections") as response:
        assert "Link" not in response.headers


@pytest.mark.parametrize(
    ("query", "error"),
    [
        ("limit=0", "limit"),
        ("limit=4294967296", "limit"),
        ("offset=-1", "offset"),
        ("limit=abc", "limit"),
        ("sort=a,b,c,d", "sort"),
        ("sort=nope", "cannot sort by 'nope'"),
        ("sort=-", "sort"),
        ("filter[status][eq]=x", "not a filter"),
    ],
)
async def test_invalid_parameters_are_400_with_an_error_body(
    http: aiohttp.ClientSession, query: str, error: str
) -> None:
    body = await get_json(http, f"/v1/payroll-connections?{query}", status=400)
    assert body["message"] == "Invalid request parameters"
    assert any(error in e for e in body["errors"]), body


async def test_webhook_filter_operators_are_checked(http: aiohttp.ClientSession) -> None:
    body = await get_json(http, "/v1/webhooks/subscriptions?filter[active][gt]=true", status=400)
    assert "operator 'gt' not allowed" in body["errors"][0]
    body = await get_json(http, "/v1/webhooks/subscriptions?filter[active][eq]=yes", status=400)
    assert "true or false" in body["errors"][0]


@pytest.mark.parametrize(
    "bad", ["nope", "123e4567-e89b-42d3-a456-42661417400", "123e4567-e89b-92d3-a456-426614174000"]
)
async def test_a_path_id_that_is_not_a_uuid_is_400(http: aiohttp.ClientSession, bad: str) -> None:
    async with http.delete(f"/v1/webhooks/subscriptions/{bad}") as response:
        assert response.status == 400
        assert "subscription_id" in (await response.json())["errors"][0]
    await get_json(http, f"/v1/employer-identifiers/{bad}/update-groups", status=400)


async def test_unknown_ids_are_404(http: aiohttp.ClientSession) -> None:
    missing = "123e4567-e89b-42d3-a456-426614174000"
    await get_json(http, f"/v1/employer-identifiers/{missing}/update-groups", status=404)
    async with http.delete(f"/v1/webhooks/subscriptions/{missing}") as response:
        assert response.status == 404
    await get_json(http, "/v1/nothing-here", status=404)


async def test_create_and_delete_a_subscription(http: aiohttp.ClientSession, emu: Emulator) -> None:
    async with http.post(
        "/v1/webhooks/subscriptions",
        json={"event_types": ["PAYROLL_PROCESSED"], "path": "https://x.example/in"},
    ) as response:
        assert response.status == 201
        created = await response.json()
    assert created["active"] is True
    assert created["webhookEventTypes"] == ["PAYROLL_PROCESSED"]
    assert created in emu.subscriptions()
    async with http.delete(
        f"/v1/webhooks/subscriptions/{created['webhookSubscriptionId']}"
    ) as response:
        assert response.status == 204
        assert await response.read() == b""
    assert created not in emu.subscriptions()


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (b"{not json", "not valid JSON"),
        (b"[]", "JSON object"),
        (b'{"event_types": [], "path": "https://x.example/in"}', "non-empty"),
        (b'{"event_types": ["NOPE"], "path": "https://x.example/in"}', "unknown event type"),
        (b'{"event_types": [{}], "path": "https://x.example/in"}', "unknown event type"),
        (b'{"event_types": ["PAYROLL_PROCESSED"], "path": "not a url"}', "path"),
        (b'{"event_types": ["PAYROLL_PROCESSED"], "path": "http://x.example/in"}', "https"),
        (b'{"event_types": ["PAYROLL_PROCESSED"]}', "path"),
        (
            '{"event_types": ["PAYROLL_PROCESSED"], "path": "https://\u00e0\u00a4"}'.encode(),
            "ASCII",
        ),
    ],
)
async def test_bad_create_bodies_are_400(
    http: aiohttp.ClientSession, body: bytes, error: str
) -> None:
    async with http.post(
        "/v1/webhooks/subscriptions", data=body, headers={"Content-Type": "application/json"}
    ) as response:
        assert response.status == 400
        answer = await response.json()
    assert set(answer) == {"message", "errors"}
    assert any(error in e for e in answer["errors"]), answer


async def test_authentication_and_the_webhook_role(emu: Emulator) -> None:
    async with aiohttp.ClientSession(base_url=emu.base_url) as http:
        async with http.get("/v1/payroll-connections") as response:
            assert response.status == 401
            assert response.headers["WWW-Authenticate"].startswith("Bearer")
            assert set(await response.json()) == {"message", "errors"}
        async with http.get(
            "/v1/payroll-connections", headers={"Authorization": "Bearer wrong"}
        ) as response:
            assert response.status == 401
            assert 'error="invalid_token"' in response.headers["WWW-Authenticate"]
        limited = {"Authorization": f"Bearer {emu.token_without_webhook_role}"}
        async with http.get("/v1/payroll-connections", headers=limited) as response:
            assert response.status == 200
        for method in ("GET", "POST"):
            async with http.request(
                method, "/v1/webhooks/subscriptions", headers=limited, json={}
            ) as response:
                assert response.status == 403
                assert "api-user-webhook-subscription" in (await response.json())["errors"][0]


async def test_invite_sessions_make_fresh_single_use_links(
    http: aiohttp.ClientSession, emu: Emulator
) -> None:
    ids = emu.sample_ids()
    eid, iid = ids["employer_identifier_id"], ids["invite_id"]
    path = f"/v1/employer-identifiers/{eid}/invites/{iid}/session"
    links = []
    for _ in range(2):
        async with http.post(path) as response:
            assert response.status == 200
            links.append((await response.json())["onboardingLink"])
    assert links[0] != links[1]
    async with aiohttp.ClientSession() as browser:
        async with browser.get(links[0]) as response:
            assert response.status == 200
        async with browser.get(links[0]) as response:
            assert response.status == 410
    other_invite = "123e4567-e89b-42d3-a456-426614174000"
    async with http.post(path.replace(ids["invite_id"], other_invite)) as response:
        assert response.status == 404


async def test_data_is_deterministic_per_seed() -> None:
    pages = []
    for seed in (5, 5, 6):
        async with (
            Emulator(seed=seed, payroll_connections=10) as emu,
            aiohttp.ClientSession(headers={"Authorization": f"Bearer {emu.token}"}) as http,
        ):
            async with http.get(f"{emu.base_url}/v1/payroll-connections?limit=10") as response:
                pages.append(await response.json())
    assert pages[0] == pages[1]
    assert pages[0] != pages[2]


async def test_a_million_connections_are_derived_not_stored() -> None:
    async with (
        Emulator(payroll_connections=1_000_000) as emu,
        aiohttp.ClientSession(headers={"Authorization": f"Bearer {emu.token}"}) as http,
    ):
        async with http.get(
            f"{emu.base_url}/v1/payroll-connections?limit=3&offset=999997&sort=-createdAt"
        ) as r:
            body = await r.json()
        assert body["meta"]["totalCount"] == 1_000_000
        assert [c["id"] for c in body["data"]] == [
            emu.data.payroll_connection(i)["id"] for i in (2, 1, 0)
        ]
        assert emu.data.payroll_connections._orders == {}  # nothing sorted, nothing built


# --- faults -----------------------------------------------------------------------------


async def test_rate_limit_answers_429_with_retry_after() -> None:
    async with (
        Emulator(rate_limit=2) as emu,
        aiohttp.ClientSession(headers={"Authorization": f"Bearer {emu.token}"}) as http,
    ):
        statuses = []
        for _ in range(5):
            async with http.get(f"{emu.base_url}/v1/payroll-connections") as response:
                statuses.append(response.status)
                if response.status == 429:
                    assert int(response.headers["Retry-After"]) >= 1
                    assert (await response.json())["message"] == "Rate limit exceeded"
    assert statuses[:2] == [200, 200]
    assert 429 in statuses
    assert emu.stats["rate_limited"] == statuses.count(429)


async def test_error_rate_answers_500_or_503() -> None:
    async with (
        Emulator(error_rate=1.0) as emu,
        aiohttp.ClientSession(headers={"Authorization": f"Bearer {emu.token}"}) as http,
    ):
        for _ in range(6):
            async with http.get(f"{emu.base_url}/v1/payroll-connections") as response:
                assert response.status in (500, 503)
                assert set(await response.json()) == {"message", "errors"}


async def test_drop_rate_closes_without_an_answer() -> None:
    async with (
        Emulator(drop_rate=1.0) as emu,
        aiohttp.ClientSession(headers={"Authorization": f"Bearer {emu.token}"}) as http,
    ):
        with pytest.raises(aiohttp.ServerDisconnectedError):
            async with http.get(f"{emu.base_url}/v1/payroll-connections"):
                pass
    assert emu.stats["dropped"] >= 1


def test_options_are_checked() -> None:
    for kwargs in (
        {"error_rate": 2},
        {"drop_rate": -0.1},
        {"latency": -1},
        {"rate_limit": 0},
        {"payroll_connections": -1},
        {"max_page_size": 0},
    ):
        with pytest.raises(ValueError):  # noqa: PT011 - each names its option
            Emulator(**kwargs)  # type: ignore[arg-type]


async def test_python_dash_m_serves_until_ctrl_c() -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "payroll_async.emulator",
        "--port",
        "0",
        "--token",
        "shell-token",
        "--payroll-connections",
        "7",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None
    first = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
    assert first.startswith("Payroll emulator listening on http://127.0.0.1:")
    base_url = first.split(" on ")[1].strip()
    async with aiohttp.ClientSession(headers={"Authorization": "Bearer shell-token"}) as http:
        async with http.get(f"{base_url}/v1/payroll-connections") as response:
            assert (await response.json())["meta"]["totalCount"] == 7
    proc.send_signal(signal.SIGINT)
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0, err
    assert out.decode().rstrip().endswith("Emulator stopped.")
    assert b"Traceback" not in err


def test_shell_options_reach_the_emulator(capsys: pytest.CaptureFixture[str]) -> None:
    from payroll_async.emulator.__main__ import emulator_from, parser

    args = parser().parse_args(
        [
            "--port",
            "0",
            "--seed",
            "4",
            "--payroll-connections",
            "12",
            "--latency",
            "0.5",
            "--rate-limit",
            "9",
            "--error-rate",
            "0.1",
            "--drop-rate",
            "0.2",
            "--no-link-headers",
            "--max-page-size",
            "50",
            "--delivery-header",
            "X-Webhook-Secret: s",
        ]
    )
    emu = emulator_from(args)
    assert (
        emu.seed,
        emu.data.payroll_connections.size,
        emu.latency,
        emu.error_rate,
        emu.drop_rate,
    ) == (4, 12, 0.5, 0.1, 0.2)
    assert (emu.link_headers, emu.max_page_size, emu.delivery_headers) == (
        False,
        50,
        {"X-Webhook-Secret": "s"},
    )
    with pytest.raises(SystemExit) as exit_info:
        parser().parse_args(["--delivery-header", "nocolon"])
    assert exit_info.value.code == 2
    assert "NAME:VALUE" in capsys.readouterr().err


def test_the_command_and_python_m_take_the_same_options() -> None:
    from payroll_async.cli._emulator_cmd import emulator
    from payroll_async.emulator.__main__ import parser

    shell = {a.dest for a in parser()._actions if a.dest != "help"}
    command = {p.name for p in emulator.params if p.name != "help"}
    assert command == shell


# --- the emulator from the shell: page cap, where it listens, bounded memory ------------------

SHELLS = {
    "python -m payroll_async.emulator": [sys.executable, "-m", "payroll_async.emulator"],
    "payroll-async emulator": [sys.executable, "-m", "payroll_async.cli", "emulator"],
}


async def _banner(argv: list[str]) -> tuple[asyncio.subprocess.Process, list[str]]:
    """Start a shell emulator; its process and the banner's lines up to "Press Ctrl-C"."""
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None
    lines: list[str] = []
    while not lines or not lines[-1].startswith("Press Ctrl-C"):
        line = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
        assert line, "the emulator ended before its banner"
        lines.append(line.rstrip("\n"))
    return proc, lines


async def _stop(proc: asyncio.subprocess.Process) -> str:
    proc.send_signal(signal.SIGINT)
    _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0, err
    return err.decode()


@pytest.mark.parametrize("shell", list(SHELLS))
async def test_the_shell_emulator_keeps_the_librarys_page_cap(shell: str) -> None:
    argv = [*SHELLS[shell], "--port", "0", "--token", "t", "--payroll-connections", "20000"]
    proc, lines = await _banner(argv)
    try:
        base_url = next(x for x in lines if "PAYROLL_BASE_URL=" in x).split("=", 1)[1]
        async with aiohttp.ClientSession(headers={"Authorization": "Bearer t"}) as http:
            url = f"{base_url}/v1/payroll-connections?limit=4294967295"
            async with http.get(url) as response:
                body = await response.json()
    finally:
        await _stop(proc)
    assert body["meta"]["limit"] == 10_000
    assert len(body["data"]) == 10_000


@pytest.mark.parametrize("shell", list(SHELLS))
async def test_the_shell_emulator_says_where_it_really_listens(shell: str) -> None:
    proc, lines = await _banner([*SHELLS[shell], "--host", "0.0.0.0", "--port", "0"])
    err = await _stop(proc)
    assert lines[0].startswith("Payroll emulator listening on 0.0.0.0:")
    assert "every IPv4 address" in lines[0]
    port = lines[0].split("0.0.0.0:")[1].split()[0]
    assert any(x.endswith(f"PAYROLL_BASE_URL=http://127.0.0.1:{port}") for x in lines)
    assert "reachable from the network" in err
    assert "--host 127.0.0.1" in err


async def test_a_loopback_shell_emulator_gives_no_warning() -> None:
    proc, lines = await _banner([*SHELLS["python -m payroll_async.emulator"], "--port", "0"])
    err = await _stop(proc)
    assert lines[0].startswith("Payroll emulator listening on http://127.0.0.1:")
    assert "reachable" not in err


async def test_subscriptions_and_their_paths_are_bounded(
    emu: Emulator, http: aiohttp.ClientSession
) -> None:
    from payroll_async._core._assumed import EMULATOR_MAX_PATH_LENGTH, EMULATOR_MAX_SUBSCRIPTIONS

    subs = "/v1/webhooks/subscriptions"
    long_path = "https://hooks.example.com/" + "a" * EMULATOR_MAX_PATH_LENGTH
    async with http.post(subs, json={"event_types": [EVENT], "path": long_path}) as response:
        assert response.status == 400
        assert f"at most {EMULATOR_MAX_PATH_LENGTH:,} characters" in await response.text()
    while len(emu.subscriptions()) < EMULATOR_MAX_SUBSCRIPTIONS:
        path = f"https://hooks.example.com/{len(emu.subscriptions())}"
        async with http.post(subs, json={"event_types": [EVENT], "path": path}) as response:
            assert response.status == 201
    async with http.post(subs, json={"event_types": [EVENT], "path": HOOK}) as response:
        assert response.status == 400
        text = await response.text()
    assert f"at most {EMULATOR_MAX_SUBSCRIPTIONS:,} webhook subscriptions" in text
    assert "delete one first" in text
    assert len(emu.subscriptions()) == EMULATOR_MAX_SUBSCRIPTIONS
    with pytest.raises(ValueError, match="webhook_subscriptions must be at most"):
        Emulator(webhook_subscriptions=EMULATOR_MAX_SUBSCRIPTIONS + 1)


async def test_the_record_of_deliveries_is_bounded() -> None:
    async with (
        Emulator(webhook_subscriptions=0) as emu,
        aiohttp.ClientSession(
            base_url=emu.base_url, headers={"Authorization": f"Bearer {emu.token}"}
        ) as http,
    ):
        body = {"event_types": [EVENT], "path": HOOK}  # not loopback: recorded, never sent
        async with http.post("/v1/webhooks/subscriptions", json=body) as response:
            assert response.status == 201
        for n in range(1_050):
            await emu.emit(EVENT, event_id=f"evt_{n}")
    ids = [json.loads(d.body)["eventId"] for d in emu.deliveries]
    assert ids == [f"evt_{n}" for n in range(50, 1_050)]  # the latest 1,000, oldest first
