"""``veil replay PATH… [--json] [--plot FILE] [--window N]``: would Veil have paid on your own
sessions? Each Claude Code transcript and Codex rollout named (a directory: every ``*.jsonl``
under it) is rebuilt request by request and replayed three ways — keep-all as it happened
(checked against the usage the file recorded), the agent's own rule, and Veil's proxy — by
:mod:`veil.replay.compare`, the same code as ``benchmarks/replay``. Nothing is sent anywhere.

Here: what each session is replayed with — the host's threshold and Veil's budget for the
session's model (:mod:`veil.hosts`, as ``veil claude`` / ``veil codex`` compute them;
``--window N`` gives Veil the budget ``veil claude --window N`` would keep, the host keeps its
own), the model's prices (the model table with ``.veil/config.toml``'s overrides) — and the
report: a table per session and in total, ``--json``, ``--plot``.
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TextIO

from veil.extras import install_command
from veil.replay.compare import (
    RELATIVE,
    USD,
    Arm,
    SessionReplay,
    Setting,
    as_json,
    fit_recorded,
    replay_session,
    total_unit,
    totals,
)
from veil.replay.transcripts import Transcript, TranscriptError, find_transcripts, read_transcript

PLOT_MISSING = (
    f"veil replay: --plot needs matplotlib, which is not installed: {install_command('plot')}"
)
PLOTTED_SESSIONS = 12
"""At most this many sessions get a panel in ``--plot``'s figure."""


def run_replay(
    paths: Sequence[Path],
    *,
    as_json_output: bool,
    plot: Path | None,
    window: int | None,
    out: TextIO,
    err: TextIO,
    env: Mapping[str, str] | None = None,
    root: Path | None = None,
) -> int:
    """The command: 0, or 2 with one line on ``err`` naming what is wrong."""
    if plot is not None and importlib.util.find_spec("matplotlib") is None:
        print(PLOT_MISSING, file=err)
        return 2
    env = dict(os.environ) if env is None else env
    try:
        found = find_transcripts(paths)
        sessions, skipped = _read(found)
    except TranscriptError as exc:
        print(f"veil replay: {exc}", file=err)
        return 2
    if not sessions:
        print(
            f"veil replay: no Claude Code transcript or Codex rollout with a request in "
            f"{', '.join(str(p) for p in paths)} ({len(skipped)} files skipped)",
            file=err,
        )
        return 2
    try:
        settings = _settings(sessions, window, env, root or Path.cwd())
    except ValueError as exc:  # a bad [models] override
        print(f"veil replay: {exc}", file=err)
        return 2
    results: list[SessionReplay] = []
    for t, setting in zip(sessions, settings, strict=True):
        try:
            results.append(replay_session(t, setting))
        except Exception as exc:  # a file read as a session that still cannot be replayed
            print(f"veil replay: {t.path}: cannot be replayed ({type(exc).__name__}: {exc})",
                  file=err)  # fmt: skip
            return 2
    if as_json_output:
        data = as_json(results)
        data["skipped_files"] = skipped
        print(json.dumps(data, indent=2), file=out)
    else:
        print("\n".join(report(results, skipped, window)), file=out)
    if plot is not None:
        draw(results, plot)
        print(f"veil replay: wrote {plot}", file=err)
    return 0


def _read(found: Sequence[tuple[Path, bool]]) -> tuple[list[Transcript], list[str]]:
    """The sessions; a file found in a directory that is no session is skipped (and said)."""
    sessions: list[Transcript] = []
    skipped: list[str] = []
    for path, named in found:
        try:
            sessions.append(read_transcript(path))
        except TranscriptError as exc:
            if named:
                raise
            skipped.append(str(exc))
    return sessions, skipped


