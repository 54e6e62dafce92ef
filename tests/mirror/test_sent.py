"""The mirror's pages: an item whose bytes a live row holds is decoded only as far as the
walk needs (its id and order key); every other item is decoded and checked whole, and a
page the decode refuses is refused as any listing's page, with the same error."""

from __future__ import annotations

import random
import sqlite3
from array import array
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from payroll_async import PayrollClient, ResponseDecodeError
from payroll_async._collections import COLLECTIONS
from payroll_async._core._assumed import MIRROR_ORDER_FIELDS
from payroll_async.mirror import _seen, mirror
from payroll_async.mirror._schema import TABLES
from payroll_async.mirror._seen import KnownDigests
from payroll_async.mirror._sent import SentPage, SentPageDecoder, digest_seed, digests
from tests._paging.test_fastdecode import outcome, pages, response
from tests.conftest import TOKEN, Serve
from tests.mirror.test_proof import Service, run

BY_MODEL = {c.model: name for name, c in COLLECTIONS.items()}


def decoder(model: type[Any], known: KnownDigests | None) -> SentPageDecoder:
    name = BY_MODEL[model]
    return SentPageDecoder(model, TABLES[name].key, MIRROR_ORDER_FIELDS[name], known)


def accepted_alone(model: type[Any], raw: bytes) -> bool:
    """Whether the decode accepts ``raw`` as the one item of a page."""
    body = b'{"data": [' + raw + b'], "meta": ' + META + b"}"
    return outcome(decoder(model, None).decode, response(body))[0] == "ok"


META = msgspec.json.encode(
    {"currentCount": 1, "filters": {}, "limit": 100, "offset": 0, "sort": "createdAt"}
    | {"totalCount": 1}
)


class RawPage(msgspec.Struct):
    data: list[msgspec.Raw]


RAW_PAGE = msgspec.json.Decoder(RawPage)


def fields(item: Any) -> Any:
    return msgspec.structs.asdict(item) if isinstance(item, msgspec.Struct) else item


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(pages(), st.randoms(use_true_random=False))
def test_known_items_change_nothing_but_what_is_decoded_of_them(
    page: tuple[type[Any], bytes], rng: Any
) -> None:
    model, body = page
    whole = outcome(decoder(model, None).decode, response(body))
    try:
        raws = RAW_PAGE.decode(body).data
    except msgspec.DecodeError:
        raws = []
    # A live row holds bytes the decode accepted: some of the items accepted on their own.
    known_raws = [raw for raw in raws if rng.random() < 0.6 and accepted_alone(model, raw)]
    known = KnownDigests(digests(known_raws, digest_seed(model)))
    some = outcome(decoder(model, known).decode, response(body))
    assert some[0] == whole[0]
    if whole[0] == "error":
        assert some[1] == whole[1]
        return
    (all_page, meta), (some_page, some_meta) = whole[1], some[1]
    assert isinstance(some_page, SentPage)
    assert some_meta == meta
    assert some_page.ids == all_page.ids
    assert [bytes(r) for r in some_page.raws] == [bytes(r) for r in all_page.raws]
    assert some_page.blob == all_page.blob
    assert some_page.digests == all_page.digests
    name = BY_MODEL[model]
    key, order = TABLES[name].key, MIRROR_ORDER_FIELDS[name]
    stored = {bytes(r) for r in known_raws}
    flags = some_page.known if some_page.known is not None else [False] * len(some_page)
    assert flags == [bytes(raw) in stored for raw in some_page.raws]
    for one, full, known in zip(some_page, all_page, flags, strict=True):
        assert (getattr(one, key), getattr(one, order)) == (
            getattr(full, key),
            getattr(full, order),
        )
        if not known:
            assert fields(one) == fields(full)


async def test_a_changed_item_the_decode_refuses_is_refused_as_on_a_first_run(
    serve: Serve, tmp_path: Path
) -> None:
    service = Service(100)
    base = await serve(service.app())
    into = f"sqlite:///{tmp_path / 'mirror.db'}"
    assert (await run(base, into)).inserted == 100
    service.items[57] = {**service.items[57], "status": 5}  # not text
    with pytest.raises(ResponseDecodeError) as again:
        await run(base, into)
    with pytest.raises(ResponseDecodeError) as first:
        await run(base, f"sqlite:///{tmp_path / 'new.db'}")
    assert str(again.value) == str(first.value)
    assert "status" in str(again.value)


async def test_a_digest_written_by_hand_that_is_not_an_integer_is_compared_by_its_row(
    serve: Serve, tmp_path: Path
) -> None:
    service = Service(30)
    base = await serve(service.app())
    path = tmp_path / "mirror.db"
    into = f"sqlite:///{path}"
    await run(base, into)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE payroll_connections SET mirror_digest = 'hand-made' WHERE rowid = 7")
    async with PayrollClient(base, TOKEN) as client:
        again = await mirror(client, "payroll-connections", into=into, page_size=40)
    assert (again.inserted, again.updated, again.unchanged, again.complete) == (0, 0, 30, True)
    with sqlite3.connect(path) as db:
        kinds = {
            kind for (kind,) in db.execute("SELECT typeof(mirror_digest) FROM payroll_connections")
        }
    assert kinds == {"integer"}  # written again


@pytest.mark.parametrize("set_rows", [10**6, 5])
def test_known_digests_follow_the_walk_and_stay_exact_when_it_strays(
    monkeypatch: pytest.MonkeyPatch, set_rows: int
) -> None:
    monkeypatch.setattr(_seen, "KNOWN_SET_ROWS", set_rows)
    rng = random.Random(5)
    rows = [rng.randrange(-(2**63), 2**63) for _ in range(300)]
    known = KnownDigests(rows)
    stored = set(rows)
    walked = rows[:]  # the service now: some gone, some changed, some new at the end
    del walked[40:45]
    walked[100] = rng.randrange(-(2**63), 2**63)
    walked += [rng.randrange(-(2**63), 2**63) for _ in range(30)]
    pages = [walked[at : at + 20] for at in range(0, len(walked), 19)]  # overlapping by one
    pages.insert(6, rng.sample(rows, 20))  # a page out of the rows' order
    for page in pages:
        asked = array("q", page)
        assert known.found(asked) == [value in stored for value in page]
