"""The score job writes the same rows and summary, bit for bit, as the score path at f903367 (before its
rebuild around one core function).

Each case runs the job as a user does (`pipelines.score.main`) and compares `tests.oracles.score_digest`
digests of everything it wrote with the digests that the score path as it stood at commit f903367 (before
the rebuild around one core function) gave for the same inputs and flags. The cases cover a real agent on
R2R val_unseen with the default bootstrap, several agents with a baseline and a prediction file that breaks
every join rule, other scoring conventions with path-level resampling, and the random-walk workload of
`benchmarks.make_scale_data` (JSON Lines on both sides, as the benchmarks read).

    python -m tests.pipelines.test_score_identity   # print the digests of the current code
"""

from __future__ import annotations

import json
import os
import sys

import pytest

from tests.conftest import SHARED_DATA
from tests.oracles.score_digest import dirty_predictions, parts

PREVALENT = "agent_outputs/weituo12321+PREVALENT_R2R/seq2seq_teacher_imagenet_val_unseen_iter_36000.json"
RANDOM = "agent_outputs/rszia+rpl2024-final-group9/val_unseen_random_agent.json"
SHORTEST = "agent_outputs/rszia+rpl2024-final-group9/val_unseen_shortest_agent.json"
PHI = "agent_outputs/rszia+rpl2024-final-group9/val_unseen_phi_agent.json"
VAL_UNSEEN = "r2r/R2R_val_unseen.json"


def case_flags(name: str, data: str, tmp: str) -> tuple[list[str], tuple[str, ...]]:
    """(the job's flags for case `name`, the input files) with outputs in `tmp`."""
    d = lambda p: os.path.join(data, p)  # noqa: E731
    common = [f"--connectivity_dir={d('connectivity')}", f"--output_dir={os.path.join(tmp, 'out')}"]
    if name == "prevalent":
        inputs = (d(PREVALENT), d(VAL_UNSEEN))
        return [f"--predictions=prevalent={inputs[0]}", f"--dataset={inputs[1]}", *common], inputs
    if name == "agents":
        dirty = dirty_predictions(os.path.join(tmp, "dirty.jsonl"), d(VAL_UNSEEN), d("connectivity"))
        inputs = (d(PREVALENT), d(RANDOM), d(SHORTEST), dirty, d(VAL_UNSEEN))
        flags = [f"--predictions={a}={p}" for a, p in zip(("prevalent", "random", "shortest", "dirty"), inputs)]
        return [*flags, f"--dataset={inputs[-1]}", "--bootstrap=200", "--baseline=random", *common], inputs
    if name == "conventions":
        inputs = (d(PHI), d(VAL_UNSEEN))
        flags = ["--keep_repeats", "--success_rule=lt", "--spl_reference=path", "--bootstrap_unit=path"]
        return [f"--predictions=phi={inputs[0]}", f"--dataset={inputs[1]}", *flags, "--bootstrap=100", *common], inputs
    if name == "walks":
        from benchmarks.make_scale_data import make

        preds, dataset = make(os.path.join(tmp, "walks"), 30_000, data)
        return [f"--predictions=walk={preds}", f"--dataset={dataset}", *common], (preds, dataset)
    raise ValueError(name)


