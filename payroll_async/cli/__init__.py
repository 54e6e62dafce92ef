"""The ``payroll-async`` command (extra ``cli``): bulk export and webhook management.

Built on the SDK's public API only.
"""

from ._entry import main

__all__ = ["main"]
