"""Link headers read by the SDK's own parse (RFC 8288): the plain match and the full parse
agree, the service's headers give what aiohttp's parse gives, what RFC 8288 says a walk
needs is read (several links, quoted parameters, commas inside quotes, several relation
types, no case), and any text at all gives links or a typed reason, in linear time."""

from __future__ import annotations

import asyncio
import string
import time

import aiohttp
import pytest
from aiohttp import web
from hypothesis import event, given, settings
from hypothesis import strategies as st
from yarl import URL

from payroll_async import PayrollClient
from payroll_async._paging import _links
from payroll_async._paging._links import parse_link_header, plain_links, read_links
from tests import factories
from tests.conftest import TOKEN, Serve, StartEmulator, _Aioresponses, loopback

ORIGIN = "http://127.0.0.1:8080"
PAGE = f"{ORIGIN}/v1/payroll-connections?limit=100&offset=200"

_PLAIN = string.ascii_letters + string.digits + "-_~"
_ORIGINS = [ORIGIN, "http://127.0.0.1:8081", "http://127.0.0.1:80", "https://127.0.0.1", ""]


@st.composite
def _entry(draw: st.DrawFn, plain: bool) -> str:
    """One Link entry: made only of plain parts, or of parts that may be anything a server
    sends (dot segments, escapes, other origins, odd separators) with a rel both parses
    read alike (one lower-case relation type)."""
    if plain:
        origin = ORIGIN
        path = "/" + draw(st.text(alphabet=_PLAIN + "/", max_size=20))
        query = draw(st.text(alphabet=_PLAIN + "=&.", max_size=20))
        rel = draw(st.sampled_from(['"next"', '"self"', '"first"', '"last"', '"prev"']))
        params = "; rel="
    else:
        origin = draw(st.sampled_from(_ORIGINS))
        path = draw(
            st.one_of(
                st.sampled_from(["/v1/payroll-connections", "/a/./b", "/a/../b", "//x", ""]),
                st.text(alphabet=_PLAIN + "/.%+[]:@", max_size=30).map("/".__add__),
            )
        )
        query = draw(st.text(alphabet=_PLAIN + "=&.%+[]/?", max_size=30))
        rel = draw(st.sampled_from(['"next"', "next", '"prev"']))
        params = draw(st.sampled_from(["; rel=", ";rel=", "; rel = ", "; title=x; rel="]))
    url = origin + path + (draw(st.sampled_from(["?", ""])) + query if query else "")
    return f"<{url}>{params}{rel}"


@st.composite
def _headers(draw: st.DrawFn) -> str:
    """Headers of plain entries (most of them), with now and then one entry that is not."""
    count = draw(st.integers(1, 5))
    odd = draw(st.one_of(st.none(), st.integers(0, count - 1)))
    entries = [draw(_entry(plain=i != odd)) for i in range(count)]
    separator = ", " if odd is None else draw(st.sampled_from([", ", ",", " , ", ",  "]))
    return separator.join(entries)


async def _both(header: str) -> tuple[dict[str, str] | None, dict[str, str] | None]:
    """aiohttp's links of a real response with ``header`` (rel -> text, the first of each
    rel), and the links the SDK reads from the same response."""
    with _Aioresponses() as mocked:
        mocked.get(PAGE, body=b"{}", headers={"Link": header})
        async with aiohttp.ClientSession() as session, session.get(PAGE) as response:
            urls: dict[str, URL] = {}
            try:
                for rel, link in response.links.items():
                    target = link["url"]
                    assert isinstance(target, URL)
                    urls.setdefault(str(rel), target)
            except ValueError:
                theirs = None
            else:
                theirs = {rel: str(url) for rel, url in urls.items()}
            links, error = read_links(response.headers, response.url, ORIGIN)
    ours = None if error is not None else dict(links.texts)
    # A header aiohttp reads is read; one it cannot (a link it cannot resolve) may be,
    # when that link is not the first of its rel (only those are resolved).
    assert ours is not None or theirs is None
    return theirs, ours


