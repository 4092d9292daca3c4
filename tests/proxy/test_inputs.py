"""Old tool inputs elided (:mod:`veil.proxy.inputs`) when the results alone cannot meet a
conversation's budget: through :class:`veil.proxy.session.Conversations` in process, for the
Anthropic Messages API (Claude Code's ``Write``), the Responses API (Codex's ``apply_patch`` and
a ``function_call``'s JSON arguments), Chat Completions and Gemini (whose calls carry no ids:
found by their tool's name, in order).

What the tests hold: an elided input keeps its keys; each long string becomes one marker with
the pointer of an item whose expansion is the whole input; the same bytes in every later
request, after a restart of the proxy too; the agent's text and recent inputs never change;
nothing is elided while the results can still meet the budget.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.proxy.conftest import Make, Run, raw
from veil.context.transcript import Call, Found
from veil.dialects import DIALECTS, Api, InputAt
from veil.proxy.inputs import (
    MIN_CHARS,
    apply,
    candidates,
    elided,
    elision,
    first_elided,
    kept_whole,
    marker,
)
from veil.proxy.reading import Reader, parse
from veil.proxy.session import Prepared
from veil.proxy.tools import describer

Json = dict[str, Any]
THOUGHT = "I will now write the next module and check how it fits with the others. " * 12


def mark(n: int) -> str:
    return marker(n, "veil://warm/ci_x", "mcp__veil__expand")


def test_an_elided_input_keeps_its_keys_and_its_short_values() -> None:
    big = "x = 1\n" * 600
    assert elided({"file_path": "/a.py", "content": big, "n": 3}, mark) == {
        "file_path": "/a.py", "content": mark(len(big)), "n": 3,
    }  # fmt: skip
    assert elided({"file_path": "/a.py", "content": "short"}, mark) is None
    nested = {"edits": [{"old_string": big, "new_string": "y"}], "replace_all": False}
    assert elided(nested, mark) == {
        "edits": [{"old_string": mark(len(big)), "new_string": "y"}], "replace_all": False,
    }  # fmt: skip


def test_a_json_text_is_elided_inside_and_a_plain_text_whole() -> None:
    heredoc = "cat > a.py <<'EOF'\n" + "print(1)\n" * 400 + "EOF"
    arguments = json.dumps({"command": ["bash", "-lc", heredoc], "timeout_ms": 5000})
    out = elided(arguments, mark)
    assert isinstance(out, str)
    assert json.loads(out) == {"command": ["bash", "-lc", mark(len(heredoc))], "timeout_ms": 5000}
    patch = "*** Begin Patch\n*** Add File: a.py\n" + "+print(1)\n" * 300 + "*** End Patch"
    assert elided(patch, mark) == mark(len(patch))
    assert elided("ls -la", mark) is None
    many = json.dumps({f"k{i}": "short value" for i in range(300)})  # long, no long string
    assert len(many) > MIN_CHARS and elided(many, mark) is None


def _found(calls: list[tuple[str, str, str]]) -> list[Found]:
    """One assistant message per call (id, tool, path), each followed by its result."""
    out: list[Found] = [Found("user", "task")]
    for call_id, tool, path in calls:
        args = {"file_path": path, "content": "z" * MIN_CHARS}
        out += [Found("assistant", "", (Call(call_id, tool, args),)),
                Found("tool", "ok", call_id=call_id)]  # fmt: skip
    return out


def test_recent_inputs_and_the_newest_write_of_a_file_being_edited_stay_whole() -> None:
    found = _found([("c1", "Write", "/r/a.py"), ("c2", "Write", "/r/b.py"),
                    ("c3", "Write", "/r/a.py"), ("c4", "Write", "/r/c.py"),
                    ("c5", "Write", "/r/d.py"), ("c6", "Edit", "/r/a.py"),
                    ("c7", "Write", "/r/e.py")])  # fmt: skip
    describe = describer(None)
    # the last three (c5–c7) are recent; c6 edits a.py, whose newest earlier write is c3
    assert kept_whole(found, describe) == {"c3", "c5", "c6", "c7"}
    inputs = {c.id: InputAt(c.id, "id", "input", dict(c.arguments)) for f in found for c in f.calls}
    chosen = [at.call_id for _, at in candidates(found, inputs, {}, describe)]
    assert chosen == ["c1", "c2", "c4"]


def test_an_input_not_where_the_client_writes_it_is_left_as_it_is() -> None:
    at = InputAt("toolu_1", "id", "input", {"content": "q" * MIN_CHARS})
    e = elision(at, (1, 0), "veil://warm/ci_x", None)
    assert e is not None
    compact = b'{"type":"tool_use","id":"toolu_1","name":"Write","input":' + e.before + b"}"
    assert apply(compact, [e]) == (compact.replace(e.before, e.after), 1)
    # written spaced (Python's json.dumps): found all the same, only the value replaced
    spaced = json.dumps(json.loads(compact)).encode()
    assert spaced != compact and b'"input": {"content": "qqq' in spaced
    elided, n = apply(spaced, [e])
    assert n == 1 and elided == spaced.replace(b'{"content": "' + b"q" * MIN_CHARS + b'"}', e.after)
    # another value under the same id (the client changed it), or one too far from its id
    other = compact.replace(b"q" * MIN_CHARS, b"r" * MIN_CHARS)
    assert apply(other, [e]) == (other, 0)
    far = compact.replace(b'"name":"Write"', b'"name":"Write","pad":"' + b"p" * 400 + b'"')
    assert apply(far, [e]) == (far, 0)


def test_parallel_calls_are_elided_in_their_order_whichever_was_elided_first() -> None:
    """Two calls of one message: the second's input elided in an earlier batch, the first's
    later (it was the newest write of a file being edited then) — both are found."""
    made = []
    for n, call_id in enumerate(("toolu_a", "toolu_b")):
        at = InputAt(call_id, "id", "input", {"content": call_id * MIN_CHARS})
        e = elision(at, (3, n), f"veil://warm/ci_{n}", None)
        assert e is not None
        made.append(e)
    blocks = [b'{"type":"tool_use","id":"%s","name":"Write","input":%s}' % (e.call_id.encode(),
              e.before) for e in made]  # fmt: skip
    body = b'{"role":"assistant","content":[' + b",".join(blocks) + b"]}"
    out, found = apply(body, [made[1], made[0]])  # in the order they were elided
    assert found == 2 and all(e.after in out and e.before not in out for e in made)


# ---- through the proxy's session, per API ------------------------------------------------------


def content(k: int) -> str:
    return "\n".join(f"def w{k}_{j}(x):\n    return x + {j}" for j in range(120))


def anthropic_body(steps: int) -> Json:
    messages: list[Json] = [{"role": "user", "content": "Write the modules."}]
    for k in range(steps):
        messages.append({"role": "assistant", "content": [
            {"type": "thinking", "thinking": THOUGHT, "signature": f"sig{k}"},
            {"type": "text", "text": THOUGHT},
            {"type": "tool_use", "id": f"toolu_{k:03d}", "name": "Write",
             "input": {"file_path": f"/repo/w{k}.py", "content": content(k)}}]})  # fmt: skip
        messages.append({"role": "user", "content": [{
            "type": "tool_result", "tool_use_id": f"toolu_{k:03d}",
            "content": f"File created successfully at: /repo/w{k}.py"}]})  # fmt: skip
    return {
        "model": "claude-x", "max_tokens": 4096, "stream": True,
        "system": [{"type": "text", "text": "You are a coding agent."}],
        "tools": [{"name": n, "input_schema": {"type": "object"}}
                  for n in ("Write", "mcp__veil__expand")],
        "messages": messages,
        "metadata": {"user_id": json.dumps({"session_id": "s1"})},
    }  # fmt: skip


def responses_body(steps: int) -> Json:
    items: list[Json] = [
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "Write the modules."}],
        }
    ]
    for k in range(steps):
        items.append(
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": THOUGHT}],
            }
        )
        if k % 2:
            patch = (
                f"*** Begin Patch\n*** Add File: w{k}.py\n+"
                + content(k).replace("\n", "\n+")
                + "\n*** End Patch"
            )
            items.append(
                {
                    "type": "custom_tool_call",
                    "call_id": f"call_{k}",
                    "name": "apply_patch",
                    "input": patch,
                }
            )
            items.append(
                {
                    "type": "custom_tool_call_output",
                    "call_id": f"call_{k}",
                    "output": "Success. Updated the following files:\nA w{k}.py",
                }
            )
        else:
            heredoc = f"cat > w{k}.py <<'EOF'\n{content(k)}\nEOF"
            arguments = json.dumps({"cmd": heredoc, "yield_time_ms": 1000})
            items.append(
                {
                    "type": "function_call",
                    "name": "exec_command",
                    "arguments": arguments,
                    "call_id": f"call_{k}",
                }
            )
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": f"call_{k}",
                    "output": "Process exited with code 0",
                }
            )
    return {"model": "gpt-x", "instructions": "You are Codex.", "tools": [],
            "input": items, "prompt_cache_key": "s1", "stream": True}  # fmt: skip


def chat_body(steps: int) -> Json:
    messages: list[Json] = [
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": "Write the modules."},
    ]
    for k in range(steps):
        arguments = json.dumps({"path": f"w{k}.py", "text": content(k)})
        messages.append(
            {
                "role": "assistant",
                "content": THOUGHT,
                "tool_calls": [
                    {
                        "id": f"call_{k}",
                        "type": "function",
                        "function": {"name": "write_file", "arguments": arguments},
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"call_{k}", "content": "written"})
    return {"model": "gpt-x", "messages": messages, "stream": True}  # fmt: skip


def gemini_body(steps: int, *, ids: bool = True) -> Json:
    """Gemini CLI's body (``ids``: its responses carry its own call ids; its model turns'
    calls never do), or the Python SDK's (no ids at all)."""
    contents: list[Json] = [{"role": "user", "parts": [{"text": "Write the modules."}]}]
    for k in range(steps):
        args = {"file_path": f"w{k}.py", "content": content(k)}
        call = {"functionCall": {"name": "write_file", "args": args}}
        contents.append({"role": "model", "parts": [{"text": THOUGHT}, call]})
        response: Json = {"name": "write_file", "response": {"output": "written"}}
        if ids:
            response = {"id": f"write_file-{k}", **response}
        contents.append({"role": "user", "parts": [{"functionResponse": response}]})
    return {"contents": contents, "systemInstruction": {"parts": [{"text": "You are Gemini."}]},
            "tools": [{"functionDeclarations": [{"name": "write_file"}]}]}  # fmt: skip


