"""One session replayed three ways — what ``veil replay`` reports. Pure.

For a :class:`~veil.replay.transcripts.Transcript` (the requests an agent sent, rebuilt from its
own session file):

- **keep-all**: every request as it happened, every message in full
  (:func:`veil.replay.policies.keep_all`). Its size is checked against the input tokens the
  provider recorded for each request: :attr:`SessionReplay.fit` is the rebuilt tokens over the
  recorded ones, over the requests before the host's own first compaction (after it the agent
  sent less than the whole history);
- **host**: the agent's own rule at its real threshold (:mod:`veil.replay.host_rules`): Claude
  Code's compaction, Codex's compaction with its 10,000-token cap on every tool output;
- **veil**: Veil's proxy on every request (:func:`veil.replay.proxy.veil_proxy`: the batch rule
  of :mod:`veil.context.batching` as ``veil claude`` / ``veil codex`` run it), at the budget the
  proxy would keep.

Tokens are the replay's estimate (:func:`veil.tokens.estimate_tokens`, about 4 characters a
token) — the fit says how that compares with the provider's count — and the thresholds, given
in the provider's tokens, are converted by the fit, as the proxy calibrates its own count by
the provider's usage. Each request carries the user text read just before it, which every
policy keeps.

Cost is the input's, with prompt caching: each request's prefix shared with the previous
request is a cache read, the rest a 5-minute cache write, plus the host's summarising calls
(their output too). With the model's prices (:data:`Rates`, from the model table) it is in US
dollars; for a model without prices it is relative to keep-all (keep-all = 1). The miss rate is
the need detector's (:mod:`veil.replay.needs`): needs whose every source was not in the prompt
verbatim, over all needs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from veil.embed import default_embedder
from veil.embed.protocol import Embedder
from veil.replay.host_rules import CODEX_TOOL_OUTPUT_TOKENS, claude_compaction, codex
from veil.replay.needs import Need, detect_needs, misses
from veil.replay.policies import Run, call_cost, compaction_params, keep_all
from veil.replay.proxy import veil_proxy
from veil.replay.transcripts import Transcript

Rates = Callable[[int], tuple[float, float, float, float, float]]
"""USD per token for (input, output, 5-minute cache write, 1-hour cache write, cache read) of a
request of so many input tokens — :meth:`veil.llm.catalog.ModelInfo.rates`."""

USD = "usd"
RELATIVE = "keep-all=1"
ARMS = ("keep_all", "host", "veil")


@dataclass(frozen=True)
class Setting:
    """What one session is replayed with (the caller reads it from the host and model)."""

    budget: int
    """Veil's request budget, in the provider's tokens (as the proxy would keep)."""
    host_trigger: int | None
    """Where the host compacts on its own, in the provider's tokens (None: never)."""
    rates: Rates | None = None
    """The model's prices (None: not in the table)."""
    embedder: Embedder | None = None
    """Veil's embedder (default: :func:`veil.embed.default_embedder`, the static one)."""
    expand_tool: str | None = None
    """How Veil's stubs name its expand tool for this host."""


@dataclass(frozen=True)
class Arm:
    """One policy over one session (or the total of sessions)."""

    tokens: int
    """Input tokens summed over the requests."""
    units: float
    """Cost in base input-token prices (:func:`veil.replay.policies.call_cost`)."""
    usd: float | None
    """Cost in US dollars (None: no prices)."""
    needs: int
    misses: int
    per_request: tuple[int, ...] = ()
    peak: int = 0
    rule: str = ""
    info: Mapping[str, float] = field(default_factory=dict[str, float])

    @property
    def miss_rate(self) -> float | None:
        return self.misses / self.needs if self.needs else None


@dataclass(frozen=True)
class SessionReplay:
    transcript: Transcript
    keep_all: Arm
    host: Arm
    veil: Arm
    recorded_tokens: int
    """Input tokens the provider recorded, summed over the requests that recorded usage."""
    fit: float | None
    """Rebuilt over recorded tokens, over :attr:`fit_requests` requests (None: none)."""
    fit_requests: int
    shrank_at: int | None
    """The step of the first request whose recorded input was smaller than the one before
    (changed on the way); the fit covers the requests before it."""
    budget: int
    """Veil's budget in the provider's tokens (the setting's)."""
    host_trigger: int | None

    @property
    def shrank_request(self) -> int | None:
        """:attr:`shrank_at` as the request's number in the session (1-based)."""
        if self.shrank_at is None:
            return None
        steps = self.transcript.trajectory.steps
        return 1 + sum(1 for s in steps[: self.shrank_at] if s.request)

    @property
    def arms(self) -> dict[str, Arm]:
        return {"keep_all": self.keep_all, "host": self.host, "veil": self.veil}

    @property
    def priced(self) -> bool:
        return self.keep_all.usd is not None