@settings(max_examples=300, deadline=None)
@given(header=_headers())
def test_the_plain_match_and_the_parse_agree_and_give_what_aiohttp_gives(header: str) -> None:
    theirs, ours = asyncio.run(_both(header))
    if theirs is not None:
        assert ours == theirs
    plain = plain_links(header, ORIGIN)
    event("plain" if plain is not None else "parsed")
    if plain is not None:
        parsed = {rel: str(URL(PAGE).join(URL(t))) for rel, t in parse_link_header(header).items()}
        assert plain == parsed == theirs
        for text in plain.values():
            assert str(URL(text, encoded=True)) == text


@pytest.mark.parametrize(
    "header",
    [
        f'<{ORIGIN}/v1/payroll-connections?limit=100&offset=300>; rel="next", <{PAGE}>; rel="self"',
        f'<{PAGE}>; rel="self", <{ORIGIN}/v1/payroll-connections?limit=100&offset=0>; rel="first",'
        f' <{ORIGIN}/v1/payroll-connections?limit=100&offset=900>; rel="last",'
        f' <{ORIGIN}/v1/payroll-connections?limit=100&offset=100>; rel="prev",'
        f' <{ORIGIN}/v1/payroll-connections?limit=100&offset=300>; rel="next"',
        f"<{ORIGIN}/v1/employer-identifiers/6f1c8f0e-4e0b-4d5e-9c39-0d3f6c1a2b3c/update-groups"
        f'?sort=-uploadDate&limit=100&offset=300>; rel="next"',
    ],
)
def test_the_services_and_the_emulators_headers_are_plain(header: str) -> None:
    theirs, ours = asyncio.run(_both(header))
    assert plain_links(header, ORIGIN) == theirs == ours


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ('</a>; rel="next", </b>; rel="prev"', {"next": "/a", "prev": "/b"}),
        ('</a>; title="page 2, <of> many; really"; rel="next"', {"next": "/a"}),
        ('</a>; title="a \\"quoted\\", <x>"; rel=next', {"next": "/a"}),
        ('</a>; rel="prev next"', {"prev": "/a", "next": "/a"}),
        ("</a>; REL=NEXT", {"next": "/a"}),
        ('</a>; rel="next"; rel="prev"', {"next": "/a"}),
        ('</a>; rel="next", </b>; rel="next"', {"next": "/a"}),
        ("</a>", {"/a": "/a"}),
        ('junk, "x, y", </a>; rel=next', {"next": "/a"}),
        ('</a>; junk; =x; rel = "next" ;', {"next": "/a"}),
        (", ,\t</a>;rel=next,,", {"next": "/a"}),
        ("", {}),
    ],
)
def test_rfc_8288_as_a_walk_needs_it(header: str, expected: dict[str, str]) -> None:
    assert parse_link_header(header) == expected


def test_a_link_never_closed_cannot_be_read() -> None:
    links, error = read_links({"Link": '</a>; rel="next", </b'}, URL(PAGE), ORIGIN)
    assert not links
    assert error is not None
    assert error.startswith("cannot be parsed")


_HOSTILE = st.text(
    alphabet=st.one_of(st.sampled_from('<>;,="\\ \t'), st.characters(codec="utf-8")),
    max_size=300,
)


@settings(max_examples=500, deadline=None)
@given(header=_HOSTILE)
def test_any_header_gives_links_or_a_reason(header: str) -> None:
    links, error = read_links({"Link": header}, URL(PAGE), ORIGIN)
    if error is None:
        for rel in links:
            assert isinstance(links[rel], URL)
    else:
        assert not links


