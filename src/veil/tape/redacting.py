"""No secret reaches the tape: every event is redacted before it is sealed and written.

The store's :class:`~veil.redaction.Redactor` runs over every string of an event's payload and
provenance (:meth:`SqlTape.append`), so whatever layer wrote the event — the harness's capture,
a hook, the proxy, ``remember``, an import, a server — what is stored, indexed (full text and
vectors are projections of the payload) and later read back holds ``[secret:KIND …last4]``
where the secret was. Layers that keep text in memory too (the context engine's items) redact
it themselves at capture with the same redactor (``store.redactor``), so what they re-send
matches what is stored; redaction is idempotent, so the second pass here changes nothing.

Which redactor a store uses: :func:`redaction_for` — off when ``$VEIL_REDACT`` says so, else the
``[redaction]`` section of the project's settings file (:mod:`veil.config_file`).
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import cast

from veil.config_file import ConfigError, section, veil_dir_of
from veil.redaction import RedactionConfig, Redactor
from veil.tape.events import Event, JSONValue

OFF = frozenset({"off", "0", "false", "no"})


def redacted(event: Event, redactor: Redactor) -> Event:
    """``event`` with every secret in its payload and provenance replaced (the same object
    when there was none)."""
    if not redactor.config.enabled:
        return event
    payload = redactor.redact_json(event.payload)
    provenance = redactor.redact_json(event.provenance)
    if not payload.changed and not provenance.changed:
        return event
    return replace(
        event,
        payload=cast(dict[str, JSONValue], payload.value),
        provenance=cast(dict[str, JSONValue], provenance.value),
    )


def redaction_for(store_path: str | Path | None) -> RedactionConfig:
    """The redaction settings for a store: off when ``VEIL_REDACT`` is ``off``/``0``/``false``;
    else the settings file's ``[redaction]`` (the project's ``.veil/config.toml`` when the
    store lives in a ``.veil`` directory, or ``$VEIL_CONFIG``); else the defaults (on).
    Raises :class:`~veil.config_file.ConfigError` naming the file and the bad entry."""
    if os.environ.get("VEIL_REDACT", "").strip().lower() in OFF:
        return RedactionConfig(enabled=False)
    home = veil_dir_of(store_path) if store_path is not None else None
    table = section(home, "redaction")
    try:
        return RedactionConfig.from_mapping(table)
    except ValueError as exc:
        raise ConfigError(f"{home / 'config.toml' if home else '$VEIL_CONFIG'}: {exc}") from None
