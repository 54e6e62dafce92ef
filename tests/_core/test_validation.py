import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from payroll_async import EventType, InvalidArgumentError
from payroll_async._core import _validation as check


@pytest.mark.parametrize(
    "value",
    [
        "123e4567-e89b-42d3-a456-426614174000",
        "123E4567-E89B-12D3-A456-426614174000",
        "00000000-0000-0000-0000-000000000000",
        "ffffffff-ffff-ffff-ffff-ffffffffffff",
        uuid.UUID("123e4567-e89b-82d3-b456-426614174000"),
    ],
)
def test_valid_ids_come_back_canonical(value: object) -> None:
    text = check.check_id(value, "x")  # type: ignore[arg-type]
    assert text == str(uuid.UUID(str(value)))


@pytest.mark.parametrize(
    "value",
    [
        "../../v1/users",
        "123e4567-e89b-42d3-a456-426614174000/../x",
        "123e4567-e89b-42d3-a456-42661417400?",
        "123e4567-e89b-42d3-a456-42661417400#",
        "%2e%2e",
        "123e4567-e89b-92d3-a456-426614174000",
        "123e4567-e89b-42d3-c456-426614174000",
        "123e4567e89b42d3a456426614174000",
        "",
        42,
        None,
    ],
)
def test_invalid_ids_are_refused(value: object) -> None:
    with pytest.raises(InvalidArgumentError, match="x must be a UUID"):
        check.check_id(value, "x")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text",
    [
        "123e4567-e89b-02d3-a456-426614174000",  # version 0
        "123e4567-e89b-92d3-a456-426614174000",  # version 9
        "123e4567-e89b-42d3-c456-426614174000",  # Microsoft variant
        "00000000-0000-0000-0000-000000000005",  # UUID(int=5)
    ],
)
def test_uuid_objects_are_checked_like_their_text(text: str) -> None:
    with pytest.raises(InvalidArgumentError, match="x must be a UUID"):
        check.check_id(text, "x")
    with pytest.raises(InvalidArgumentError, match="x must be a UUID") as caught:
        check.check_id(uuid.UUID(text), "x")
    assert text in str(caught.value)


@given(st.uuids(allow_nil=True) | st.builds(uuid.UUID, int=st.integers(0, 2**128 - 1)))
def test_a_uuid_object_and_its_text_get_one_answer(value: uuid.UUID) -> None:
    def answer(item: object) -> str | None:
        try:
            return check.check_id(item, "x")  # type: ignore[arg-type]
        except InvalidArgumentError:
            return None

    assert answer(value) == answer(str(value))


@given(st.text())
def test_nothing_but_a_uuid_reaches_a_path(value: str) -> None:
    try:
        text = check.check_id(value, "x")
    except InvalidArgumentError:
        return
    assert len(text) == 36
    assert set(text) <= set("0123456789abcdef-")


@pytest.mark.parametrize(
    ("sort", "expected"),
    [
        ("-createdAt", "-createdAt"),
        ("created_at", "createdAt"),
        (["active", "-created_at"], "active,-createdAt"),
        ("a,b,c", "a,b,c"),
        ("display_name", "displayName"),
        ("_private", "_private"),
        ("x" * 100, "x" * 100),
    ],
)
def test_sort_is_normalised(sort: object, expected: str) -> None:
    assert check.check_sort(sort) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize("sort", ["", "a,b,c,d", [], "x" * 101, "a b", "--a", "a;b", "é", [1], 5])
def test_bad_sort_is_refused(sort: object) -> None:
    with pytest.raises(InvalidArgumentError, match="sort"):
        check.check_sort(sort)  # type: ignore[arg-type]


def test_sort_fields_can_be_restricted() -> None:
    allowed = frozenset({"active", "createdAt"})
    assert check.check_sort("-created_at", allowed) == "-createdAt"
    with pytest.raises(InvalidArgumentError, match="cannot sort by 'path'"):
        check.check_sort("path", allowed)


