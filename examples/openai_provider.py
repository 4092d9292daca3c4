"""A ``complete`` for OpenAI-compatible servers (Ollama, vLLM, llama.cpp's server, OpenAI).

Long-term memory needs a ``complete(messages, *, json_schema=None) -> str`` callable; this is
one, in a few lines of the standard library, so a local model gives fully offline extraction::

    python examples/openai_provider.py http://127.0.0.1:11434/v1 qwen2.5:7b

(``veil.llm.registry.extraction_complete_from_spec`` is the packaged version, on the official
SDKs, for every provider Veil knows.)
"""

from __future__ import annotations

import json
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

from veil import Memory


def openai_complete(base_url: str, model: str, api_key: str | None = None):
    def complete(
        messages: list[dict[str, Any]], *, json_schema: dict[str, Any] | None = None
    ) -> str:
        body: dict[str, Any] = {"model": model, "messages": messages, "temperature": 0}
        if json_schema is not None:  # servers that support it constrain decoding to the schema
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "extraction", "schema": json_schema},
            }
        headers = {"Content-Type": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        request = urllib.request.Request(
            base_url.rstrip("/") + "/chat/completions",
            data=json.dumps(body).encode(),
            headers=headers,
        )
        with urllib.request.urlopen(request, timeout=120) as response:
            return json.loads(response.read())["choices"][0]["message"]["content"] or ""

    return complete


def main(base_url: str, model: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        memory = Memory(Path(tmp) / "memory.db", complete=openai_complete(base_url, model))
        print(memory.remember("I switched from vim to emacs last week.", user_id="me"))
        print(memory.recall("which editor do I use?", user_id="me").text)
        memory.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
