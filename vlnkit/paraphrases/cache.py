"""A persistent translation cache, so a scheduled regeneration never pays twice for the same text.

The cache is a folder (local or any Beam filesystem, e.g. gs://bucket/cache) of Parquet part
files, keyed by (backend, source, target, text), where `backend` names everything that shapes a
translation (`translation_backend`): the backend, and for Cloud Translation the model, the location
and the endpoint. Another model, region or a test stand-in's endpoint therefore never serves (or
overwrites) the real service's entries; entries of older caches, keyed by the bare backend name, are
simply never matched again. Readers load every part; writers only ever add
a new part with the entries they created, so many workers can extend one cache at once without
locking or rewriting anything. `compact` merges parts when they become many.
"""

from __future__ import annotations

import io
import threading
import uuid
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from vlnkit.io import fileio
from vlnkit.paraphrases.schemas import CACHE_SCHEMA
from vlnkit.paraphrases.translation import TranslationJob, TranslationOutcome, TranslationStats, Translator

PART_PATTERN = "part-*.parquet"

Key = tuple[str, str, str, str]  # backend (with model, location, endpoint), source, target, text


def translation_backend(backend: str, model: str | None = None, location: str | None = None, endpoint=None) -> str:
    """The `backend` part of a cache key: the backend with everything else that shapes its output.

    >>> translation_backend("offline-demo")
    'offline-demo'
    >>> translation_backend("google", None, "global", None)
    'google;model=default;location=global;endpoint=default'
    >>> translation_backend("google", None, "global", "localhost:9999")
    'google;model=default;location=global;endpoint=localhost:9999'
    """
    if model is None and location is None and endpoint is None and backend != "google":
        return backend
    return f"{backend};model={model or 'default'};location={location or 'global'};endpoint={endpoint or 'default'}"


def backend_of(translator: Translator) -> str:
    """The cache-key backend of a translator (its `config`, when it has one, says model, location, endpoint)."""
    config = getattr(translator, "config", None)
    if config is None:
        return translator.name
    return translation_backend(translator.name, config.model, config.location, config.endpoint)


class CacheError(RuntimeError):
    """A cache part cannot be read: names the file and the reason."""


class TranslationCache:
    """In-memory view of the cache folder plus the entries added since it was loaded (thread-safe)."""

    def __init__(self, path: str | None):
        self.path = path
        self.entries: dict[Key, str] = {}
        self.pending: dict[Key, str] = {}
        self.lock = threading.Lock()
        if path:
            self.load()

    def load(self) -> None:
        for part, _ in fileio.match(fileio.join(self.path, PART_PATTERN)):
            try:
                with fileio.open_read(part) as f:
                    table = pq.read_table(io.BytesIO(f.read()))
                cols = [table.column(n).to_pylist() for n in CACHE_SCHEMA.names]
            except (OSError, pa.ArrowException, KeyError) as exc:
                raise CacheError(f"translation cache part {part}: cannot read ({exc})") from exc
            for backend, source, target, text, translation in zip(*cols):
                self.entries[(backend, source, target, text)] = translation

    def __len__(self) -> int:
        return len(self.entries) + len(self.pending)

    def get(self, key: Key) -> str | None:
        with self.lock:
            hit = self.entries.get(key)
            return self.pending.get(key) if hit is None else hit

    def put(self, key: Key, translation: str) -> None:
        with self.lock:
            if key not in self.entries:
                self.pending[key] = translation

    def flush(self) -> str | None:
        """Write the pending entries as a new part; returns its path (None if nothing to write or no folder)."""
        with self.lock:
            if not self.pending or not self.path:
                return None
            pending, self.pending = self.pending, {}
            self.entries.update(pending)
        rows = [(*key, value) for key, value in sorted(pending.items())]
        table = pa.Table.from_arrays([pa.array(list(c), pa.string()) for c in zip(*rows)], schema=CACHE_SCHEMA)
        part = fileio.join(self.path, f"part-{uuid.uuid4().hex}.parquet")
        _write_table(part, table)
        return part

    def compact(self) -> str | None:
        """Rewrite all parts as one (run when no job is writing). Returns the new part's path."""
        old = [p for p, _ in fileio.match(fileio.join(self.path, PART_PATTERN))]
        with self.lock:
            self.pending.update(self.entries)
            self.entries = {}
        new = self.flush()
        stale = [p for p in old if p != new]
        if stale:
            fileio.delete(stale)
        return new


def _write_table(path: str, table: pa.Table) -> None:
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd")
    with fileio.open_write(path) as f:
        f.write(buf.getvalue())


class CachedTranslator(Translator):
    """Answer from the cache where possible; send only the misses, and remember what came back.

    Failed translations are not cached (a later run retries them). Duplicate texts within one
    call are sent once.
    """

    def __init__(self, inner: Translator, cache: TranslationCache):  # no super().__init__: stats is derived
        self._stats_lock = threading.Lock()
        self._hits = self._misses = 0
        self.inner = inner
        self.cache = cache
        self.name = inner.name
        self.backend = backend_of(inner)  # what the entries of this translator are keyed by

    @property
    def stats(self) -> TranslationStats:  # type: ignore[override]
        s = self.inner.stats.copy()
        s.cache_hits, s.cache_misses = self._hits, self._misses
        return s

    def translate(self, jobs: Sequence[TranslationJob]) -> list[list[TranslationOutcome]]:
        results: list[list[TranslationOutcome | None]] = []
        to_send: list[TranslationJob] = []
        where: list[tuple[int, list[int]]] = []
        for j, job in enumerate(jobs):
            row: list[TranslationOutcome | None] = [None] * len(job.texts)
            misses: dict[str, list[int]] = {}
            for i, text in enumerate(job.texts):
                hit = self.cache.get((self.backend, job.source, job.target, text))
                if hit is not None:
                    row[i] = TranslationOutcome(hit)
                else:
                    misses.setdefault(text, []).append(i)
            with self._stats_lock:
                self._hits += len(job.texts) - sum(map(len, misses.values()))
                self._misses += len(misses)
            results.append(row)
            if misses:
                to_send.append(TranslationJob(tuple(misses), job.source, job.target))
                where.append((j, list(misses.values())))
        if to_send:
            for (j, positions), job, outcomes in zip(where, to_send, self.inner.translate(to_send)):
                for text, idxs, outcome in zip(job.texts, positions, outcomes):
                    if outcome.ok:
                        self.cache.put((self.backend, job.source, job.target, text), outcome.translation)
                    for i in idxs:
                        results[j][i] = outcome
        return results  # type: ignore[return-value]

    def close(self) -> None:
        self.inner.close()
