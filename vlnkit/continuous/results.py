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
record, reason), never a silent NaN; so is a record with none of the metrics of `SCORED` (only steps,
collisions, path length: nothing to score). A metric a record does not have is NaN in its column, and
`Results.missing` counts those.

    results, errors = read_results("../shared/data/vlnce/cwp_results/cma/stats_ep_ckpt_0_val_unseen_r0_w1.json")
    results.layout, len(results), sorted(results.metrics)   # 'vlnce_stats', 1839, ['collisions', 'ndtw', ...]
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

import msgspec
import numpy as np

from vlnkit.continuous import documents
from vlnkit.continuous.records import RESULT_LINE, STATS, ResultLine, Stats, episode_key
from vlnkit.io.dead_letters import RecordError
from vlnkit.io.exactsum import exact_mean, exact_sum

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
# A row must give at least one of these (success, distances, path fidelity); steps, collisions and path
# length alone score nothing, so such a row is refused like any other unusable row, not scored as nulls.
SCORED = frozenset(("ne", "sr", "osr", "spl", "ndtw", "sdtw", "one", "oracle_spl"))
LAYOUTS = tuple(RESULT_METRICS)
# The line StreamVLN and InternNav append to result.json after the episode lines: the means of their
# per-episode lists over every rank (`sum(x) / len(x)` of float32 tensors) and `length`, how many episodes
# those lists hold. `ones_all` is the mean of `distance_to_goal`, the episodes' `ne` (not an oracle
# error, whatever its name); some forks write `nes_all` (finite values only) and `ndtws_all`.
TOTALS_KEYS = {"sucs_all": "sr", "spls_all": "spl", "oss_all": "osr", "ones_all": "ne", "nes_all": "ne",
               "ndtws_all": "ndtw"}  # fmt: skip
TOTALS_COUNT = "length"
_TOTALS_MARK = b'"sucs_all"'


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
    totals: dict | None = None  # the file's own aggregate line (result_lines), as written

    def __len__(self) -> int:
        return len(self.episode_id)

    def means(self) -> dict[str, float]:
        """Plain means of every metric over the episodes that have it (the authors' aggregate)."""
        return {name: float(np.nanmean(col)) for name, col in self.metrics.items() if np.isfinite(col).any()}


def read_results(path: str) -> tuple[Results, list[RecordError]]:
    """Read a per-episode result file of any layout of the module docstring. A StreamVLN / InternNav
    aggregate line is the file's own totals (`Results.totals`, compared by `totals_check`), never a record."""
    data, error = documents.read(path, "result file")
    if error is not None:
        return _empty(path), [error]
    data, totals = split_totals(data)
    found, errors = _read(path, data)
    if totals is not None:
        found = replace(found, totals=totals)
    return found, errors


def split_totals(data: bytes) -> tuple[bytes, dict | None]:
    """(the file without its aggregate lines, the last of them) for a JSON Lines result file; a file
    without one comes back as it is. An aggregate line is a JSON object with `sucs_all` and no
    `episode_id` (an evaluation run again appends another: the last one is that of the last run).

    >>> split_totals(b'{"episode_id": 1, "success": 1.0}\\n{"sucs_all": 1.0, "length": 1}')
    (b'{"episode_id": 1, "success": 1.0}', {'sucs_all': 1.0, 'length': 1})
    """
    if _TOTALS_MARK not in data:
        return data, None
    kept, totals = [], None
    for line in data.splitlines():
        value = None
        if _TOTALS_MARK in line:
            try:
                value = json.loads(line)
            except ValueError:
                value = None
        if isinstance(value, dict) and "sucs_all" in value and "episode_id" not in value:
            totals = value
        else:
            kept.append(line)
    return b"\n".join(kept), totals


