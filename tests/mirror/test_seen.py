"""The mirror's memory of a pass: the ids it saw (exact, whatever form they came in) and
the digests of the live rows when a run began (as a set, or sorted past a size)."""

from __future__ import annotations

import random
import uuid
from array import array
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from payroll_async.mirror import _seen
from payroll_async.mirror._seen import KnownDigests, SeenIds


def _form(value: uuid.UUID, form: int) -> uuid.UUID | int | str:
    return (str(value), str(value).upper(), value, value.int)[form]


@settings(max_examples=200, deadline=None)
@given(
    pages=st.lists(st.lists(st.tuples(st.uuids(), st.integers(0, 3)), max_size=12), max_size=8),
    others=st.lists(st.uuids(), max_size=10),
)
def test_seen_ids_are_exact_whatever_form_each_page_of_ids_has(
    pages: list[list[tuple[uuid.UUID, int]]], others: list[uuid.UUID]
) -> None:
    for few in (_seen._FEW, 16):  # counted at once, or in buckets as they come
        with mock.patch.object(_seen, "_FEW", few):
            _check_seen(pages, others)


def _check_seen(pages: list[list[tuple[uuid.UUID, int]]], others: list[uuid.UUID]) -> None:
    seen = SeenIds()
    added = [value for page in pages for value, _ in page]
    for page in pages:
        seen.add([_form(value, form) for value, form in page])  # a page of text: at once
    seen.freeze()
    assert seen.added == len(added)
    assert len(seen) == len(set(added))
    for value in added:
        assert value in seen
        assert str(value) in seen
        assert value.int in seen
    for value in set(others) - set(added):
        assert value not in seen
        assert str(value) not in seen


def test_ids_sharing_a_half_are_told_apart() -> None:
    high = uuid.UUID(int=0xABCD << 64)
    same_high = [uuid.UUID(int=high.int | low) for low in range(300)]
    same_low = [uuid.UUID(int=(h << 64) | 7) for h in range(300)]
    seen = SeenIds()
    seen.add([str(v) for v in same_high[:200]])
    seen.add(str(v) for v in same_low[:200])
    seen.freeze()
    assert len(seen) == 400
    assert all(v in seen for v in same_high[:200] + same_low[:200])
    assert not any(v in seen for v in same_high[200:] + same_low[200:])


def test_ids_that_share_a_slot_are_counted_and_found_exactly() -> None:
    # The slot is made of the low bits of both halves together: these all share one.
    crowded = [uuid.UUID(int=(k << 88) | (k << 24)) for k in range(1, 400)]
    seen = SeenIds()
    seen.add([str(v) for v in crowded[:300]])
    seen.add(crowded[100:200])  # repeats, as UUIDs
    seen.add([str(crowded[5]), str(crowded[5])])  # one id twice in one page
    seen.freeze()
    assert seen.added == 402
    assert len(seen) == 300
    assert all(v in seen for v in crowded[:300])
    assert not any(v in seen for v in crowded[300:])


def test_a_page_with_an_id_not_in_the_services_form_is_parsed_id_by_id() -> None:
    good, short = str(uuid.uuid4()), "12345678-1234-1234-1234-1234567890a"  # a digit short
    seen = SeenIds()
    seen.add([good, short])  # not a page parsed at once: the short one is not misread
    seen.freeze()
    assert len(seen) == 2
    assert good in seen
    assert short in seen
    assert "12345678-1234-1234-1234-1234567890a0" not in seen


@pytest.mark.parametrize(
    "text",
    [
        "12345678 1234-1234-1234-1234567890ab",  # a space where a hyphen goes
        "12345678-1234-1234-1234-1234567890 b",  # a space for a digit (fromhex skips it)
    ],
)
def test_an_id_that_is_not_hexadecimal_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="invalid literal"):
        SeenIds().add([str(uuid.uuid4()), text])


@pytest.mark.parametrize("set_rows", [10**6, 5])
def test_known_digests_find_exactly_the_stored_ones(
    monkeypatch: pytest.MonkeyPatch, set_rows: int
) -> None:
    monkeypatch.setattr(_seen, "KNOWN_SET_ROWS", set_rows)
    rng = random.Random(3)
    stored = [rng.randrange(-(2**63), 2**63) for _ in range(50)] + [-(2**63), 2**63 - 1]
    known = KnownDigests(array("q", stored))
    assert known
    asked = [
        *stored[::3],
        -(2**63) + 1,
        2**63 - 2,
        0,
        *(rng.randrange(-(2**63), 2**63) for _ in range(20)),
    ]
    assert known.found(asked) == [value in set(stored) for value in asked]
    assert not KnownDigests(array("q"))
