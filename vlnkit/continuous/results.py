"""Per-episode results that an agent's own evaluation wrote in the Habitat simulator, read into the
toolkit's metric names.

The simulator measures what positions alone cannot: geodesic distances on the scene's navigation
mesh (NE, success, oracle success, SPL). Three layouts are known, told by content
(`documents.kind_of`): `vlnce_stats` (VLN-CE, CWP, ETPNav `stats_ep_ckpt_*.json`, keyed by episode
id), `result_lines` (StreamVLN, InternNav `result.json`, JSON Lines with `episode_id`) and
`navid_stats` (NaVid's `stats_<id>.json`, one object with `id`). `RESULT_METRICS` maps each one's keys
to the toolkit's names: the one definition, shown (and checked by a test) in docs/design.md,
"Continuous environments", with each codebase's conventions (success `<` or `<=`, STOP check, DTW kind).

`sr` and `osr` must be 0 or 1 (true/false too); `spl`, `ndtw`, `sdtw` in [0, 1]; distances, lengths,
steps and collisions finite and >= 0. A record with a value of another type is a RecordError (file,
record, reason), never a silent NaN; a metric a record does not have is NaN in its column, and
`Results.missing` counts those.

    results, errors = read_results("../shared/data/vlnce/cwp_results/cma/stats_ep_ckpt_0_val_unseen_r0_w1.json")
    results.layout, len(results), sorted(results.metrics)   # 'vlnce_stats', 1839, ['collisions', 'ndtw', ...]
"""

from __future__ import annotations

from dataclasses import dataclass, field

import msgspec
import numpy as np

from vlnkit.continuous import documents
from vlnkit.continuous.records import RESULT_LINE, STATS, ResultLine, Stats, episode_key
from vlnkit.io.dead_letters import RecordError

_STATS_KEYS = (
    ("distance_to_goal", "ne"),
    ("success", "sr"),
    ("oracle_success", "osr"),
    ("spl", "spl"),
    ("ndtw", "ndtw"),
    ("sdtw", "sdtw"),
    ("path_length", "pl"),
    ("steps_taken", "steps"),
    ("collisions", "collisions"),
    ("oracle_navigation_error", "one"),
    ("oracle_spl", "oracle_spl"),
)
RESULT_METRICS = {
    "vlnce_stats": _STATS_KEYS,
    "navid_stats": _STATS_KEYS,
    "result_lines": (
        ("ne", "ne"),
        ("success", "sr"),
        ("os", "osr"),
        ("spl", "spl"),
        ("ndtw", "ndtw"),
        ("steps", "steps"),
    ),
}
FLAGS = frozenset(("sr", "osr"))  # 0 or 1
LAYOUTS = tuple(RESULT_METRICS)


@dataclass(frozen=True, eq=False)
class Results:
    """One row per episode: `episode_id`, `scan` (result_lines only, else None) and metric columns
    under the toolkit's names (float64, NaN where a record lacks the metric)."""

    source: str
    layout: str
    episode_id: np.ndarray
    metrics: dict[str, np.ndarray]
    scan: np.ndarray | None = None
    missing: dict[str, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.episode_id)

    def means(self) -> dict[str, float]:
        """Plain means of every metric over the episodes that have it (the authors' aggregate)."""
        return {name: float(np.nanmean(col)) for name, col in self.metrics.items() if np.isfinite(col).any()}


def read_results(path: str) -> tuple[Results, list[RecordError]]:
    """Read a per-episode result file of any layout of the module docstring."""
    data, error = documents.read(path, "result file")
    if error is not None:
        return _empty(path), [error]
    rows = _typed(data)
    if rows is not None:
        layout, items = rows
        errors: list[RecordError] = []
    else:
        doc = documents.parse_expecting(data, path, LAYOUTS, f"per-episode results ({', '.join(LAYOUTS)})")
        if doc.error is not None:
            return _empty(path), [doc.error]
        layout, items, errors = doc.kind, [], list(doc.line_errors)
        kind = RESULT_LINE if layout == "result_lines" else STATS
        struct = ResultLine if layout == "result_lines" else Stats
        for label, key, value in _labelled(doc):
            reason = kind.reason(value)
            if reason is None:
                items.append((label, key, msgspec.convert(value, struct)))
            else:
                errors.append(RecordError(path, label, reason))
    return _columns(path, layout, items, errors)


# ----------------------------------------------------------------------------- internals
def _typed(data: bytes):
    stripped = data.lstrip()
    if stripped[:1] == b"{":
        try:
            stats = msgspec.json.decode(data, type=dict[str, Stats])
            if stats and not any(isinstance(v, Stats) and v.id is not msgspec.UNSET for v in stats.values()):
                return "vlnce_stats", [(f"episode_id={k}", k, v) for k, v in stats.items()]
        except msgspec.DecodeError:
            pass
        try:
            one = msgspec.json.decode(data, type=Stats)
            if one.id is not msgspec.UNSET:
                return "navid_stats", [("#0", one.id, one)]
        except msgspec.DecodeError:
            pass
    lines = RESULT_LINE.decode_lines([line for line in data.splitlines() if line.strip()])
    if lines:
        return "result_lines", [(f"line {n + 1}", line.episode_id, line) for n, line in enumerate(lines)]
    return None


def _labelled(doc):
    if doc.kind == "result_lines":
        for n, value in enumerate(doc.value):
            label = f"line {doc.lines[n]}" if doc.lines else f"#{n}"
            yield label, value.get("episode_id") if isinstance(value, dict) else None, value
    elif doc.kind == "navid_stats":
        yield "#0", doc.value.get("id"), doc.value
    else:
        for key, value in doc.value.items():
            yield f"episode_id={key!r:.20}", key, value


def _columns(path: str, layout: str, items: list, errors: list[RecordError]) -> tuple[Results, list[RecordError]]:
    names = RESULT_METRICS[layout]
    ids, rows, scans, seen = [], [], [], {}
    for label, key, struct in items:
        eid = episode_key(key)
        reason = None
        if eid is None:
            reason = f"the episode id must be an integer (or a string holding one), got {key!r:.40}"
        elif eid in seen:
            reason = f"episode {eid} appears again (first: {seen[eid]})"
        else:
            for source_key, name in names:
                value = getattr(struct, source_key, msgspec.UNSET)
                if name in FLAGS and value is not msgspec.UNSET and value not in (0, 1):
                    reason = f"{source_key!r} must be 0 or 1 (or true/false), got {value!r}"
                    break
        if reason is not None:
            errors.append(RecordError(path, label, reason))
            continue
        seen[eid] = label
        ids.append(eid)
        rows.append(struct)
        if layout == "result_lines":
            scans.append(None if struct.scene_id is msgspec.UNSET else struct.scene_id)
    metrics, missing = {}, {}
    for source_key, name in names:
        values = [getattr(s, source_key, msgspec.UNSET) for s in rows]
        absent = sum(v is msgspec.UNSET for v in values)
        if absent == len(values):
            continue
        metrics[name] = np.array([np.nan if v is msgspec.UNSET else float(v) for v in values], dtype=np.float64)
        if absent:
            missing[name] = absent
    scan = np.array(scans, dtype=object) if layout == "result_lines" else None
    return Results(path, layout, np.asarray(ids, dtype=np.int64), metrics, scan, missing), errors


def _empty(path: str) -> Results:
    return Results(path, "vlnce_stats", np.zeros(0, dtype=np.int64), {})
