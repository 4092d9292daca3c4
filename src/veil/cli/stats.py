"""What Veil's proxy did and saved, for people: ``veil claude`` / ``veil codex``'s exit summary
and ``veil stats [--session ID] [--since 7d] [--json]`` — both read the tape through
:mod:`veil.proxy.ledger`, so they always agree.

The summary says, in this order: requests and conversations (and the tool results Veil recognised —
none at all means the agent's requests changed shape and nothing could be evicted); tokens as the
agent sent them and as forwarded (in shadow mode: as Veil would have sent them); the provider's
cache reads and writes as it reported them; what Veil did (batches, requests over the budget that no
batch could meet, results out of the prompt, expands by the model, results re-read or re-run after
eviction, the agent's own compactions); the estimated cost with and without Veil and from which
table; how to resume the agent's session through Veil.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TextIO

from veil.llm.catalog import Catalog
from veil.proxy.ledger import Conversation, Figures, saved_share, total


def host_title(host: str | None) -> str:
    """The host's name as people call it (``veil.hosts``), "the agent" for a bare proxy."""
    from veil.hosts import HOSTS

    found = HOSTS.get(host or "")
    return found.title if found is not None else "the agent"


def summary(found: Sequence[Conversation], *, command: str, prices_date: str) -> list[str]:
    """The lines of ``veil COMMAND``'s exit summary for a run's conversations."""
    if not found:
        return [f"veil {command}: no request reached the model through Veil"]
    sums = total(found)
    title = host_title(next((c.host for c in found if c.host), None))
    shadow = any(c.shadow for c in found)
    count = len(found)
    lines = [
        f"veil {command}: {sums.requests:,} request{'s' if sums.requests != 1 else ''} in "
        f"{count} conversation{'s' if count != 1 else ''}, {sums.results:,} tool results "
        "recognised" + (" — shadow mode: every request went as the agent sent it" if shadow else "")
    ]
    if not sums.results:
        lines.append(
            f"  {sums.requests:,} requests, 0 tool results recognised: Veil could evict "
            f"nothing (has {title} changed its requests? `veil doctor` checks the setup)"
        )
    lines.append(f"  tokens  {_tokens(sums, title, shadow)}")
    lines.append(
        f"  cache   read {sums.cache_read:,}, written {sums.cache_write:,} (as the provider "
        f"reported them); replies {sums.output_tokens:,} tokens"
        + (
            ""
            if sums.measured == sums.requests
            else f"; {sums.requests - sums.measured} requests without usage (Veil's estimate)"
        )
    )
    lines.append(f"  veil    {_did(sums, title, shadow)}")
    lines.append(f"  cost    {_cost(found, sums, shadow, prices_date)}")
    from veil.hosts import HOSTS

    resume = next((c.agent_session for c in reversed(found) if c.agent_session), None)
    host = HOSTS.get(command)
    if resume and host is not None and host.resume:
        lines.append(f"  resume  veil {command} -- {host.resume.format(session=resume)}")
    return lines


def _tokens(sums: Figures, title: str, shadow: bool) -> str:
    verb = "would have forwarded" if shadow else "forwarded"
    share = saved_share(sums)
    change = ""
    if share is not None:
        change = f" ({100 * share:.0f}% fewer)" if share >= 0 else f" ({-100 * share:.0f}% more)"
    return f"{title} sent {sums.tokens_agent:,}; Veil {verb} {sums.tokens_sent:,}{change}"


def _did(sums: Figures, title: str, shadow: bool) -> str:
    would = "would have run " if shadow else ""
    cold = f" ({sums.cold_batches} on a cold cache)" if sums.cold_batches else ""
    unmet = (
        f"{sums.unmet:,} request{'s' if sums.unmet != 1 else ''} over the budget that no batch "
        f"could meet ({title}'s own text, tool inputs and unread results exceed it, or eliding "
        "old inputs would not pay yet); "
        if sums.unmet
        else ""
    )
    inputs = (
        f"{sums.inputs:,} old tool input{'s' if sums.inputs != 1 else ''} elided; "
        if sums.inputs
        else ""
    )
    return (
        f"{would}{sums.batches} batch{'es' if sums.batches != 1 else ''}{cold}; {unmet}"
        f"{sums.stubs:,} results out of the prompt (most at once); {inputs}"
        f"{sums.expands} expanded by the model; "
        f"{sums.rereads} re-read or re-run after eviction; "
        f"{sums.compactions} compaction{'s' if sums.compactions != 1 else ''} by {title}"
    )


def _cost(found: Sequence[Conversation], sums: Figures, shadow: bool, prices_date: str) -> str:
    priced = sorted({p for c in found for p in c.priced_by})
    unpriced = sorted({m for c in found for m in c.unpriced})
    if not priced:
        names = ", ".join(unpriced) or "the model"
        return (
            f"not estimated: no price for {names} in the table of {prices_date} "
            f'(add one to .veil/config.toml: [models."NAME"] input = …, output = …)'
        )
    with_veil = "would have cost" if shadow else "cost"
    ratio = (
        f"{100 * sums.cost_estimated / sums.cost_without_veil_estimated:.0f}%"
        if sums.cost_without_veil_estimated
        else "—"
    )
    text = (
        f"${sums.cost_estimated:,.2f} with Veil, ${sums.cost_without_veil_estimated:,.2f} "
        f"without: Veil {with_veil} {ratio} of it (estimated, list prices of {prices_date}: "
        f"{', '.join(priced)})"
    )
    if any(c.billing == "subscription" for c in found):
        share = saved_share(sums)
        text += "; a subscription login is not billed per token, so the cost is notional"
        if share is not None:
            text += f" and the saving is the {100 * share:.0f}% of tokens"
    if unpriced:
        text += f"; not priced: {', '.join(unpriced)}"
    return text


