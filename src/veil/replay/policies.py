"""Replaying a trajectory through a context policy: at every step, which earlier observations
are in the prompt in full, and what the prompt costs. Pure.

Every policy returns a :class:`Run`: for each step ``k`` the prompt tokens when the model chose
action ``k`` (the fixed part + the earlier assistant messages and observations as the policy
left them) and the set of earlier observations still there verbatim. A stubbed, cleared,
summarised or dropped observation is not verbatim. Budgets are prompt-token budgets (window −
reserve).

Cost with prompt caching (:func:`run_cost`): every model call is priced per input token — the
prefix it shares with the previous call (:attr:`Run.cached`) is a cache read at
:data:`PRICE_CACHE_READ` (0.1×), the rest a cache write at :data:`PRICE_CACHE_WRITE` (1.25×) of
the base input price 1.0 (Anthropic's 5-minute cache prices). A policy that rewrites the middle
of the prompt pays for the whole tail again. Compaction's summarising calls (:func:`compact_at`)
are priced the same way and added as :attr:`Run.extra_cost` (and listed in
:attr:`Run.extra_calls`, which :mod:`veil.replay.compare` prices in dollars). Here: keep-all and
compaction; the hosts' own rules are in :mod:`veil.replay.host_rules`, Veil through its proxy
in :mod:`veil.replay.proxy`, the benchmark's baselines in ``benchmarks/replay/policies.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from veil.replay.trajectory import Step, Trajectory


@dataclass
class Run:
    tokens: list[int]
    """Prompt tokens at each step (when the model chose that step's action)."""
    live: list[frozenset[int]]
    """Earlier observations in the prompt verbatim at each step."""
    info: dict[str, float] = field(default_factory=dict[str, float])
    cached: list[int] = field(default_factory=lambda: [])
    """At each step, the tokens at the start of the prompt that are byte for byte the previous
    step's prompt (what a provider's prompt cache serves); 0 at the first step."""
    extra_cost: float = 0.0
    """What calls besides the agent's own prompts cost (compaction's summarising calls), in
    base input-token prices (:func:`call_cost`)."""
    extra_calls: list[tuple[int, int, int]] = field(default_factory=lambda: [])
    """Those calls as (prompt tokens, cached prefix, output tokens)."""
    tails: list[int] = field(default_factory=lambda: [])
    """At each step, the tokens at the end of the prompt that are rewritten at every request
    by design (Veil's manifest and notes): not a change of what was already sent."""
    shown: list[dict[int, object]] = field(default_factory=lambda: [])
    """At each step, every earlier observation the prompt carries in some form (verbatim, a
    stub, cleared, clipped) → how it is shown (comparable between steps); a dropped or
    summarised one is absent. :func:`shape` reads the policy's behaviour from it."""


OBSERVATION_KINDS = frozenset({"o", "m", "c", "s", "t", "tool"})
"""Segment keys that stand for an observation: ``(kind, j, …)``."""


def observations(segments: Sequence[Segment]) -> dict[int, object]:
    """Observation ``j`` → its segment's key, for every observation a prompt carries."""
    out: dict[int, object] = {}
    for key, _ in segments:
        if isinstance(key, tuple) and len(key) >= 2 and key[0] in OBSERVATION_KINDS:  # pyright: ignore[reportUnknownArgumentType]
            j = key[1]  # pyright: ignore[reportUnknownVariableType]
            if isinstance(j, int):
                out[j] = key
    return out


@dataclass(frozen=True)
class Shape:
    """What a policy did to the prompt over a run, beside its tokens and misses."""

    stubs: int
    """Observations sent in a form other than verbatim (a stub, a placeholder, an excerpt),
    summed over requests."""
    batches: int
    """Requests whose prompt does not start with the previous request's prompt: something
    already sent changed (each such request rewrites the provider's cache from there on)."""
    back_to_back: int
    """Batches that came at the very next request after another batch."""
    changed: int
    """Already-sent observations shown otherwise than in the previous request (stubbed,
    cleared, clipped, dropped or summarised), summed over requests."""
    over_budget: int
    """Requests over the budget."""
    clipped_unread: int
    """Requests whose newest observation (the model has not read it yet) is not verbatim."""


def shape(run: Run, budget: int | None) -> Shape:
    stubs = changed = clipped = batches = back = 0
    previous_batch = False
    for k, now in enumerate(run.shown):
        live = run.live[k]
        stubs += sum(1 for j in now if j not in live)
        if k and (k - 1) in now and (k - 1) not in live:
            clipped += 1
        batch = False
        if k:
            before = run.shown[k - 1]
            moved = sum(1 for j, how in before.items() if now.get(j) != how)
            changed += moved
            tail = run.tails[k - 1] if run.tails else 0
            batch = run.cached[k] < run.tokens[k - 1] - tail
        batches += batch
        back += batch and previous_batch
        previous_batch = batch
    over = 0 if budget is None else sum(1 for x in run.tokens if x > budget)
    return Shape(stubs, batches, back, changed, over, clipped)


PRICE_INPUT = 1.0
"""The unit: one uncached input token."""
PRICE_CACHE_WRITE = 1.25
PRICE_CACHE_READ = 0.1


def call_cost(tokens: int, cached: int) -> float:
    """One call's input: the cached prefix read at 0.1×, the rest written to the cache at 1.25×
    (each relative to :data:`PRICE_INPUT`)."""
    return PRICE_INPUT * (PRICE_CACHE_READ * cached + PRICE_CACHE_WRITE * (tokens - cached))


def run_cost(run: Run) -> float:
    """A whole run's input cost with prompt caching: every step's prompt, plus the extra calls."""
    return sum(call_cost(x, c) for x, c in zip(run.tokens, run.cached, strict=True)) + (
        run.extra_cost
    )


Segment = tuple[object, int]
"""One part of a prompt: what it is (comparable between steps) and its tokens."""


def cached_prefix(previous: Sequence[Segment], current: Sequence[Segment]) -> int:
    """Tokens of ``current`` that repeat ``previous`` from the start, segment by segment."""
    total = 0
    for a, b in zip(previous, current, strict=False):
        if a != b:
            break
        total += b[1]
    return total


class PrefixTracker:
    """Collects a policy's prompts step by step and records the cached prefix of each."""

    def __init__(self) -> None:
        self.previous: list[Segment] = []
        self.cached: list[int] = []

    def add(self, segments: list[Segment]) -> None:
        self.cached.append(cached_prefix(self.previous, segments) if self.previous else 0)
        self.previous = segments


def prompt_of(t: Trajectory, k: int, obs: list[Segment | None]) -> list[Segment]:
    """The prompt at step ``k``: the fixed part, then every earlier (assistant message,
    observation) pair — ``obs[j]`` is the observation's segment as the policy shows it, or None
    when the policy dropped the whole pair."""
    out: list[Segment] = [("fixed", t.fixed_tokens)]
    for j in range(k):
        o = obs[j]
        if o is None:
            continue
        out.append((("a", j), t.steps[j].assistant_tokens))
        if o[1] or o[0] != "gone":
            out.append(o)
    return out


def run_of(
    t: Trajectory,
    prompts: Sequence[list[Segment]],
    live: list[frozenset[int]],
    info: dict[str, float] | None = None,
) -> Run:
    tracker = PrefixTracker()
    for segments in prompts:
        tracker.add(segments)
    return Run(
        [sum(x[1] for x in p) for p in prompts],
        live,
        info or {},
        tracker.cached,
        shown=[observations(p) for p in prompts],
    )


def keep_all(t: Trajectory) -> Run:
    prompts: list[list[Segment]] = []
    for k in range(len(t.steps)):
        prompts.append(prompt_of(t, k, [(("o", j), t.steps[j].obs_tokens) for j in range(k)]))
    return run_of(t, prompts, [frozenset(range(k)) for k in range(len(t.steps))])


def compaction_params(t: Trajectory, budget: int) -> tuple[int, int]:
    """(keep_recent, summary_tokens): pi's 20,000 recent tokens and a summary of at most 2,000,
    both capped for small budgets at half and a tenth of the room above the fixed prompt."""
    room = max(1, budget - t.fixed_tokens)
    return min(20_000, room // 2), max(50, min(2_000, room // 10))


def compact_at(
    t: Trajectory,
    trigger: int,
    keep_recent: int,
    summary: int,
    *,
    cut_rule: str = "pairs",
    shown: Sequence[int] | None = None,
    clipped: frozenset[int] = frozenset(),
) -> Run:
    """Compaction at ``trigger``: before step ``k``'s call, if the prompt exceeds ``trigger``
    (and holds at least two steps since the last cut), the steps before a cut point become one
    summary of ``summary`` tokens, and the conversation continues from the kept steps.

    ``cut_rule``: ``"pairs"`` keeps the newest whole steps whose tokens fit in ``keep_recent``
    (at least the newest); ``"pi"`` is pi's ``findCutPoint``: walk back message by message
    (observation, then its assistant message) until ``keep_recent`` tokens are reached, and cut
    at the first assistant message at or after that point — the newest step always stays
    (pi itself would then keep everything, and overflow).

    ``shown``: each observation's tokens as the host shows it (default: in full); ``clipped``:
    observations shown cut short (never verbatim). The summarising call reads the prompt it
    replaces; it is priced with its cached prefix into :attr:`Run.extra_cost`."""
    steps = t.steps
    obs_tokens = list(shown) if shown is not None else [s.obs_tokens for s in steps]
    pairs = [s.assistant_tokens + obs_tokens[j] for j, s in enumerate(steps)]
    cut = 0
    summary_tokens = 0
    compactions = 0
    summarise = 0
    extra = 0.0
    calls: list[tuple[int, int, int]] = []

    def prompt_at(k: int) -> list[Segment]:
        obs: list[Segment | None] = [
            None if j < cut else ((("t" if j in clipped else "o"), j), obs_tokens[j])
            for j in range(k)
        ]
        prompt = prompt_of(t, k, obs)
        if summary_tokens:
            prompt.insert(1, (("summary", cut), summary_tokens))
        return prompt

    prompts: list[list[Segment]] = []
    live: list[frozenset[int]] = []
    for k in range(len(steps)):
        cost = t.fixed_tokens + summary_tokens + sum(pairs[cut:k])
        if cost > trigger and k - cut > 1:
            new_cut = _cut_point(steps, obs_tokens, pairs, cut, k, keep_recent, cut_rule)
            if new_cut > cut:
                before = prompt_at(k)
                read = cached_prefix(prompts[-1], before) if prompts else 0
                extra += call_cost(sum(x[1] for x in before), read)
                calls.append((sum(x[1] for x in before), read, summary))
                summarise += cost
                cut = new_cut
                summary_tokens = summary
                compactions += 1
        prompts.append(prompt_at(k))
        live.append(frozenset(j for j in range(cut, k) if j not in clipped))
    run = run_of(
        t, prompts, live, {"compactions": float(compactions), "summarise_tokens": summarise}
    )
    run.extra_cost = extra
    run.extra_calls = calls
    return run


def _cut_point(
    steps: Sequence[Step],
    obs_tokens: Sequence[int],
    pairs: Sequence[int],
    cut: int,
    k: int,
    keep_recent: int,
    rule: str,
) -> int:
    """The first step kept verbatim when compacting before step ``k`` (see :func:`compact_at`)."""
    if rule == "pi":
        acc = 0
        for j in range(k - 1, cut - 1, -1):
            acc += obs_tokens[j]
            if acc >= keep_recent:  # crossed on the observation: cut at the next assistant
                return min(j + 1, k - 1)
            acc += steps[j].assistant_tokens
            if acc >= keep_recent:
                return j
        return cut  # everything fits in keep_recent: pi summarises nothing
    acc = 0
    new_cut = k
    for j in range(k - 1, cut - 1, -1):
        if acc + pairs[j] > keep_recent and new_cut < k:
            break
        acc += pairs[j]
        new_cut = j
    return new_cut
