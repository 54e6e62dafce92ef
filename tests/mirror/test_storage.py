"""The mirror's storage: ids as the service writes them, the item and its history kept,
the schema checked and migrated, hostile values, commits (real SQLite and PostgreSQL)."""

from __future__ import annotations

import pytest

from payroll_async import InvalidArgumentError, PayrollClient
from payroll_async.mirror import MirrorError, MirrorURLError, mirror


@pytest.mark.parametrize("into", ["mysql://x@y/z", "sqlite://", "::::"])
async def test_a_bad_url_is_bad_input_like_any_other(into: str) -> None:
    # Port 9 (discard) on loopback: any request would fail with a connection error.
    async with PayrollClient("http://127.0.0.1:9", "token") as client:
        with pytest.raises(InvalidArgumentError) as caught:
            await mirror(client, "webhooks", into=into)
    assert isinstance(caught.value, MirrorURLError)
    assert isinstance(caught.value, MirrorError)
