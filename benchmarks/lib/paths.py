"""Where things are: the repository, the results, the rendered document, the shared data."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "benchmarks" / "results"
"""Every benchmark's JSON result (``NAME.json``, ``NAME-quick.json``)."""
DOC = REPO / "docs" / "benchmarks.md"
IMG = REPO / "docs" / "img"
SHARED = Path(os.environ.get("VEIL_SHARED_DIR", REPO.parent / "shared"))
"""The shared data folder (``$VEIL_SHARED_DIR``, else ``<repo>/../shared``); its data sets are
read in place, never copied into the repository."""
TRAJECTORIES = SHARED / "data" / "trajectories"
"""Real agent trajectories (``index.jsonl`` and one gzipped JSON-lines file per set)."""
TRAJECTORY_SETS = {
    "A": "mini_swe_agent_gemini3pro_verified.jsonl.gz",
    "B": "sweagent_gpt4_lite_3runs.jsonl.gz",
}
"""Set A: mini-swe-agent 1.15.0 + Gemini 3 Pro on SWE-bench Verified (500 runs, MIT). Set B:
SWE-agent 0.x + GPT-4 on SWE-bench Lite (826 runs, research use)."""
LOCOMO = SHARED / "data" / "locomo10.json"
"""LoCoMo (Maharana et al., ACL 2024; CC BY-NC 4.0)."""


def shown(path: Path) -> Path:
    """``path`` relative to the repository when it is inside it (for messages)."""
    return path.relative_to(REPO) if path.is_relative_to(REPO) else path
