"""Every job against `gs://` (a local Cloud Storage emulator): inputs read from the bucket, every
output written there, and after each job the bucket holds exactly the documented layout: the pointer
`current` and complete version folders (docs/failure_semantics.md), the published one holding exactly the
documented outputs: no Beam temporary objects, no JSON fragments, `_SUCCESS` written last in its folder,
no lock left, reruns skip or clean up.
"""

from __future__ import annotations

import importlib
import json
import re

import pyarrow.parquet as pq
import pytest

# What each job documents as its outputs (its module docstring), as name patterns inside --output_dir.
SHARD = r"-\d{5}-of-\d{5}"
COMMON = [r"summary\.json", r"manifest\.json", r"_SUCCESS", r"README\.md", rf"dead_letter{SHARD}\.jsonl"]
DOCUMENTED = {
    # --json_output is written into the version folder too, then copied to its own name (failure_semantics.md).
    "build_r4r": [rf"paths{SHARD}\.parquet", r"R4R_small\.json"],
    "score": [
        rf"episodes{SHARD}\.parquet",
        rf"missing_predictions{SHARD}\.txt",
        rf"without_usable_prediction{SHARD}\.txt",
        r"leaderboard\.csv",
        r"leaderboard\.md",
    ],
    "random_baseline": [rf"episodes{SHARD}\.parquet"],
    "perturb": [rf"perturbations{SHARD}\.parquet"],
    "build_compat": [rf"compat{SHARD}\.parquet"],
    "paraphrase": [rf"paraphrases{SHARD}\.parquet"],
    "build_probes": [rf"probes{SHARD}\.parquet", r"episodes\.json"],
    "score_probes": [rf"scores{SHARD}\.parquet", r"missing_episodes\.txt"],
    "report": [r"index\.html", r"comparison\.html", r"figures/[a-z0-9_\-]+\.png", r"report_tables\.json"],
}
# Outputs every run of the job must produce (the others are optional, e.g. dead letters when none).
REQUIRED = {
    "build_r4r": ["paths"],
    "score": ["episodes", "leaderboard.csv"],
    "random_baseline": ["episodes"],
    "perturb": ["perturbations"],
    "build_compat": ["compat"],
    "paraphrase": ["paraphrases"],
    "build_probes": ["probes", "episodes.json"],
    "score_probes": ["scores"],
    "report": ["index.html", "report_tables.json", "figures/"],
}
SCANS = 3  # R2R val_seen episodes of this many scans: small, real, fast


def run_job(job: str, flags: list[str]) -> dict:
    return importlib.import_module(f"pipelines.{job}").main(["--runner=DirectRunner", *flags])


@pytest.fixture(scope="module")
def inputs(gcs_emulator, shared_data, tmp_path_factory):
    """Small real inputs uploaded to the bucket: {name: gs:// url}."""
    b = gcs_emulator
    local = tmp_path_factory.mktemp("gcs_inputs")
    r2r = json.loads((shared_data / "r2r" / "R2R_val_seen.json").read_text())
    scans = list(dict.fromkeys(r["scan"] for r in r2r))[:SCANS]
    subset = [r for r in r2r if r["scan"] in scans]
    urls = {"r2r": b.put("inputs/R2R_val_seen_small.json", json.dumps(subset).encode())}
    for scan in scans:
        b.upload(
            str(shared_data / "connectivity" / f"{scan}_connectivity.json"),
            f"inputs/connectivity/{scan}_connectivity.json",
        )
    urls["connectivity"] = b.url("inputs/connectivity")
    fgr2r = json.loads((shared_data / "fgr2r" / "FGR2R_val_seen.json").read_text())
    urls["fgr2r"] = b.put(
        "inputs/FGR2R_val_seen_small.json", json.dumps([r for r in fgr2r if r["scan"] in scans]).encode()
    )
    ids = {r["path_id"] for r in subset}
    agent = shared_data / "agent_outputs" / "rszia+rpl2024-final-group9" / "val_seen_random_agent.json"
    preds = [p for p in json.loads(agent.read_text()) if int(p["instr_id"].split("_")[0]) in ids]
    urls["predictions"] = b.put("inputs/predictions.json", json.dumps(preds).encode())
    urls["n_episodes"] = sum(len(r["instructions"]) for r in subset)
    urls["local"] = local
    return urls


