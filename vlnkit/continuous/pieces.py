"""The score job's continuous inputs read into bucketed pieces: one Arrow table per file and bucket.

A VLN-CE file is one JSON document (an episode file, a ground-truth file, a positions file, a result
file), read whole by the readers of this package; the job then spreads its rows over buckets by a
stable hash of `episode_id` (`vlnkit.datasets.buckets.bucket_of`), the key every VLN-CE file shares,
so the episodes and every agent's rows of one episode meet in one group of the shuffle, and memory
per bucket stays bounded by the bucket count as in the graph score job.

- `dataset_pieces(path, rank, ...)`: an R2R-CE or RxR-Habitat episode file (with its ground truth) ->
  `Piece(EPISODES)` tables (episode_id, trajectory_id, instr_id, scan, language, the reference points
  the metrics compare with, the reference path's length, goal, geodesic start-goal distance) and
  `Piece(REFUSED)` tables (ids of episodes refused at reading, so an agent's row of one is told so), and
  when the file itself cannot be read, a `Piece(UNREADABLE)` naming it in every bucket (an agent's row
  is then told that the file was refused, not that its episode does not exist);
- `agent_pieces(path, agent, rank, kind, ...)`: one agent file -> `Piece(POSITIONS)` (episode_id,
  positions, stopped) or `Piece(RESULTS)` (episode_id and the result metrics under the toolkit's
  names, `results.RESULT_METRICS`); an RxR-Habitat submission is keyed by instruction id and is mapped
  to episode ids here (`instructions` gives the dataset's map), an id the dataset lacks being a
  "match" dead letter; and `Piece(REFUSED)` tables of the agent's records refused at reading, so their
  episodes are without a usable row, not missing.

Every record that cannot be used is a `RecordError` (the readers word them), yielded in file order
with the pieces; a result file's own totals come as one `FileTotals`. Each table keeps `index`, the row's place in its file, and each piece its file's
`rank`: duplicates are resolved by (rank, index), the first wins (`vlnkit.continuous.buckets`).

>>> import numpy as np, pyarrow as pa
>>> p = Piece(POSITIONS, "a", 0, pa.table({"episode_id": np.array([1, 2, 3, 4])}))
>>> [(b, len(part)) for b, part in split(p, 2)]
[(0, 3), (1, 1)]
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from vlnkit.continuous import kernels
from vlnkit.continuous.documents import POSITION_KINDS
from vlnkit.continuous.episodes import read_episodes
from vlnkit.continuous.positions import read_positions
from vlnkit.continuous.results import read_results, totals_check
from vlnkit.datasets.buckets import bucket_of
from vlnkit.io.dead_letters import RecordError

EPISODES, REFUSED, POSITIONS, RESULTS = "episodes", "refused", "positions", "results"
UNREADABLE = "unreadable"  # a dataset file refused whole: a piece in every bucket, naming it
MATCH = "match"  # the dead-letter stage of an agent's row that matches no episode (as the graph score job's)
_EPISODE_LABEL = re.compile(r"episode_id=['\"]?(-?[0-9]+)")


@dataclass(frozen=True, eq=False)
class Piece:
    """Rows of one file in one bucket: `kind` (EPISODES, REFUSED, POSITIONS, RESULTS), the agent ("" for
    the dataset), the file's rank among its flag's files, and the rows."""

    kind: str
    agent: str
    rank: int
    table: pa.Table

    def __len__(self) -> int:
        return self.table.num_rows


@dataclass(frozen=True)
class FileTotals:
    """A result file's own totals (StreamVLN's and InternNav's aggregate line) compared with its episode
    rows (`results.totals_check`): a report for the summary, never a record."""

    agent: str
    report: dict


def split(piece: Piece, buckets: int) -> Iterator[tuple[int, Piece]]:
    """(bucket, the piece's rows of that bucket) per bucket it touches, rows in file order."""
    if not len(piece):
        return
    bucket = bucket_of(piece.table.column("episode_id").to_numpy(), buckets)
    order = np.argsort(bucket, kind="stable")
    found, starts = np.unique(bucket[order], return_index=True)
    table = piece.table.take(pa.array(order))
    for b, start, stop in zip(found.tolist(), starts.tolist(), [*starts[1:].tolist(), len(order)]):
        yield b, Piece(piece.kind, piece.agent, piece.rank, table.slice(start, stop - start))


def _xyz(points: np.ndarray) -> pa.Array:
    return pa.FixedSizeListArray.from_arrays(pa.array(np.ascontiguousarray(points).reshape(-1)), 3)


def dataset_pieces(
    path: str, rank: int, *, gt: str | None, reference: str, buckets: int
) -> Iterator[tuple[int, Piece] | RecordError]:
    """The episodes of one dataset file (see the module docstring); `gt` as `read_episodes` takes it,
    `reference` "gt" (the ground-truth locations, VLN-CE's rule) or "reference_path"."""
    episodes, errors = read_episodes(path, gt)
    yield from errors
    yield from _refused(errors, path, "", rank, buckets)
    if any(e.source == path and e.record == "" for e in errors):  # the file itself: tell every bucket
        table = pa.table({"where": pa.array([path], pa.string())})
        yield from ((b, Piece(UNREADABLE, "", rank, table)) for b in range(buckets))
    if not len(episodes):
        return
    if reference == "gt" and episodes.gt_locations is None:
        why = f"no ground-truth file ({episodes.gt_source or 'none beside it'}): score against --ce_reference=reference_path"
        yield RecordError(path, "", why)
        return
    lengths = np.empty(len(episodes))
    kernels.path_lengths(episodes.reference_path.points, episodes.reference_path.offsets, lengths)
    table = pa.table(
        {
            "episode_id": pa.array(episodes.episode_id, pa.int64()),
            "index": pa.array(np.arange(len(episodes)), pa.int64()),
            "trajectory_id": pa.array(episodes.trajectory_id, pa.int64()),
            "instr_id": pa.array(episodes.instr_id.tolist(), pa.string()),
            "scan": pa.array(episodes.scan.tolist(), pa.string()),
            "language": pa.array(episodes.language.tolist(), pa.string()),
            "reference": episodes.reference(reference).to_arrow(),
            "reference_length": pa.array(lengths),
            "goal": _xyz(episodes.goal),
            "geodesic_distance": pa.array(episodes.geodesic_distance),
        }
    )
    yield from split(Piece(EPISODES, "", rank, table), buckets)


def _refused(errors, path: str, agent: str, rank: int, buckets: int) -> Iterator[tuple[int, Piece]]:
    """A REFUSED piece per bucket: the episode ids of the records of `path` refused at reading (their
    dead letters name `episode_id=N`), with where they were. The dataset's tell an agent's row of such an
    episode why there is no episode; an agent's tell the join that the agent did give a row for it."""
    ids = sorted(
        {int(m.group(1)) for e in errors if e.source == path and e.stage != MATCH
         for m in [_EPISODE_LABEL.search(e.record)] if m}
    )  # fmt: skip
    if ids:
        where = pa.array([path] * len(ids), pa.string())
        yield from split(Piece(REFUSED, agent, rank, pa.table({"episode_id": np.array(ids), "where": where})), buckets)


def agent_pieces(
    path: str,
    agent: str,
    rank: int,
    kind: str | None,
    buckets: int,
    instructions: Callable[[], tuple[np.ndarray, np.ndarray, str]] | None = None,
) -> Iterator[tuple[int, Piece] | RecordError]:
    """One agent file's rows (see the module docstring). `kind` is the file's layout
    (`documents.sniff_kind`): a positions layout is read by `read_positions`, anything else by
    `read_results` (which names what the file is when it is neither). `instructions()` returns the
    dataset's (instruction ids, their episode ids, the dataset's name), for an RxR-Habitat submission."""
    stage = dict(stage=MATCH)
    if kind in POSITION_KINDS:
        positions, errors = read_positions(path)
        yield from errors
        yield from _refused(errors, path, agent, rank, buckets)
        keys = positions.keys
        if positions.key_kind == "instruction_id":
            known, episode_ids, where = instructions() if instructions else (np.zeros(0, np.int64),) * 2 + ("",)
            order = np.argsort(known, kind="stable")
            at = np.minimum(np.searchsorted(known[order], keys), max(len(known) - 1, 0))
            found = (known[order][at] == keys) if len(known) else np.zeros(len(keys), bool)
            for row in np.flatnonzero(~found).tolist():
                key = int(keys[row])
                what = (
                    "RxR instruction"
                    if len(known)
                    else "instruction (the episodes are R2R-CE, without instruction ids)"
                )
                yield RecordError(path, f"instruction_id={key}", f"no {what} {key} in {where}", **stage)
            rows = np.flatnonzero(found)
            keys = episode_ids[order][at[rows]]
        else:
            rows = np.arange(len(keys))
        stopped = positions.stopped[rows] if positions.stopped is not None else None
        table = pa.table(
            {
                "episode_id": pa.array(keys, pa.int64()),
                "index": pa.array(rows, pa.int64()),
                "positions": positions.paths.take(rows).to_arrow(),
                "stopped": pa.array(stopped, pa.bool_()) if stopped is not None else pa.nulls(len(rows), pa.bool_()),
            }
        )
        yield from split(Piece(POSITIONS, agent, rank, table), buckets)
        return
    results, errors = read_results(path)
    yield from errors
    yield from _refused(errors, path, agent, rank, buckets)
    check = totals_check(results)
    if check is not None:
        yield FileTotals(agent, check)
    columns = {"episode_id": pa.array(results.episode_id, pa.int64()), "index": pa.array(np.arange(len(results)))}
    columns.update({name: pa.array(values, pa.float64()) for name, values in results.metrics.items()})
    yield from split(Piece(RESULTS, agent, rank, pa.table(columns)), buckets)


def instruction_map(dataset_files: list[str]) -> tuple[np.ndarray, np.ndarray, str]:
    """(instruction ids, their episode ids, the datasets' names) of RxR-Habitat episode files (empty arrays
    for R2R-CE ones), for `agent_pieces` to key an RxR-Habitat submission by episode id. Reads the
    episode files without their ground truth; the first file holding an instruction id wins."""
    found_ids, found_episodes = [], []
    for path in dataset_files:
        episodes, _ = read_episodes(path, gt=None)
        if episodes.instruction_id is not None:
            found_ids.append(episodes.instruction_id)
            found_episodes.append(episodes.episode_id)
    if not found_ids:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), ",".join(dataset_files)
    ids, episode_ids = np.concatenate(found_ids), np.concatenate(found_episodes)
    _, first = np.unique(ids, return_index=True)
    return ids[first], episode_ids[first], ",".join(dataset_files)