@given(st.lists(st.from_regex(r"-?[A-Za-z0-9_]{1,100}", fullmatch=True), min_size=1, max_size=3))
def test_any_valid_sort_is_accepted(fields: list[str]) -> None:
    result = check.check_sort(fields)
    assert result is not None
    assert len(result.split(",")) == len(fields)


@pytest.mark.parametrize(
    ("value", "ok"),
    [(1, True), (4294967295, True), (0, False), (4294967296, False), (True, False), (1.0, False)],
)
def test_page_size_bounds(value: object, ok: bool) -> None:
    if ok:
        assert check.check_page_size(value) == value  # type: ignore[arg-type]
    else:
        with pytest.raises(InvalidArgumentError, match="page_size"):
            check.check_page_size(value)  # type: ignore[arg-type]


def test_event_types_accept_members_and_values_and_drop_duplicates() -> None:
    assert check.check_event_types(
        [EventType.PAYROLL_PROCESSED, "EMPLOYEE_CENSUS_HIRED", "PAYROLL_PROCESSED"]
    ) == ["PAYROLL_PROCESSED", "EMPLOYEE_CENSUS_HIRED"]


@pytest.mark.parametrize(
    "value", [[], ["NOPE"], "PAYROLL_PROCESSED", EventType.PAYROLL_PROCESSED, [None], 3]
)
def test_bad_event_types_are_refused(value: object) -> None:
    with pytest.raises(InvalidArgumentError, match="event type"):
        check.check_event_types(value)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "path",
    [
        "https://example.com/hooks",
        "http://127.0.0.1:8080/in",
        "http://localhost/x",
        "http://[::1]:9/x",
        "https://example.com:8443/a?b=c",
    ],
)
def test_good_webhook_paths(path: str) -> None:
    assert check.check_webhook_path(path) == path


@pytest.mark.parametrize(
    "path",
    [
        "http://example.com/hooks",
        "ftp://example.com",
        "/relative",
        "example.com",
        "https://",
        "https://exa mple.com",
        "",
        None,
        "http://10.0.0.1/x",
        "https://\u00e0\u00a4",
        "https://h.example/\x00",
    ],
)
def test_bad_webhook_paths(path: object) -> None:
    with pytest.raises(InvalidArgumentError, match="path"):
        check.check_webhook_path(path)  # type: ignore[arg-type]


def test_base_url_is_normalised_and_checked() -> None:
    assert str(check.check_base_url("https://api.example.com/")) == "https://api.example.com"
    assert (
        str(check.check_base_url("https://api.example.com/prefix/"))
        == "https://api.example.com/prefix"
    )
    for bad in [
        "http://api.example.com",
        "https://u:p@api.example.com",
        "https://api.example.com?x=1",
    ]:
        with pytest.raises(InvalidArgumentError, match="base_url"):
            check.check_base_url(bad)


def test_extra_headers_cannot_carry_the_token_or_line_breaks() -> None:
    with pytest.raises(InvalidArgumentError, match="token"):
        check.check_extra_headers({"Authorization": "Bearer x"})
    with pytest.raises(InvalidArgumentError, match="line breaks"):
        check.check_extra_headers({"X-A": "a\r\nInjected: 1"})
    for brk in ("\x85", "\u2028", "\u2029", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e"):
        with pytest.raises(InvalidArgumentError, match="line breaks"):
            check.check_extra_headers({"X-A": f"a{brk}Injected: 1"})
    assert check.check_extra_query({"flag": True, "n": 2}) == {"flag": "true", "n": 2}


@pytest.mark.parametrize(
    "url",
    [
        "https://api.example.test/?token=SECRET123",
        "https://api.example.test/?SECRET123",
        "https://api.example.test/#SECRET123",
        "https://user:SECRET123@api.example.test/",
        "https://api.example.test/?a=1&key=SECRET123",
    ],
)
def test_a_refused_base_url_never_shows_a_secret_it_carries(url: str) -> None:
    from payroll_async import PayrollClient

    with pytest.raises(InvalidArgumentError) as caught:
        PayrollClient(url, "tok")
    assert "SECRET123" not in str(caught.value)
    assert "SECRET123" not in repr(caught.value.args)
