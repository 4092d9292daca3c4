"""A ``postgresql://`` store without the ``postgres`` extra is a clear error, not a traceback.

The extra is installed in the test environment, so its absence is simulated:
``sys.modules[name] = None`` makes ``import name`` raise ImportError.
"""

from __future__ import annotations

import sys

import pytest

from veil.tape import BackendUnavailable, TapeError, open_store


@pytest.mark.parametrize(
    ("module", "package"), [("psycopg", "psycopg"), ("psycopg_pool", "psycopg-pool")]
)
def test_postgresql_without_the_extra_names_the_package_and_the_install(
    monkeypatch: pytest.MonkeyPatch, module: str, package: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)
    monkeypatch.delitem(sys.modules, "veil.tape.postgres", raising=False)
    with pytest.raises(BackendUnavailable) as raised:
        open_store("postgresql://veil@127.0.0.1:1/veil")
    message = str(raised.value)
    assert f"{package} is not installed" in message
    assert "-m pip install 'psycopg[binary]>=" in message
    assert "\n" not in message
    assert isinstance(raised.value, ImportError) and isinstance(raised.value, TapeError)
    assert raised.value.name == module
