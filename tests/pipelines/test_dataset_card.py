"""The dataset card (`README.md`) of a published version: Hugging Face's `datasets.load_dataset` reads the
job's main rows, one split per config, in the declared column types, and DuckDB reads the same globs; the
R4R JSON and the dead letters beside them are left out; the card is a declared output, in the manifest
and re-checked by `vlnkit verify D`.

`datasets` runs in a subprocess: it imports pandas, fsspec and dill, which the job processes keep out of
their own imports (`pipelines.beam_import`, `vlnkit.refused_imports`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
import yaml

from tests.hostile import environment
from vlnkit.continuous.schemas import CONTINUOUS_EPISODE_SCORES
from vlnkit.datasets.schemas import R4R_PATHS
from vlnkit.evaluation.schemas import EPISODE_SCORES, RANDOM_EPISODE_SCORES
from vlnkit.io.dataset_card import README
from vlnkit.io.schemas import meaning
from vlnkit.paraphrases.schemas import PARAPHRASES
from vlnkit.perturbations.schemas import COMPAT, PERTURBATIONS
from vlnkit.probes.schemas import PROBE_EPISODES, PROBE_SCORES
from vlnkit.scoring.cvdn import CVDN_EPISODE_SCORES
from vlnkit.scoring.reverie import REVERIE_EPISODE_SCORES

# Each job: (its main table, the declared schema).
TABLES = {
    "build_r4r": ("paths", R4R_PATHS),
    "score": ("episodes", EPISODE_SCORES),
    "perturb": ("perturbations", PERTURBATIONS),
}

LOAD = """
import json, sys
import datasets
datasets.disable_progress_bars()
found = {}
for folder in sys.argv[1:]:
    configs = datasets.get_dataset_config_names(folder)
    loaded = {}
    for config in configs:
        for split, d in datasets.load_dataset(folder, config).items():
            table = d.data.table
            loaded[f"{config}/{split}"] = {
                "rows": d.num_rows,
                "columns": [[f.name, str(f.type)] for f in table.schema],
                "first_column": sorted(map(str, table.column(0).to_pylist())),
            }
    default = list(datasets.load_dataset(folder))
    found[folder] = {"configs": configs, "loaded": loaded, "default_splits": default}
