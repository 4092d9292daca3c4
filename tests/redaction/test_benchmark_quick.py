"""The redaction benchmark's quick variant runs in-process and catches every canary.

No timing is asserted (the machine is shared); the figures only have to be there.
"""

from __future__ import annotations

import pytest
from benchmarks import redaction
from benchmarks.replay.load import DATA


@pytest.mark.skipif(not (DATA / "index.jsonl").exists(), reason="shared trajectories absent")
def test_the_quick_benchmark_runs_and_catches_every_canary() -> None:
    result = redaction.run(quick=True)
    recall = result["recall"]
    assert recall["recall"] == 1.0, recall["misses"]
    assert len(recall["formats"]) >= 10
    assert recall["decoys"]["kept"] == recall["decoys"]["total"]
    assert recall["idempotent"]
    real = result["real_outputs"]
    assert real["observations"] > 100
    assert real["changed_wrongly"] == 0, real["changes"]
    assert set(result["cost"]) == {"1KB", "10KB", "100KB"}
    assert all(c["p95_ms"] >= c["p50_ms"] > 0 for c in result["cost"].values())
    assert not result["startup"]["first_redact_no_trigger_imports_detect_secrets"]
    assert "| **all** |" in redaction.table(result)
