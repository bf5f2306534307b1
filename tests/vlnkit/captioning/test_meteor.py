"""METEOR 1.5 through the fetched jar against pycocoevalcap's own wrapper and jar on the same lines."""

from __future__ import annotations

import pytest

from tests.vlnkit.captioning import shared_sets
from vlnkit.captioning.jars import INSTALL_COMMAND, missing
from vlnkit.captioning.meteor import Meteor, MeteorUnavailable
from vlnkit.captioning.ptb import tokenize


def _joined(hyps, refs):
    return [" ".join(tokenize(h)) for h in hyps], [[" ".join(tokenize(r)) for r in rs] for rs in refs]


def test_meteor_equals_the_reference_wrapper(speaker_dir):
    from pycocoevalcap.meteor.meteor import Meteor as Reference

    sets = shared_sets.zhao_sets(speaker_dir, common=False)
    chosen = [sets["human-reference"], sets["speaker-lstm_greedy"], shared_sets.t5_greedy_set(speaker_dir)]
    reference = Reference()
    ours = Meteor.shared()
    assert Meteor.shared() is ours  # one running jar per process
    for _, hyps, refs in chosen:
        h, r = _joined(hyps, refs)
        ids = list(range(len(h)))
        expected = reference.compute_score({i: r[i] for i in ids}, {i: [h[i]] for i in ids})
        got = ours.score(h, r)
        assert got[0] == expected[0] and got[1] == list(expected[1])
        assert got[0] != pytest.approx(sum(got[1]) / len(got[1]), abs=1e-6)  # the jar's aggregate, not a mean
    reference.meteor_p.kill()
    ours._process.kill()  # a jar that has ended is replaced by a new one at the next call
    ours._process.wait()
    again = Meteor.shared()
    assert again is not ours and again._process.poll() is None
    again.close()


def test_without_java_or_jar_the_refusal_is_one_line_naming_the_install(monkeypatch, tmp_path):
    monkeypatch.setenv("VLNKIT_CAPTION_JARS", str(tmp_path))
    reason = missing("meteor")
    assert reason and "\n" not in reason and INSTALL_COMMAND in reason
    with pytest.raises(MeteorUnavailable, match="vlnkit.captioning.jars"):
        Meteor()
    monkeypatch.setenv("PATH", str(tmp_path))
    assert "needs Java" in missing("meteor")