print(json.dumps(found))
"""


@pytest.fixture(scope="module")
def published(tmp_path_factory) -> dict[str, Path]:
    """build_r4r (with its R4R JSON inside the output folder), score and perturb, each with a dead letter."""
    from pipelines import build_r4r, perturb, score

    root = tmp_path_factory.mktemp("card")
    inputs = environment(root)
    records = json.loads(Path(inputs["dataset"]).read_text())
    dataset = root / "R2R_synthetic.json"
    dataset.write_text(json.dumps([*records, {"scan": records[0]["scan"], "path_id": 999}]))  # no path: a dead letter
    preds = json.loads(Path(inputs["predictions"]).read_text())
    predictions = root / "preds.json"
    predictions.write_text(json.dumps([*preds, {"instr_id": "nope", "trajectory": []}]))
    conn = f"--connectivity_dir={inputs['connectivity_dir']}"
    out = {job: root / job for job in TABLES}
    common = ["--runner=DirectRunner", f"--dataset={dataset}"]
    build_r4r.main([*common, conn, f"--output_dir={out['build_r4r']}", f"--json_output={out['build_r4r']}/R4R.json"])
    score.main([*common, conn, f"--predictions={predictions}", f"--output_dir={out['score']}", "--bootstrap=0"])
    perturb.main(
        [
            *common,
            conn,
            "--methods=path_reversal,random_walk",
            "--spacy_model=blank:en",
            f"--output_dir={out['perturb']}",
        ]
    )
    return out


def _manifest(folder: Path) -> dict:
    return json.loads((folder / "current" / "manifest.json").read_text())


def test_load_dataset_reads_the_main_rows_in_the_declared_types(published, tmp_path):
    # Each published version, and one output folder itself (its top-level links lead to the current version).
    folders = [str(published[job] / "current") for job in TABLES] + [str(published["build_r4r"])]
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-c", LOAD, *folders], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    for job, (table, schema) in TABLES.items():
        folder = published[job] / "current"
        # The traps are there: JSON files, dead letters (and for build_r4r, the R4R JSON with 10 columns).
        names = os.listdir(folder)
        assert any(n.startswith("dead_letter-") for n in names), names
        assert job != "build_r4r" or "R4R.json" in names
        got = found[str(folder)]
        assert got["configs"] == [table] and got["default_splits"] == [table]
        (rows,) = got["loaded"].values()
        assert list(got["loaded"]) == [f"{table}/{table}"]
        assert rows["columns"] == [[f.name, str(f.type)] for f in schema], job  # every column, its declared type
        # DuckDB (and the manifest) read the same rows from the same glob.
        glob = str(folder / f"{table}-*.parquet")
        first = schema.names[0]
        counted = duckdb.sql(f"select count(*) from read_parquet('{glob}')").fetchone()[0]
        keys = sorted(str(k) for (k,) in duckdb.sql(f"select {first} from read_parquet('{glob}')").fetchall())
        declared = sum(o["rows"] for o in _manifest(published[job])["outputs"] if o["name"].startswith(f"{table}-"))
        assert rows["rows"] == counted == declared > 0, job
        assert rows["first_column"] == keys
    assert found[str(published["build_r4r"])] == found[str(published["build_r4r"] / "current")]


def test_the_card_describes_each_column_and_names_inputs_with_checksums(published):
    for job, (table, schema) in TABLES.items():
        folder = published[job] / "current"
        text = (folder / README).read_text()
        front = yaml.safe_load(text.split("---")[1])
        assert front["configs"] == [
            {"config_name": table, "data_files": [{"split": table, "path": f"{table}-*.parquet"}], "default": True}
        ]
        manifest = _manifest(published[job])
        for field in schema:
            assert meaning(field), f"{schema.metadata[b'vlnkit.schema']}: {field.name} has no declared meaning"
            assert f"| `{field.name}` |" in text and meaning(field).split("|")[0] in text
        for i in manifest["inputs"]:
            assert f"`{i['path']}` | {i['bytes']} | `{i['sha256']}`" in text
        rows = sum(o["rows"] for o in manifest["outputs"] if o["name"].startswith(f"{table}-"))
        assert f"`{table}`: {rows:,} rows" in text
        assert "Matterport3D Terms of Use" in text and "| Room-to-Room |" in text  # R2R_synthetic.json
        assert ("not known to vlnkit" in text) == (job == "score")  # the predictions come from nowhere known


def test_the_card_is_a_verified_output(published, tmp_path):
    import shutil

    folder = published["build_r4r"]
    (card,) = [o for o in _manifest(folder)["outputs"] if o["name"] == README]
    assert card["crc32c"] and card["bytes"] == (folder / "current" / README).stat().st_size
    listed = subprocess.run(["vlnkit", "published", str(folder)], capture_output=True, text=True, timeout=120)
    assert README in listed.stdout
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy, symlinks=True)
    ok = subprocess.run(["vlnkit", "verify", str(copy)], capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    readme = copy / "current" / README
    readme.write_text(readme.read_text().replace("rows", "lines"))
    bad = subprocess.run(["vlnkit", "verify", str(copy)], capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and README in bad.stdout + bad.stderr


@pytest.mark.parametrize(
    "schema",
    [
        R4R_PATHS,
        EPISODE_SCORES,
        RANDOM_EPISODE_SCORES,
        CONTINUOUS_EPISODE_SCORES,
        REVERIE_EPISODE_SCORES,
        CVDN_EPISODE_SCORES,
        PERTURBATIONS,
        COMPAT,
        PARAPHRASES,
        PROBE_EPISODES,
        PROBE_SCORES,
    ],
    ids=lambda s: s.metadata[b"vlnkit.schema"].decode(),
)
def test_declared_schemas_say_what_each_column_means(schema):
    assert [f.name for f in schema if not meaning(f)] == []
