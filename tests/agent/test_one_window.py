"""What the model sees, through `veil -p --trace` as a user runs it (issue 24): a 9,000-token
window, a 1.5k-token file read, six more files (the first is evicted), then `veil_expand` of
the first file by its tool-call id. Every request carries the file at most once, costs what
Veil counted (recomputed here from the trace, message by message), stays within the window,
and `live_tokens` is the renderer's count of what was sent."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from tests.agent.test_cli_use import call, repo, script, veil

__all__ = ["repo"]

WINDOW = 9_000
MARK = "first_function_119"


def estimate(text: str) -> int:
    """chars/4, never below the number of words (the estimate Veil documents)."""
    return 0 if not text else max(math.ceil(len(text) / 4), len(text.split()))


def sent_tokens(record: dict[str, Any]) -> tuple[int, int]:
    """(the whole request, its conversation) as estimated from what the trace says was sent."""
    fixed = estimate(record["system"]) + sum(
        estimate(
            json.dumps(
                {"name": t["name"], "description": t["description"], "parameters": t["parameters"]},
                ensure_ascii=False,
            )
        )
        for t in record["tools"]
    )
    conversation = 0
    for message in record["messages"]:
        conversation += estimate(message.get("content") or "")
        calls = message.get("tool_calls") or []
        if calls:
            listed = "\n".join(
                f"{c['name']}({json.dumps(c['arguments'], ensure_ascii=False)})" for c in calls
            )
            conversation += estimate(listed)
    return fixed + conversation, conversation


def test_an_expanded_file_is_sent_once_and_every_request_is_counted_as_sent(repo: Path) -> None:
    first = "".join(
        f"def first_function_{i}(x):\n    return x * {i}  # marker\n" for i in range(120)
    )
    (repo / "f0.py").write_text(first)
    for n in range(1, 7):
        (repo / f"f{n}.py").write_text(
            "".join(f"def f{n}_{i}(y):\n    return y + {i}\n" for i in range(150))
        )
    turns = [{"content": "", "tool_calls": [call("read", path=f"f{n}.py")]} for n in range(7)]
    turns += [
        {"content": "", "tool_calls": [call("veil_expand", pointer="call_1_1")]},
        {"content": "", "tool_calls": [call("read", path="f2.py")]},
        {"content": "Done."},
    ]
    trace = repo / "trace.jsonl"
    done = veil(
        repo, "-p", "read the files", "--model", script(repo / "s.json", turns),
        "--approve", "auto", "--window", str(WINDOW), "--trace", str(trace),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    assert len(records) == len(turns)
    copies = []
    for n, record in enumerate(records, 1):
        text = json.dumps(record["messages"])
        copies.append(text.count(MARK))
        figures = record["veil"]
        whole, conversation = sent_tokens(record)
        assert whole == figures["estimated_tokens"], f"request {n}: sent ≠ counted"
        assert conversation == figures["conversation_tokens"], f"request {n}"
        assert figures["live_tokens"] == conversation - figures["tail_tokens"], f"request {n}"
        assert whole <= WINDOW and figures["request_tokens"] <= WINDOW, f"request {n}"
        # the budget holds once the model has read the newest result (unread ones may use
        # part of the reply's reserve; see docs/context-engine.md)
        assert figures["live_tokens"] <= figures["budget"] + 0.75 * 1_800, f"request {n}"
    assert max(copies) == 1, copies
    assert copies[1] == 1 and 0 in copies[2:7], "the first file should be read, then evicted"
    after = records[8]["messages"]  # the request after the expansion (turn 8 made it)
    expansions = [m for m in after if m["role"] == "tool" and MARK in m["content"]]
    assert [m["tool_call_id"] for m in expansions] == ["call_8_1"], "shown once, where expanded"
