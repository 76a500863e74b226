"""The knowledge base: design ideas in SQLite, their embeddings in a faiss index beside it.

A knowledge base is a directory:

* ``kb.sqlite``  - ideas (text, source paper, FairNAD tags, who tagged them, the vector), the
  papers already read, merged near-duplicates, and ``meta`` (embedder name and dimension);
* ``ideas.faiss`` - an exact inner-product index (``IndexIDMap2(IndexFlatIP)``) keyed by idea
  id. It is derived data: rebuilt from the vectors in SQLite when missing or out of step.

Vectors are unit length, so scores are cosine similarities. A knowledge base remembers the
embedder that built it and refuses any other: vectors of two models are not comparable.
"""
from __future__ import annotations

import hashlib
import os
import sqlite3
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from .attributes import check_tags
from .embedders import Embedder, LocalEmbedder, default_embedder
from .tagger import tag as keyword_tag

SCHEMA_VERSION = "1"
DB_NAME = "kb.sqlite"
INDEX_NAME = "ideas.faiss"
# Cosine similarity at or above which a new idea is merged into an existing one (all-MiniLM-L6-v2;
# chosen on NADER's pool, see docs/knowledge.md).
DUPLICATE_THRESHOLD = 0.92
FILTER_FIELDS = ("granularity", "main_category", "sub_category", "paper_id")
SAMPLE_LEVELS = ("granularity", "main_category", "sub_category")
_CHUNK = 256

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS ideas (
    id INTEGER PRIMARY KEY,
    text TEXT NOT NULL,
    text_hash TEXT NOT NULL,
    paper_id TEXT,
    granularity TEXT,
    main_category TEXT,
    sub_category TEXT,
    tagged_by TEXT,
    vector BLOB NOT NULL,
    added REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS ideas_text_hash ON ideas(text_hash);
CREATE INDEX IF NOT EXISTS ideas_main ON ideas(main_category);
CREATE TABLE IF NOT EXISTS sources (
    paper_id TEXT PRIMARY KEY,
    title TEXT,
    relevant INTEGER,
    added REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS merged (
    idea_id INTEGER NOT NULL REFERENCES ideas(id),
    text TEXT NOT NULL,
    paper_id TEXT,
    similarity REAL NOT NULL,
    added REAL NOT NULL
);
"""


class KnowledgeBaseError(Exception):
    """A knowledge base that cannot be used as asked; the message says why and what to do."""


class EmbedderMismatch(KnowledgeBaseError):
    """The knowledge base was built with another embedding model."""


@dataclass(frozen=True)
class Idea:
    """One design idea. Tags are a path of `ATTRIBUTE_TREE` (or None: untagged).

    `id` and `tagged_by` ("given", "keyword-rules") are filled in by the knowledge base.
    """

    text: str
    paper_id: str | None = None
    granularity: str | None = None
    main_category: str | None = None
    sub_category: str | None = None
    id: int | None = None
    tagged_by: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "text": self.text, "paper_id": self.paper_id, "granularity": self.granularity,
                "main_category": self.main_category, "sub_category": self.sub_category,
                "tagged_by": self.tagged_by}


def _text_hash(text: str) -> str:
    return hashlib.sha256(" ".join(text.split()).casefold().encode()).hexdigest()


def _pick(rng: Any, n: int) -> int:
    """A uniform index in [0, n) from a `random.Random` or a `numpy.random.Generator`."""
    return int(rng.integers(n)) if hasattr(rng, "integers") else rng.randrange(n)


class _NotConfigured:
    """Stands for the embedder that built a knowledge base when the caller gave none."""

    def __init__(self, name: str, path: Path):
        self.name, self._path = name, path

    @property
    def dimension(self) -> int:
        raise self._error()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        raise self._error()

    def _error(self) -> EmbedderMismatch:
        model = self.name.split("/", 1)[1] if self.name.startswith("endpoint/") else None
        how = (f"configure embedding model {model!r} of that endpoint (--embedding-model {model} with "
               "--llm-base-url, or [llm] embedding_model)" if model else "open it with that embedder")
        return EmbedderMismatch(f"knowledge base {self._path} was built with {self.name} embeddings; {how}")


class KnowledgeBase:
    """Design ideas with FairNAD tags, searchable by meaning. Use `KnowledgeBase.open(path)`."""

    def __init__(self, path: Path, conn: sqlite3.Connection, embedder: Embedder):
        self.path = path
        self._conn = conn
        self.embedder = embedder
        self._index = None

    # -- opening -----------------------------------------------------------------------------

    @classmethod
    def open(cls, path: str | os.PathLike, embedder: Embedder | None = None) -> "KnowledgeBase":
        """Open the knowledge base in directory `path`, creating it when absent.

        `embedder` None means the offline default (`LocalEmbedder`) for a new knowledge base or
        one it built; for one built by another model, counting and sampling work and embedding
        raises `EmbedderMismatch` naming that model. Another embedder than the one that built
        it raises `EmbedderMismatch` here.
        """
        path = Path(path)
        if path.exists() and not path.is_dir():
            raise KnowledgeBaseError(f"{path} is a file; a knowledge base is a directory")
        path.mkdir(parents=True, exist_ok=True)
        try:
            conn = sqlite3.connect(path / DB_NAME, timeout=30)
            conn.execute("PRAGMA journal_mode=WAL")
            with conn:
                conn.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise KnowledgeBaseError(f"{path / DB_NAME} is not a knowledge base database ({exc})") from None
        meta = dict(conn.execute("SELECT key, value FROM meta"))
        if meta.get("schema", SCHEMA_VERSION) != SCHEMA_VERSION:
            conn.close()
            raise KnowledgeBaseError(f"knowledge base {path} has schema {meta['schema']}; "
                                     f"this version reads schema {SCHEMA_VERSION}")
        stored = meta.get("embedder")
        if embedder is None:
            # Built by another model: stats and sampling work; embedding says what to configure.
            embedder = (default_embedder() if stored in (None, LocalEmbedder.name)
                        else _NotConfigured(stored, path))
        if stored is None:
            with conn:
                conn.execute("INSERT INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
                conn.execute("INSERT INTO meta VALUES ('embedder', ?)", (embedder.name,))
        elif stored != embedder.name:
            conn.close()
            raise EmbedderMismatch(
                f"knowledge base {path} was built with {stored} embeddings (dimension {meta.get('dimension', '?')}) "
                f"and cannot be used with {embedder.name}: vectors of different models are not comparable; "
                f"use {stored}, or import the ideas into a new knowledge base")
        return cls(path, conn, embedder)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> "KnowledgeBase":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- the faiss index ---------------------------------------------------------------------

    def _meta(self, key: str) -> str | None:
        row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    @property
    def dimension(self) -> int | None:
        value = self._meta("dimension")
        return int(value) if value is not None else None

    def _load_index(self):
        """The faiss index, read from disk, or rebuilt from SQLite when missing or stale."""
        if self._index is not None:
            return self._index
        import faiss

        count, max_id = self._conn.execute("SELECT COUNT(*), COALESCE(MAX(id), 0) FROM ideas").fetchone()
        index_file = self.path / INDEX_NAME
        index = None
        if index_file.exists():
            try:
                index = faiss.read_index(str(index_file))
            except RuntimeError:
                index = None
            if index is not None and (index.ntotal != count or index.d != (self.dimension or index.d)
                                      or (count and int(faiss.vector_to_array(index.id_map).max()) != max_id)):
                index = None
        if index is None and self.dimension is not None:
            index = faiss.IndexIDMap2(faiss.IndexFlatIP(self.dimension))
            ids, vectors = [], []
            for idea_id, blob in self._conn.execute("SELECT id, vector FROM ideas ORDER BY id"):
                ids.append(idea_id)
                vectors.append(np.frombuffer(blob, dtype=np.float32))
            if ids:
                index.add_with_ids(np.vstack(vectors), np.asarray(ids, dtype=np.int64))
            self._save_index(index)
        self._index = index
        return index

    def _save_index(self, index) -> None:
        import faiss

        tmp = self.path / (INDEX_NAME + ".tmp")
        faiss.write_index(index, str(tmp))
        os.replace(tmp, self.path / INDEX_NAME)

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        vectors = self.embedder.embed(texts)
        dimension = self.dimension
        if dimension is None:
            with self._conn:
                self._conn.execute("INSERT OR REPLACE INTO meta VALUES ('dimension', ?)", (str(vectors.shape[1]),))
        elif vectors.shape[1] != dimension:
            raise EmbedderMismatch(f"{self.embedder.name} returned vectors of dimension {vectors.shape[1]}; "
                                   f"knowledge base {self.path} holds dimension {dimension}")
        return vectors

    # -- writing -----------------------------------------------------------------------------

    def has_source(self, paper_id: str) -> bool:
        """Whether paper `paper_id` was read already (with or without ideas kept)."""
        row = self._conn.execute("SELECT 1 FROM sources WHERE paper_id = ?", (str(paper_id),)).fetchone()
        return row is not None

    def add_source(self, paper_id: str, title: str | None = None, relevant: bool | None = None) -> None:
        """Record that a paper was read, e.g. one judged irrelevant, so it is not read again."""
        with self._conn:
            self._conn.execute("INSERT OR IGNORE INTO sources VALUES (?, ?, ?, ?)",
                               (str(paper_id), title, None if relevant is None else int(relevant), time.time()))

    def add_ideas(self, ideas: Iterable[Idea], threshold: float = DUPLICATE_THRESHOLD) -> int:
        """Add ideas; returns how many were new.

        An idea whose text equals a stored one (case and spacing aside), or whose embedding has
        cosine similarity >= `threshold` with a stored or earlier idea, is merged into that idea:
        recorded in `merged`, not added. Untagged ideas are tagged by the keyword tagger; given
        tags must be a path of the attribute tree (`ValueError` otherwise).
        """
        prepared = [self._prepare(idea) for idea in ideas]
        if not prepared:
            return 0
        now = time.time()
        with self._conn:
            self._conn.executemany("INSERT OR IGNORE INTO sources VALUES (?, NULL, NULL, ?)",
                                   [(p, now) for p in sorted({i.paper_id for i in prepared if i.paper_id})])
        added = 0
        for start in range(0, len(prepared), _CHUNK):
            added += self._add_chunk(prepared[start:start + _CHUNK], threshold)
        return added

    def _prepare(self, idea: Idea) -> Idea:
        text = " ".join(str(idea.text).split())
        if not text:
            raise ValueError("an idea needs non-empty text")
        paper_id = None if idea.paper_id is None else str(idea.paper_id)
        if idea.granularity is None and idea.main_category is None and idea.sub_category is None:
            tags = keyword_tag(text)
            if tags is None:
                return Idea(text, paper_id)
            return Idea(text, paper_id, *tags, tagged_by="keyword-rules")
        problem = check_tags(idea.granularity, idea.main_category, idea.sub_category)
        if problem:
            raise ValueError(f"idea {text[:60]!r}: {problem}")
        return replace(idea, text=text, paper_id=paper_id, id=None, tagged_by=idea.tagged_by or "given")

    def _merge(self, rows: list[tuple]) -> None:
        self._conn.executemany("INSERT INTO merged VALUES (?, ?, ?, ?, ?)", rows)

    def _add_chunk(self, chunk: list[Idea], threshold: float) -> int:
        now = time.time()
        merged_rows = []
        fresh: list[Idea] = []
        for idea in chunk:  # stored texts cost no embedding (a re-import is cheap)
            row = self._conn.execute("SELECT id FROM ideas WHERE text_hash = ?", (_text_hash(idea.text),)).fetchone()
            if row is not None:
                merged_rows.append((row[0], idea.text, idea.paper_id, 1.0, now))
            else:
                fresh.append(idea)
        if not fresh:
            with self._conn:
                self._merge(merged_rows)
            return 0
        vectors = self._embed([i.text for i in fresh])
        index = self._load_index()  # exists now: _embed recorded the dimension
        best_sim = np.full(len(fresh), -1.0, dtype=np.float32)
        best_id = np.full(len(fresh), -1, dtype=np.int64)
        if index.ntotal:
            sims, ids = index.search(vectors, 1)
            best_sim, best_id = sims[:, 0], ids[:, 0]
        within = vectors @ vectors.T
        kept_rows: list[int] = []
        kept_ids: list[int] = []
        next_id = self._conn.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM ideas").fetchone()[0]
        inserts = []
        for i, idea in enumerate(fresh):
            target, similarity = int(best_id[i]), float(best_sim[i])
            if kept_rows:
                j = int(np.argmax(within[i, kept_rows]))
                if within[i, kept_rows[j]] > similarity:
                    target, similarity = kept_ids[j], float(within[i, kept_rows[j]])
            if similarity >= threshold:
                merged_rows.append((target, idea.text, idea.paper_id, similarity, now))
                continue
            kept_rows.append(i)
            kept_ids.append(next_id)
            inserts.append((next_id, idea.text, _text_hash(idea.text), idea.paper_id, idea.granularity,
                            idea.main_category, idea.sub_category, idea.tagged_by, vectors[i].tobytes(), now))
            next_id += 1
        with self._conn:
            self._conn.executemany("INSERT INTO ideas VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", inserts)
            self._merge(merged_rows)
        if inserts:
            index.add_with_ids(vectors[kept_rows], np.asarray(kept_ids, dtype=np.int64))
            self._save_index(index)
        return len(inserts)

    # -- reading -----------------------------------------------------------------------------

    _COLUMNS = "text, paper_id, granularity, main_category, sub_category, id, tagged_by"

    def _idea(self, row: tuple) -> Idea:
        return Idea(*row)

    def get(self, idea_id: int) -> Idea | None:
        row = self._conn.execute(f"SELECT {self._COLUMNS} FROM ideas WHERE id = ?", (idea_id,)).fetchone()
        return self._idea(row) if row else None

    def __len__(self) -> int:
        return self._conn.execute("SELECT COUNT(*) FROM ideas").fetchone()[0]

    def _where(self, filters: Mapping[str, str] | None) -> tuple[str, list]:
        if not filters:
            return "", []
        unknown = set(filters) - set(FILTER_FIELDS)
        if unknown:
            raise KnowledgeBaseError(f"cannot filter on {', '.join(sorted(unknown))} "
                                     f"(filters: {', '.join(FILTER_FIELDS)})")
        clauses = [f"{field} = ?" for field in filters]
        return " WHERE " + " AND ".join(clauses), [str(v) for v in filters.values()]

    def search(self, query: str, k: int = 5, filters: Mapping[str, str] | None = None) -> list[tuple[Idea, float]]:
        """The `k` ideas most similar to `query`, best first, with their cosine similarity.

        `filters` restricts the ideas by exact value of granularity, main_category,
        sub_category or paper_id.
        """
        if k < 1 or not query.strip():
            return []
        index = self._load_index()
        if index is None or index.ntotal == 0:
            return []
        import faiss

        vector = self._embed([query])
        params = None
        if filters:
            where, args = self._where(filters)
            allowed = [row[0] for row in self._conn.execute(f"SELECT id FROM ideas{where}", args)]
            if not allowed:
                return []
            params = faiss.SearchParameters(sel=faiss.IDSelectorBatch(np.asarray(allowed, dtype=np.int64)))
        threads = faiss.omp_get_max_threads()
        faiss.omp_set_num_threads(1)  # one query: threads only add synchronisation (docs/knowledge.md)
        try:
            sims, ids = index.search(vector, min(k, index.ntotal), params=params)
        finally:
            faiss.omp_set_num_threads(threads)
        results = []
        for similarity, idea_id in zip(sims[0], ids[0]):
            if idea_id < 0:
                continue
            idea = self.get(int(idea_id))
            if idea is not None:
                results.append((idea, float(similarity)))
        return results

    def sample(self, rng: Any, by: str | None = "main_category") -> Idea | None:
        """One idea, drawn fairly: a group uniformly at random, then an idea uniformly within it.

        `by` is "granularity", "main_category" (FairNAD's best setting) or "sub_category"
        (grouped as main category and sub-category pairs); None draws uniformly over all ideas.
        Untagged ideas have no group and are never drawn by a grouped draw. `rng` is a
        `random.Random` or a `numpy.random.Generator`. Returns None when nothing can be drawn.
        """
        if by is None:
            ids = [row[0] for row in self._conn.execute("SELECT id FROM ideas ORDER BY id")]
        else:
            if by not in SAMPLE_LEVELS:
                raise KnowledgeBaseError(f"cannot sample by {by!r} (one of: {', '.join(SAMPLE_LEVELS)})")
            keys = "main_category, sub_category" if by == "sub_category" else by
            groups = self._conn.execute(
                f"SELECT DISTINCT {keys} FROM ideas WHERE {by} IS NOT NULL ORDER BY {keys}").fetchall()
            if not groups:
                return None
            group = groups[_pick(rng, len(groups))]
            columns = keys.split(", ")
            where = " AND ".join(f"{c} = ?" for c in columns)
            ids = [row[0] for row in self._conn.execute(f"SELECT id FROM ideas WHERE {where} ORDER BY id", group)]
        if not ids:
            return None
        return self.get(ids[_pick(rng, len(ids))])

    def stats(self) -> dict[str, Any]:
        """Counts: ideas, papers, merged near-duplicates, tags by level and by tagger."""
        one = lambda sql: self._conn.execute(sql).fetchone()[0]  # noqa: E731

        def counts(column: str) -> dict[str, int]:
            rows = self._conn.execute(
                f"SELECT {column}, COUNT(*) FROM ideas WHERE {column} IS NOT NULL GROUP BY {column} "
                f"ORDER BY COUNT(*) DESC, {column}")
            return dict(rows.fetchall())

        return {
            "path": str(self.path),
            "embedder": self._meta("embedder"),
            "dimension": self.dimension,
            "ideas": one("SELECT COUNT(*) FROM ideas"),
            "papers": one("SELECT COUNT(*) FROM sources"),
            "merged_duplicates": one("SELECT COUNT(*) FROM merged"),
            "untagged": one("SELECT COUNT(*) FROM ideas WHERE main_category IS NULL"),
            "tagged_by": counts("tagged_by"),
            "granularity": counts("granularity"),
            "main_category": counts("main_category"),
        }
