"""What we know about models: context windows, output limits, list prices and long-context price
tiers — one table, :file:`models.toml` beside this module (dated; its header says where the
figures come from and that they are estimates).

Providers ask it for a model's ``context_window`` (the harness's ``--window`` overrides it) and
for the cost of a reply; the proxy for the budget it keeps a conversation under; ``veil claude``
and ``veil stats`` for what a session cost. Names are matched after normalisation — lower case,
any ``vendor/`` prefix dropped (OpenRouter's ``openai/gpt-4o``), ``-``, ``_`` and ``:`` removed (so
``llama-3.1``, ``llama3.1`` and Ollama's ``llama3.1:8b`` agree) — by the longest known prefix, so a
dated snapshot such as ``gpt-4.1-mini-2025-04-14`` finds ``gpt-4.1-mini`` before ``gpt-4.1``. An
entry marked ``family`` stands for the models of a family the table does not name
(:attr:`ModelInfo.by_family` says a model was priced that way).

Unknown models get :data:`DEFAULT_CONTEXT_WINDOW` and cost 0: we would rather report no cost
than a made-up one. A local server's window is whatever it was started with (vLLM's
``--max-model-len``, llama.cpp's ``-c``, Ollama's ``num_ctx``), which may be smaller than the
model's native window listed here; use ``--window`` when it is.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from importlib import resources
from typing import Any, cast

DEFAULT_CONTEXT_WINDOW = 128_000
DEFAULT_MAX_OUTPUT_TOKENS = 8_192
CACHE_WRITE_5M = 1.25
CACHE_WRITE_1H = 2.0
CACHE_READ = 0.1
"""Anthropic's cache multipliers of the input price, for an entry that lists no cache price."""


@dataclass(frozen=True)
class ModelInfo:
    """Facts about one model or family; prices in USD per million tokens (0 = unknown/free)."""

    context_window: int
    input_usd_per_mtok: float = 0.0
    output_usd_per_mtok: float = 0.0
    max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS
    cache_write_5m: float | None = None
    cache_write_1h: float | None = None
    cache_read: float | None = None
    long_context_above: int | None = None
    """Input tokens beyond which a whole request is billed at the long-context rates."""
    long_input: float | None = None
    long_output: float | None = None
    family: bool = False
    name: str = ""
    """The table's entry that matched."""
    by_family: bool = False
    """The model is not in the table by name: priced like its family."""

    @property
    def priced(self) -> bool:
        return self.input_usd_per_mtok > 0 or self.output_usd_per_mtok > 0

    def rates(self, prompt_tokens: int) -> tuple[float, float, float, float, float]:
        """USD per token for (input, output, 5-minute cache write, 1-hour cache write, cache
        read) of a request of ``prompt_tokens`` input tokens (past the long-context threshold,
        the long-context rates, the cache prices scaled alike)."""
        scale_in = scale_out = 1.0
        above = self.long_context_above
        if above is not None and prompt_tokens > above and self.input_usd_per_mtok:
            scale_in = (self.long_input or self.input_usd_per_mtok) / self.input_usd_per_mtok
            if self.output_usd_per_mtok:
                scale_out = (
                    self.long_output or self.output_usd_per_mtok
                ) / self.output_usd_per_mtok
        base = self.input_usd_per_mtok
        write_5m = self.cache_write_5m if self.cache_write_5m is not None else base * CACHE_WRITE_5M
        write_1h = self.cache_write_1h if self.cache_write_1h is not None else base * CACHE_WRITE_1H
        read = self.cache_read if self.cache_read is not None else base * CACHE_READ
        per = 1e-6 * scale_in
        return (
            base * per,
            self.output_usd_per_mtok * 1e-6 * scale_out,
            write_5m * per,
            write_1h * per,
            read * per,
        )


_FIELDS = {
    "window": "context_window",
    "max_output": "max_output_tokens",
    "input": "input_usd_per_mtok",
    "output": "output_usd_per_mtok",
    "cache_write_5m": "cache_write_5m",
    "cache_write_1h": "cache_write_1h",
    "cache_read": "cache_read",
    "long_context_above": "long_context_above",
    "long_input": "long_input",
    "long_output": "long_output",
    "family": "family",
}


