"""End-to-end runs of `python -m pipelines.paraphrase` (in-process DirectRunner, and one real command line)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter

import pyarrow.parquet as pq
import pytest

from pipelines import paraphrase
from tests.conftest import ROOT
from tests.translate_standin import TranslateStandin, sample_r4r_records, sample_records
from vlnkit.fixtures.rxr import read_jsonl, write_rxr_fixtures
from vlnkit.paraphrases.bleu_filter import DEFAULT_LANGUAGES, judge
from vlnkit.paraphrases.translation import demo_round_trip


@pytest.fixture
def inputs(tmp_path):
    records = sample_records()
    r2r = tmp_path / "R2R_sample.json"
    r2r.write_text(json.dumps(records))
    r4r = tmp_path / "R4R_sample.json"
    r4r.write_text(json.dumps(sample_r4r_records(records)))
    return str(r2r), str(r4r)


def rows(out, name="paraphrases"):
    files = sorted(out.glob(f"{name}-*-of-*.parquet"))
    return sorted(pq.read_table(files).to_pylist(), key=lambda r: (r["instr_id"], r["language"])) if files else []


def test_offline_run_writes_every_instruction_x_pivot_a_summary_and_composed_r4r(tmp_path, inputs, capsys):
    r2r, r4r = inputs
    out = tmp_path / "out"
    summary = paraphrase.main(
        ["--runner=DirectRunner", f"--dataset={r2r}", f"--output_dir={out}", f"--compose_from={r4r}"]
    )
    assert (out / "_SUCCESS").exists()
    got = rows(out)
    expected = []
    for r in sample_records():
        for k, text in enumerate(r["instructions"]):
            for v in judge(text, [(lang, demo_round_trip(text, lang)) for lang in DEFAULT_LANGUAGES]):
                expected.append(
                    {
                        "instr_id": f"{r['path_id']}_{k}",
                        "instruction": text,
                        "source_language": "en",
                        **v,
                        "backend": "offline-demo",
                    }
                )
    assert got == sorted(expected, key=lambda r: (r["instr_id"], r["language"]))
    assert summary["translator"] == "offline-demo" and summary["instructions"] == 12
    assert summary["distinct_texts"] == 11 and summary["rows"] == 120 == len(got)
    assert summary["kept"] == sum(r["kept"] for r in got)
    assert summary["per_language"]["de"]["kept"] == sum(r["kept"] for r in got if r["language"] == "de")
    assert summary["translation"]["calls"] == 20 and summary["translation"]["cost_usd"] == 0.0
    assert summary["dead_letters"] == 0
    r4r_rows = rows(out, "r4r_paraphrases")
    assert summary["r4r"]["instructions"] == 18 and len(r4r_rows) == 180 == summary["r4r"]["rows"]
    assert {r["instr_id"] for r in r4r_rows} == {f"{pid}_{k}" for pid in (10000012, 11000013) for k in range(9)}
    manifest = json.loads((out / "manifest.json").read_text())
    assert sum(o["rows"] for o in manifest["outputs"] if "paraphrases-" in o["path"]) == 120 + 180
    printed = capsys.readouterr().out
    assert "Translation plan" in printed and "free (offline-demo" in printed and "paraphrases kept" in printed


def test_google_run_against_the_standin_matches_offline_and_a_cached_rerun_is_free(tmp_path, inputs):
    r2r, _ = inputs
    cache = tmp_path / "cache"
    with TranslateStandin() as server:
        server.fail_next(2)
        common = [
            "--runner=DirectRunner",
            f"--dataset={r2r}",
            "--gcp_project=test-project",  # google is the default backend when a project is named
            f"--translate_endpoint={server.endpoint}",
            "--translate_insecure",
            f"--translation_cache={cache}",
            "--languages=de,fr,zh",
            "--retry_initial_delay=0.001",
        ]
        first = paraphrase.main([*common, f"--output_dir={tmp_path / 'a'}"])
        calls = len(server.requests)
        second = paraphrase.main([*common, f"--output_dir={tmp_path / 'b'}"])
        assert len(server.requests) == calls  # nothing was sent the second time
    offline = paraphrase.main(
        ["--runner=DirectRunner", f"--dataset={r2r}", "--languages=de,fr,zh", f"--output_dir={tmp_path / 'c'}"]
    )
    assert first["translator"] == "google" and first["translation"]["calls"] == calls == 6 + 2
    assert first["translation"]["retries"] == 2 and first["translation"]["cache_hits"] == 0
    assert first["translation"]["characters_sent"] > 0 and first["translation"]["cost_usd"] >= 0
    assert second["translation"]["calls"] == 0 and second["translation"]["characters_sent"] == 0
    assert second["translation"]["cache_hits"] == 2 * 3 * 11
    google_rows, demo_rows = rows(tmp_path / "a"), rows(tmp_path / "c")
    assert {r["backend"] for r in google_rows} == {"google"} and {r["backend"] for r in demo_rows} == {"offline-demo"}
    assert first["backend"] == "google" and offline["backend"] == "offline-demo"
    strip = [{k: v for k, v in r.items() if k != "backend"} for r in google_rows]
    assert rows(tmp_path / "b") == google_rows and strip == [
        {k: v for k, v in r.items() if k != "backend"} for r in demo_rows
    ]
    assert google_rows
    assert first["kept"] == second["kept"] == offline["kept"]


def test_command_line_prints_the_plan_with_a_cost_and_keeps_credentials_out(tmp_path, inputs):
    r2r, _ = inputs
    with TranslateStandin() as server:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pipelines.paraphrase",
                "--runner=DirectRunner",
                f"--dataset={r2r}",
                f"--output_dir={tmp_path}/o",
                "--gcp_project=test-project",
                f"--translate_endpoint={server.endpoint}",
                "--translate_insecure",
                "--languages=es",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert proc.returncode == 0, proc.stderr
    chars = 2 * sum(len(t) for t in {t for r in sample_records() for t in r["instructions"]})
    assert f"{chars:,}" in proc.stdout and "$0.03 at $20.0/million characters" in proc.stdout
    assert "Paraphrase summary (google)" in proc.stdout and (tmp_path / "o" / "_SUCCESS").exists()
    assert "credential" not in (proc.stdout + proc.stderr).lower()


@pytest.mark.parametrize(
    "flags,message",
    [
        ([], "--dataset is required"),
        (["--dataset=/nonexistent/*.json"], "matches no file"),
        (["--dataset={r2r}", "--min_bleu=0.8", "--max_bleu=0.7"], "BLEU bounds"),
        (["--dataset={r2r}", "--translator=google"], "cloud project"),
        (["--dataset={r2r}", "--gcp_project=p", "--translate_insecure"], "needs --translate_endpoint"),
        (["--dataset={r2r}", "--translate_endpoint=127.0.0.1:1"], "only apply to --translator=google"),
        (["--dataset={r2r}", "--languages=en,de"], "source language"),
    ],
)
def test_bad_flags_stop_with_one_clear_line(tmp_path, inputs, capsys, flags, message):
    r2r, _ = inputs
    argv = ["--runner=DirectRunner", f"--output_dir={tmp_path}/o"] + [f.format(r2r=r2r) for f in flags]
    with pytest.raises(SystemExit) as exc:
        paraphrase.main(argv)
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_a_real_google_run_without_credentials_stops_before_reading_anything(tmp_path, inputs, capsys, monkeypatch):
    import google.auth
    from google.auth.exceptions import DefaultCredentialsError

    def no_credentials(**_):
        raise DefaultCredentialsError("none")

    monkeypatch.setattr(google.auth, "default", no_credentials)
    with pytest.raises(SystemExit):
        paraphrase.main(
            ["--runner=DirectRunner", f"--dataset={inputs[0]}", "--gcp_project=p", f"--output_dir={tmp_path}"]
        )
    assert "no Google credentials found" in capsys.readouterr().err


@pytest.mark.real_data
def test_real_val_seen_and_released_r4r_compose_with_revised_texts_dead_lettered(tmp_path, shared_data, r2r_dir):
    r4r = shared_data / "r4r_published" / "R4R_val_seen.json"
    out = tmp_path / "out"
    summary = paraphrase.main(
        [
            "--runner=DirectRunner",
            f"--dataset={r2r_dir / 'R2R_val_seen.json'}",
            f"--compose_from={r4r}",
            "--languages=de,fr",
            f"--output_dir={out}",
        ]
    )
    assert summary["instructions"] == 1021 and summary["rows"] == 2 * 1021 and summary["dead_letters"] == 4
    # 115 joined paths, of which 4 were built from since-revised R2R texts (data README).
    assert summary["r4r"]["instructions"] == 1035 - 4 * 9 and summary["r4r"]["rows"] == 2 * (1035 - 36)
    dead = [json.loads(line) for line in (out / "dead_letter-00000-of-00001.jsonl").read_text().splitlines()]
    assert {d["stage"] for d in dead} == {"compose"} and all("R2R text revised" in d["reason"] for d in dead)
    assert 0 < summary["kept"] < summary["rows"] and 0 < summary["r4r"]["kept"] < summary["r4r"]["rows"]


def _google_flags(server, r2r, tmp_path, *extra):
    return [
        "--runner=DirectRunner",
        f"--dataset={r2r}",
        "--gcp_project=test-project",
        f"--translate_endpoint={server.endpoint}",
        "--translate_insecure",
        f"--translation_cache={tmp_path / 'cache'}",
        "--languages=de,fr",
        f"--output_dir={tmp_path / 'out'}",
        *extra,
    ]


def test_plan_only_prints_characters_and_requests_per_pivot_and_sends_nothing(tmp_path, inputs, capsys):
    r2r, _ = inputs
    texts = {t for r in sample_records() for t in r["instructions"]}
    with TranslateStandin() as server:
        result = paraphrase.main(_google_flags(server, r2r, tmp_path, "--plan_only", "--max_segments_per_request=4"))
        assert server.requests == []
    plan = result["plan"]
    assert result["plan_only"] and plan["distinct_texts"] == len(texts) == 11
    chars = 2 * sum(len(t) for t in texts)
    # 11 texts at most 4 per request: 3 requests each way, per pivot.
    assert plan["per_pivot"] == {
        lang: {"uncached_texts": 11, "characters": chars, "requests": 6} for lang in ("de", "fr")
    }
    assert plan["estimated_characters"] == 2 * chars and plan["estimated_requests"] == 12
    assert plan["estimated_cost_usd_exact"] == pytest.approx(2 * chars * 20.0 / 1e6)
    printed = capsys.readouterr().out
    assert "Translation plan" in printed and "de: characters, requests" in printed and "nothing was sent" in printed
    assert not (tmp_path / "out" / "_SUCCESS").exists() and not list((tmp_path / "out").glob("paraphrases-*"))


def test_a_cost_cap_stops_the_run_before_its_first_request_and_a_cached_rerun_is_within_it(tmp_path, inputs, capsys):
    r2r, _ = inputs
    with TranslateStandin() as server:
        with pytest.raises(SystemExit) as exc:
            paraphrase.main(_google_flags(server, r2r, tmp_path, "--max_cost_usd=0.001"))
        assert exc.value.code == 2 and server.requests == []
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "--max_cost_usd=0.001" in err[0] and "nothing was sent" in err[0]
        assert not list((tmp_path / "out").glob("paraphrases-*"))
        # Under a cap it runs and fills the cache; then even a zero cap lets the (free) cached rerun through.
        paraphrase.main(_google_flags(server, r2r, tmp_path, "--max_cost_usd=1"))
        calls = len(server.requests)
        assert calls > 0 and (tmp_path / "out" / "_SUCCESS").exists()
        rerun = paraphrase.main(_google_flags(server, r2r, tmp_path, "--max_cost_usd=0"))
        assert len(server.requests) == calls and rerun["translation"]["cache_hits"] == 2 * 2 * 11


def test_the_offline_demo_backend_is_never_capped(tmp_path, inputs):
    r2r, _ = inputs
    summary = paraphrase.main(
        ["--runner=DirectRunner", f"--dataset={r2r}", "--max_cost_usd=0", f"--output_dir={tmp_path}/o"]
    )
    assert summary["backend"] == "offline-demo" and summary["translation"]["cost_usd"] == 0.0


def test_seed_changes_no_output_so_a_rerun_with_another_seed_is_skipped(tmp_path, inputs):
    """--seed seeds the jitter of retries only: it is left out of the fingerprint (options.NOT_FINGERPRINTED_IN_JOB),
    so a complete run is not redone for it, while a flag that changes outputs still makes the job run."""
    r2r, _ = inputs
    out = tmp_path / "out"
    flags = [
        "--runner=DirectRunner",
        f"--dataset={r2r}",
        f"--output_dir={out}",
        "--languages=de",
        "--skip_if_unchanged",
    ]
    first = paraphrase.main([*flags, "--seed=1"])
    assert not first.get("skipped")
    assert paraphrase.main([*flags, "--seed=2"]).get("skipped") is True
    assert not paraphrase.main([*flags, "--seed=2", "--min_bleu=0.3"]).get("skipped")


@pytest.mark.real_data
def test_rxr_guide_file_pivots_exclude_each_instructions_language_with_counts_per_language(
    tmp_path, r2r_dir, connectivity_dir, capsys
):
    records = json.loads((r2r_dir / "R2R_val_unseen.json").read_text())[:10]
    files = write_rxr_fixtures(records, "val_unseen", connectivity_dir, str(tmp_path / "rxr"), pose_traces=False)
    guides = read_jsonl(files.guide)
    out = tmp_path / "o"
    summary = paraphrase.main(
        ["--runner=DirectRunner", f"--dataset={files.guide}", f"--output_dir={out}", "--languages=de,hi,te"]
    )
    assert "distinct instruction texts" in capsys.readouterr().out
    assert summary["instructions"] == len(guides) and summary["dead_letters"] == 0
    language_of = {str(g["instruction_id"]): g["language"] for g in guides}
    table = rows(out)
    assert table and all(r["source_language"] == language_of[r["instr_id"]] for r in table)
    assert all(r["language"] != r["source_language"].split("-")[0] for r in table)
    by_source = summary["by_source_language"]
    assert {k: v["instructions"] for k, v in by_source.items()} == dict(Counter(language_of.values()))
    for tag, v in by_source.items():
        own = tag.split("-")[0]
        assert v["pivots"] == [p for p in ("de", "hi", "te") if p != own]
        assert v["rows"] == v["instructions"] * len(v["pivots"]) == sum(r["source_language"] == tag for r in table)
        assert v["kept"] == sum(r["kept"] for r in table if r["source_language"] == tag)
    assert sum(v["rows"] for v in by_source.values()) == summary["rows"] == len(table)
