import inspect

import payroll_async
from payroll_async import _exceptions


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