def normalise(model: str) -> str:
    """Lower-cased, vendor prefix dropped, ``-``/``_``/``:`` removed (see the module doc)."""
    name = model.strip().lower().rsplit("/", 1)[-1]
    return name.replace("-", "").replace("_", "").replace(":", "")


def entry(name: str, values: Mapping[str, Any], base: ModelInfo | None = None) -> ModelInfo:
    """A table entry (``models.toml``'s keys) as a :class:`ModelInfo`, over ``base`` if given
    (an override changes only the keys it names). Raises ValueError naming a bad key or value."""
    fields: dict[str, Any] = {}
    for key, value in values.items():
        field = _FIELDS.get(key)
        if field is None:
            raise ValueError(f"model {name!r}: unknown key {key!r} (known: {', '.join(_FIELDS)})")
        if key == "family":
            if not isinstance(value, bool):
                raise ValueError(f"model {name!r}: family must be true or false")
        elif not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
            raise ValueError(f"model {name!r}: {key} must be a number ≥ 0, not {value!r}")
        fields[field] = (
            int(value) if key in ("window", "max_output", "long_context_above") else value
        )
    if base is None:
        if "context_window" not in fields:
            fields["context_window"] = DEFAULT_CONTEXT_WINDOW
        return ModelInfo(**fields, name=name)
    return replace(base, **fields, name=name)


def _load() -> tuple[str, dict[str, ModelInfo]]:
    text = resources.files("veil.llm").joinpath("models.toml").read_text(encoding="utf-8")
    data = tomllib.loads(text)
    models = cast(dict[str, Mapping[str, Any]], data.get("models", {}))
    return str(data.get("date", "")), {normalise(k): entry(k, v) for k, v in models.items()}


PRICES_DATE, _TABLE = _load()
"""The date the table's figures were checked, and the table by normalised name."""


class Catalog:
    """The table, with a user's overrides (``.veil/config.toml`` ``[models."name"]``) on top:
    an override starts from the entry its name matched and changes the keys it names."""

    def __init__(self, overrides: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self.table = dict(_TABLE)
        self.overridden: set[str] = set()
        for name, values in (overrides or {}).items():
            key = normalise(name)
            base = self.table.get(key) or self.lookup(name)  # what the name matched before
            self.table[key] = entry(
                name, values, None if base is None else replace(base, family=False)
            )
            self.overridden.add(key)

    def lookup(self, model: str) -> ModelInfo | None:
        """The entry with the longest normalised prefix of ``model``, or None when none
        matches; ``by_family`` when that entry is a family's."""
        name = normalise(model)
        best: str | None = None
        for key in self.table:
            if name.startswith(key) and (best is None or len(key) > len(best)):
                best = key
        if best is None:
            return None
        info = self.table[best]
        return replace(info, by_family=info.family and name != best)


CATALOG = Catalog()


def lookup(model: str) -> ModelInfo | None:
    """The built-in table's entry for ``model`` (see :meth:`Catalog.lookup`)."""
    return CATALOG.lookup(model)


def context_window(model: str, default: int = DEFAULT_CONTEXT_WINDOW) -> int:
    """The model's context window in tokens; ``default`` when the model is unknown."""
    info = lookup(model)
    return default if info is None else info.context_window


def max_output_tokens(model: str) -> int:
    """A safe ``max_tokens`` for APIs that require one (Anthropic)."""
    info = lookup(model)
    return DEFAULT_MAX_OUTPUT_TOKENS if info is None else info.max_output_tokens


def cost_usd(
    model: str,
    input_tokens: int,
    output_tokens: int,
    *,
    cache_write_tokens: int = 0,
    cache_read_tokens: int = 0,
    cache_ttl: str = "5m",
) -> float:
    """List-price cost of one reply; 0.0 when the model has no known price. ``input_tokens``
    excludes the cache counts, each billed at its own price (the table's, else Anthropic's
    multipliers of the input price); past a long-context threshold, the long-context rates."""
    info = lookup(model)
    if info is None:
        return 0.0
    prompt = input_tokens + cache_write_tokens + cache_read_tokens
    per_in, per_out, write_5m, write_1h, read = info.rates(prompt)
    write = write_1h if cache_ttl == "1h" else write_5m
    return (
        input_tokens * per_in
        + cache_write_tokens * write
        + cache_read_tokens * read
        + output_tokens * per_out
    )