BODIES: dict[Api, Callable[[int], Json]] = {
    "anthropic": anthropic_body, "responses": responses_body, "chat": chat_body,
    "gemini": gemini_body,
}  # fmt: skip


def inputs_of(api: Api, data: Json) -> dict[str, Any]:
    """Each call's input as the body holds it, by call id."""
    dialect = DIALECTS[api]
    items = data[dialect.messages_key]
    if dialect.call_inputs_in is not None:
        return {
            at.call_id: at.value
            for index in range(len(items))
            for at in dialect.call_inputs_in(items, index)
        }
    return {at.call_id: at.value for item in items for at in dialect.call_inputs(item)}


def restored(api: Api, sent: Json, client: Json) -> Json:
    """``sent`` with every call's input put back as the client sent it."""
    originals = inputs_of(api, client)
    text = json.dumps(sent)
    for call_id, value in inputs_of(api, sent).items():
        text = text.replace(json.dumps(value), json.dumps(originals[call_id]))
    return json.loads(text)


def step(run: Run, steps: int, body: Callable[[int], Json] | None = None) -> tuple[Json, Prepared]:
    """The conversation's body at ``steps`` steps, as the client sends it, and as prepared."""
    data = (body or BODIES[run.api])(steps)
    return data, run.send(data)


def gemini_sdk_body(steps: int) -> Json:
    return gemini_body(steps, ids=False)