def totals_check(results: Results) -> dict | None:
    """How the file's own totals (`Results.totals`) compare with its episode rows, or None without totals:
    {"file", "length", "rows", "metrics": {name: {"file", "rows", "difference"}}, "largest_difference",
    "verdict"}. "rows" means are exact (`exact_mean`, over the rows that give the metric), so a file whose
    totals are the exact means of its rows "agrees exactly"; an evaluator summing float32 tensors
    "agrees within float32 rounding" when every difference is within the worst-case error of such a sum,
    (n - 1) 2^-24 mean|x| + 2^-24 |mean|; anything else (another count, a larger difference) "differs".

    >>> r = Results("r.json", "result_lines", np.array([1, 2]), {"sr": np.array([1.0, 0.0])}, totals={"sucs_all": 0.5, "length": 2})
    >>> totals_check(r)["verdict"], totals_check(r)["metrics"]["sr"]["difference"]
    ('agree exactly', 0.0)
    """
    if results.totals is None:
        return None
    metrics, within, largest = {}, True, 0.0
    for key, name in TOTALS_KEYS.items():
        given = results.totals.get(key)
        column = results.metrics.get(name)
        if not _finite_number(given) or column is None:
            continue
        values = column[np.isfinite(column)]
        if not len(values):
            continue
        mean = exact_mean(exact_sum(values), len(values))
        difference = float(given) - mean
        bound = (len(values) - 1) * 2.0**-24 * float(np.abs(values).mean()) + 2.0**-24 * abs(mean)
        within &= abs(difference) <= bound
        largest = max(largest, abs(difference))
        metrics[name] = {"file": float(given), "rows": mean, "difference": difference}
    length = results.totals.get(TOTALS_COUNT)
    same_count = length == len(results)
    if same_count and largest == 0.0:
        verdict = "agree exactly"
    elif same_count and within:
        verdict = "agree within float32 rounding"
    else:
        verdict = "differ"
    return {
        "file": results.source,
        "length": length,
        "rows": len(results),
        "metrics": metrics,
        "largest_difference": largest,
        "verdict": verdict,
    }


def totals_line(report: dict) -> str:
    """The one line that says whether a file's own totals agree with its rows (`totals_check`).

    >>> totals_line({"file": "r.json", "length": 3, "rows": 2, "largest_difference": 0.25, "verdict": "differ",
    ...              "metrics": {"sr": {"file": 0.75, "rows": 0.5, "difference": 0.25}}})
    "r.json's own totals differ from its 2 episode rows: length 3; sr 0.75 in the file, 0.5 from the rows (+0.25)"
    """
    head = f"{report['file']}'s own totals {report['verdict']}"
    names = ", ".join(report["metrics"]) or "no metric"
    if report["verdict"] == "agree exactly":
        return f"{head} with its {report['rows']} episode rows ({names}; length {report['length']})"
    if report["verdict"] != "differ":
        return f"{head} with its {report['rows']} episode rows ({names}; largest difference {report['largest_difference']:.3g})"
    parts = [] if report["length"] == report["rows"] else [f"length {report['length']}"]
    parts += [
        f"{name} {d['file']:.6g} in the file, {d['rows']:.6g} from the rows ({d['difference']:+.3g})"
        for name, d in report["metrics"].items()
        if d["difference"] != 0.0
    ]
    return f"{head} from its {report['rows']} episode rows: {'; '.join(parts)}"


def _finite_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and bool(np.isfinite(x))


def _read(path: str, data: bytes) -> tuple[Results, list[RecordError]]:
    rows = _typed(data)
    if rows is not None:
        layout, items = rows
        errors: list[RecordError] = []
    else:
        doc = documents.parse_expecting(data, path, LAYOUTS, f"per-episode results ({', '.join(LAYOUTS)})")
        if doc.error is not None:
            return _empty(path), [doc.error]
        layout, items, errors = doc.kind, [], list(doc.line_errors) + documents.repeated_errors(doc)
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
            if documents.repeats_a_key(data, stats):  # the slow path keeps the first and words the others
                return None
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
        return "result_lines", [
            (_line_label(n + 1, line.episode_id), line.episode_id, line) for n, line in enumerate(lines)
        ]
    return None


def _line_label(line: int | None, key, index: int = 0) -> str:
    """ "line N" (or "#index" in a JSON list), with the record's episode id when it has one."""
    where = f"line {line}" if line is not None else f"#{index}"
    return where if key is None else f"{where} (episode_id={key!r:.20})"


def _labelled(doc):
    if doc.kind == "result_lines":
        for n, value in enumerate(doc.value):
            key = value.get("episode_id") if isinstance(value, dict) else None
            yield _line_label(doc.lines[n] if doc.lines else None, key, n), key, value
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
            given = [k for k, _ in names if getattr(struct, k, msgspec.UNSET) is not msgspec.UNSET]
            if reason is None and not any(name in SCORED for k, name in names if k in given):
                wanted = ", ".join(k for k, name in names if name in SCORED)
                reason = f"no metric to score: the row gives none of {wanted} (only {', '.join(given) or 'its id'})"
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
