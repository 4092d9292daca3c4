"""The proxy's working memory, request by request (:class:`veil.proxy.session.Conversations`,
in process): the cache-aware batch rule as the proxy applies it, one defect of round 3 per test.

1. A result the model has not read is never clipped or stubbed — only the retry after the
   provider refused a request as too long clips one, and its note says so.
2. A stub already sent never changes (nor does it when its item goes cold).
3. Batches are rare and deep: never at the request right after another while the conversation
   can fit; between two batches the request is the last one plus what is new.
4. No stub is longer than the result it replaces.
5. A request goes over the budget only when the text, the unread results whole and every other
   result as its stub exceed it.
6. The stubs name the expand tool as the agent sees it, or none.

And: nothing changes while the conversation fits; a cold cache makes a deeper batch.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from tests.proxy.conftest import raw
from veil.clock import FakeClock
from veil.proxy.reading import parse
from veil.proxy.session import Prepared
from veil.tokens import estimate_tokens

POINTER = "veil://warm/"


def output(k: int, lines: int = 40) -> str:
    return "\n".join(f"def f{k}_{j}(x): return x * {j * k + 7}  # {k}-{j}" for j in range(lines))


def body(
    steps: int,
    *,
    sizes: dict[int, int] | None = None,
    tools: list[str] | None = None,
    session: str = "s1",
    thought: str = "Reading the next module.",
) -> dict[str, Any]:
    """An Anthropic body as Claude Code sends it: the task, then per step the assistant's text
    and a Read, and its result (``sizes``: lines of some results)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Review every module."}]
    for k in range(steps):
        messages.append({"role": "assistant", "content": [
            {"type": "text", "text": thought},
            {"type": "tool_use", "id": f"toolu_{k:03d}", "name": "Read",
             "input": {"file_path": f"/repo/m{k}.py"}}]})  # fmt: skip
        text = output(k, (sizes or {}).get(k, 40))
        result = {"type": "tool_result", "tool_use_id": f"toolu_{k:03d}", "content": text}
        messages.append({"role": "user", "content": [result]})
    return {
        "model": "claude-x",
        "max_tokens": 4096,
        "stream": True,
        "system": [{"type": "text", "text": "You are a coding agent."}],
        "tools": [{"name": n, "input_schema": {"type": "object"}} for n in (tools or ["Read"])],
        "messages": messages,
        "metadata": {"user_id": json.dumps({"session_id": session})},
    }