SHRINK = 0.99
"""A request whose recorded input is below this share of the one before it was changed on the
way (keep-all only grows)."""


def _fit(t: Transcript, keep: Run) -> tuple[float | None, int, int | None]:
    """Rebuilt over recorded tokens, the requests that counted, and the first request whose
    recorded input shrank. Keep-all only grows, so a smaller request was changed on the way —
    Veil's proxy (a session run through ``veil claude``), the agent's context editing — and it
    and every later one are left out of the check, as the requests after a compaction are."""
    steps = t.trajectory.steps
    rebuilt = recorded = n = 0
    before: int | None = None
    for k, s in enumerate(steps):
        got = t.recorded[k]
        if got is None or not s.request or (t.compacted_at is not None and k >= t.compacted_at):
            continue
        if before is not None and got < SHRINK * before:
            return (rebuilt / recorded if recorded else None), n, k
        before = got
        rebuilt += keep.tokens[k] + s.prompt_tokens
        recorded += got
        n += 1
    return (rebuilt / recorded if recorded else None), n, None


def _arm(t: Transcript, run: Run, needs: Sequence[Need], rates: Rates | None, rule: str) -> Arm:
    steps = t.trajectory.steps
    per_request: list[int] = []
    units = 0.0
    usd = 0.0
    shared: int | None = None  # the prefix shared with the previous request, step by step
    for k, s in enumerate(steps):
        step_cached = run.cached[k] if run.cached else 0
        shared = step_cached if shared is None else min(shared, step_cached)
        if not s.request:  # a parallel call: no request, the next one is priced from the last
            continue
        tokens = run.tokens[k] + s.prompt_tokens
        cached = min(shared, tokens)
        shared = None
        per_request.append(tokens)
        units += call_cost(tokens, cached)
        if rates is not None:
            _, _, write, _, read = rates(tokens)
            usd += cached * read + (tokens - cached) * write
    for prompt, cached, output in run.extra_calls:
        units += call_cost(prompt, cached)
        if rates is not None:
            _, per_out, write, _, read = rates(prompt)
            usd += cached * read + (prompt - cached) * write + output * per_out
    missed = sum(misses(needs, run.live)) if needs else 0
    return Arm(
        tokens=sum(per_request), units=units, usd=usd if rates is not None else None,
        needs=len(needs), misses=missed, per_request=tuple(per_request),
        peak=max(per_request, default=0), rule=rule, info=dict(run.info),
    )  # fmt: skip


def _host_run(t: Transcript, trigger: int | None, scale: float) -> tuple[Run, str]:
    traj = t.trajectory
    if trigger is None:
        return keep_all(traj), "its compaction is off: keep-all"
    at = max(1, round(trigger * scale))
    _, summary = compaction_params(traj, at)
    if t.host == "codex":
        cap = max(1, round(CODEX_TOOL_OUTPUT_TOKENS * scale))
        return codex(traj, at, cap, summary), f"compaction at {trigger:,}, outputs cut to 10,000"
    return claude_compaction(traj, at, summary), f"compaction at {trigger:,}"


def replay_session(t: Transcript, setting: Setting) -> SessionReplay:
    """The three policies over one session (see the module docstring)."""
    traj = t.trajectory
    needs = detect_needs(traj.steps, f"{traj.system}\n{traj.instance}")
    keep = keep_all(traj)
    fit, fit_requests, shrank_at = _fit(t, keep)
    scale = fit or 1.0
    host_run, host_rule = _host_run(t, setting.host_trigger, scale)
    budget = max(1, round(setting.budget * scale))
    embedder = setting.embedder or default_embedder()
    veil_run = veil_proxy(traj, budget, embedder, expand_tool=setting.expand_tool)
    rates = setting.rates
    return SessionReplay(
        transcript=t,
        keep_all=_arm(t, keep, needs, rates, "every message in full, as it happened"),
        host=_arm(t, host_run, needs, rates, host_rule),
        veil=_arm(t, veil_run, needs, rates, f"Veil's proxy at a budget of {setting.budget:,}"),
        recorded_tokens=sum(x for x in t.recorded if x is not None),
        fit=fit,
        fit_requests=fit_requests,
        shrank_at=shrank_at,
        budget=setting.budget,
        host_trigger=setting.host_trigger,
    )


# ---- figures ---------------------------------------------------------------------------


def _cost(arm: Arm, keep: Arm, unit: str) -> float:
    if unit == RELATIVE:
        return arm.units / keep.units if keep.units else 1.0
    return arm.usd or 0.0


