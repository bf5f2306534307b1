"""End-to-end runs of `python -m pipelines.build_compat` (in-process, DirectRunner)."""

import json
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines import build_compat
from vlnkit.fixtures.grid import write_environment


def test_two_to_one_to_one_with_paraphrases(tmp_path):
    r2r_path, conn_dir = write_environment(str(tmp_path / "env"), scans=2, paths_per_scan=12, seed=4, instructions=3)
    records = json.loads(open(r2r_path).read())
    for r in records:
        r["instructions"] = [f"Turn left and go up. {t}" for t in r["instructions"]]
    (tmp_path / "in.json").write_text(json.dumps(records))
    para = [
        {
            "instr_id": f"{r['path_id']}_0",
            "instruction": "x",
            "language": "de",
            "paraphrase": f"P{n}",
            "bleu": 0.5,
            "kept": n % 2 == 0,
            "backend": "google",
        }
        for n, r in enumerate(records)
    ] + [
        {
            "instr_id": "nope_0",
            "instruction": "x",
            "language": "de",
            "paraphrase": "Q",
            "bleu": 0.5,
            "kept": True,
            "backend": "google",
        }
    ]
    pq.write_table(pa.Table.from_pylist(para), tmp_path / "paraphrases-00000-of-00001.parquet")
    flags = [
        "--runner=DirectRunner",
        f"--dataset={tmp_path}/in.json",
        f"--connectivity_dir={conn_dir}",
        f"--paraphrases={tmp_path}/paraphrases-*.parquet",
        "--spacy_model=blank:en",
        "--methods=direction_swap,random_walk,path_reversal,viewpoint_swap",
        "--seed=9",
    ]
    summary = build_compat.main([*flags, f"--output_dir={tmp_path}/a"])
    out = pq.read_table(sorted((tmp_path / "a").glob("compat-*-of-*.parquet"))).to_pylist()
    by = Counter((r["family"], r["method"], r["label"]) for r in out)
    positives = 72 + 12  # 24 paths x 3 instructions, and every other path's kept paraphrase
    assert by[("ground_truth", "ground_truth", 1)] == 72 and by[("ground_truth", "paraphrase", 1)] == 12
    assert by[("instruction", "direction_swap", 0)] == positives // 2
    assert [by[("trajectory", m, 0)] for m in ("random_walk", "path_reversal", "viewpoint_swap")] == [14, 14, 14]
    assert summary["families"]["trajectory"]["shortfall"] == 0 and summary["dead_letters"] == 1
    assert summary["paraphrase_backends"] == {"google": 13}  # kept rows, including the unknown id
    negatives = [r for r in out if r["label"] == 0]
    assert len({(r["instr_id"], r["method"]) for r in negatives}) == len(negatives)
    # Same seed, same rows; another seed picks other negatives.
    build_compat.main([*flags, f"--output_dir={tmp_path}/b", "--num_shards=3"])
    again = pq.read_table(sorted((tmp_path / "b").glob("compat-*-of-*.parquet"))).to_pylist()
    assert sorted(map(str, again)) == sorted(map(str, out))


def _demo_setup(tmp_path, backend):
    r2r_path, conn_dir = write_environment(str(tmp_path / "env"), scans=1, paths_per_scan=6, seed=2, instructions=1)
    records = json.loads(open(r2r_path).read())
    row = {"instruction": "x", "language": "de", "bleu": 0.5, "kept": True}
    para = [{**row, "instr_id": f"{r['path_id']}_0", "paraphrase": f"P{n}"} for n, r in enumerate(records)]
    para.append({**row, "instr_id": f"{records[0]['path_id']}_0", "paraphrase": "dropped", "kept": False})
    if backend is not None:
        para = [{**p, "backend": backend} for p in para]
    path = tmp_path / "para" / "paraphrases-00000-of-00001.parquet"
    path.parent.mkdir()
    pq.write_table(pa.Table.from_pylist(para), path)
    flags = [
        "--runner=DirectRunner",
        f"--dataset={r2r_path}",
        f"--connectivity_dir={conn_dir}",
        f"--paraphrases={path}",
        "--spacy_model=blank:en",
        "--methods=direction_swap,random_walk",
        f"--output_dir={tmp_path}/out",
    ]
    return flags, path, len(records)


@pytest.mark.parametrize(("backend", "says"), [("offline-demo", "offline-demo translator"), (None, "schema v1")])
def test_demo_or_unlabelled_paraphrases_are_refused_as_positives_in_one_line(backend, says, tmp_path, capsys):
    flags, path, _ = _demo_setup(tmp_path, backend)
    with pytest.raises(SystemExit) as exc:
        build_compat.main(flags)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(path) in err[0] and says in err[0] and "--allow_demo_paraphrases" in err[0]
    assert not (tmp_path / "out" / "_SUCCESS").exists()
    assert not list((tmp_path / "out").glob("compat-*"))


