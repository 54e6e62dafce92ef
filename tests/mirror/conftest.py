"""The mirror's tests need its extra; their databases are ``tests/_postgres.py``'s fixtures."""

import pytest

pytest.importorskip("sqlalchemy", reason="the mirror extra is not installed")