def job_flags(job: str, i: dict, b) -> list[str]:
    conn = f"--connectivity_dir={i['connectivity']}"
    methods = "--methods=direction_swap,random_walk,path_reversal,viewpoint_swap"
    if job == "build_r4r":
        return [f"--dataset={i['r2r']}", conn, f"--json_output={b.url('r4r_json/R4R_small.json')}"]
    if job == "score":
        return [f"--predictions={i['predictions']}", f"--dataset={i['r2r']}", conn]
    if job == "random_baseline":
        return [f"--dataset={i['r2r']}", f"--steps_from={i['r2r']}", conn, "--num_trajectories=500", "--write_episodes"]
    if job in ("perturb", "build_compat"):
        return [f"--dataset={i['r2r']}", conn, "--spacy_model=blank:en", methods]
    if job == "paraphrase":
        return [
            f"--dataset={i['r2r']}",
            "--languages=de,fr",
            "--translator=offline",
            f"--translation_cache={b.url('translation_cache')}",
        ]
    if job == "build_probes":
        return [f"--alignments={i['fgr2r']}", conn]
    raise KeyError(job)


def current(b, prefix: str) -> str:
    """The folder (object name prefix) of the version the pointer of `prefix` publishes."""
    return f"{prefix}/versions/{b.get(f'{prefix}/current').decode().strip()}"


def check_outputs(b, prefix: str, job: str) -> list[str]:
    """The output folder holds the pointer and complete versions only; the published version's listing
    is exactly the documented outputs, all in the manifest with the crc32c Cloud Storage keeps, _SUCCESS
    last; `vlnkit.io.verify` finds nothing wrong."""
    import vlnkit.io

    assert vlnkit.io.verify(b.url(prefix)) == [], job
    top = {n.split("/")[0] for n in b.list(prefix)}
    assert top == {"current", "versions"}, f"{job}: {sorted(top)}"
    versions = {n.split("/")[1] for n in b.list(prefix) if n.startswith("versions/")}
    assert 1 <= len(versions) <= 2 and all(f"versions/{v}/_SUCCESS" in b.list(prefix) for v in versions)
    prefix = current(b, prefix)
    names = b.list(prefix)
    patterns = [re.compile(p) for p in DOCUMENTED[job] + COMMON]
    undocumented = [n for n in names if not any(p.fullmatch(n) for p in patterns)]
    assert not undocumented, f"{job}: objects that are not documented outputs: {undocumented}"
    for required in REQUIRED[job] + ["summary.json", "manifest.json", "_SUCCESS", "README.md"]:
        assert any(n.startswith(required) for n in names), f"{job}: no {required} in {names}"
    leftovers = [n for n in b.list("") if "beam-temp" in n or ".fragments-" in n]
    assert not leftovers, f"{job}: temporary objects left in the bucket: {leftovers}"
    manifest = json.loads(b.get(f"{prefix}/manifest.json"))
    assert manifest["status"] == "complete"
    listed = {o["path"] for o in manifest["outputs"]}
    sharded = {b.url(prefix, n) for n in names if re.search(SHARD, n)}
    assert sharded <= listed, f"{job}: shards missing from the manifest: {sorted(sharded - listed)}"
    blobs = {x.name: x for x in b.client().list_blobs(b.name, prefix=prefix + "/")}
    assert {f"{prefix}/{o['name']}": o["crc32c"] for o in manifest["outputs"]} == {
        name: x.crc32c for name, x in blobs.items() if not name.endswith(("/manifest.json", "/_SUCCESS"))
    }
    success = blobs.pop(f"{prefix}/_SUCCESS")
    assert all(x.updated <= success.updated for x in blobs.values()), f"{job}: _SUCCESS is not the last object"
    return names


def read_parquet(b, prefix: str, name: str):
    """All shards of one output, read from the bucket without Beam."""
    import io

    import pyarrow as pa

    prefix = current(b, prefix)
    files = [n for n in b.list(prefix) if n.startswith(name) and n.endswith(".parquet")]
    return pa.concat_tables([pq.read_table(io.BytesIO(b.get(f"{prefix}/{n}"))) for n in files])


