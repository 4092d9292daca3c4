"""The store contract suite, shipped through :mod:`veil.testing`: one class per concern, each
a flat list of tests over :class:`~veil.tape.contract_notes.StoreFixture` (the one method a
backend implements, ``make_store``) and the small ``notes`` projection.

=================================  ============================================================
:class:`AppendContract`            appends and reads of the tape (:mod:`.contract_append`)
:class:`KindsContract`             appends checked against the registered event kinds
                                   (:mod:`.contract_kinds`)
:class:`ProjectionContract`        projections in step with the tape, register and attach
                                   (:mod:`.contract_projections`)
:class:`SearchContract`            full-text and vector search, one consistent read
                                   (:mod:`.contract_projections`)
:class:`AdminContract`             check, erase, purge, sizes (:mod:`.contract_admin`)
=================================  ============================================================

A backend's test module composes them: ``class TestMyStore(*CONCERNS)`` spelled out, with its
``make_store``; :class:`StoreContract` is all of them at once, for a store outside Veil.
"""

from __future__ import annotations

from veil.tape.contract_admin import AdminContract
from veil.tape.contract_append import AppendContract
from veil.tape.contract_kinds import KindsContract
from veil.tape.contract_notes import (
    NOTE_ADDED,
    NOTE_KINDS,
    NOTE_TAGGED,
    NotesProjection,
    NoteTagged,
    StoreFixture,
    note_event,
)
from veil.tape.contract_projections import ProjectionContract, SearchContract

CONCERNS: tuple[type[StoreFixture], ...] = (
    AppendContract,
    KindsContract,
    ProjectionContract,
    SearchContract,
    AdminContract,
)
"""Every part of the contract; a backend's test class derives from each."""


class StoreContract(
    AppendContract, KindsContract, ProjectionContract, SearchContract, AdminContract
):
    """The behaviour every :class:`~veil.tape.store.Store` backend must have: every concern
    of the suite. Subclass it as ``TestMyStore(StoreContract)`` and implement
    :meth:`~veil.tape.contract_notes.StoreFixture.make_store`."""


__all__ = [
    "CONCERNS",
    "NOTE_ADDED",
    "NOTE_KINDS",
    "NOTE_TAGGED",
    "AdminContract",
    "AppendContract",
    "KindsContract",
    "NoteTagged",
    "NotesProjection",
    "ProjectionContract",
    "SearchContract",
    "StoreContract",
    "StoreFixture",
    "note_event",
]