def _arm_json(arm: Arm, keep: Arm, unit: str) -> dict[str, Any]:
    rate = arm.miss_rate
    cost, keep_cost = _cost(arm, keep, unit), _cost(keep, keep, unit)
    return {
        "tokens": arm.tokens,
        "cost": round(cost, 6),
        "cost_vs_keep_all": round(cost / keep_cost, 4) if keep_cost else None,
        "tokens_vs_keep_all": round(arm.tokens / keep.tokens, 4) if keep.tokens else None,
        "miss_rate": None if rate is None else round(rate, 4),
        "misses": arm.misses,
        "peak": arm.peak,
        "rule": arm.rule,
    }


def session_json(r: SessionReplay) -> dict[str, Any]:
    """One session's figures, as ``veil replay --json`` gives them."""
    t = r.transcript
    unit = USD if r.priced else RELATIVE
    return {
        "id": t.id,
        "agent": t.host,
        "model": t.model,
        "path": t.path,
        "requests": t.requests,
        "recorded_tokens": r.recorded_tokens,
        "fit": None if r.fit is None else round(r.fit, 4),
        "fit_requests": r.fit_requests,
        "changed_on_the_way_at_request": r.shrank_request,
        "needs": r.keep_all.needs,
        "cost_unit": unit,
        "veil_budget": r.budget,
        "host_compacts_at": r.host_trigger,
        "host_compactions": t.compactions,
        "corrupt_lines": t.corrupt_lines,
        "subagent_requests_skipped": t.skipped_requests,
        **{name: _arm_json(arm, r.keep_all, unit) for name, arm in r.arms.items()},
    }


def _sum(arms: Sequence[Arm], rule: str) -> Arm:
    priced = [a.usd for a in arms if a.usd is not None]
    return Arm(
        tokens=sum(a.tokens for a in arms), units=sum(a.units for a in arms),
        usd=sum(priced) if priced else None, needs=sum(a.needs for a in arms),
        misses=sum(a.misses for a in arms), peak=max((a.peak for a in arms), default=0),
        rule=rule,
    )  # fmt: skip


def totals(results: Sequence[SessionReplay]) -> dict[str, Arm]:
    """Each policy summed over the sessions."""
    return {name: _sum([r.arms[name] for r in results], "total") for name in ARMS}


def total_unit(results: Sequence[SessionReplay]) -> str:
    """The total cost's unit: dollars when every session is priced, keep-all-relative when
    none is, else dollars over the priced sessions only."""
    priced = sum(r.priced for r in results)
    if priced == len(results):
        return USD
    if not priced:
        return RELATIVE
    return f"{USD} ({priced} of {len(results)} sessions priced)"


def total_json(results: Sequence[SessionReplay]) -> dict[str, Any]:
    """The total: tokens and misses over every session; cost in :func:`total_unit`'s unit (in
    dollars, over the priced sessions)."""
    unit = total_unit(results)
    sums = totals(results)
    costed = totals([r for r in results if r.priced]) if unit != RELATIVE else sums
    fitted = [r for r in results if r.fit is not None]
    recorded = sum(fit_recorded(r) for r in fitted)
    rebuilt = sum((r.fit or 0.0) * fit_recorded(r) for r in fitted)
    out: dict[str, Any] = {
        "sessions": len(results),
        "requests": sum(r.transcript.requests for r in results),
        "recorded_tokens": sum(r.recorded_tokens for r in results),
        "fit": round(rebuilt / recorded, 4) if recorded else None,
        "needs": sum(r.keep_all.needs for r in results),
        "cost_unit": unit,
    }
    cost_unit = RELATIVE if unit == RELATIVE else USD
    for name, arm in sums.items():
        figures = _arm_json(arm, sums["keep_all"], cost_unit)
        priced = _arm_json(costed[name], costed["keep_all"], cost_unit)
        figures["cost"], figures["cost_vs_keep_all"] = priced["cost"], priced["cost_vs_keep_all"]
        del figures["rule"]
        out[name] = figures
    return out


def fit_recorded(r: SessionReplay) -> int:
    """The recorded input tokens the fit compares with: the requests :func:`_fit` counted."""
    t = r.transcript
    ends = [k for k in (t.compacted_at, r.shrank_at) if k is not None]
    end = min(ends) if ends else len(t.recorded)
    steps = t.trajectory.steps
    return sum(
        got for k, got in enumerate(t.recorded[:end]) if got is not None and steps[k].request
    )


def as_json(results: Sequence[SessionReplay]) -> dict[str, Any]:
    """``veil replay --json``: ``{"sessions": [...], "total": {...}}``."""
    return {"sessions": [session_json(r) for r in results], "total": total_json(results)}


__all__ = [
    "ARMS",
    "RELATIVE",
    "USD",
    "Arm",
    "Rates",
    "SessionReplay",
    "Setting",
    "as_json",
    "replay_session",
    "session_json",
    "total_json",
    "total_unit",
    "totals",
]
