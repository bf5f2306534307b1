"""Continuous-environment files read from gs:// (the local Cloud Storage emulator) exactly as from disk:
an episode file finds its ground truth beside it by VLN-CE's naming, and results and positions read."""

from __future__ import annotations

import numpy as np

from vlnkit.continuous.episodes import read_episodes
from vlnkit.continuous.positions import read_positions
from vlnkit.continuous.results import read_results


def test_episodes_ground_truth_results_and_positions_from_the_bucket(gcs_emulator, shared_data):
    b = gcs_emulator
    vlnce = shared_data / "vlnce"
    split = vlnce / "R2R_VLNCE_v1-2_preprocessed" / "val_seen"
    url = b.upload(str(split / "val_seen.json.gz"), "vlnce/val_seen/val_seen.json.gz")
    b.upload(str(split / "val_seen_gt.json.gz"), "vlnce/val_seen/val_seen_gt.json.gz")
    stats = "cwp_results_val_seen/cma/stats_ep_ckpt_0_val_seen_r0_w1.json"
    results_url = b.upload(str(vlnce / stats), "vlnce/" + stats)
    positions_url = b.upload(
        str(vlnce / "third_party_positions" / "mln_ce_val_unseen_v1-2_positions.json"), "vlnce/p.json"
    )

    remote, errors = read_episodes(url)
    local, _ = read_episodes(str(split / "val_seen.json.gz"))
    assert errors == [] and remote.gt_source == url.replace("val_seen.json.gz", "val_seen_gt.json.gz")
    assert remote.instr_id.tolist() == local.instr_id.tolist()
    assert np.array_equal(remote.gt_locations.points, local.gt_locations.points)
    results, errors = read_results(results_url)
    assert errors == [] and len(results) == 778
    positions, errors = read_positions(positions_url)
    assert errors == [] and len(positions) == 420
