"""Nothing kept forever: how long a project's working memory stays, and how large it may grow.

``.veil/context.db`` keeps every session's transcript and working memory (tool outputs in
full, so that ``veil_expand`` can restore them). Without a limit it only grows — a ``cat`` of
a 3 MB log adds megabytes. :func:`apply_retention` purges, physically and with a receipt
(:meth:`Store.purge`), the sessions that have not been touched for ``max_age_days`` and then,
while the project's sessions take more than ``max_megabytes``, the oldest of the rest. The
running session is never purged. What goes: the sessions' transcripts and working memory
(``session.*``, ``context.*`` events); what stays: the attempt record of each goal
(``convergence.*``, small, and what lets a later session say "that fix already failed") and
long-term memory (``.veil/memory.db``: facts are never deleted, only ``veil memory forget``).

Settings (``.veil/config.toml``)::

    [retention]
    max_age_days = 30        # 0: keep sessions whatever their age
    max_megabytes = 256      # 0: no size limit

:func:`expired` decides (pure); :func:`apply_retention` reads the sessions and purges.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from veil.agent.sessions import SessionInfo, Sessions
from veil.tape import ErasureReceipt, PurgeSelection, Store

WORKING_MEMORY = ("session.", "context.")
"""The events a retention purge removes (a session's transcript and working memory)."""


@dataclass(frozen=True)
class Retention:
    """How long sessions stay and how much they may take (0 turns a limit off)."""

    max_age_days: int = 30
    max_megabytes: int = 256

    def __post_init__(self) -> None:
        for name in ("max_age_days", "max_megabytes"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"retention.{name}: expected a whole number >= 0, got {value!r}")

    @classmethod
    def from_mapping(cls, table: Mapping[str, Any]) -> Retention:
        """From the settings file's ``[retention]`` table (missing keys: the defaults)."""
        unknown = sorted(set(table) - {"max_age_days", "max_megabytes"})
        if unknown:
            raise ValueError(
                f"retention: unknown key {unknown[0]!r} (expected max_age_days, max_megabytes)"
            )
        return cls(**{k: v for k, v in table.items()})


def expired(
    sessions: Sequence[SessionInfo],
    sizes: Mapping[str | None, int],
    *,
    now: datetime,
    policy: Retention,
    keep: str | None = None,
) -> list[str]:
    """The sessions to purge, oldest first: not updated for ``max_age_days``, then the oldest
    of the rest while all of them take more than ``max_megabytes``. ``keep`` (the running
    session) is never among them."""
    ordered = sorted((s for s in sessions if s.id != keep), key=lambda s: s.updated_at)
    out: list[str] = []
    if policy.max_age_days:
        cutoff = now - timedelta(days=policy.max_age_days)
        out = [s.id for s in ordered if s.updated_at < cutoff]
    if policy.max_megabytes:
        limit = policy.max_megabytes * 1024 * 1024
        total = sum(sizes.get(s.id, 0) for s in sessions if s.id not in out)
        for session in ordered:
            if total <= limit:
                break
            if session.id not in out:
                out.append(session.id)
                total -= sizes.get(session.id, 0)
    return out


def apply_retention(
    store: Store,
    sessions: Sessions,
    *,
    policy: Retention,
    now: datetime,
    keep: str | None = None,
) -> ErasureReceipt | None:
    """Purge what :func:`expired` names (one purge, one receipt); None when nothing is due."""
    doomed = expired(
        sessions.list(limit=100_000),
        store.sizes(sessions.scope, field="session_id"),
        now=now,
        policy=policy,
        keep=keep,
    )
    if not doomed:
        return None
    selection = PurgeSelection(scope=sessions.scope, sessions=tuple(doomed), kinds=WORKING_MEMORY)
    return store.purge(selection)
