"""Columnar containers of predictions and reference paths: how scoring moves a million episodes cheaply.

A prediction or a reference path travels as one row of a batch of numpy arrays, and its path as
global viewpoint numbers (int32, see `Vocabulary`) in one flat array with offsets (`Paths`), never
as a Python dict with a list of 32-character viewpoint ids. Batches are split by a stable bucket
of their path_id (`vlnkit.datasets.buckets`), so predictions and references of one path meet on one worker.
The batches are built from file chunks by `vlnkit.datasets.prediction_batches` and
`vlnkit.datasets.reference_batches`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from itertools import chain

import msgspec
import numpy as np

from vlnkit.io.json_text import loads_exact


class _Index(dict):
    """viewpoint id -> global number; an unknown id gives -1 (so `map` never raises)."""

    def __missing__(self, key):
        return -1


def _small(values: np.ndarray) -> np.ndarray:
    """The same integers in the narrowest integer type that holds them all (for pickling: see `CompactBatch`)."""
    if not len(values):
        return values.astype(np.int8)
    low, high = int(values.min()), int(values.max())
    for dtype in (np.int8, np.int16, np.int32):
        info = np.iinfo(dtype)
        if info.min <= low and high <= info.max:
            return values.astype(dtype)
    return values


class CompactBatch:
    """What every batch of the score job's shuffle is (the readers' outputs: `transforms.coders` gives
    them their coder by this type). Batches cross the shuffle pickled, several times over in Beam's local
    runner (each copy is the whole input), so their state is narrowed first: integer columns in the
    narrowest type that holds the batch's values, paths as lengths rather than offsets, repeated scan
    names as codes. Unpickling restores the declared types, so a batch is the same before and after."""

    WIDE: dict[str, type] = {}

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        for name in self.WIDE:
            if state.get(name) is not None:
                state[name] = _small(np.asarray(state[name]))
        return state

    def __setstate__(self, state: dict) -> None:
        for name, dtype in self.WIDE.items():
            if state.get(name) is not None:
                state[name] = np.asarray(state[name]).astype(dtype)
        self.__dict__.update(state)


@dataclass
class Vocabulary:
    """Every included viewpoint of every scan, numbered globally (int32), in each scan's file order.

    `scan_of[g]`/`local[g]` give the scan number and the node index within `NavGraph` of global
    viewpoint g, so converting a path to a scan's node indices is one numpy gather. An id that is
    not in any scan (or in several) maps to -1 and is resolved by string when scored.

        >>> v = Vocabulary(["s1", "s2"], [["a", "b"], ["c"]])
        >>> v.numbers(["c", "a", "zz"]).tolist(), int(v.local[2]), int(v.scan_of[2])
        ([2, 0, -1], 0, 1)
    """

    scans: list[str]
    viewpoints: list[list[str]]
    index: _Index = field(init=False, repr=False)

    def __post_init__(self) -> None:
        flat = list(chain.from_iterable(self.viewpoints))
        counts = Counter(flat)
        self.strings = np.asarray(flat, dtype=object)
        self.scan_of = np.repeat(np.arange(len(self.scans), dtype=np.int32), [len(v) for v in self.viewpoints])
        self.local = np.concatenate(
            [np.arange(len(v), dtype=np.int32) for v in self.viewpoints] or [np.zeros(0, np.int32)]
        )
        self.index = _Index((v, g) for g, v in enumerate(flat) if counts[v] == 1)
        self.scan_ids = {s: n for n, s in enumerate(self.scans)}

    def numbers(self, viewpoints: list[str]) -> np.ndarray:
        return np.fromiter(map(self.index.__getitem__, viewpoints), dtype=np.int32, count=len(viewpoints))

    @classmethod
    def load(cls, connectivity_dir: str) -> Vocabulary:
        """Read the included viewpoint ids of every `<scan>_connectivity.json` in the folder.

        A file that cannot be read is left out: its scan's graph fails to load when scored and
        the predictions on it are dead-lettered with that error.
        """
        from vlnkit.io import fileio
        from vlnkit.navigation.graph import connectivity_path, list_scans

        scans, viewpoints = [], []
        for scan in list_scans(connectivity_dir):
            try:
                ids = _included_ids(fileio.read_bytes(connectivity_path(connectivity_dir, scan)))
            except Exception:  # noqa: BLE001 -- the graph store reports the real error per scan
                continue
            scans.append(scan)
            viewpoints.append(ids)
        return cls(scans, viewpoints)


class _Entry(msgspec.Struct):
    """The two fields of a connectivity entry the vocabulary needs; the others are skipped unparsed."""

    image_id: str
    included: bool


_ENTRIES = msgspec.json.Decoder(list[_Entry])


def _included_ids(text: bytes) -> list[str]:
    """The included viewpoint ids of one connectivity file, in file order.

    Decoding only `image_id` and `included` into a typed list is about three times faster than a whole
    parse (24 MB of connectivity files: 0.023 s against 0.061 s), which a small run waits for at start.
    A file msgspec refuses (an `image_id` that is not a string, an `included` that is not a boolean,
    text `json` accepts and msgspec does not) is read the general way, with the same answer as before.
    """
    try:
        return [e.image_id for e in _ENTRIES.decode(text) if e.included]
    except (msgspec.ValidationError, msgspec.DecodeError):
        return [str(e["image_id"]) for e in loads_exact(text) if bool(e["included"])]


# ----------------------------------------------------------------------------- paths
def flat_paths(paths: list[list[str]]) -> tuple[np.ndarray, list[str]]:
    """The columnar form of a list of paths: each path's length, and every viewpoint in order.

    >>> lengths, flat = flat_paths([["a", "b"], ["c"]])
    >>> lengths.tolist(), flat
    ([2, 1], ['a', 'b', 'c'])
    """
    lengths = np.fromiter(map(len, paths), dtype=np.int64, count=len(paths))
    return lengths, list(chain.from_iterable(paths))


@dataclass
class Paths:
    """Variable-length paths of global viewpoint numbers: flat int32 values with int64 offsets.

    `strings` keeps the viewpoint ids of the rows holding an id the vocabulary could not number
    (-1), so those rows can still be resolved (or reported) by string.
    """

    offsets: np.ndarray
    values: np.ndarray
    strings: dict[int, list[str]] = field(default_factory=dict)

    def __getstate__(self) -> dict:  # see `CompactBatch`: lengths travel, offsets are rebuilt
        return {"lengths": _small(np.diff(self.offsets)), "values": self.values, "strings": self.strings}

    def __setstate__(self, state: dict) -> None:
        offsets = np.zeros(len(state["lengths"]) + 1, np.int64)
        np.cumsum(state["lengths"], out=offsets[1:])
        self.offsets, self.values, self.strings = offsets, state["values"], state["strings"]

    @classmethod
    def from_lists(cls, paths: list[list[str]], vocab: Vocabulary) -> Paths:
        return cls.from_flat(*flat_paths(paths), vocab)

    @classmethod
    def from_flat(cls, lengths: np.ndarray, flat: list[str], vocab: Vocabulary) -> Paths:
        offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        values = vocab.numbers(flat)
        strings = {}
        if (values < 0).any():
            rows = np.unique(np.searchsorted(offsets, np.flatnonzero(values < 0), side="right") - 1)
            for r in rows.tolist():
                strings[r] = flat[offsets[r] : offsets[r + 1]]
        return cls(offsets, values, strings)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def slice(self, start: int, stop: int) -> Paths:
        """Rows start..stop-1 (views of this batch's arrays, offsets rebased)."""
        offsets = self.offsets[start : stop + 1]
        strings = {r - start: s for r, s in self.strings.items() if start <= r < stop} if self.strings else {}
        return Paths(offsets - offsets[0], self.values[offsets[0] : offsets[-1]], strings)

    def take(self, rows: np.ndarray) -> Paths:
        from vlnkit.datasets.ragged import gather_rows  # compiled: here, so importing the columns needs no numba

        rows = np.asarray(rows, dtype=np.int64)
        offsets, values = gather_rows(self.offsets, self.values, rows)
        strings = {}
        if self.strings:
            for new, old in enumerate(rows.tolist()):
                if old in self.strings:
                    strings[new] = self.strings[old]
        return Paths(offsets, values, strings)

    @classmethod
    def concat(cls, parts: list[Paths]) -> Paths:
        if not parts:
            return cls(np.zeros(1, np.int64), np.zeros(0, np.int32))
        lengths = np.concatenate([p.lengths for p in parts])
        offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        strings, base = {}, 0
        for p in parts:
            strings.update({base + r: s for r, s in p.strings.items()})
            base += len(p)
        return cls(offsets, np.concatenate([p.values for p in parts]), strings)

    def viewpoints(self, row: int, vocab: Vocabulary) -> list[str]:
        """The viewpoint ids of one row (for the rare rows resolved by string)."""
        if row in self.strings:
            return self.strings[row]
        return vocab.strings[self.values[self.offsets[row] : self.offsets[row + 1]]].tolist()


def _take_columns(obj, rows, names):
    return {n: getattr(obj, n)[rows] for n in names}


# ----------------------------------------------------------------------------- a task's own columns
# A task's reader may give its rows more columns than the generic ones (REVERIE: the target object of a
# reference row, the predicted object of a prediction): `extras`, {name: numpy array or `Paths`, one row each}.
# They travel with their rows through every take, slice and concat, and the join hands them to the
# task's rule per scored pair (`vlnkit.scoring.task`).
def take_extras(extras: dict, rows) -> dict:
    return {n: (c.take(rows) if isinstance(c, Paths) else c[rows]) for n, c in extras.items()}


def slice_extras(extras: dict, start: int, stop: int) -> dict:
    return {n: (c.slice(start, stop) if isinstance(c, Paths) else c[start:stop]) for n, c in extras.items()}


def concat_extras(parts: list[dict]) -> dict:
    """The extras of batches put one after the other (every part must have the same names).

    >>> concat_extras([{"x": np.array([1])}, {"x": np.array([2, 3])}])["x"].tolist()
    [1, 2, 3]
    """
    if not parts or not parts[0]:
        return {}
    names = list(parts[0])
    if any(list(p) != names for p in parts):
        raise ValueError(f"batches with different extra columns: {sorted({tuple(p) for p in parts})}")
    return {
        n: Paths.concat([p[n] for p in parts])
        if isinstance(parts[0][n], Paths)
        else np.concatenate([p[n] for p in parts])
        for n in names
    }


@dataclass
class PredictionBatch(CompactBatch):
    """Predictions of one agent: `rank` (file number within the agent), `index` (record number in
    its file), the instr_id as (`path_id`, `k`) and the trajectory as `paths` (global numbers)."""

    agent: str
    rank: np.ndarray
    index: np.ndarray
    path_id: np.ndarray
    k: np.ndarray
    paths: Paths
    extras: dict = field(default_factory=dict)  # a task's own columns (see `take_extras`)

    COLUMNS = ("rank", "index", "path_id", "k")
    WIDE = dict.fromkeys(COLUMNS, np.int64)

    def __len__(self) -> int:
        return len(self.index)

    def take(self, rows) -> PredictionBatch:
        cols = _take_columns(self, rows, self.COLUMNS)
        return PredictionBatch(self.agent, **cols, paths=self.paths.take(rows), extras=take_extras(self.extras, rows))

    def slice(self, start: int, stop: int) -> PredictionBatch:
        cols = {n: getattr(self, n)[start:stop] for n in self.COLUMNS}
        extras = slice_extras(self.extras, start, stop)
        return PredictionBatch(self.agent, **cols, paths=self.paths.slice(start, stop), extras=extras)

    @classmethod
    def concat(cls, agent: str, parts: list[PredictionBatch]) -> PredictionBatch:
        cols = {n: np.concatenate([getattr(p, n) for p in parts] or [np.zeros(0, np.int64)]) for n in cls.COLUMNS}
        extras = concat_extras([p.extras for p in parts])
        return cls(agent, **cols, paths=Paths.concat([p.paths for p in parts]), extras=extras)


NO_LANGUAGE = -1  # the language code of an episode without a language (R2R)


def merge_languages(parts: list[tuple[tuple[str, ...], np.ndarray]]) -> tuple[tuple[str, ...], np.ndarray]:
    """Dictionary-encoded language columns [(dictionary, int codes)] -> one (sorted dictionary, codes).

    >>> d, c = merge_languages([(("hi-IN",), np.array([0, -1])), (("en-IN", "hi-IN"), np.array([1, 0]))])
    >>> d, c.tolist()
    (('en-IN', 'hi-IN'), [1, -1, 1, 0])
    """
    merged = tuple(sorted(set().union(*(d for d, _ in parts))))
    where = {name: n for n, name in enumerate(merged)}
    out = []
    for dictionary, codes in parts:
        # The lookup's last entry answers code -1 (no language) with -1.
        lookup = np.asarray([where[name] for name in dictionary] + [NO_LANGUAGE], np.int32)
        out.append(lookup[codes])
    return merged, np.concatenate(out) if out else np.zeros(0, np.int32)


def encode_languages(tags: list[str]) -> tuple[tuple[str, ...], np.ndarray]:
    """Language tags -> (sorted dictionary, int32 codes), in one numpy call.

    >>> encode_languages(["te-IN", "en-IN", "te-IN"])
    (('en-IN', 'te-IN'), array([1, 0, 1], dtype=int32))
    """
    if not tags:
        return (), np.zeros(0, np.int32)
    dictionary, codes = np.unique(np.asarray(tags, dtype=str), return_inverse=True)
    return tuple(dictionary.tolist()), codes.astype(np.int32).reshape(-1)


@dataclass
class ReferenceBatch(CompactBatch):
    """Reference paths: `rank` (dataset file number), `index` (record number), `path_id`, `scan`
    (numpy unicode), `instructions` (how many episodes the path has) and `paths`.

    An RxR guide line is one row holding one episode: its `path_id` is the instruction_id (the key
    predictions are matched and bucketed by) and `first_k` is -1, so its episode's instr_id is
    `str(instruction_id)`; an R2R row's episodes are k = 0 .. instructions - 1 (`first_k` 0), instr_id
    "<path_id>_<k>". `language` holds int32 codes into the `languages` dictionary (-1: none, as for R2R).
    """

    rank: np.ndarray
    index: np.ndarray
    path_id: np.ndarray
    scan: np.ndarray
    instructions: np.ndarray
    paths: Paths
    first_k: np.ndarray | None = None
    language: np.ndarray | None = None
    languages: tuple[str, ...] = ()
    extras: dict = field(default_factory=dict)  # a task's own columns (see `take_extras`)

    COLUMNS = ("rank", "index", "path_id", "scan", "instructions", "first_k", "language")
    WIDE = {**dict.fromkeys(("rank", "index", "path_id", "instructions", "first_k"), np.int64), "language": np.int32}

    def __getstate__(self) -> dict:  # repeated scan names travel once, with a code per row
        state = super().__getstate__()
        names, codes = np.unique(self.scan, return_inverse=True)
        state["scan"] = (names, _small(codes.reshape(-1)))
        return state

    def __setstate__(self, state: dict) -> None:
        names, codes = state["scan"]
        state["scan"] = names[codes.astype(np.int64)] if len(codes) else np.zeros(0, names.dtype)
        super().__setstate__(state)

    def __post_init__(self) -> None:
        if self.first_k is None:
            self.first_k = np.zeros(len(self.index), np.int64)
        if self.language is None:
            self.language = np.full(len(self.index), NO_LANGUAGE, np.int32)

    def __len__(self) -> int:
        return len(self.index)

    def take(self, rows) -> ReferenceBatch:
        return ReferenceBatch(
            **_take_columns(self, rows, self.COLUMNS),
            paths=self.paths.take(rows),
            languages=self.languages,
            extras=take_extras(self.extras, rows),
        )

    def slice(self, start: int, stop: int) -> ReferenceBatch:
        cols = {n: getattr(self, n)[start:stop] for n in self.COLUMNS}
        extras = slice_extras(self.extras, start, stop)
        return ReferenceBatch(**cols, paths=self.paths.slice(start, stop), languages=self.languages, extras=extras)

    @classmethod
    def concat(cls, parts: list[ReferenceBatch]) -> ReferenceBatch:
        empty = {"scan": np.zeros(0, "U1"), "language": np.zeros(0, np.int32)}
        names = [n for n in cls.COLUMNS if n != "language"]
        cols = {
            n: np.concatenate([getattr(p, n) for p in parts]) if parts else empty.get(n, np.zeros(0, np.int64))
            for n in names
        }
        languages, codes = merge_languages([(p.languages, p.language) for p in parts])
        paths = Paths.concat([p.paths for p in parts])
        return cls(
            **cols, paths=paths, language=codes, languages=languages, extras=concat_extras([p.extras for p in parts])
        )


@dataclass
class RefusedReferences(CompactBatch):
    """Dataset records that were refused but still name their key: (`path_id`, `first_k`) as in a
    `ReferenceBatch` (an RxR guide line: its instruction_id, k -1), with where each was (`source`, `record`).
    They travel to the join beside the references, so that a prediction of a refused record is told why it
    has no episode, rather than that its id is not in the dataset."""

    path_id: np.ndarray
    first_k: np.ndarray
    where: list[str]  # "<file> <record>" of each

    COLUMNS = ("path_id", "first_k")
    WIDE = dict.fromkeys(COLUMNS, np.int64)

    def __len__(self) -> int:
        return len(self.path_id)

    def take(self, rows) -> RefusedReferences:
        rows = np.asarray(rows, np.int64)
        return RefusedReferences(self.path_id[rows], self.first_k[rows], [self.where[r] for r in rows.tolist()])

    def slice(self, start: int, stop: int) -> RefusedReferences:
        return RefusedReferences(self.path_id[start:stop], self.first_k[start:stop], self.where[start:stop])

    @classmethod
    def concat(cls, parts: list[RefusedReferences]) -> RefusedReferences:
        if not parts:
            return cls(np.zeros(0, np.int64), np.zeros(0, np.int64), [])
        return cls(
            np.concatenate([p.path_id for p in parts]),
            np.concatenate([p.first_k for p in parts]),
            [w for p in parts for w in p.where],
        )

    @classmethod
    def of(cls, errors) -> RefusedReferences:
        """The refused records among `errors` (RecordErrors) that name their key."""
        keyed = [e for e in errors if e.key is not None]
        return cls(
            np.asarray([e.key[0] for e in keyed], np.int64),
            np.asarray([e.key[1] for e in keyed], np.int64),
            [f"{e.source} {e.record}".strip() for e in keyed],
        )


@dataclass
class RefusedPredictions(CompactBatch):
    """Predictions of one agent refused at reading that still name their episode (`path_id`, `k` as in a
    `PredictionBatch`): they travel to the join so that the episode counts as given a prediction (without a
    usable one), not as missing."""

    agent: str
    path_id: np.ndarray
    k: np.ndarray

    COLUMNS = ("path_id", "k")
    WIDE = dict.fromkeys(COLUMNS, np.int64)

    def __len__(self) -> int:
        return len(self.path_id)

    def take(self, rows) -> RefusedPredictions:
        rows = np.asarray(rows, np.int64)
        return RefusedPredictions(self.agent, self.path_id[rows], self.k[rows])

    def slice(self, start: int, stop: int) -> RefusedPredictions:
        return RefusedPredictions(self.agent, self.path_id[start:stop], self.k[start:stop])

    @classmethod
    def concat(cls, agent: str, parts: list[RefusedPredictions]) -> RefusedPredictions:
        if not parts:
            return cls(agent, np.zeros(0, np.int64), np.zeros(0, np.int64))
        return cls(agent, np.concatenate([p.path_id for p in parts]), np.concatenate([p.k for p in parts]))
