"""Pose traces: reading RxR's npz archives, and refusing missing, corrupt or malformed ones with the file named."""

import numpy as np
import pytest

from vlnkit.datasets.pose_traces import PoseTraceError, load_pose_trace, parse_pose_trace, pose_trace_path


def arrays(n=3, k=2, m=4):
    return {
        "pano": np.array([["a"], ["a"], ["b"]][:n]),
        "time": np.arange(n, dtype=np.float32).reshape(-1, 1),
        "extrinsic_matrix": np.zeros((n, 16), np.float32),
        "intrinsic_matrix": np.zeros((n, 16), np.float32),
        "image_mask": np.zeros((k, 128, 256), bool),
        "text_mask": np.zeros((k, m), bool),
        "feature_weights": np.zeros((k, 36), np.float32),
    }


def test_path_follows_rxr_naming(tmp_path):
    assert pose_trace_path("pt", "rxr_train", 105606) == "pt/rxr_train/105606_guide_pose_trace.npz"
    assert pose_trace_path("pt", "val_seen", 26, "follower") == "pt/rxr_val_seen/000026_follower_pose_trace.npz"
    with pytest.raises(ValueError, match="role"):
        pose_trace_path("pt", "val_seen", 26, "driver")


def test_round_trip_keeps_every_array(tmp_path):
    path = str(tmp_path / "000001_guide_pose_trace.npz")
    np.savez_compressed(path, **arrays())
    trace = load_pose_trace(path)
    assert trace.path == path and len(trace) == 3
    assert trace.pano.tolist() == ["a", "a", "b"] and trace.time.dtype == np.float64
    assert sorted(trace.arrays) == sorted(arrays())


def test_byte_strings_are_decoded():
    trace = parse_pose_trace({"pano": np.array([b"a", b"b"]), "time": np.array([0.0, 1.0])})
    assert trace.pano.tolist() == ["a", "b"]


def test_missing_file_names_the_file(tmp_path):
    path = str(tmp_path / "000002_guide_pose_trace.npz")
    with pytest.raises(PoseTraceError, match="000002_guide_pose_trace.npz: pose trace not found") as info:
        load_pose_trace(path)
    error = info.value.record_error("instruction_id=2")
    assert (error.source, error.record, error.reason) == (path, "instruction_id=2", "pose trace not found")


@pytest.mark.parametrize("content", [b"", b"not a zip at all", None])
def test_corrupt_archive_names_the_file(tmp_path, content):
    path = tmp_path / "000003_guide_pose_trace.npz"
    if content is None:  # a real archive cut in half, as a broken download leaves it
        np.savez_compressed(path, **arrays())
        content = path.read_bytes()[: path.stat().st_size // 2]
    path.write_bytes(content)
    with pytest.raises(PoseTraceError, match="000003_guide_pose_trace.npz: not a readable numpy archive"):
        load_pose_trace(str(path))


def test_python_objects_are_refused_not_unpickled(tmp_path):
    path = tmp_path / "000004_guide_pose_trace.npz"
    np.savez(path, pano=np.array([["a"]], dtype=object), time=np.zeros((1, 1), np.float32))
    with pytest.raises(PoseTraceError, match="not a readable numpy archive"):
        load_pose_trace(str(path))


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda a: a.pop("time"), "missing array 'time'"),
        (lambda a: a.update(time=np.zeros((2, 1), np.float32)), "'time' has 2 snapshots but 'pano' has 3"),
        (lambda a: a.update(time=np.array([[0.0], [2.0], [1.0]], np.float32)), "'time' goes backwards at snapshot 2"),
        (lambda a: a.update(time=np.array([[0.0], [np.nan], [1.0]])), "'time' is not finite at snapshot 1"),
        (lambda a: a.update(pano=np.array([[1], [2], [3]])), "'pano' must hold strings"),
        (lambda a: a.update(pano=np.zeros((3, 2), "U2")), r"'pano' must have shape \[n, 1\]"),
        (lambda a: a.update(extrinsic_matrix=np.zeros((3, 12))), r"'extrinsic_matrix' must have shape \[3, 16\]"),
        (lambda a: a.update(feature_weights=np.zeros((2, 12))), r"'feature_weights' must have shape \[k, 36\]"),
        (lambda a: a.update(text_mask=np.zeros((5, 4), bool)), "disagree on the number of viewpoints"),
        (lambda a: a.update(pano=np.zeros((0, 1), "U1"), time=np.zeros((0, 1))), "no snapshots"),
    ],
)
def test_malformed_traces_say_what_is_wrong(change, message):
    a = arrays()
    change(a)
    with pytest.raises(PoseTraceError, match=r"^x\.npz: .*" + message):
        parse_pose_trace(a, "x.npz")