def _settings(
    sessions: Sequence[Transcript], window: int | None, env: Mapping[str, str], root: Path
) -> list[Setting]:
    from veil.cli.stats import project_catalog
    from veil.config_file import ConfigError
    from veil.context.budget import request_budget
    from veil.embed import default_embedder
    from veil.hosts import HOSTS
    from veil.launch import LAUNCHERS

    try:
        catalog = project_catalog(root / ".veil")
    except ConfigError as exc:
        raise ValueError(str(exc)) from None
    embedder = default_embedder()
    out: list[Setting] = []
    for t in sessions:
        host = HOSTS[t.host]
        settings = LAUNCHERS[t.host].settings(env) if t.host in LAUNCHERS else dict(env)
        model = t.model or host.default_model
        info = catalog.lookup(model)
        known = info.context_window if info is not None else 200_000
        trigger = host.compaction(model, host.window(model, known, settings), settings)
        budget = (
            request_budget(window) if window is not None else host.budget(model, settings, catalog)
        )
        rates = info.rates if info is not None and info.priced else None
        out.append(Setting(budget, trigger, rates, embedder, host.expand_tool))
    return out


# ---- the report ------------------------------------------------------------------------

TITLES = {"claude": "Claude Code", "codex": "Codex"}


def _cost(value: float, unit: str) -> str:
    return f"${value:,.4f}" if unit == USD else f"{value:.3f}"


def _miss(arm: Arm) -> str:
    rate = arm.miss_rate
    return "—" if rate is None else f"{rate:.1%}"


def _rows(arms: Mapping[str, Arm], host: str, unit: str, notes: Mapping[str, str]) -> list[str]:
    """The three policies' rows: tokens, peak request, cost, each against keep-all's, and the
    miss rate."""
    keep = arms["keep_all"]

    def cost_of(arm: Arm) -> float:
        if unit == RELATIVE:
            return arm.units / keep.units if keep.units else 1.0
        return arm.usd or 0.0

    cost = f"cost ({_unit_words(unit)})"
    lines = [f"  {'':<13}{'tokens':>11}{'':>6}{'peak':>9}{cost:>19}{'':>6}{'miss rate':>11}"]
    for name, label in (("keep_all", "keep-all"), ("host", host), ("veil", "Veil")):
        arm = arms[name]
        share = _share(arm.tokens, keep.tokens) if name != "keep_all" else ""
        cost_share = _share(cost_of(arm), cost_of(keep)) if name != "keep_all" else ""
        lines.append(
            f"  {label:<13}{arm.tokens:>11,}{share:>6}{arm.peak:>9,}"
            f"{_cost(cost_of(arm), unit):>19}{cost_share:>6}{_miss(arm):>11}"
            f"  {notes.get(name, '')}".rstrip()
        )
    return lines


def _share(value: float, whole: float) -> str:
    return f"{value / whole:.0%}" if whole else ""


def _shown(path: str) -> str:
    """A path with the home directory as ``~``."""
    home = str(Path.home())
    return "~" + path[len(home) :] if home != "/" and path.startswith(home + "/") else path


def _unit_words(unit: str) -> str:
    return "USD" if unit == USD else "keep-all = 1"


def _session(r: SessionReplay) -> list[str]:
    t = r.transcript
    title = TITLES.get(t.host, t.host)
    unit = USD if r.priced else RELATIVE
    lines = [
        f"{t.id[:8]}  {title} · {t.model or 'model unknown'} · {t.requests} requests · "
        f"{_shown(t.path)}"
    ]
    if r.fit is None:
        lines.append("  no request recorded its usage: the rebuilt size cannot be checked")
    else:
        recorded = fit_recorded(r)
        lines.append(
            f"  rebuilt {round(r.fit * recorded):,} tokens = {r.fit:.1%} of the {recorded:,} "
            f"{title} recorded over {r.fit_requests} requests"
        )
    if r.shrank_request is not None:
        lines.append(
            f"  request {r.shrank_request} recorded less input than the one before: the "
            "conversation was changed on the way (through `veil claude`/`veil codex`, or the "
            "agent's context editing); the check covers the requests before it"
        )
    if t.compactions:
        lines.append(
            f"  {title} compacted this session itself {t.compactions} time(s): the check "
            "covers the requests before"
        )
    if not r.priced:
        lines.append(f"  {t.model or 'the model'} has no price in the table: cost keep-all = 1")
    needs = r.keep_all.needs
    notes = {
        "keep_all": f"{needs} need{'s' if needs != 1 else ''}",
        "host": r.host.rule
        + (
            " (not reached)"
            if r.host_trigger is not None and not r.host.info.get("compactions")
            else ""
        ),
        "veil": f"budget {r.budget:,}",
    }
    lines += _rows(r.arms, title, unit, notes)
    extra: list[str] = []
    if t.corrupt_lines:
        extra.append(f"{t.corrupt_lines} corrupt line(s) skipped")
    if t.skipped_requests:
        extra.append(f"{t.skipped_requests} sub-agent request(s) not replayed")
    if extra:
        lines.append("  " + "; ".join(extra))
    return lines


