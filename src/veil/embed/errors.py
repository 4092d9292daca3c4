"""Errors raised by embedders."""

from __future__ import annotations


class EmbedderUnavailable(RuntimeError):
    """The embedder cannot run here: a service does not answer, or an optional extra is missing.

    The message always says what was tried and how to fix it (which command to run, which extra
    to install), because the caller usually cannot recover and a person has to act.
    """
