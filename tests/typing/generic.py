"""Checked by mypy and pyright (tests/typing/check.py), never run: the generic calls' types.

``cast_to`` decides what a generic call returns, and ``model`` what a listing yields; each
``type: ignore[code]`` is an expectation, as in operations.py.
"""

from __future__ import annotations

import uuid
from typing import Any

import attrs
from typing_extensions import assert_type

from payroll_async import AsyncPaginator, Page, PayrollClient, RawResponse


@attrs.frozen
class Platform:
    id: uuid.UUID
    name: str


async def generic(client: PayrollClient) -> None:
    assert_type(await client.get("/v1/payroll-platforms/1", cast_to=Platform), Platform)
    assert_type(await client.get("/v1/payroll-platforms", cast_to=dict), dict[str, Any])
    assert_type(await client.get("/v1/x", cast_to=list), list[Any])
    assert_type(await client.get("/v1/x", cast_to=str), str)
    assert_type(await client.get("/v1/x", cast_to=bytes), bytes)
    assert_type(await client.delete("/v1/x/1", cast_to=None), None)
    assert_type(await client.post("/v1/x", cast_to=Platform, json={"name": "a"}), Platform)
    assert_type(await client.put("/v1/x", cast_to=dict, timeout=5), dict[str, Any])
    assert_type(await client.patch("/v1/x", cast_to=list, params={"a": 1}), list[Any])
    assert_type(await client.request("GET", "/v1/x", cast_to=Platform), Platform)
    assert_type(await client.request("DELETE", "/v1/x", cast_to=None), None)

    raw = await client.with_raw_response.get("/v1/x", cast_to=Platform)
    assert_type(raw, RawResponse[Platform])
    assert_type((await client.with_raw_response.post("/v1/x", cast_to=dict)).parsed, dict[str, Any])
    assert_type((await client.with_raw_response.delete("/v1/x", cast_to=None)).parsed, None)
    assert_type(
        await client.with_raw_response.request("PATCH", "/v1/x", cast_to=bytes),
        RawResponse[bytes],
    )

    listing = client.get_api_list("/v1/payroll-platforms", model=Platform, max_items=5)
    assert_type(listing, AsyncPaginator[Platform])
    assert_type(client.get_api_list("/v1/users", model=dict), AsyncPaginator[dict[str, Any]])
    page = await listing
    assert_type(page, Page[Platform])
    assert_type(page.has_next_page(), bool)
    assert_type(await page.get_next_page(), Page[Platform])

    # a misspelt option, a wrong option type, no cast_to
    await client.get("/v1/x", cast_to=dict, timeuot=5)  # type: ignore[call-overload]
    await client.get("/v1/x", cast_to=dict, retry="never")  # type: ignore[call-overload]
    await client.get("/v1/x")  # type: ignore[call-overload]
    client.get_api_list("/v1/x", model=dict, page_sise=10)  # type: ignore[call-overload]