def report(
    results: Sequence[SessionReplay], skipped: Sequence[str], window: int | None
) -> list[str]:
    """``veil replay``'s text: a table per session, then the total."""
    budget = (
        f"Veil at the budget `veil claude --window {window:,}` keeps"
        if window is not None
        else "Veil at the budget its proxy keeps (just below where the agent compacts)"
    )
    lines = [
        f"veil replay: {len(results)} session{'s' if len(results) != 1 else ''}, "
        f"{sum(r.transcript.requests for r in results):,} requests rebuilt from the files; "
        "nothing sent anywhere.",
        f"Keep-all, the agent's own rule, and {budget}. Tokens are Veil's estimate (about 4 "
        "characters each); cost is the input's, with prompt caching.",
        "",
    ]
    for r in results:
        lines += [*_session(r), ""]
    unit = total_unit(results)
    sums = totals(results)
    if len(results) > 1:
        lines.append(f"total  {len(results)} sessions")
        cost_unit = RELATIVE if unit == RELATIVE else USD
        if cost_unit == USD and unit != USD:  # tokens of every session, dollars of the priced
            priced = totals([r for r in results if r.priced])
            lines.append(f"  cost over the priced sessions only ({unit.split('(', 1)[1][:-1]})")
            sums = {n: replace(a, usd=priced[n].usd) for n, a in sums.items()}
        lines += _rows(sums, "agent's rule", cost_unit, {})
    for reason in skipped:
        lines.append(f"skipped {reason}")
    return lines


def draw(results: Sequence[SessionReplay], path: Path) -> None:
    """Tokens per request for each policy, one panel per session (and the recorded usage)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = list(results[:PLOTTED_SESSIONS])
    fig, axes = plt.subplots(len(shown), 1, figsize=(9, 3.2 * len(shown)), squeeze=False)
    for ax, r in zip(axes[:, 0], shown, strict=True):
        t = r.transcript
        title = TITLES.get(t.host, t.host)
        lines = (("keep_all", "keep-all", "--", 2.4), ("host", title, "-", 1.4),
                 ("veil", "Veil", "-", 1.8))  # fmt: skip
        for name, label, style, width in lines:
            series = r.arms[name].per_request
            ax.plot(
                range(1, len(series) + 1), series, label=label, linestyle=style, linewidth=width
            )
        recorded = [x for k, x in enumerate(t.recorded) if t.trajectory.steps[k].request]
        points = [(n + 1, x) for n, x in enumerate(recorded) if x is not None]
        if points:
            ax.scatter(*zip(*points, strict=True), s=8, color="black", label="recorded")
        ax.set_title(f"{t.id[:8]} · {title} · {t.model}", fontsize=9)
        ax.set_xlabel("request")
        ax.set_ylabel("input tokens")
        ax.legend(fontsize=8)
    if len(results) > PLOTTED_SESSIONS:
        fig.suptitle(f"the first {PLOTTED_SESSIONS} of {len(results)} sessions")  # pyright: ignore[reportUnknownMemberType]
    fig.tight_layout()
    fig.savefig(path, dpi=110)  # pyright: ignore[reportUnknownMemberType]
    plt.close(fig)


__all__ = ["PLOT_MISSING", "draw", "report", "run_replay"]
