"""The command line of ``veil memory`` (the actions are :mod:`veil.cli.memory`).

The catalogue's verbs (remember, recall, facts, history, confirm, dispute) are generated from
:mod:`veil.verbs`: an action per verb, a required argument positional, the others options, each
with the verb's description and default. Building it imports nothing of the memory layer (the
catalogue does not), so ``veil -p`` and the hooks start quickly.

The options every action shares (``--db``, ``--user``/``--scope``, ``--json``, ``--embedder``,
``--model``) are accepted before the action or after it: ``veil memory --db X remember TEXT``
and ``veil memory remember TEXT --db X`` are the same. Given in both places, the one after the
action wins.
"""

from __future__ import annotations

import argparse

from veil.cli.argument_types import positive, whole_number
from veil.verbs import Param, offered

AUTHORS = ("user", "assistant", "system", "tool", "third_party")
"""``veil.memory.model.AUTHORS``, spelt out so that building the parser imports no memory."""


def add_parser(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],  # pyright: ignore[reportPrivateUsage]
    run: str,
) -> None:
    """``veil memory`` and its actions; ``run`` names the runner of a parsed invocation
    (:data:`veil.cli.main.RUNNERS`)."""
    memory = sub.add_parser(
        "memory",
        help="the long-term memory from the shell: remember, recall, facts, history, confirm, "
        "dispute, export, import, forget",
        description="The project's long-term memory (or --db's, --user's) from the shell.",
    )
    _shared(memory, default=True)
    _model(memory, default=True)
    actions = memory.add_subparsers(dest="memory_action", metavar="ACTION", required=True)
    # After the action, the same options; unset there, they leave the ones given before it.
    common = argparse.ArgumentParser(add_help=False)
    _shared(common, default=False)
    model = argparse.ArgumentParser(add_help=False)
    _model(model, default=False)
    model.add_argument(
        "--author",
        choices=AUTHORS,
        default="user",
        help="who the evidence is from (default user); import of a chat history takes each "
        "message's own",
    )

    for verb in offered("cli"):  # the catalogue's verbs: names, help and defaults from it
        parents = [common, model] if "model" in verb.needs else [common]
        action = actions.add_parser(
            verb.name,
            parents=parents,
            help=verb.description.split(". ")[0].split(": ")[0],
            description=verb.description,
        )
        if "model" not in verb.needs and not verb.read_only:  # confirm, dispute: whose word
            action.add_argument(
                "--author", choices=AUTHORS, default="user", help="who says so (default user)"
            )
        for param in verb.params:
            _argument(action, verb.name, param)

    export = actions.add_parser("export", parents=[common], help="write the memory as JSONL")
    export.add_argument("path", metavar="PATH", help="the file to write; - writes to stdout")

    imported = actions.add_parser(
        "import",
        parents=[common, model],
        help="read a Veil export, or a dated chat history (JSONL, JSON list, LoCoMo)",
    )
    imported.add_argument("path", metavar="PATH")
    imported.add_argument(
        "--restore", action="store_true", help="Veil export: keep its trust and times exactly"
    )
    imported.add_argument(
        "--me", default=None, help="chat history: the speaker whose memory it is (default: "
        "LoCoMo's speaker_a, else the first speaker)",
    )  # fmt: skip
    imported.add_argument(
        "--sample",
        default=None,
        metavar="ID",
        help="LoCoMo list: which conversation (its sample_id or position from 1)",
    )
    imported.add_argument(
        "--timezone",
        default=None,
        metavar="TZ",
        help="chat history: the zone of times without an offset (UTC, Europe/Paris, +02:00)",
    )
    imported.add_argument(
        "--start", type=positive, default=1, metavar="N", help="chat history: from message N"
    )

    forget = actions.add_parser(
        "forget", parents=[common], help="erase this memory for good (needs --yes)"
    )
    forget.add_argument("--yes", action="store_true", help="yes, erase it")
    memory.set_defaults(run=run)


def _shared(parser: argparse.ArgumentParser, *, default: bool) -> None:
    """The options of every action, on ``veil memory`` itself (``default``: with their
    defaults) or on an action (without: an option not given there keeps its value from before
    the action)."""

    def given(value: object) -> object:
        return value if default else argparse.SUPPRESS

    parser.add_argument(
        "--db",
        default=given(None),
        help="store path or URL (default: this project's .veil/memory.db)",
    )
    parser.add_argument(
        "--user",
        "--scope",
        dest="scope",
        default=given(None),
        metavar="ID",
        help="whose memory (default: this project's scope)",
    )
    parser.add_argument(
        "--json", dest="memory_json", action="store_true", default=given(False), help="print JSON"
    )
    parser.add_argument(
        "--embedder",
        default=given("static"),
        help="embedder spec: static (default), minilm, hash, ollama:MODEL",
    )


def _model(parser: argparse.ArgumentParser, *, default: bool) -> None:
    """``--model``, for the actions that call one (remember, import of a chat history)."""
    parser.add_argument(
        "--model",
        dest="memory_model",
        metavar="PROVIDER:MODEL",
        default=None if default else argparse.SUPPRESS,
        help="extraction model, provider:model (default $VEIL_MODEL); scripted:FILE replays "
        "a script (remember, import)",
    )


ALIASES = {"token_budget": ("--budget",), "include_history": ("--all",)}
"""Older spellings of options that still work."""
STDIN = {("remember", "text")}
"""Arguments where ``-`` reads the text from stdin."""


def _argument(parser: argparse.ArgumentParser, verb: str, param: Param) -> None:
    """One argument of a verb: a required one positional, the others options."""
    help_text = param.description
    if (verb, param.name) in STDIN:
        help_text += " (- reads stdin)"
    if param.kind == "time":
        help_text += " A date (2024-05-01) is the end of that day, UTC."
    if param.required:
        parser.add_argument(param.name, metavar=param.name.upper(), help=help_text)
        return
    flags = [f"--{param.name.replace('_', '-')}", *ALIASES.get(param.name, ())]
    if param.kind == "flag":
        parser.add_argument(*flags, dest=param.name, action="store_true", help=help_text)
    elif param.kind == "integer":
        parser.add_argument(
            *flags, dest=param.name, type=whole_number, default=param.default, metavar="N",
            help=f"{help_text} (default: {param.default})",
        )  # fmt: skip
    elif param.kind == "texts":
        parser.add_argument(*flags, dest=param.name, nargs="*", default=None, help=help_text)
    else:
        metavar = "TIME" if param.kind == "time" else param.name.upper()
        choices = param.choices or None
        parser.add_argument(
            *flags, dest=param.name, default=param.default, metavar=metavar, choices=choices,
            help=help_text,
        )  # fmt: skip
