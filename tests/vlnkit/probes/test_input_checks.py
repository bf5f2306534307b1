"""Input checks the probe jobs run before starting: templates, probe Parquet files, records for --steps_from.

Each user mistake must be one ValueError subclass whose message names the flag, the file and the
reason, never a traceback from a worker.
"""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from vlnkit.datasets.usable import NoUsableRecords, require_usable_records
from vlnkit.probes.episodes import ProbeConfig
from vlnkit.probes.schemas import PROBE_EPISODES
from vlnkit.probes.scoring import PROBE_COLUMNS, ProbeFileError, validate_probe_file
from vlnkit.probes.templates import DEFAULT_TEMPLATES, ProbeInputError, load_templates, validate_templates

# ----------------------------------------------------------------------------- templates
BAD_PHRASINGS = [
    ("room", "Go to the {place}.", "unknown placeholder {place}"),
    ("room", "Go to the {} {room}.", "positional placeholder {}"),
    ("room", "Go to the {0} {room}.", "positional placeholder {0}"),
    ("room", "Go to the {room.name}.", "unknown placeholder {room.name}"),
    ("room", "Go to the {room[0]}.", "unknown placeholder {room[0]}"),
    ("room", "Go to the {room", "not a valid template"),
    ("room", "Go to the room}.", "not a valid template"),
    ("room", "Go to the {object}.", "unknown placeholder {object}"),
    ("room", "Go there.", "must contain {room}"),
    ("object", "Look at {obj}.", "unknown placeholder {obj}"),
    ("object", "Look at {object:>{width}}.", "cannot be filled in (KeyError: 'width')"),
    ("stop", "Stop {here}.", "has a brace"),
    ("stop", "Stop {}.", "has a brace"),
    ("direction.left", "Go {left}.", "has a brace"),
]


def _templates_with(where, phrasing):
    templates = json.loads(json.dumps(DEFAULT_TEMPLATES))
    if where.startswith("direction."):
        templates["direction"][where.split(".", 1)[1]] = [phrasing]
    else:
        templates[where] = [templates[where][0], phrasing]
    return templates


@pytest.mark.parametrize("where, phrasing, reason", BAD_PHRASINGS)
def test_every_phrasing_that_cannot_be_filled_in_is_refused_up_front(where, phrasing, reason):
    with pytest.raises(ProbeInputError) as info:
        validate_templates(_templates_with(where, phrasing), "t.yaml")
    message = str(info.value)
    assert message.startswith(f"t.yaml: {where} phrasing {phrasing!r} "), message
    assert reason in message, message
    with pytest.raises(ProbeInputError, match="phrasing"):  # a config built in code is checked too
        ProbeConfig(templates=_templates_with(where, phrasing))


@pytest.mark.parametrize("where, phrasing, reason", BAD_PHRASINGS)
def test_a_templates_file_names_the_flag_and_file(where, phrasing, reason, tmp_path):
    path = tmp_path / "t.json"
    if where.startswith("direction."):
        path.write_text(json.dumps({"direction": {where.split(".", 1)[1]: [phrasing]}}))
    else:
        path.write_text(json.dumps({where: [phrasing]}))
    with pytest.raises(ProbeInputError) as info:
        load_templates(str(path))
    assert str(info.value).startswith(f"--templates {path}: "), str(info.value)


def test_valid_phrasings_pass_and_fill_in():
    templates = _templates_with("room", "Head for the {room}, then {{wait}}.")
    validate_templates(templates)
    validate_templates(DEFAULT_TEMPLATES)
    assert "Head for the {room}, then {{wait}}.".format(room="hall") == "Head for the hall, then {wait}."


def test_templates_shape_errors():
    for bad, reason in [
        ({"jump": ["x"]}, "unknown probe 'jump'"),
        ({"direction": {"up": ["x"]}}, "'direction' must map regions"),
        ({"stop": []}, "non-empty list"),
        ({"stop": [3]}, "must be a non-empty string"),
        ([], "expected a mapping"),
    ]:
        with pytest.raises(ProbeInputError, match=reason):
            validate_templates(bad, "t.yaml")


# ----------------------------------------------------------------------------- probe files
def _probe_table(**overrides):
    row = {
        "episode_id": "e",
        "pair_id": "p",
        "variant": "control",
        "probe": "stop",
        "target": "stop",
        "skill": "stop",
        "hops": None,
        "scan": "s",
        "path": ["a"],
        "heading": 0.0,
        "arrival_heading": 0.0,
        "instruction": "x",
        "appended": "",
        "candidates": ["STOP"],
        "correct": ["STOP"],
        "neighbour_rel_heading": [],
        "source": "fgr2r",
        "instr_id": "1_0",
        "path_id": 1,
        "candidate_id": "1_0:0",
        "segment": 0,
        "num_segments": 2,
    }
    return pa.Table.from_pylist([row], schema=PROBE_EPISODES)


