"""The in-process vector index (exact and projected), its sidecar files and its catch-up.

No test here times anything: recall of the projected search is measured against the exact
search on the same vectors, on real embedder vectors of 30,000 memory-like sentences.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from veil.embed import default_embedder
from veil.tape import sidecar
from veil.tape.sqlite import SQLiteStore
from veil.tape.vectors import ScopeVectors, VectorIndexConfig, fit_basis
from veil.testing import FakeClock, HashEmbedder, NotesProjection, note_event

FIRST = [
    "Ada",
    "Bruno",
    "Chen",
    "Dara",
    "Elif",
    "Farah",
    "Gideon",
    "Hana",
    "Ines",
    "Jonas",
    "Kai",
    "Lena",
    "Malik",
    "Nora",
    "Oskar",
]
LAST = [
    "Abara",
    "Berg",
    "Costa",
    "Dahl",
    "Eriksen",
    "Fischer",
    "Garcia",
    "Haas",
    "Iyer",
    "Jansen",
    "Kaur",
    "Laine",
    "Meyer",
]
CITIES = [
    "Lisbon",
    "Porto",
    "Berlin",
    "Vienna",
    "Prague",
    "Oslo",
    "Dublin",
    "Lyon",
    "Ghent",
    "Basel",
    "Turin",
    "Athens",
]
THINGS = [
    "dark roast coffee",
    "green tea",
    "window seats",
    "mechanical keyboards",
    "sourdough bread",
    "jazz",
    "trail running",
    "board games",
    "sci-fi novels",
    "podcasts",
    "the kitchen renovation",
    "a garden shed",
    "the quarterly budget",
    "a marathon plan",
    "the tax return",
    "a vintage camera",
    "a sailing course",
]
TEMPLATES = (
    "{p} lives in {c}.",
    "{p} moved to {c} last spring.",
    "{p} prefers {t}.",
    "{p} is working on {t} with {q}.",
    "Talked with {p} about {t}.",
    "{p} recommended {t} to {q}.",
    "{p} visited {c} for {t}.",
    "{p} knows {q} from {c}.",
)


def sentences(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    people = [f"{f} {last}" for f in FIRST for last in LAST]
    out: list[str] = []
    for _ in range(n):
        template = TEMPLATES[int(rng.integers(len(TEMPLATES)))]
        out.append(
            template.format(
                p=people[int(rng.integers(len(people)))],
                q=people[int(rng.integers(len(people)))],
                c=CITIES[int(rng.integers(len(CITIES)))],
                t=THINGS[int(rng.integers(len(THINGS)))],
            )
        )
    return out


def recall_at(index: ScopeVectors, queries: np.ndarray, k: int = 50) -> float:
    """Share of the exact top-``k`` (by score, so exact ties count) the index returns."""
    found = 0.0
    for q in queries:
        exact = index.search_exact(q, k)
        threshold = exact[-1][1] - 1e-6
        found += sum(1 for _, score in index.search(q, k) if score >= threshold) / k
    return found / len(queries)


def test_projected_search_keeps_recall_at_50_against_exact() -> None:
    embedder = default_embedder()
    vectors = embedder.embed(sentences(30_000, seed=1))
    index = ScopeVectors(embedder.dim, VectorIndexConfig())
    for start in range(0, len(vectors), 2_000):
        ids = [f"d{i}" for i in range(start, start + 2_000)]
        index.apply(ids, vectors[start : start + 2_000], watermark=start)
    assert index.approximate  # 30k is above the 20k exact threshold
    queries = embedder.embed(sentences(100, seed=2) + ["where does Ada Abara live?"] * 5)
    assert recall_at(index, queries) >= 0.98


def test_exact_below_the_threshold_and_updates_and_removals() -> None:
    rng = np.random.default_rng(3)
    index = ScopeVectors(16, VectorIndexConfig(exact_below=1_000))
    data = rng.standard_normal((300, 16)).astype(np.float32)
    index.apply([f"d{i}" for i in range(300)], data, watermark=7)
    assert len(index) == 300 and not index.approximate and index.watermark == 7
    (best, score), *_ = index.search(data[5], 3)
    assert best == "d5" and score == pytest.approx(1.0, abs=1e-5)
    index.apply(["d5", "d6"], [None, -data[5]], watermark=9)  # remove one, move another
    hits = dict(index.search(data[5], 300))
    assert "d5" not in hits and hits["d6"] == pytest.approx(-1.0, abs=1e-5)
    index.apply(["zero"], [np.zeros(16, dtype=np.float32)], watermark=10)  # no direction
    assert len(index) == 299 and index.watermark == 10
    # The last value of a document in one batch wins, removal included.
    index.apply(["x", "x"], [data[0], None], watermark=11)
    assert "x" not in dict(index.search(data[0], 300))


def test_projection_is_fitted_refitted_and_dropped() -> None:
    embedder = default_embedder()
    vectors = embedder.embed(sentences(5_000, seed=4))
    index = ScopeVectors(embedder.dim, VectorIndexConfig(exact_below=1_000, candidates=200))
    index.apply([f"d{i}" for i in range(5_000)], vectors, watermark=1)
    assert index.approximate and not index.projection_problems()
    index.apply([f"d{i}" for i in range(4_700)], [None] * 4_700, watermark=2)
    assert not index.approximate and len(index) == 300  # below half the threshold: exact
    # A flat spectrum (random hashing) keeps the index exact: no few directions hold it.
    flat = np.random.default_rng(5).standard_normal((2_000, 64)).astype(np.float32)
    assert fit_basis(flat, 0.8) is None


def test_snapshot_restores_an_equal_index() -> None:
    embedder = default_embedder()
    vectors = embedder.embed(sentences(3_000, seed=6))
    index = ScopeVectors(embedder.dim, VectorIndexConfig(exact_below=1_000))
    index.apply([f"d{i}" for i in range(3_000)], vectors, watermark=5)
    index.apply(["d1"], [None], watermark=6)
    again = ScopeVectors.restore(index.snapshot(), VectorIndexConfig(exact_below=1_000))
    assert again.watermark == 6 and len(again) == len(index) and again.approximate
    q = vectors[10]
    assert again.search(q, 20) == index.search(q, 20)


def test_concurrent_searches_and_updates_stay_consistent() -> None:
    rng = np.random.default_rng(7)
    index = ScopeVectors(8, VectorIndexConfig(exact_below=500))
    data = rng.standard_normal((2_000, 8)).astype(np.float32)
    errors: list[BaseException] = []

    def writer() -> None:
        for start in range(0, 2_000, 100):
            index.apply([f"d{i}" for i in range(start, start + 100)], data[start : start + 100], 1)

    def reader() -> None:
        try:
            for i in range(200):
                for doc, _ in index.search(data[i], 10):
                    assert doc.startswith("d")
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [
        threading.Thread(target=writer),
        *(threading.Thread(target=reader) for _ in range(3)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(index) == 2_000


# ---- through the SQLite store ------------------------------------------------------------

CONFIG = VectorIndexConfig(exact_below=50, persist_at_least=10, candidates=20)


def open_store(path: Path) -> SQLiteStore:
    store = SQLiteStore(path, embedder=HashEmbedder(), clock=FakeClock(), vector_index=CONFIG)
    store.register(NotesProjection())
    return store


def notes(scope: str, start: int, count: int) -> list:  # type: ignore[type-arg]
    return [
        note_event(scope, "note.added", note=f"n{i}", body=f"note {i} about topic {i % 7}")
        for i in range(start, start + count)
    ]


def test_another_handle_sees_appends_removals_and_erasures(tmp_path: Path) -> None:
    one, two = open_store(tmp_path / "m.db"), open_store(tmp_path / "m.db")
    one.append(notes("u1", 0, 30))
    assert len(two.search_vector("notes_vec", scope="u1", query="note 3", limit=100)) == 30
    one.append(notes("u1", 30, 5))
    one.append([note_event("u1", "note.removed", note="n2")])
    hits = {h.doc_id for h in two.search_vector("notes_vec", scope="u1", query="note", limit=100)}
    assert len(hits) == 34 and "n2" not in hits and "n31" in hits
    one.erase("u1")
    assert two.search_vector("notes_vec", scope="u1", query="note 3", limit=100) == []
    two.append(notes("u1", 100, 2))  # the scope comes back: only its new notes
    hits = {h.doc_id for h in one.search_vector("notes_vec", scope="u1", query="note", limit=9)}
    assert hits == {"n100", "n101"}


def test_sidecar_is_written_on_close_loaded_and_caught_up(tmp_path: Path) -> None:
    store = open_store(tmp_path / "m.db")
    store.bulk_append([notes("u1", 0, 40), notes("u1", 40, 40), notes("u2", 0, 3)])
    path = sidecar.path_of(tmp_path / "m.db.vectors", "notes_vec", "u1")
    assert path.exists()  # the bulk import saved it (u2 is below persist_at_least)
    assert not sidecar.path_of(tmp_path / "m.db.vectors", "notes_vec", "u2").exists()
    store.append(notes("u1", 80, 5))  # after the save: caught up from the table
    before = store.search_vector("notes_vec", scope="u1", query="note 81 about", limit=5)
    store.close()
    again = open_store(tmp_path / "m.db")
    assert again.search_vector("notes_vec", scope="u1", query="note 81 about", limit=5) == before
    assert again.check().ok


def test_check_reports_a_sidecar_that_disagrees_and_rebuild_replaces_it(tmp_path: Path) -> None:
    store = open_store(tmp_path / "m.db")
    store.bulk_append([notes("u1", 0, 60)])
    path = sidecar.path_of(tmp_path / "m.db.vectors", "notes_vec", "u1")
    header, _, _ = sidecar.read_header(path) or pytest.fail("no sidecar")
    snapshot = sidecar.load(path, header)
    assert snapshot is not None
    matrix = snapshot.matrix.copy()
    matrix[0] = -matrix[0]
    tampered = type(snapshot)(
        snapshot.dim, snapshot.watermark, snapshot.ids, matrix, snapshot.basis, snapshot.fitted_at
    )
    sidecar.save(path, header, tampered)
    report = store.check()
    assert not report.ok and any("sidecar" in p and "different" in p for p in report.problems)
    store.rebuild()
    assert store.check().ok
    # An orphan file (a scope with no vectors) is reported too: erasure must not leave one.
    sidecar.save(sidecar.path_of(tmp_path / "m.db.vectors", "notes_vec", "ghost"), header, tampered)
    assert any("no scope" in p for p in store.check().problems)


def test_erase_deletes_the_scope_sidecar(tmp_path: Path) -> None:
    store = open_store(tmp_path / "m.db")
    store.bulk_append([notes("u1", 0, 30), notes("u2", 0, 30)])
    root = tmp_path / "m.db.vectors"
    assert sidecar.path_of(root, "notes_vec", "u1").exists()
    store.erase("u1")
    assert not sidecar.path_of(root, "notes_vec", "u1").exists()
    assert sidecar.path_of(root, "notes_vec", "u2").exists()
    assert store.check().ok


def test_a_sidecar_of_an_erased_scope_is_never_used(tmp_path: Path) -> None:
    # A sidecar left behind (e.g. the eraser could not delete it) must not resurrect vectors.
    store = open_store(tmp_path / "m.db")
    store.bulk_append([notes("u1", 0, 30)])
    path = sidecar.path_of(tmp_path / "m.db.vectors", "notes_vec", "u1")
    kept = path.read_bytes()
    store.erase("u1")
    path.write_bytes(kept)
    store.close()
    again = open_store(tmp_path / "m.db")
    again.append(notes("u1", 500, 1))
    assert [h.doc_id for h in again.search_vector("notes_vec", scope="u1", query="note")] == [
        "n500"
    ]


def test_an_attached_handle_writes_no_sidecar(tmp_path: Path) -> None:
    store = open_store(tmp_path / "m.db")
    store.append(notes("u1", 0, 30))  # not a bulk import: no sidecar yet
    store.close()
    reader = SQLiteStore(
        tmp_path / "m.db", embedder=HashEmbedder(), clock=FakeClock(), vector_index=CONFIG
    )
    reader.attach(NotesProjection())
    assert len(reader.search_vector("notes_vec", scope="u1", query="note", limit=50)) == 30
    assert reader.check().ok
    reader.close()
    assert not (tmp_path / "m.db.vectors").exists()