# ---- veil stats ------------------------------------------------------------------------------

_SINCE = re.compile(r"^(\d+)\s*([mhdw])$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_since(text: str, now: datetime) -> datetime:
    """``7d``, ``24h``, ``30m``, ``2w`` before ``now``, or a date (``2026-12-01``) or time.
    Raises ValueError naming what was given."""
    match = _SINCE.match(text.strip().lower())
    if match:
        return now - timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})
    try:
        moment = datetime.fromisoformat(text.strip())
        return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    except ValueError:
        raise ValueError(
            f"--since {text!r} is neither a span (7d, 24h, 30m, 2w) nor a date (2026-12-01)"
        ) from None


def run_stats(
    cwd: Path,
    *,
    session: str | None,
    since: str | None,
    as_json: bool,
    out: TextIO,
    err: TextIO,
    now: datetime | None = None,
) -> int:
    """``veil stats``: 0, or 2 on a bad option or an unknown session (one line on ``err``)."""
    from veil.agent.project import project_root, project_scope
    from veil.clock import SystemClock
    from veil.config_file import ConfigError
    from veil.llm.catalog import PRICES_DATE
    from veil.proxy.ledger import as_json as ledger_json
    from veil.proxy.ledger import read

    try:
        start = parse_since(since, now or SystemClock().now()) if since else None
    except ValueError as exc:
        print(f"veil stats: {exc}", file=err)
        return 2
    root = project_root(cwd)
    db = root / ".veil" / "context.db"
    found: list[Conversation] = []
    if db.exists():
        from veil.tape import open_store

        try:
            catalog = project_catalog(root / ".veil")
        except ConfigError as exc:
            print(f"veil stats: {exc}", file=err)
            return 2
        store = open_store(f"sqlite:///{db}")
        try:
            found = read(store, project_scope(root), since=start, catalog=catalog)
        finally:
            store.close()
    if session:
        found = [c for c in found if c.id.startswith(session) or c.agent_session == session]
        if not found:
            print(
                f"veil stats: no proxy conversation {session} in this project (see veil stats)",
                file=err,
            )
            return 2
    if as_json:
        print(json.dumps(ledger_json(found, PRICES_DATE), indent=2), file=out)
        return 0
    if not found:
        print(
            "no requests through Veil's proxy in this project"
            + (f" since {start:%Y-%m-%d %H:%M} UTC" if start else "")
            + " (veil claude, veil codex or veil proxy put them here)",
            file=out,
        )
        return 0
    _table(found, out)
    print(file=out)
    command = next((c.host for c in found if c.host), None) or "proxy"
    for line in summary(found, command=command, prices_date=PRICES_DATE)[1:]:
        if not line.lstrip().startswith("resume"):
            print(line, file=out)
    return 0


def _table(found: Sequence[Conversation], out: TextIO) -> None:
    print(
        f"{'CONVERSATION':<34}  {'LAST':<16}  {'HOST':<6} {'MODEL':<22} {'REQS':>5} "
        f"{'AGENT TOK':>11} {'SENT TOK':>11} {'BATCH':>5} {'COST':>9} {'WITHOUT':>9}",
        file=out,
    )
    for c in found:
        shadow = " (shadow)" if c.shadow else ""
        last = f"{c.last:%Y-%m-%d %H:%M}" if c.last else ""
        print(
            f"{c.id:<34}  {last:<16}  {(c.host or 'proxy'):<6} {c.model[:22]:<22} "
            f"{c.requests:>5} {c.tokens_agent:>11,} {c.tokens_sent:>11,} {c.batches:>5} "
            f"{_usd(c.cost_estimated, c):>9} {_usd(c.cost_without_veil_estimated, c):>9}"
            f"{shadow}",
            file=out,
        )


def _usd(value: float, c: Conversation) -> str:
    return "—" if not c.priced_by else f"${value:,.2f}"


def project_catalog(veil_home: Path) -> Catalog:
    """The model table with the project's overrides (``.veil/config.toml`` ``[models."…"]``);
    raises ConfigError naming a bad entry."""
    from veil.config_file import ConfigError, section

    overrides = section(veil_home, "models")
    for name, values in overrides.items():
        if not isinstance(values, dict):
            raise ConfigError(f'{veil_home / "config.toml"}: [models."{name}"] must be a table')
    try:
        return Catalog(overrides)
    except ValueError as exc:
        raise ConfigError(f"{veil_home / 'config.toml'}: [models] {exc}") from None


__all__ = ["host_title", "parse_since", "project_catalog", "run_stats", "summary"]
