"""The context engine's persistence: a buffer of events and one writer thread.

The engine decides in memory and hands its events here (:meth:`ContextWriter.emit`). They reach
the tape in batches, one transaction each, either now (:meth:`flush`) or on the writer thread
(:meth:`persist_in_background`, which the harness calls while the model request is in flight).
Contract:

- batches are written in the order they were taken;
- a batch whose append fails is kept, with every later batch, and written first by the next
  successful ``flush``; the failure is raised by the next ``flush``,
  ``persist_in_background`` or ``wait`` — nothing is dropped;
- an event is acknowledged once ``flush`` or ``wait`` has returned;
- the writer thread sees only the events it was handed and runs the owner's ``off_thread``
  preparation (pure work on immutable values whose results the owner files itself), never the
  engine's state.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from veil.tape import Event
from veil.tape.kinds import EventKind
from veil.tape.recorder import Recorder

P = TypeVar("P")


class ContextWriter:
    def __init__(
        self,
        recorder: Recorder,
        *,
        before_take: Callable[[], None],
        off_thread: Callable[[], None] = lambda: None,
    ) -> None:
        """``before_take`` runs on the owner's thread just before a batch is taken (the engine
        adds its index events for demoted items there); ``off_thread`` runs on the writer
        thread before each background append (the engine scans new items for names there). A
        failure in ``off_thread`` is the owner's to redo: it is swallowed, never lost data."""
        self.recorder = recorder
        self._before_take = before_take
        self._off_thread = off_thread
        self._pending: list[Event] = []
        self._unwritten: list[Event] = []
        self._failed: BaseException | None = None
        self._lock = threading.Lock()
        self._thread: ThreadPoolExecutor | None = None
        self._writing: Future[None] | None = None

    def emit(self, kind: EventKind[P], payload: P) -> None:
        """Buffer one event of ``kind`` (declared in :mod:`veil.context.events`)."""
        self._pending.append(self.recorder.event(kind, payload))

    def _take(self) -> list[Event]:
        self._before_take()
        with self._lock:
            events, self._unwritten = [*self._unwritten, *self._pending], []
            self._pending = []
        return events

    def flush(self) -> None:
        """Append everything buffered now, after any background write has finished."""
        self.wait()
        events = self._take()
        if events:
            try:
                self.recorder.store.append(events)
            except BaseException:
                with self._lock:
                    self._unwritten = [*events, *self._unwritten]
                raise

    def persist_in_background(self) -> Future[None]:
        """Queue what is buffered for one append on the writer thread; return at once."""
        self._raise_failed()
        events = self._take()
        with self._lock:
            if self._thread is None:
                self._thread = ThreadPoolExecutor(1, thread_name_prefix="veil-context-writer")
            self._writing = self._thread.submit(self._append, events)
            return self._writing

    def _append(self, events: list[Event]) -> None:
        """The writer thread's job; never raises (a failure is kept for the owner)."""
        with contextlib.suppress(Exception):  # preparation only: the owner redoes it inline
            self._off_thread()
        with self._lock:
            if self._failed is not None:  # keep order: nothing after a failed batch is written
                self._unwritten.extend(events)
                return
        if not events:
            return
        try:
            self.recorder.store.append(events)
        except BaseException as exc:
            with self._lock:
                self._failed = exc
                self._unwritten.extend(events)

    def _raise_failed(self) -> None:
        with self._lock:
            failed, self._failed = self._failed, None
        if failed is not None:
            raise failed

    def wait(self) -> None:
        """Block until queued background writes are on the tape; raise if one failed."""
        writing = self._writing
        if writing is not None:
            writing.result()
            self._writing = None
        self._raise_failed()

    def close(self) -> None:
        """Write what is left and stop the writer thread (the store stays open)."""
        self.flush()
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            thread.shutdown(wait=True)