@pytest.mark.parametrize(
    "unit",
    ["<", ">", ";", ",", '"', '\\"', '"\\', "</a>;", "</a>; rel=", '</a>; t="', "; =", "<a>junk"],
)
def test_a_hostile_header_is_read_in_linear_time(unit: str) -> None:
    """200,000 characters of each hostile pattern: a quadratic scan would take minutes."""
    header = unit * (200_000 // len(unit))
    began = time.process_time()
    read_links({"Link": header}, URL(PAGE), ORIGIN)
    assert time.process_time() - began < 5


async def test_a_walk_of_service_shaped_pages_is_read_by_the_plain_match(
    start_emulator: StartEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    parsed: list[str] = []
    parse = _links.parse_link_header

    def counted(header: str) -> dict[str, str]:
        parsed.append(header)
        return parse(header)

    monkeypatch.setattr(_links, "parse_link_header", counted)
    emu = await start_emulator(payroll_connections=60, seed=2)
    async with PayrollClient(emu.base_url, emu.token) as client:
        listing = client.payroll_connections.list(page_size=7, sort="-createdAt")
        ids = [conn.id async for conn in listing]
    assert len(ids) == len(set(ids)) > 7
    assert parsed == []


async def test_a_next_link_with_commas_in_its_parameters_is_followed(serve: Serve) -> None:
    """A cursor listing whose links carry a quoted title with ``,`` and ``<...>`` in it (and
    several relation types in one rel): each page's next link is the one followed."""
    hits: list[str] = []

    async def handle(request: web.Request) -> web.Response:
        hits.append(request.path_qs)
        cursor = int(request.query.get("cursor", "0"))
        items = [factories.connection(i) for i in range(cursor * 2, cursor * 2 + 2)]
        body = factories.envelope(items, limit=2)
        if cursor < 2:
            link = (
                f'</v1/things?cursor={cursor + 1}>; title="page {cursor + 2}, <of> 3"; '
                'rel="next last"'
            )
            return web.json_response(body, headers={"Link": link})
        return web.json_response(body, headers={"Link": '</v1/things?cursor=0>; rel="FIRST"'})

    app = web.Application()
    app.router.add_get("/v1/things", handle)
    base = await serve(app)
    async with PayrollClient(base, TOKEN) as client:
        listing = client.get_api_list("/v1/things", model=dict, page_size=2)
        items = await listing.collect()
    assert len(items) == 6
    assert [h.split("?")[1] for h in hits] == ["limit=2&offset=0", "cursor=1", "cursor=2"]


# Names of their own: the path's query (a, b, tag) and extra_query (x-1) may not repeat them.
_names = st.text(alphabet=string.ascii_letters + "_[]", max_size=8).map("p_".__add__)
_values = st.one_of(
    st.text(alphabet=string.printable + "é€", max_size=12),
    st.integers(-(10**6), 10**6),
    st.booleans(),
    st.floats(allow_nan=False, allow_infinity=False),
)


@settings(max_examples=40, deadline=None)
@given(
    params=st.dictionaries(_names, _values, max_size=3),
    path_query=st.sampled_from(["", "?tag=t", "?a=%2F&b=c+d"]),
    extra=st.sampled_from([{}, {"x-1": "1 2"}]),
)
def test_the_walks_requests_carry_the_query_aiohttp_would_build(
    params: dict[str, object], path_query: str, extra: dict[str, str]
) -> None:
    """Each page's URL is made as text once per walk, the same URL aiohttp would build from
    the parameters: the server sees the same requests."""
    seen: list[str] = []

    async def handle(request: web.Request) -> web.Response:
        seen.append(request.raw_path)
        offset = int(request.query["offset"])
        items = [factories.connection(i) for i in range(offset, min(offset + 2, 5))]
        body = factories.envelope(items, offset=offset, limit=2, total=5)
        return web.json_response(body)

    app = web.Application()
    app.router.add_get("/v1/things", handle)

    async def run() -> str:
        async with loopback(app) as base, PayrollClient(base, TOKEN) as client:
            listing = client.get_api_list(
                "/v1/things" + path_query,
                model=dict,
                params=params,  # type: ignore[arg-type]
                page_size=2,
                concurrency=1,
                extra_query=extra,
            )
            assert len(await listing.collect()) == 5
            return base

    base = asyncio.run(run())
    checked = {
        k: ("true" if v else "false") if isinstance(v, bool) else v for k, v in params.items()
    }
    url = URL(base + "/v1/things" + path_query)
    assert seen == [
        url.extend_query({**checked, "limit": 2, "offset": offset, **extra}).raw_path_qs
        for offset in (0, 2, 4)
    ]