@pytest.mark.real_data
@pytest.mark.parametrize(
    "job", ["build_r4r", "score", "random_baseline", "perturb", "build_compat", "paraphrase", "build_probes"]
)
def test_job_reads_and_writes_only_the_bucket(job, gcs_emulator, inputs):
    b = gcs_emulator
    prefix = f"out/{job}"
    summary = run_job(job, [*job_flags(job, inputs, b), f"--output_dir={b.url(prefix)}"])
    assert not summary.get("skipped")
    check_outputs(b, prefix, job)
    if job == "build_r4r":
        assert b.list("r4r_json") == ["R4R_small.json"], "fragments of the JSON writer were left behind"
        r4r = json.loads(b.get("r4r_json/R4R_small.json"))
        assert len(r4r) == summary["dataset"]["paths"] > 0
    if job == "score":
        episodes = read_parquet(b, prefix, "episodes")
        assert episodes.num_rows == inputs["n_episodes"]
    if job == "paraphrase":
        cache = b.list("translation_cache")
        assert cache and all(n.endswith(".parquet") for n in cache), cache
        assert {r["backend"] for r in read_parquet(b, prefix, "paraphrases").to_pylist()} == {"offline-demo"}
        # Another run reads every translation back from the cache in the bucket.
        again = run_job(job, [*job_flags(job, inputs, b), f"--output_dir={b.url('out/paraphrase_cached')}"])
        assert again["translation"]["cache_misses"] == 0 and again["translation"]["cache_hits"] > 0
        cached_rows = read_parquet(b, "out/paraphrase_cached", "paraphrases").to_pylist()
        key = json.dumps
        assert sorted(map(key, cached_rows)) == sorted(map(key, read_parquet(b, prefix, "paraphrases").to_pylist()))
    # The same run again is skipped, and touches nothing.
    before = {x.name: x.updated for x in b.client().list_blobs(b.name, prefix=prefix + "/")}
    again = run_job(job, [*job_flags(job, inputs, b), f"--output_dir={b.url(prefix)}", "--skip_if_unchanged"])
    assert again.get("skipped") is True
    after = {x.name: x.updated for x in b.client().list_blobs(b.name, prefix=prefix + "/")}
    assert after == before


@pytest.mark.real_data
def test_score_probes_and_report_read_job_outputs_from_the_bucket(gcs_emulator, inputs):
    b = gcs_emulator
    conn = f"--connectivity_dir={inputs['connectivity']}"
    run_job("build_probes", [f"--alignments={inputs['fgr2r']}", conn, f"--output_dir={b.url('chain/probes')}"])
    probes = read_parquet(b, "chain/probes", "probes").select(["episode_id", "candidates"]).to_pylist()
    agent = "".join(
        json.dumps({"episode_id": r["episode_id"], "probs": {c: 1.0 / len(r["candidates"]) for c in r["candidates"]}})
        + "\n"
        for r in probes
    )
    agent_url = b.put("inputs/uniform_agent.jsonl", agent.encode())
    flags = [f"--probes={b.url('chain/probes')}/probes-*.parquet", f"--predictions={agent_url}"]
    run_job("score_probes", [*flags, f"--output_dir={b.url('chain/score_probes')}"])
    check_outputs(b, "chain/score_probes", "score_probes")
    assert read_parquet(b, "chain/score_probes", "scores").num_rows > 0

    score = b.url("chain/score")
    run_job(
        "score", [f"--predictions={inputs['predictions']}", f"--dataset={inputs['r2r']}", conn, f"--output_dir={score}"]
    )
    run_job("report", [f"--inputs={score}", conn, "--draw=2", f"--output_dir={b.url('chain/report')}"])
    names = check_outputs(b, "chain/report", "report")
    assert any(n.startswith("figures/") for n in names)
    html = b.get(f"{current(b, 'chain/report')}/index.html").decode()
    assert all(n in html for n in names if n.startswith("figures/"))
    # the score run's episodes make a comparison page, its references read from the bucket, linked from the index
    assert "comparison.html" in names and 'href="comparison.html"' in html


@pytest.mark.real_data
def test_a_rerun_removes_stale_shards_and_beam_temp_objects(gcs_emulator, inputs):
    b = gcs_emulator
    prefix = "rerun/build_r4r"
    flags = [f"--dataset={inputs['r2r']}", f"--connectivity_dir={inputs['connectivity']}"]
    run_job("build_r4r", [*flags, f"--output_dir={b.url(prefix)}"])
    first = check_outputs(b, prefix, "build_r4r")
    # Leftovers of an earlier run with more shards, and of an interrupted write.
    b.put(f"{prefix}/paths-00007-of-00009.parquet", b"stale")  # of the older layout
    b.put(f"{prefix}/beam-temp-paths-0123456789abcdef/part-0", b"stale")
    b.put(f"{prefix}/versions/20000101T000000.000000Z-dead0000/beam-temp-x/part-0", b"a killed run's")
    run_job("build_r4r", [*flags, f"--output_dir={b.url(prefix)}"])
    assert check_outputs(b, prefix, "build_r4r") == first