@pytest.mark.parametrize(
    ("api", "body"),
    [
        ("anthropic", anthropic_body),
        ("responses", responses_body),
        ("chat", chat_body),
        pytest.param("gemini", gemini_body, id="gemini-cli"),
        pytest.param("gemini", gemini_sdk_body, id="gemini-no-ids"),
    ],
)
def test_old_inputs_are_elided_once_the_results_alone_cannot_meet_the_budget(
    make: Make, api: Api, body: Callable[[int], Json]
) -> None:
    budget = 12_000
    run = make(budget, api=api)
    first: int | None = None
    markers: dict[str, Any] = {}
    for steps in range(1, 36):
        client, prepared = step(run, steps, body)
        sent = json.loads(prepared.body)
        now = inputs_of(api, sent)
        whole = inputs_of(api, client)
        changed = {c for c in now if now[c] != whole[c]}
        if prepared.inputs_new:  # only a batch that gets the request within its budget runs
            first = first or steps
            assert prepared.batch and not prepared.unmet and prepared.tokens_sent <= budget
            assert prepared.evicted == 0  # the results alone could not meet it
        if first is None:
            assert not changed, steps  # nothing elided before
            continue
        assert prepared.inputs_elided == len(changed) > 0
        # the same bytes in every later request
        for call_id, value in markers.items():
            assert now[call_id] == value, (steps, call_id)
        markers.update({c: now[c] for c in changed})
        # the calls of the last three assistant messages stay whole (a Responses call and the
        # assistant's text are two messages)
        assert not changed & set(list(whole)[-2:]), steps
        # and nothing else of the request changed
        assert restored(api, sent, client) == client, steps
    assert first is not None
    batches = [k for k, p in enumerate(run.prepared) if p.inputs_new]
    assert all(b - a > 1 for a, b in itertools.pairwise(batches)), batches  # never back to back
    if api == "anthropic":  # its thoughts are long: in the end the text alone outgrows it
        assert run.prepared[-1].unmet and not run.prepared[-1].inputs_new
    # the marker names the expand tool (Claude Code's) and a pointer whose item is the input
    conversation = run.conversations.known(parse(api, raw(body(35)), {}, Reader()))
    assert conversation is not None
    some, value = next(iter(markers.items()))
    text = json.dumps(value)
    assert "characters of this tool call's input elided" in text
    pointer = "veil://warm/" + text.split("veil://warm/", 1)[1].split(" ", 1)[0]
    original = inputs_of(api, body(35))[some]
    expanded = conversation.engine.expand(pointer).content
    assert expanded == (original if isinstance(original, str) else json.dumps(
        original, separators=(",", ":"), ensure_ascii=False))  # fmt: skip
    if api == "anthropic":
        assert "call mcp__veil__expand with veil://warm/" in text
        assert set(value) == {"file_path", "content"}  # the keys stay


