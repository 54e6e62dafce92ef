import inspect

import payroll_async
from payroll_async._core import _exceptions
from tests._fresh import fresh_python, modules_after


def test_all_is_sorted_and_complete() -> None:
    names = payroll_async.__all__
    assert names == sorted(set(names))
    public = {
        name
        for name in dir(payroll_async)
        if not name.startswith("_") and not inspect.ismodule(getattr(payroll_async, name))
    }
    public.add("__version__")
    assert set(names) == public


def test_every_exception_is_exported_and_a_payroll_error() -> None:
    for name in _exceptions.__all__:
        cls = getattr(payroll_async, name)
        assert issubclass(cls, payroll_async.PayrollError)


def test_invalid_argument_error_is_a_value_error() -> None:
    assert issubclass(payroll_async.InvalidArgumentError, ValueError)


def test_py_typed_is_shipped() -> None:
    from importlib.resources import files

    assert files("payroll_async").joinpath("py.typed").is_file()


def test_the_emulator_and_the_receiver_do_not_load_the_transport() -> None:
    loaded = modules_after("import payroll_async.emulator, payroll_async.events")
    for heavy in ("_http._requester", "_client", "_paging._pagination", "resources"):
        assert f"'payroll_async.{heavy}'" not in loaded
    assert "'payroll_async.events'" in loaded  # the check can fail


def test_from_dict_reads_a_notification_in_a_fresh_interpreter() -> None:
    """The notification's converter hooks do not depend on importing the receiver first."""
    code = (
        "from payroll_async import from_dict; from payroll_async.models import WebhookEvent; "
        "e = from_dict(WebhookEvent, {'eventId': 'e1', 'eventType': 'payroll.processed', "
        "'occurredAt': '2024-01-01T00:00:00Z', 'data': {'a': 1}, 'extra': 2}); "
        "print(e.event_id, e.occurred_at.year, sorted(e.data))"
    )
    out = fresh_python(code)
    assert out.split() == ["e1", "2024", "['a',", "'extra']"]


def test_lazy_names_resolve_and_unknown_ones_raise() -> None:
    import pytest

    assert payroll_async.PayrollClient.__name__ == "PayrollClient"
    with pytest.raises(AttributeError, match="NoSuchThing"):
        payroll_async.NoSuchThing  # type: ignore[attr-defined]  # noqa: B018


def test_models_as_data_are_public() -> None:
    for name in ("from_dict", "to_dict", "to_json"):
        assert name in payroll_async.__all__
        assert callable(getattr(payroll_async, name))


def test_the_options_and_the_generic_calls_are_public() -> None:
    for name in ("CallOptions", "ListOptions", "SortLike", "QueryLike"):
        assert name in payroll_async.__all__
        getattr(payroll_async, name)
    assert {"max_items", "page_size", "start_offset", "concurrency", "timeout"} <= set(
        payroll_async.ListOptions.__annotations__
    )
    client = payroll_async.PayrollClient
    for name in ("request", "get", "post", "put", "patch", "delete", "get_api_list"):
        assert inspect.getdoc(getattr(client, name))
    assert callable(payroll_async.Page.has_next_page)
    assert inspect.iscoroutinefunction(payroll_async.Page.get_next_page)


def test_a_page_says_its_next_request() -> None:
    """Issue 42's addition: ``Page.next_page_info() -> PageInfo | None`` (openai-python's
    name), the one next-page rule; ``PageInfo`` holds a next link or an offset and limit."""
    signature = inspect.signature(payroll_async.Page.next_page_info)
    assert list(signature.parameters) == ["self"]
    assert signature.return_annotation == "PageInfo | None"
    assert inspect.getdoc(payroll_async.Page.next_page_info)
    assert "PageInfo" in payroll_async.__all__
    info = payroll_async.PageInfo(offset=10, limit=10)
    assert (info.url, info.offset, info.limit) == (None, 10, 10)


def test_the_network_options_and_the_proxy_error_are_public() -> None:
    """Issue 44's additions: proxy=, trust_env=, ssl= and ProxyError."""
    params = inspect.signature(payroll_async.PayrollClient).parameters
    assert params["proxy"].default is None
    assert params["trust_env"].default is True
    assert params["ssl"].default is True
    assert all(params[name].kind is inspect.Parameter.KEYWORD_ONLY for name in ("proxy", "ssl"))
    assert issubclass(payroll_async.ProxyError, payroll_async.APIConnectionError)
    assert "ProxyError" in payroll_async.__all__


def test_the_testing_module_works_without_pytest() -> None:
    """``payroll_async.testing`` under unittest or in a script: pytest cannot be imported,
    and MockTransport still answers a client's request."""
    code = """
import sys

class NoPytest:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("pytest", "_pytest", "pytest_asyncio"):
            raise ImportError(f"{name} is not installed")
        return None

sys.meta_path.insert(0, NoPytest())
import asyncio
from payroll_async import PayrollClient
from payroll_async.testing import EmulatorThread, MockTransport, json_response, page_response

async def main():
    mock = MockTransport(lambda request: json_response({"id": "p1"}))
    async with PayrollClient("https://api.example.com", "tok", transport=mock) as client:
        print(await client.get("/v1/payroll-platforms/p1", cast_to=dict))

asyncio.run(main())
print(sorted(m for m in sys.modules if m.split(".")[0] in ("pytest", "_pytest")))
"""
    assert fresh_python(code).split("\n")[:2] == ["{'id': 'p1'}", "[]"]