@pytest.mark.real_data
def test_a_run_that_fails_part_way_leaves_no_success(gcs_emulator, inputs):
    b = gcs_emulator
    prefix = "failing/build_r4r"
    flags = [
        f"--dataset={inputs['r2r']}",
        f"--connectivity_dir={inputs['connectivity']}",
        f"--output_dir={b.url(prefix)}",
    ]
    run_job("build_r4r", flags)
    published = {n: b.get(f"{prefix}/{n}") for n in b.list(prefix)}
    assert "_SUCCESS" in b.list(current(b, prefix))
    # The summary cannot be written: the pipeline fails after its shards are in the bucket.
    import transforms.write

    def broken_write(path, obj, indent=False):
        raise OSError(f"{path}: simulated storage failure")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(transforms.write, "write_json", broken_write)
        with pytest.raises(Exception, match="simulated storage failure"):
            run_job("build_r4r", flags)
    # The run got part-way (its shards were written) and was cleaned up; the published output is untouched.
    assert {n: b.get(f"{prefix}/{n}") for n in b.list(prefix)} == published
    # A run judged failed (too many dead letters) writes a manifest saying so, and no _SUCCESS.
    records = json.loads(b.get("inputs/R2R_val_seen_small.json"))
    broken = b.put("inputs/R2R_broken.json", json.dumps([*records, {"path_id": "x"}]).encode())
    with pytest.raises(SystemExit) as exc:
        run_job(
            "build_r4r",
            [f"--dataset={broken}", *flags[1:], "--max_failure_fraction=0"],
        )
    assert exc.value.code == 3
    failed = [
        n
        for n in b.list(prefix)
        if n.endswith("/manifest.json") and not n.startswith(current(b, prefix)[len(prefix) + 1 :])
    ]
    assert len(failed) == 1 and json.loads(b.get(f"{prefix}/{failed[0]}"))["status"] == "failed"
    assert {
        n: b.get(f"{prefix}/{n}") for n in b.list(prefix) if not n.startswith(failed[0].rsplit("/", 1)[0])
    } == published
    # A good rerun converges to a complete output again.
    run_job("build_r4r", flags)
    check_outputs(b, prefix, "build_r4r")


@pytest.mark.real_data
def test_vlnkit_verify_names_a_truncated_removed_or_edited_object(gcs_emulator, inputs, capsys):
    from vlnkit.io.integrity import main as verify_main

    b = gcs_emulator
    prefix = "verified/build_r4r"
    flags = [f"--dataset={inputs['r2r']}", f"--connectivity_dir={inputs['connectivity']}"]
    run_job("build_r4r", [*flags, f"--output_dir={b.url(prefix)}", f"--json_output={b.url(prefix)}/R4R.json"])
    capsys.readouterr()
    folder = current(b, prefix)
    assert verify_main([b.url(prefix)]) == 0
    assert capsys.readouterr().out == f"verified: {b.url(folder)}\n"
    shard = next(n for n in b.list(folder) if n.startswith("paths-"))
    original = {n: b.get(f"{folder}/{n}") for n in (shard, "summary.json", "R4R.json")}

    def problems() -> list[str]:
        code = verify_main([b.url(prefix)])
        lines = capsys.readouterr().err.splitlines()
        assert code == (1 if lines else 0)
        return lines

    b.put(f"{folder}/{shard}", original[shard][:-100])  # a shard truncated by a broken copy
    assert problems() and all(line.startswith(f"error: {b.url(folder, shard)}: ") for line in problems())
    b.put(f"{folder}/{shard}", original[shard])
    assert problems() == []
    summary = json.loads(original["summary.json"])
    summary["records_read"] += 1
    b.put(f"{folder}/summary.json", json.dumps(summary, indent=2, sort_keys=True).encode())
    edited = problems()
    assert edited and all(line.startswith(f"error: {b.url(folder, 'summary.json')}: ") for line in edited)
    assert any(": crc32c " in line for line in edited), edited
    b.put(f"{folder}/summary.json", original["summary.json"])
    b.client().bucket(b.name).blob(f"{folder}/R4R.json").delete()
    assert problems() == [f"error: {b.url(folder, 'R4R.json')}: missing"]
