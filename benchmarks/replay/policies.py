"""Eviction policies replayed over a trajectory: at every step, which earlier observations are
in the prompt in full, and what the prompt costs.

Every policy returns a :class:`Run`: for each step ``k`` the prompt tokens when the model chose
action ``k`` (system + instance message + the earlier assistant messages and observations as the
policy left them) and the set of earlier observations still there verbatim. A stubbed, cleared,
summarised or dropped observation is not verbatim. Budgets are prompt-token budgets (window −
reserve); every budgeted policy gets the same budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from benchmarks.replay.load import Trajectory
from benchmarks.replay.needs import Need
from veil.context import ContextConfig, ContextEngine
from veil.embed.protocol import Embedder
from veil.tape.sqlite import SQLiteStore
from veil.tokens import estimate_tokens

OPENCODE_STUB = "[Old tool result content cleared]"
OPENCODE_STUB_TOKENS = estimate_tokens(OPENCODE_STUB)


@dataclass
class Run:
    tokens: list[int]
    """Prompt tokens at each step (when the model chose that step's action)."""
    live: list[frozenset[int]]
    """Earlier observations in the prompt verbatim at each step."""
    info: dict[str, float] = field(default_factory=dict[str, float])


def _masked_stub(observation: str) -> int:
    """SWE-agent's ``LastNObservations`` placeholder."""
    lines = observation.count("\n") + 1
    return estimate_tokens(f"Old environment output: ({lines} lines omitted)")


def _lru_stub(action: str, tokens: int) -> int:
    return estimate_tokens(f"[evicted: output of `{action[:80]}` — {tokens:,} tokens]")


def keep_all(t: Trajectory) -> Run:
    tokens: list[int] = []
    total = t.fixed_tokens
    for k, s in enumerate(t.steps):
        tokens.append(total)
        total += s.assistant_tokens + s.obs_tokens
        del k
    return Run(tokens, [frozenset(range(k)) for k in range(len(t.steps))])


def mask_last_n(t: Trajectory, n: int) -> Run:
    """SWE-agent ``LastNObservations``: observations older than the last ``n`` become a
    one-line placeholder; assistant messages stay."""
    steps = t.steps
    stub = [_masked_stub(s.observation) for s in steps]
    tokens: list[int] = []
    live: list[frozenset[int]] = []
    for k in range(len(steps)):
        first_full = max(0, k - n)
        cost = t.fixed_tokens + sum(s.assistant_tokens for s in steps[:k])
        cost += sum(stub[j] for j in range(first_full))
        cost += sum(steps[j].obs_tokens for j in range(first_full, k))
        tokens.append(cost)
        live.append(frozenset(range(first_full, k)))
    return Run(tokens, live)


def truncate_oldest(t: Trajectory, budget: int) -> Run:
    """Drop the oldest (assistant, observation) pairs until the prompt fits; the newest pair
    always stays. Dropped pairs never come back."""
    steps = t.steps
    start = 0
    tokens: list[int] = []
    live: list[frozenset[int]] = []
    for k in range(len(steps)):
        cost = t.fixed_tokens + sum(s.assistant_tokens + s.obs_tokens for s in steps[start:k])
        while cost > budget and start < k - 1:
            cost -= steps[start].assistant_tokens + steps[start].obs_tokens
            start += 1
        tokens.append(cost)
        live.append(frozenset(range(start, k)))
    return Run(tokens, live)


def opencode_prune(t: Trajectory, protect: int, minimum: int, skip_turns: int = 2) -> Run:
    """opencode's ``SessionCompaction.prune`` after every step: walking back from the newest
    message, skipping the last ``skip_turns`` turns (here: steps; a SWE-bench run is a single
    user turn) and stopping at the first already-cleared output, tool outputs beyond the newest
    ``protect`` tokens are cleared — only if together they exceed ``minimum`` tokens."""
    steps = t.steps
    cleared = [False] * len(steps)
    tokens: list[int] = []
    live: list[frozenset[int]] = []
    for k in range(len(steps)):
        total = 0
        pruned = 0
        to_prune: list[int] = []
        for j in range(k - 1 - skip_turns, -1, -1):
            if cleared[j]:
                break
            total += steps[j].obs_tokens
            if total > protect:
                pruned += steps[j].obs_tokens
                to_prune.append(j)
        if pruned > minimum:
            for j in to_prune:
                cleared[j] = True
        cost = t.fixed_tokens + sum(
            s.assistant_tokens + (OPENCODE_STUB_TOKENS if cleared[j] else s.obs_tokens)
            for j, s in enumerate(steps[:k])
        )
        tokens.append(cost)
        live.append(frozenset(j for j in range(k) if not cleared[j]))
    return Run(tokens, live, {"cleared": float(sum(cleared))})


def compaction_params(t: Trajectory, budget: int) -> tuple[int, int]:
    """(keep_recent, summary_tokens): pi's 20,000 recent tokens and a summary of at most 2,000,
    both capped for small budgets at half and a tenth of the room above the fixed prompt."""
    room = max(1, budget - t.fixed_tokens)
    return min(20_000, room // 2), max(50, min(2_000, room // 10))


def compaction(t: Trajectory, budget: int) -> Run:
    """pi / Claude Code compaction: when the prompt exceeds the budget, every message before the
    newest ``keep_recent`` tokens (whole steps, at least the newest) is replaced by one summary.
    Summarised observations are gone verbatim."""
    keep_recent, summary = compaction_params(t, budget)
    steps = t.steps
    cut = 0
    summary_tokens = 0
    compactions = 0
    tokens: list[int] = []
    live: list[frozenset[int]] = []
    for k in range(len(steps)):
        pairs = [s.assistant_tokens + s.obs_tokens for s in steps]
        cost = t.fixed_tokens + summary_tokens + sum(pairs[cut:k])
        if cost > budget and k - cut > 1:
            acc = 0
            new_cut = k
            for j in range(k - 1, cut - 1, -1):
                if acc + pairs[j] > keep_recent and new_cut < k:
                    break
                acc += pairs[j]
                new_cut = j
            if new_cut > cut:
                cut = new_cut
                summary_tokens = summary
                compactions += 1
                cost = t.fixed_tokens + summary_tokens + sum(pairs[cut:k])
        tokens.append(cost)
        live.append(frozenset(range(cut, k)))
    return Run(tokens, live, {"compactions": float(compactions)})


def lru(t: Trajectory, budget: int, needs: Sequence[Need]) -> Run:
    """Least recently used: an observation is used when it is created and whenever a later
    step needs it (the detector's rules) while it is verbatim. Over budget, the least recently
    used observations become stubs (never the newest); stubs never come back."""
    steps = t.steps
    last_use = list(range(len(steps)))
    stub = [_lru_stub(s.action, s.obs_tokens) for s in steps]
    full = [True] * len(steps)
    by_step: dict[int, list[Need]] = {}
    for need in needs:
        by_step.setdefault(need.step, []).append(need)
    tokens: list[int] = []
    live: list[frozenset[int]] = []
    for k in range(len(steps)):
        cost = t.fixed_tokens + sum(
            s.assistant_tokens + (s.obs_tokens if full[j] else stub[j])
            for j, s in enumerate(steps[:k])
        )
        if cost > budget:
            order = sorted((j for j in range(k - 1) if full[j]), key=lambda j: (last_use[j], j))
            for j in order:
                if cost <= budget:
                    break
                full[j] = False
                cost -= steps[j].obs_tokens - stub[j]
        tokens.append(cost)
        now = frozenset(j for j in range(k) if full[j])
        live.append(now)
        for need in by_step.get(k, []):
            for j in need.sources:
                if j in now:
                    last_use[j] = k
    return Run(tokens, live)


VEIL_TURN_STUB = (
    "[veil: earlier action moved to warm memory; veil_expand veil://warm/{id} restores it]"
)


def veil(
    t: Trajectory,
    budget: int,
    embedder: Embedder,
    config: ContextConfig | None = None,
) -> Run:
    """Veil's context engine driven as :class:`veil.agent.harness.VeilHarness` drives it.

    The instance message is the first user turn (the intent); after each tool result:
    ``capture_tool_result`` (tool ``bash`` or the SWE-agent command, arguments
    ``{"command": action}``), ``step()`` (after_tool_call), ``step()`` again (on_turn_end), then
    the assistant message is captured as a turn (the harness observes it when it builds the next
    request), the manifest is rendered into the system prompt and ``overhead_tokens`` is set to
    system + manifest, exactly as ``transform_system`` does. The window is
    ``budget + reserve_tokens`` so that window − reserve is the budget every policy gets.

    Prompt tokens at step ``k``: system + manifest + ``engine.live_tokens`` (live items in full,
    evicted results as their stubs) + the harness's stub for every evicted assistant turn (the
    engine counts 0 for those). Re-references are the engine's own (``capture_tool_result`` and
    ``capture_turn`` touch what the action or turn names), as in the harness.

    ``info``: ``regrets`` (the engine saw the same command again while its result was evicted),
    ``fresh_evicted`` (steps whose newest observation — the result of the previous action — was
    already a stub when the model was to read it), ``threshold_end``.
    """
    base = config or ContextConfig()
    cfg = replace(base, window_tokens=budget + base.reserve_tokens)
    store = SQLiteStore(":memory:", embedder=embedder)
    engine = ContextEngine(
        store, session_id="replay", scope=f"replay:{t.id}", config=cfg, embedder=embedder
    )
    engine.capture_turn("user", t.instance, target="turn:1")
    system_tokens = t.system_tokens
    turn_stub = estimate_tokens(VEIL_TURN_STUB.format(id="ci_" + "x" * 20))
    obs_items: list[str] = []
    turn_items: list[str] = []
    tokens: list[int] = []
    live: list[frozenset[int]] = []
    regrets = 0
    fresh_evicted = 0
    manifest_tokens = estimate_tokens(engine.manifest())
    engine.overhead_tokens = system_tokens + manifest_tokens
    for k, s in enumerate(t.steps):
        items = {i.id: i for i in engine.items()}
        evicted_turns = sum(1 for i in turn_items if items[i].tier != "live")
        tokens.append(
            system_tokens + manifest_tokens + engine.live_tokens + evicted_turns * turn_stub
        )
        now = frozenset(j for j, i in enumerate(obs_items) if items[i].tier == "live")
        live.append(now)
        if k and k - 1 not in now:
            fresh_evicted += 1
        tool = s.tool
        item = engine.capture_tool_result(
            tool_call_id=f"call_{k}",
            tool_name=tool,
            arguments={"command": s.action} if s.action else {},
            output=s.observation,
        )
        obs_items.append(item.id)
        last = engine._threshold.last_regret_tick  # pyright: ignore[reportPrivateUsage]
        if last == engine.tick:
            regrets += 1
        engine.step()
        engine.step()
        turn = engine.capture_turn(
            "assistant", s.assistant, calls=["act"], target=f"turn:{2 * k + 2}"
        )
        turn_items.append(turn.id)
        manifest_tokens = estimate_tokens(engine.manifest())
        engine.overhead_tokens = system_tokens + manifest_tokens
    store.close()
    return Run(
        tokens,
        live,
        {
            "regrets": float(regrets),
            "fresh_evicted": float(fresh_evicted),
            "threshold_end": engine.threshold,
        },
    )