def test_nothing_is_elided_while_the_results_can_meet_the_budget(
    make: Make,
) -> None:
    run = make(60_000)
    for steps in range(1, 30):
        client, prepared = step(run, steps)
        assert not prepared.inputs_elided and not prepared.unmet
        assert inputs_of("anthropic", json.loads(prepared.body)) == inputs_of("anthropic", client)


def test_a_restarted_proxy_sends_the_same_elided_inputs(make: Make) -> None:
    run = make(12_000, name="c.db")
    for steps in range(1, 29):
        step(run, steps)
    _, before = step(run, 29)
    assert before.inputs_elided
    run.conversations.close()
    again = make(12_000, name="c.db")  # the same store, a new process's conversations
    _, after = step(again, 30)
    sent_before = inputs_of("anthropic", json.loads(before.body))
    sent_after = inputs_of("anthropic", json.loads(after.body))
    elided_before = {c: v for c, v in sent_before.items() if "input elided" in json.dumps(v)}
    assert elided_before
    for call_id, value in elided_before.items():
        assert sent_after[call_id] == value, call_id


def test_a_batch_of_elisions_starts_as_late_as_it_can_and_only_where_it_pays() -> None:
    savings = [1_000.0, 1_000.0, 1_000.0, 1_000.0]
    suffixes = [10_000.0, 8_000.0, 6_000.0, 4_000.0]  # the tokens from each candidate on
    # freeing 1,500 tokens: the last two suffice, and 2,000 pays for 6,000 at a factor of 0.3
    assert first_elided(savings, suffixes, need=1_500, factor=0.3) == 2
    # a dearer rewrite (a factor of 0.38): only all four pay for theirs (4,000 ≥ 3,800)
    assert first_elided(savings, suffixes, need=1_500, factor=0.38) == 0
    assert first_elided(savings, suffixes, need=1_500, factor=0.45) is None  # never pays
    assert first_elided(savings, suffixes, need=5_000, factor=0.0) is None  # never enough


def test_a_secret_in_an_elided_input_is_never_stored_or_sent_again(
    make: Make, tmp_path: Path
) -> None:
    """The item holding a whole input is redacted, as every item is; the marker carries only
    the count and the pointer."""
    canary = "AKIA" + "Q3VEILCANARY7XQZ"  # an AWS access key id's shape, not a real key
    run = make(12_000, name="c.db")
    sent: list[bytes] = []
    for steps in range(1, 20):
        data = anthropic_body(steps)
        block = data["messages"][1]["content"][2]
        block["input"]["content"] = f"aws_access_key_id = {canary}\n" + block["input"]["content"]
        sent.append(run.send(data).body)
    assert canary.encode() in sent[0]  # while whole, the model gets the input as written
    assert canary.encode() not in sent[-1] and run.prepared[-1].inputs_elided
    run.conversations.close()
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
    assert canary.encode() not in stored
    assert b"[secret:aws-access-key" in stored  # the placeholder is what was kept
