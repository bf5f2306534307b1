"""Poisson bootstrap weights: a pure function of (seed, key, replicate), Poisson(1) distributed."""

from __future__ import annotations

import math
import re

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vlnkit.comparison.resampling import POISSON_CDF, episode_keys, poisson_weights
from vlnkit.hashing import stable_hash


def scalar_weight(key: int, b: int, seed: int) -> int:
    """The documented rule, one value at a time with Python ints and math: an independent oracle."""
    u = ((stable_hash(key, b // 3, seed=seed) >> (21 * (b % 3))) & (2**21 - 1)) / 2**21
    k, cdf, term = 0, math.exp(-1.0), math.exp(-1.0)
    while cdf <= u:
        k += 1
        term /= k
        cdf += term
    return k


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet="0123456789_a-é", max_size=40), max_size=20), st.integers(0, 3))
def test_ids_are_read_as_the_documented_regular_expression(ids, cut):
    """The compiled reading of ids (on a sliced Arrow array, as buckets are) equals the rule's regex."""
    number = "(0|[1-9][0-9]{0,17})"
    canonical, reverie = re.compile(f"{number}_{number}"), re.compile(f"{number}_{number}_{number}")
    array = pa.array(["x"] * cut + ids, pa.string()).slice(cut)
    keys = episode_keys(array).tolist()
    for key, instr_id in zip(keys, ids):
        two, three = canonical.fullmatch(instr_id), reverie.fullmatch(instr_id)
        if two:
            wanted = stable_hash(int(two[1]), int(two[2]))
        elif three and int(three[1]) < 2**31 and int(three[2]) < 2**32:
            wanted = stable_hash(int(three[1]), int(three[2]), int(three[3]))
        else:
            wanted = stable_hash(instr_id)
        assert key == wanted, instr_id


def test_reverie_ids_are_keyed_apart_from_the_two_part_ids_they_pack_into():
    """A REVERIE id's record packs (path_id, objId) into one integer; its episode key is not that of the
    two-part id made of the packed integer."""
    keys = episode_keys(["0_0_0", "0_0", f"{(5 << 32) | 7}_1", "5_7_1", "5_7_2"]).tolist()
    assert len(set(keys)) == 5 and keys[3] == stable_hash(5, 7, 1)


def test_keys_follow_one_documented_rule():
    ids = ["12_3", "a-7", "012_3", "12_03", "-1_0", "99999999999999999999_1", "0_0"]
    keys = episode_keys(ids).tolist()
    assert keys[0] == stable_hash(12, 3) and keys[6] == stable_hash(0, 0)
    assert keys[1:6] == [stable_hash(s) for s in ids[1:6]]  # non-canonical ids are keyed as strings
    assert len(set(keys)) == len(keys)
    assert episode_keys([12]).tolist() == [stable_hash("12")]  # an integer id is its text, not canonical


def test_path_unit_groups_the_instructions_of_a_path():
    keys = episode_keys(["4_0", "4_1", "4_2", "5_0"], unit="path", scans=["s", "s", "s", "t"]).tolist()
    assert keys[0] == keys[1] == keys[2] == stable_hash("s", 4) and keys[3] == stable_hash("t", 5)
    with pytest.raises(ValueError, match="needs ids"):
        episode_keys(["x_1"], unit="path", scans=["s"])
    with pytest.raises(ValueError, match="scan of every episode"):
        episode_keys(["4_1"], unit="path")
    with pytest.raises(ValueError, match="unit must be one of"):
        episode_keys(["4_1"], unit="scan")


def test_weights_equal_the_scalar_rule_and_ignore_order():
    keys = episode_keys([f"{p}_{k}" for p in range(40) for k in range(3)] + ["odd"])
    weights = poisson_weights(keys, replicates=30, seed=11)
    oracle = [[scalar_weight(int(key), b, 11) for b in range(30)] for key in keys]
    assert weights.tolist() == oracle
    order = np.random.default_rng(0).permutation(len(keys))
    assert (poisson_weights(keys[order], 30, seed=11) == weights[order]).all()
    assert not (poisson_weights(keys, 30, seed=12) == weights).all()


def test_weights_are_poisson_one():
    weights = poisson_weights(episode_keys([f"{p}_0" for p in range(20000)]), replicates=50, seed=0).ravel()
    counts = np.bincount(weights, minlength=8)[:8] / len(weights)
    pmf = np.array([math.exp(-1.0) / math.factorial(k) for k in range(8)])
    # 1e6 draws: each frequency within 5 standard errors of its probability
    assert (np.abs(counts - pmf) < 5 * np.sqrt(pmf * (1 - pmf) / len(weights)) + 1e-6).all()
    assert POISSON_CDF[-1] == 1.0 and len(poisson_weights(episode_keys(["1_0"]), 0)[0]) == 0


@pytest.mark.parametrize("replicates, seed", [(1000, 0), (1, 7), (334, 2**70 + 3), (2, -5)])
def test_compiled_weights_equal_the_numpy_definition(replicates, seed):
    from tests.oracles.poisson_weights import poisson_weights as numpy_weights

    keys = episode_keys([f"{p}_{k}" for p in range(700) for k in range(3)])
    keys = np.concatenate([keys, np.array([0, 2**64 - 1], dtype=np.uint64)])
    assert (poisson_weights(keys, replicates, seed) == numpy_weights(keys, replicates, seed)).all()


def test_integer_thresholds_are_the_inverse_cdf_at_every_uniform():
    from vlnkit.comparison.resampling import UNIFORM_BITS, _thresholds

    bits = np.arange(1 << UNIFORM_BITS)
    by_search = np.searchsorted(POISSON_CDF, bits * 2.0**-UNIFORM_BITS, side="right")
    assert (np.searchsorted(_thresholds(), bits, side="right") == by_search).all()
