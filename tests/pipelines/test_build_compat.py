"""End-to-end runs of `python -m pipelines.build_compat` (in-process, DirectRunner)."""

import json
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines import build_compat
from vlnkit.navigation.synthetic import write_environment


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
