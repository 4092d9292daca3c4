"""The soak's steady mode really bounds the data: a few seconds of it, scaled down.

The real soak (``python -m benchmarks.soak --steady``) runs 10 minutes per phase and is not part
of ``make test``; here the rotation period and the window are shortened so that one short run
crosses several erasures, on the library and on a real ``veil serve``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from benchmarks import soak


def test_library_steady_phase_erases_and_bounds_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(soak, "ROTATE_S", 1.0)
    monkeypatch.setattr(soak, "WINDOW_S", 0.5)
    result = soak.library_phase(3.2, 60.0, tmp_path, steady=True)
    windows = result["windows"]
    assert len(windows) >= 5
    assert all("db_mb" in w and w["db_mb"] > 0 for w in windows)
    assert result["phase"].startswith("library, steady")
    assert any(w.get("remember_p50") for w in windows)


def test_server_steady_phase_runs_erasures_through_the_api(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(soak, "ROTATE_S", 1.5)
    monkeypatch.setattr(soak, "WINDOW_S", 1.0)
    result = soak.server_phase(4.0, 4, tmp_path, steady=True, turns=5_000)
    assert result["requests"] > 0
    assert "steady" in result["phase"]
    assert all("db_mb" in w for w in result["windows"])