def test_a_probe_file_from_build_probes_passes(tmp_path):
    path = tmp_path / "probes-00000-of-00001.parquet"
    pq.write_table(_probe_table(), path)
    assert validate_probe_file(str(path)) is None
    # Only the columns the scorer reads matter.
    pq.write_table(_probe_table().select(list(PROBE_COLUMNS)), path)
    assert validate_probe_file(str(path)) is None


def _bad_probe_files(tmp_path):
    t = _probe_table()
    files = {}
    files["corrupt bytes"] = (b"PAR1" + b"\x00" * 50, "cannot read it as Parquet")
    files["JSON renamed"] = (json.dumps([{"episode_id": "e"}]).encode(), "cannot read it as Parquet")
    files["empty file"] = (b"", "cannot read it as Parquet")
    path = tmp_path / "scores.parquet"
    pq.write_table(pa.table({"instr_id": ["1_0"], "scan": ["s"], "pl": [1.0]}), path)
    files["another job's table"] = (path.read_bytes(), "missing column(s) 'episode_id', 'pair_id'")
    pq.write_table(t.drop_columns(["correct"]), path)
    files["missing one column"] = (path.read_bytes(), "missing column(s) 'correct'")
    pq.write_table(t.set_column(t.schema.get_field_index("candidates"), "candidates", pa.array(["STOP"])), path)
    files["wrong column type"] = (path.read_bytes(), "column 'candidates' has type string")
    pq.write_table(t.set_column(t.schema.get_field_index("path_id"), "path_id", pa.array(["1"])), path)
    files["string path_id"] = (path.read_bytes(), "column 'path_id' has type string")
    whole = path.read_bytes()
    files["truncated"] = (whole[: len(whole) // 2], "cannot read it as Parquet")
    return files


def test_every_unusable_probe_file_is_one_clear_error(tmp_path):
    for name, (data, reason) in _bad_probe_files(tmp_path).items():
        path = tmp_path / f"bad-{name.replace(' ', '_')}.parquet"
        path.write_bytes(data)
        with pytest.raises(ProbeFileError) as info:
            validate_probe_file(str(path))
        message = str(info.value)
        assert message.startswith(f"--probes {path}: "), (name, message)
        assert reason in message, (name, message)
        assert isinstance(info.value, ValueError)


def test_a_missing_probe_file_is_one_clear_error(tmp_path):
    with pytest.raises(ProbeFileError, match="--probes .*nope.parquet: cannot read it as Parquet"):
        validate_probe_file(str(tmp_path / "nope.parquet"))


# ----------------------------------------------------------------------------- --steps_from
GOOD = {"distance": 9.5, "scan": "s", "path_id": 7, "path": ["a", "b"], "heading": 1.0, "instructions": ["Go."]}


@pytest.mark.parametrize(
    "content, reason",
    [
        ("", "the files hold no records"),
        ("[]", "the files hold no records"),
        ("\n\n", "the files hold no records"),
        (json.dumps([{**GOOD, "path": []}]), "1 refused; first: "),
        (json.dumps([{"scan": "s"}, {"path_id": 3}]), "2 refused; first: "),
        (json.dumps({"episodes": [GOOD]}), "the file is one JSON object"),
        ("not json", "invalid JSON"),
        ("PAR1 not really parquet", "cannot read Parquet"),
    ],
)
def test_steps_from_without_a_usable_record_is_one_clear_error(content, reason, tmp_path):
    path = tmp_path / "train.json"
    path.write_text(content)
    with pytest.raises(NoUsableRecords) as info:
        require_usable_records("--steps_from", [str(path)])
    message = str(info.value)
    assert message.startswith(f"--steps_from: no usable record in {path} "), message
    assert reason in message, message


def test_steps_from_counts_usable_records_in_json_and_parquet(tmp_path, r2r_dir):
    assert require_usable_records("--steps_from", [str(r2r_dir / "R2R_train.json")]) == 4675
    path = tmp_path / "paths.parquet"
    pq.write_table(pa.Table.from_pylist([GOOD, {**GOOD, "path_id": 8, "heading": None}]), path)
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    assert require_usable_records("--steps_from", [str(bad), str(path)]) == 1