def test_demo_paraphrases_become_positives_only_when_allowed_and_the_summary_says_so(tmp_path):
    flags, _, n = _demo_setup(tmp_path, "offline-demo")
    summary = build_compat.main([*flags, "--allow_demo_paraphrases"])
    assert summary["positives"]["paraphrase"] == n
    assert summary["paraphrase_backends"] == {"offline-demo": n}  # kept rows only
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["summary"]["paraphrase_backends"] == {"offline-demo": n}


def _differing_words(source: str, perturbed: str) -> list[tuple[str, str]]:
    """(before, after) of every whitespace-separated word that differs (direction swaps keep the word count)."""
    strip = ".,;:!?।"
    a, b = source.split(), perturbed.split()
    assert len(a) == len(b), (source, perturbed)
    return [(x.strip(strip).lower(), y.strip(strip).lower()) for x, y in zip(a, b) if x != y]


@pytest.mark.real_data
def test_rxr_guide_file_rows_carry_languages_and_counts_per_language_add_up(tmp_path, r2r_dir, connectivity_dir):
    """An RxR guide file (made from R2R val_unseen): rows keep their instruction's language, Hindi and Telugu
    instructions get direction swaps with their lexicon's words, phrase swap is not applicable to them (never a
    dead letter), trajectory negatives come in every language, and `by_language` adds up to the totals."""
    from vlnkit.fixtures.rxr import read_jsonl, write_rxr_fixtures
    from vlnkit.perturbations.direction_lexicons import lexicon_for

    records = json.loads((r2r_dir / "R2R_val_unseen.json").read_text())[:16]
    files = write_rxr_fixtures(records, "val_unseen", connectivity_dir, str(tmp_path / "rxr"), pose_traces=False)
    guides = read_jsonl(files.guide)
    guide_of = {str(g["instruction_id"]): g for g in guides}
    hindi = next(g for g in guides if g["language"] == "hi-IN")
    para = [  # a kept paraphrase of a Hindi instruction: a positive in Hindi
        {"instr_id": str(hindi["instruction_id"]), "paraphrase": "P", "kept": True, "backend": "google"}
    ]
    pq.write_table(pa.Table.from_pylist(para), tmp_path / "paraphrases-00000-of-00001.parquet")
    summary = build_compat.main(
        [
            "--runner=DirectRunner",
            f"--output_dir={tmp_path}/o",
            f"--dataset={files.guide}",
            f"--connectivity_dir={connectivity_dir}",
            f"--paraphrases={tmp_path}/paraphrases-*.parquet",
            "--methods=direction_swap,phrase_swap,random_walk,path_reversal",
            "--seed=1",
        ]
    )
    out = pq.read_table(sorted((tmp_path / "o").glob("compat-*-of-*.parquet"))).to_pylist()
    assert summary["instructions"] == summary["records_read"] == len(guides) and summary["dead_letters"] == 0
    assert summary["positives"] == {"ground_truth": len(guides), "paraphrase": 1}

    # Every row carries its instruction's language; the paraphrase its source's.
    assert all(r["language"] == guide_of[r["instr_id"]]["language"] for r in out)
    assert [r["language"] for r in out if r["method"] == "paraphrase"] == ["hi-IN"]
    by_rows = Counter((r["language"], r["family"]) for r in out)

    # Hindi and Telugu direction swaps exchange words of one set of their language's lexicon.
    swapped = Counter()
    for r in out:
        if r["method"] != "direction_swap" or r["language"].startswith("en"):
            continue
        lexicon = lexicon_for(r["language"])
        changes = _differing_words(guide_of[r["instr_id"]]["instruction"], r["instruction"])
        assert changes and r["path"] == guide_of[r["instr_id"]]["path"]
        for before, after in changes:
            group = lexicon.set_of((before,))
            assert group is not None and after in group and after != before, (r["language"], before, after)
        swapped[r["language"]] += 1
    assert swapped.keys() == {"hi-IN", "te-IN"}

    # Counts per language add up to the run's, and match the rows written.
    languages = Counter(g["language"] for g in guides)
    by_language = summary["by_language"]
    assert {k: v["instructions"] for k, v in by_language.items()} == dict(languages)
    for language, v in by_language.items():
        assert v["rows"] == {f: by_rows[(language, f)] for f in ("ground_truth", "instruction", "trajectory")}
        appl = v["methods_applicability"]
        assert appl["path_reversal"]["applied"] == v["instructions"] and v["rows"]["trajectory"] > 0
        if language.startswith("en"):
            assert "language_not_english" not in appl["phrase_swap"]["not_applicable"]
        else:
            assert appl["phrase_swap"]["not_applicable"] == {"language_not_english": v["instructions"]}
            assert appl["direction_swap"]["applied"] > 0
    for method, m in summary["methods_applicability"].items():
        assert sum(v["methods_applicability"][method]["applied"] for v in by_language.values()) == m["applied"]
    for family in ("instruction", "trajectory"):
        assert sum(v["rows"][family] for v in by_language.values()) == summary["families"][family]["rows"]
    assert sum(v["rows"]["ground_truth"] for v in by_language.values()) == len(guides) + 1
