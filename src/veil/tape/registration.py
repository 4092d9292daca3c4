"""The one way Veil's writers register their projections: :func:`register_once`.

:meth:`Store.register <veil.tape.store.Store.register>` refuses a projection already on the
handle ("registered twice"), yet several writers share one store handle (a memory and its key
ring, a harness's sessions and attempt logs), and each must be able to make sure its own
projection is maintained without knowing who came first. :func:`register_once` registers what
the handle does not maintain yet and skips the rest, so calling it again is a no-op.
"""

from __future__ import annotations

from veil.tape.projection import Projection
from veil.tape.store import Store, UnknownName

_PROBE_SCOPE = "veil:registration"
"""The scope of the probing reads; they ask for no rows, so it is never read."""


def register_once(store: Store, *projections: Projection) -> None:
    """Register each of ``projections`` this store handle does not maintain yet; skip the
    others. Idempotent per handle (a new handle on the same database registers again, which
    creates nothing that exists and rebuilds only a projection whose version changed)."""
    missing = {p.name: p for p in projections if not maintains(store, p)}
    if missing:
        store.register(*missing.values())


def maintains(store: Store, projection: Projection) -> bool:
    """Whether the handle knows every table and index ``projection`` declares (registered or
    attached). The probes ask for nothing ("one of no values", a zero limit), so a backend
    need not run a query. A projection that declares nothing is never known."""
    try:
        for table in projection.tables:
            store.fetch(table.name, scope=_PROBE_SCOPE, where={table.columns[0].name: []})
        for index in projection.text_indexes:
            store.search_text(index.name, scope=_PROBE_SCOPE, query="", limit=0)
        for index in projection.vector_indexes:
            store.search_vector(index.name, scope=_PROBE_SCOPE, query="", limit=0)
    except UnknownName:
        return False
    return bool(projection.tables or projection.text_indexes or projection.vector_indexes)