def results(sent: bytes) -> dict[str, str]:
    out: dict[str, str] = {}
    for message in json.loads(sent)["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else []:
            if block.get("type") == "tool_result":
                out[block["tool_use_id"]] = block["content"]
    return out


def test_nothing_changes_while_the_conversation_fits(make: Any) -> None:
    run = make(budget=200_000)
    for steps in range(1, 12):
        prepared = run.send(body(steps))
        assert prepared.body == raw(body(steps)) and not prepared.batch and prepared.exact


def test_an_unread_result_is_never_clipped_or_stubbed_but_on_the_overflow_retry(
    make: Any,
) -> None:
    run = make(budget=6_000)
    for steps in range(1, 6):
        run.send(body(steps))
    huge = {5: 900}  # ~9,000 tokens: far over the whole budget by itself
    sent = run.send(body(6, sizes=huge))
    whole = output(5, 900)
    assert results(sent.body)["toolu_005"] == whole  # asked for, not read yet: whole
    assert sent.tokens_sent > 6_000
    # the provider refused it: now, and only now, head and tail, with a note that says why
    retried = run.send(body(6, sizes=huge), overflow=True)
    clipped = results(retried.body)["toolu_005"]
    assert clipped != whole and "refused this request as too long" in clipped
    assert "larger than the context window" not in clipped and POINTER in clipped


def test_a_stub_already_sent_never_changes(make: Any, clock: FakeClock) -> None:
    run = make(budget=5_000)
    seen: dict[str, str] = {}
    for steps in range(1, 90):
        if steps == 25:
            clock.advance(days=400)  # long idle: evicted results go cold later
        sent = results(run.send(body(steps)).body)
        for call, text in sent.items():
            if call in seen and seen[call].startswith("[veil: "):
                assert text == seen[call], call  # the same bytes, warm or cold
            seen[call] = text
    assert sum(t.startswith("[veil: ") for t in seen.values()) >= 10
    items = run.conversations.known(parse("anthropic", raw(body(89)), {}))
    assert items is not None
    assert any(i.tier == "cold" for i in items.engine.items())


def test_batches_are_rare_deep_and_the_prefix_holds_between_them(make: Any) -> None:
    run = make(budget=8_000)
    for steps in range(1, 60):
        run.send(body(steps))
    batches = [k for k, p in enumerate(run.prepared) if p.batch]
    assert 2 <= len(batches) <= len(run.prepared) // 5, batches
    assert all(b - a > 1 for a, b in itertools.pairwise(batches)), batches
    for k in range(1, len(run.sent)):
        if not run.prepared[k].batch:  # the last request's bytes, then what is new
            before, after = json.loads(run.sent[k - 1]), json.loads(run.sent[k])
            assert after["messages"][: len(before["messages"]) - 1] == before["messages"][:-1]
    for k in batches:  # each batch goes deep: at least 40 % of the budget below it
        assert run.prepared[k].tokens_sent <= 0.6 * 8_000 + 1_000


def test_no_stub_is_longer_than_its_result(make: Any) -> None:
    run = make(budget=3_000)
    sizes = {k: 1 for k in range(0, 60, 2)}  # every other result is one short line
    for steps in range(1, 60):
        sent = run.send(body(steps, sizes=sizes))
        for call, text in results(sent.body).items():
            k = int(call.rsplit("_", 1)[1])
            assert len(text) <= len(output(k, sizes.get(k, 40))), call


def test_over_the_budget_only_when_text_and_unread_results_alone_exceed_it(
    make: Any,
) -> None:
    """Over the budget, the request is what it would be with every result but the newest as
    its stub still over it — and then no batch runs (it would rewrite the cache and take what
    the model is reading without meeting the budget): the last request's bytes, then what is
    new."""
    thought = "I will now read the next module carefully and compare it. " * 30
    run = make(budget=9_000)
    over = 0
    for steps in range(1, 40):
        prepared = run.send(body(steps, thought=thought))
        if prepared.tokens_sent <= 9_000:
            continue
        over += 1
        shown = results(prepared.body)
        newest = f"toolu_{steps - 1:03d}"
        stubs = [t for t in shown.values() if t.startswith("[veil: ")]
        assert stubs, steps  # the batches before got as far as they could
        shortest = min(estimate_tokens(t) for t in stubs)
        whole = [t for c, t in shown.items() if c != newest and not t.startswith("[veil: ")]
        all_stubbed = prepared.tokens_sent - sum(estimate_tokens(t) - shortest for t in whole)
        assert all_stubbed > 9_000, (steps, all_stubbed)
        assert not prepared.batch and prepared.unmet, steps
        said = prepared.note is not None and "no batch can meet the budget" in prepared.note
        assert said == (over == 1), steps  # when the conversation gets there, not every time
        before, after = json.loads(run.sent[-2]), json.loads(run.sent[-1])
        assert after["messages"][: len(before["messages"]) - 1] == before["messages"][:-1]
    assert over >= 10


@pytest.mark.parametrize(
    ("tools", "names"),
    [
        (["Read", "mcp__veil__expand"], "mcp__veil__expand veil://warm/"),
        (["Read"], "no expand tool here: run the call again to see it"),
    ],
)
def test_stubs_name_the_expand_tool_as_the_agent_sees_it(
    make: Any, tools: list[str], names: str
) -> None:
    run = make(budget=5_000)
    for steps in range(1, 30):
        run.send(body(steps, tools=tools))
    sent = run.prepared[-1]
    stubs = [t for t in results(sent.body).values() if t.startswith("[veil: ")]
    assert stubs and all(names in t for t in stubs)


def test_a_deferred_expand_tool_is_named_too(make: Any) -> None:
    """Claude Code defers MCP tools behind its tool search and names them in a system message."""
    run = make(budget=5_000)
    for steps in range(1, 30):
        data = body(steps)
        data["messages"].insert(1, {"role": "system", "content": "Deferred: mcp__veil__expand"})
        run.send(data)
    sent = run.prepared[-1]
    stubs = [t for t in results(sent.body).values() if t.startswith("[veil: ")]
    assert stubs and all("mcp__veil__expand veil://warm/" in t for t in stubs)


def test_a_cold_cache_makes_a_deeper_batch(make: Any, clock: FakeClock) -> None:
    def run_with(gap_before: int | None) -> list[Prepared]:
        run = make(budget=8_000)
        for steps in range(1, 60):
            if steps == gap_before:
                clock.advance(seconds=600)  # no request within the 5-minute cache lifetime
            run.send(body(steps))
        return run.prepared

    warm = run_with(None)
    second = [k for k, p in enumerate(warm) if p.batch][1]  # a batch the cache would have paid
    cold = run_with(second + 1)  # the same conversation, idle just before that request
    assert cold[second].cold and cold[second].batch and not warm[second].cold
    assert cold[second].tokens_sent < warm[second].tokens_sent  # deeper: it costs nothing more


def test_a_fixed_part_over_the_budget_goes_unchanged_with_a_note(make: Any) -> None:
    run = make(budget=300)
    data = body(3)
    data["system"] = [{"type": "text", "text": "Long instructions. " * 400}]
    prepared = run.send(data)
    assert prepared.body == raw(data) and prepared.note and "forwarded unchanged" in prepared.note


def test_a_request_prepared_without_persisting_writes_its_events_when_told(make: Any) -> None:
    """The proxy server prepares a request with ``persist=False`` and starts the tape write
    once the request is on its way: until then nothing of it is on the tape, after it all is."""
    run = make(100_000)
    conversations = run.conversations
    store = conversations.store
    payload = raw(body(3))
    prepared = conversations.prepare(parse("anthropic", payload, {}, run.reader), payload)
    conversation = next(iter(conversations._by_key.values()))  # pyright: ignore[reportPrivateUsage]
    conversation.engine.wait()
    written = len(store.scan())
    assert written > 0 and prepared.results == 3

    later = raw(body(4))
    request = parse("anthropic", later, {}, run.reader)
    deferred = conversations.prepare(request, later, persist=False)
    conversation.engine.wait()
    assert len(store.scan()) == written  # the new result is captured, not yet written

    conversations.persist(deferred)
    conversation.engine.wait()
    kinds = [e.kind for e in store.scan()[written:]]
    assert "context.item" in kinds, kinds  # the fourth result, captured


def _chat(steps: int) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Review every module."}]
    for k in range(steps):
        arguments = json.dumps({"path": f"m{k}.py"})
        call = {"id": f"call_{k}", "type": "function",
                "function": {"name": "read", "arguments": arguments}}  # fmt: skip
        messages.append({"role": "assistant", "content": "Reading — next.", "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"call_{k}", "content": output(k)})
    return {"model": "gpt-x", "messages": messages, "stream": True}


@pytest.mark.parametrize("api", ["anthropic", "chat"])
def test_a_client_writing_spaced_ascii_json_is_spliced_in_place(make: Any, api: Any) -> None:
    """Python clients write ``json.dumps``'s default layout (``": "``, ``", "``, non-ASCII as
    ``\\u`` escapes): the stubs replace the results' values where they are, and every other byte
    is the client's — the layout is not re-serialised."""
    run = make(3_000, api=api)
    stubbed = 0
    for steps in range(1, 16):
        data = body(steps, thought="Reading — next.") if api == "anthropic" else _chat(steps)
        spaced = json.dumps(data).encode()
        prepared = run.conversations.prepare(parse(api, spaced, {}, run.reader), spaced)
        run.clock.advance(seconds=20)
        assert prepared.exact, steps
        sent, back = json.loads(prepared.body), prepared.body
        if api == "anthropic":
            pairs = [(b["content"], c["content"])
                     for m, n in zip(sent["messages"], data["messages"], strict=True)
                     if isinstance(m["content"], list)
                     for b, c in zip(m["content"], n["content"], strict=True)
                     if b.get("type") == "tool_result"]  # fmt: skip
        else:
            pairs = [(m["content"], n["content"])
                     for m, n in zip(sent["messages"], data["messages"], strict=True)
                     if m["role"] == "tool"]  # fmt: skip
        for stub, whole in pairs:
            if stub != whole:
                stubbed += 1
                back = back.replace(
                    json.dumps(stub, ensure_ascii=False, separators=(",", ":")).encode(),
                    json.dumps(whole).encode(),
                )
        assert back == spaced, steps
    assert stubbed > 10
