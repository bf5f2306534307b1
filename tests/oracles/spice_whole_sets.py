"""SPICE on the shared speaker sets whole: the score job's column against pycocoevalcap's wrapper.

    python -m tests.oracles.spice_whole_sets --cache /var/tmp/spice --sets t5_greedy,zhao,zhao_common \
        [--speaker ../shared/data/speaker] [--out spice_whole_sets.json]

Not a test the suite runs: the jar parses about a sentence every 4 s of CPU here (PTB tokens have no
full stops, so an instruction is one long sentence), hours for the sets of issue 48. The suite checks
SPICE on 12 items through the library and the job (tests/vlnkit/captioning/test_spice.py,
tests/pipelines/test_score_instructions.py); this command checks the sets whole, once, and its output goes
into docs/jobs/score_instructions.md.

For each set and system: the job (`python -m pipelines.score_instructions --spice
--spice_cache=CACHE --bootstrap=0`, one DirectRunner worker, so its parses land in `CACHE/slot-0`) reads
the set as a SPICE-layout file (`[{image_id, refs, test}]`, one of the job's layouts) and then the
oracle (`tests/oracles/coco_spice.reference_spice`) scores the same items with the same parse cache,
one wrapper call per job batch (runs of `SPICE_BATCH` in file order; one call for a set of at most that
many). The shared cache makes the oracle cost the matching only; it is the jar's own cache, which the
wrapper also keeps from call to call (in its package folder). "Equal" is identical floats per item and
the mean to 1e-12 (the job sums in Beam).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

from pipelines.score_instructions import SPICE_BATCH
from tests.oracles.coco_spice import reference_spice
from tests.vlnkit.captioning import shared_sets
from vlnkit.captioning.ptb import tokenize
from vlnkit.captioning.spice import lock_slot


def named_sets(speaker: Path, name: str) -> dict[str, tuple[list, list, list]]:
    """{system: (ids, hypotheses, references)} of one named set, raw strings."""
    if name == "zhao":
        return shared_sets.zhao_sets(speaker, common=False)
    if name == "zhao_common":
        return shared_sets.zhao_sets(speaker, common=True)
    if name == "t5_greedy":
        return {"t5_greedy": shared_sets.t5_greedy_set(speaker)}
    if name.startswith("acgg:"):
        acgg = name.split(":", 1)[1]
        return {acgg: shared_sets.acgg_set(speaker, acgg)}
    if name.startswith("r2r_file:"):  # an R2R-format file of generated instructions (path_id_k) vs R2R refs
        generated, refs_file = name.split(":", 1)[1].split("@")
        refs = {str(r["path_id"]): r["instructions"] for r in json.loads(Path(refs_file).read_text())}
        ids, hyps, references = [], [], []
        for r in json.loads(Path(generated).read_text()):
            for k, text in enumerate(r["instructions"]):
                ids.append(f"{r['path_id']}_{k}")
                hyps.append(text)
                references.append(list(refs[str(r["path_id"])]))
        return {Path(generated).parent.name: (ids, hyps, references)}
    raise SystemExit(f"unknown set {name!r}")


def job_spice(name: str, systems: dict, cache: Path, work: Path) -> tuple[dict, float]:
    """The job's per-item SPICE {(system, id): F} and its CPU seconds."""
    flags = []
    for system, (ids, hyps, refs) in systems.items():
        path = work / f"{system}.json"
        path.write_text(json.dumps([{"image_id": i, "refs": r, "test": h} for i, h, r in zip(ids, hyps, refs)]))
        flags.append(f"--predictions={system}={path}")
    out = work / "out"
    before = os.times()
    subprocess.run(
        [sys.executable, "-m", "pipelines.score_instructions", "--runner=DirectRunner", *flags, "--spice"]
        + [f"--spice_cache={cache}", "--bootstrap=0", f"--output_dir={out}"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    after = os.times()
    cpu = after.children_user + after.children_system - before.children_user - before.children_system
    got = {}
    for shard in sorted(out.glob("instructions-*.parquet")):
        for row in pq.read_table(shard, columns=["system", "instr_id", "spice"]).to_pylist():
            got[(row["system"], row["instr_id"])] = row["spice"]
    return got, cpu


def oracle_spice(ids, hyps, refs, cache: Path) -> dict:
    """The wrapper's per-item F {id: F}, one call per job batch (runs of SPICE_BATCH in file order)."""
    got = {}
    for start in range(0, len(ids), SPICE_BATCH):
        part = slice(start, start + SPICE_BATCH)
        _, items = reference_spice(hyps[part], refs[part], ids[part], cache)
        got.update(zip(ids[part], items))
    return got


def check(name: str, speaker: Path, cache: Path, limit: int | None = None) -> list[dict]:
    raw = {
        s: tuple(part[:limit] for part in v) for s, v in named_sets(speaker, name).items()
    }  # the job tokenizes these itself; the oracle is fed PTB tokens, space-joined
    systems = {
        s: (ids, [" ".join(tokenize(h)) for h in hyps], [[" ".join(tokenize(x)) for x in r] for r in refs])
        for s, (ids, hyps, refs) in raw.items()
    }
    with tempfile.TemporaryDirectory(prefix="spice-whole-") as tmp:
        started = time.time()
        job, job_cpu = job_spice(name, raw, cache, Path(tmp))
        job_wall = time.time() - started
    slot, fd = lock_slot(cache)  # the slot the job's one worker used, now free
    rows = []
    try:
        for system, (ids, hyps, refs) in systems.items():
            started = time.time()
            theirs = oracle_spice(ids, hyps, refs, slot)
            ours = [job[(system, i)] for i in ids]
            expected = [theirs[i] for i in ids]
            same = sum(a == b or (math.isnan(a) and math.isnan(b)) for a, b in zip(ours, expected))
            mean_ours, mean_theirs = sum(ours) / len(ours), sum(expected) / len(expected)
            rows.append(
                {
                    "set": name,
                    "system": system,
                    "items": len(ids),
                    "identical_items": same,
                    "max_abs_difference": max(abs(a - b) for a, b in zip(ours, expected)),
                    "job_mean": mean_ours,
                    "oracle_mean": mean_theirs,
                    "oracle_seconds": round(time.time() - started, 1),
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    finally:
        os.close(fd)
    rows.append({"set": name, "job_wall_seconds": round(job_wall, 1), "job_cpu_seconds": round(job_cpu, 1)})
    print(json.dumps(rows[-1]), flush=True)
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", required=True, type=Path, help="the job's --spice_cache (kept between sets)")
    parser.add_argument("--sets", required=True, help="comma-separated: zhao, zhao_common, t5_greedy, acgg:NAME, ...")
    parser.add_argument("--speaker", type=Path, default=Path("../shared/data/speaker"))
    parser.add_argument("--out", type=Path, default=Path("spice_whole_sets.json"))
    parser.add_argument("--limit", type=int, default=None, help="only the first N items of each system (a smoke run)")
    args = parser.parse_args(argv)
    results = json.loads(args.out.read_text()) if args.out.exists() else []
    for name in args.sets.split(","):
        results = [r for r in results if r["set"] != name] + check(name, args.speaker, args.cache, args.limit)
        args.out.write_text(json.dumps(results, indent=1))
    bad = [r for r in results if "items" in r and r["identical_items"] != r["items"]]
    print(f"{len(bad)} of {sum('items' in r for r in results)} systems differ" if bad else "all identical")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