# Digests of the score path at f903367 (python -m tests.pipelines.test_score_identity, on that commit, with
# this digest: the summary's are without the counters of `score_digest.COUNT_KEYS`, whose rule changed since).
EXPECTED: dict[str, dict[str, str]] = {
    "prevalent": {
        "episodes": "2468657bee3d1af310ac7a2faf40f6a7411871580fda7babab0801371bdbc9c5",
        "episode_schema": "b39f21ef8b245c732794990a6b7891c991ae0e2a138c1a4905887349bc49d7c8",
        "summary": "47fc70a3b53bcd2a2f14747e131ca2d25c333cdb6e48f9248e2f12ba469bf1e8",
        "missing_predictions": "12ae32cb1ec02d01eda3581b127c1fee3b0dc53572ed6baf239721a03d82e126",
        "without_usable_prediction": "12ae32cb1ec02d01eda3581b127c1fee3b0dc53572ed6baf239721a03d82e126",
        "dead_letters": "4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945",
        "leaderboard.csv": "22036ea57bb3f4f060448df499b260218d5ea44f5595db65471b375288ef6484",
        "leaderboard.md": "7fc5cbb56710216013813a22d053b80724e2bec2a647a34da467f341d6aba6e3",
    },
    "agents": {
        "episodes": "c46df814626e1f0b788cc8f2141c017f078657e59d080d6487435f05934250f4",
        "episode_schema": "b39f21ef8b245c732794990a6b7891c991ae0e2a138c1a4905887349bc49d7c8",
        "summary": "f135a1c6a4fcb48b69bc7cbec82e50f02e80631e1dc72dff7466fb991b835378",
        "missing_predictions": "a4ad4db37e4cba0b5a0fadfbc0de9b11431e9371290f3b2ff507c72ebf0fda3f",
        "without_usable_prediction": "a4ad4db37e4cba0b5a0fadfbc0de9b11431e9371290f3b2ff507c72ebf0fda3f",
        "dead_letters": "b8ab76711220621f019fceca6ad53ff6da2a1b6ef62d123b96a73ff644236c1e",
        "leaderboard.csv": "d5ad875f1001b91df9e0e43db4a264eda518e28166975e32fce7fbc6291d7070",
        "leaderboard.md": "cae6a68d8dcb4b9608b7881959a8014a38fcb8ad78534a38f2e6f2f07a4d1cb5",
    },
    "conventions": {
        "episodes": "0da38008657aa348be64c1d621d3c688739d3188e000ed633c1092b9ea4f2f00",
        "episode_schema": "b39f21ef8b245c732794990a6b7891c991ae0e2a138c1a4905887349bc49d7c8",
        "summary": "d0d6561ca9676212aa3c1fc20e66a709b051bd396b1cc5d21c96ac04408cf81e",
        "missing_predictions": "12ae32cb1ec02d01eda3581b127c1fee3b0dc53572ed6baf239721a03d82e126",
        "without_usable_prediction": "12ae32cb1ec02d01eda3581b127c1fee3b0dc53572ed6baf239721a03d82e126",
        "dead_letters": "4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945",
        "leaderboard.csv": "fb35b42d0bf152433849356871187f009fee785341f9ddefdbe51368dc09af96",
        "leaderboard.md": "3b1477e14b85ae1ae59b5d1a995991804fbb5388144c557dfd3fa165880fe0d9",
    },
    "walks": {
        "episodes": "c2b05c57e143bfd62d914a32f23e7c1daddabc937bb57b82dac68d450355192c",
        "episode_schema": "b39f21ef8b245c732794990a6b7891c991ae0e2a138c1a4905887349bc49d7c8",
        "summary": "fbf2866e79b48bdc0797c9f9449041086e2f8e3c72f74c9e4bbe518cd71e861a",
        "missing_predictions": "903a44d141be84ac5efc97ab0a35680056931a01beaa82ad4bc21ded24439e1f",
        "without_usable_prediction": "903a44d141be84ac5efc97ab0a35680056931a01beaa82ad4bc21ded24439e1f",
        "dead_letters": "4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945",
        "leaderboard.csv": "5ba13df3c1d0aa08dd7d4436e2ed2271ec3965ccf84e493d368b9d6e3c89c87b",
        "leaderboard.md": "6a4d1a64c651fa215f79af030e95d3db65f8a2050787e309f6de80f48fe9df14",
    },
}


def run_case(name: str, data: str, tmp: str) -> dict[str, str]:
    from pipelines.score import main

    flags, inputs = case_flags(name, data, tmp)
    main(["--runner=DirectRunner", *flags])
    return parts(os.path.join(tmp, "out"), inputs)


@pytest.mark.parametrize("name", ["prevalent", "agents", "conventions", "walks"])
def test_outputs_are_those_of_the_score_path_before_the_rebuild(name, shared_data, tmp_path):
    assert run_case(name, str(shared_data), str(tmp_path)) == EXPECTED[name]


if __name__ == "__main__":
    import tempfile

    data = str(SHARED_DATA)
    found = {}
    for name in sys.argv[1:] or ["prevalent", "agents", "conventions", "walks"]:
        with tempfile.TemporaryDirectory() as tmp:
            found[name] = run_case(name, data, tmp)
    print(json.dumps(found, indent=4))
