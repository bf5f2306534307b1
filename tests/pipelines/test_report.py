"""End-to-end `python -m pipelines.report` on small real outputs of the other jobs (val_seen)."""

import io
import json
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from pipelines import build_r4r, paraphrase, perturb, report, score
from vlnkit.reports import plots

pytestmark = pytest.mark.real_data

AGENTS = "agent_outputs/rszia+rpl2024-final-group9"


@pytest.fixture(scope="module")
def outputs(tmp_path_factory, shared_data, r2r_dir, connectivity_dir):
    """Run the real jobs once: R4R, two agents scored, paraphrases, perturbations (all on val_seen)."""
    tmp = tmp_path_factory.mktemp("report_inputs")
    val_seen = str(r2r_dir / "R2R_val_seen.json")
    conn = f"--connectivity_dir={connectivity_dir}"
    build_r4r.main(
        [f"--r2r_path={val_seen}", conn, f"--output_dir={tmp / 'r4r'}", f"--json_output={tmp / 'R4R_val_seen.json'}"]
    )
    for agent in ("shortest", "random"):
        preds = shared_data / AGENTS / f"val_seen_{agent}_agent.json"
        score.main([f"--predictions={preds}", f"--dataset={val_seen}", conn, f"--output_dir={tmp / agent}"])
    # The score job writes each trajectory as scored (`path`), which the drawings show.
    assert "path" in pq.read_schema(next((tmp / "random").glob("episodes-*.parquet"))).names
    paraphrase.main(
        [f"--dataset={val_seen}", "--translator=offline-demo", "--languages=de,fr", f"--output_dir={tmp / 'para'}"]
    )
    perturb.main(
        [
            f"--dataset={val_seen}",
            conn,
            "--spacy_model=blank:en",
            "--methods=direction_swap,path_reversal,viewpoint_swap",
            f"--output_dir={tmp / 'perturb'}",
        ]
    )
    return tmp, val_seen, connectivity_dir


def run(out, inputs, connectivity_dir, *flags):
    return report.main(
        [
            "--runner=DirectRunner",
            f"--inputs={inputs}",
            f"--connectivity_dir={connectivity_dir}",
            f"--output_dir={out}",
            *flags,
        ]
    )


def check_png(path, kind):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
    image = Image.open(io.BytesIO(data))
    image.verify()
    assert image.size == plots.expected_pixels(kind)


KINDS = {
    "dataset_statistics": "dataset",
    "score_distributions": "scores",
    "score_comparison": "score_means",
    "perturbations": "perturbations",
    "paraphrases": "paraphrases",
}


def test_full_report_renders_every_figure_type_and_links_them(outputs, tmp_path):
    tmp, val_seen, conn = outputs
    inputs = ",".join([val_seen, str(tmp / "r4r"), str(tmp / "random"), str(tmp / "para"), str(tmp / "perturb")])
    out = tmp_path / "report"
    summary = run(out, inputs, conn, f"--compare={tmp / 'shortest'}", "--draw=4", "--seed=1")
    # Facts from ../shared/data/README.md: val_seen 340 paths / 1,021 instructions; its R4R 115 / 1,035.
    assert summary["datasets"]["R2R_val_seen"] == {"instructions": 1021, "instructions.en": 1021, "paths": 340}
    assert summary["datasets"]["r4r"] == {"instructions": 1035, "instructions.en": 1035, "paths": 115}
    assert set(summary["score_sets"]) == {"random", "shortest"}
    assert summary["drawings"] == 4 and summary["dead_letters"] == 0
    figures = sorted((out / "figures").glob("*.png"))
    names = {p.stem for p in figures}
    assert set(KINDS) <= names and {f"path_{k:02d}" for k in range(4)} <= names
    page = (out / "index.html").read_text()
    for png in figures:
        check_png(png, KINDS.get(png.stem, "path"))
        assert f'href="figures/{png.name}"' in page
    for table_id in re.findall(r'<p class="caption" id="([^"]+)"', page):
        assert f'href="#{table_id}"' in page
    assert {"table-dataset", "table-scores", "table-perturbations", "table-paraphrases", "table-inputs"} <= set(
        re.findall(r'id="(table-[^"]+)"', page)
    )
    assert 'src="data:image/png;base64,' in page and "<script" not in page  # self-contained
    assert (out / "_SUCCESS").exists()
    manifest = json.loads((out / "manifest.json").read_text())
    assert any(o["path"].endswith("index.html") for o in manifest["outputs"])
    tables = json.loads((out / "report_tables.json").read_text())
    # The shortest-path agent is perfect: every SR is 1 (the table is the job's own aggregation).
    assert tables["tables"]["scores"]["shortest"]["quantities"]["sr"]["mean"] == 1.0
    shortest_summary = json.loads((tmp / "shortest" / "summary.json").read_text())
    for m, v in shortest_summary["metrics"].items():
        assert tables["tables"]["scores"]["shortest"]["quantities"][m]["mean"] == pytest.approx(v)
    assert tables["keep_band"] == [0.25, 0.7]

    # Same inputs and seed: byte-identical figures; another seed draws other episodes.
    again = tmp_path / "again"
    run(again, inputs, conn, f"--compare={tmp / 'shortest'}", "--draw=4", "--seed=1")
    for png in figures:
        assert (again / "figures" / png.name).read_bytes() == png.read_bytes(), png.name


def test_r4r_drawings_show_source_paths_and_compare_labels(outputs, tmp_path):
    tmp, val_seen, conn = outputs
    out = tmp_path / "r4r_report"
    summary = run(out, f"{tmp / 'R4R_val_seen.json'},{val_seen}", conn, f"--compare={val_seen}", "--draw=2")
    assert summary["drawings"] == 2
    page = (out / "index.html").read_text()
    captions = re.findall(r"<figcaption>([^<]*)", page)
    assert sum("source paths (blue, purple)" in c for c in captions) == 2  # R4R drawn with both source paths
    assert "R2R_val_seen (compare)" in summary["labels"]
    for png in (out / "figures").glob("path_*.png"):
        check_png(png, "path")


def test_structural_errors_stop_with_one_line(outputs, tmp_path, capsys):
    tmp, val_seen, conn = outputs
    with pytest.raises(SystemExit) as exc:
        report.main(["--runner=DirectRunner", f"--connectivity_dir={conn}", f"--output_dir={tmp_path}"])
    assert exc.value.code == 2 and "--inputs is required" in capsys.readouterr().err
    odd = tmp_path / "odd.parquet"
    pq.write_table(pa.table({"x": [1]}), odd)
    with pytest.raises(SystemExit):
        run(tmp_path / "o", str(odd), conn)
    assert "cannot tell the kind" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        run(tmp_path / "o", str(tmp_path / "nothing*.json"), conn)
    assert "matches no file" in capsys.readouterr().err
