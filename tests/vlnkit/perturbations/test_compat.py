import subprocess
import sys

import pytest

from tests.conftest import ROOT
from vlnkit.hashing import stable_hash
from vlnkit.perturbations.compat import method_quota, parse_methods, record_rng, select_negatives


def test_method_quota_splits_half_of_the_positives_equally():
    methods = ("a", "b", "c")
    assert method_quota(12, {"a": 10, "b": 10, "c": 10}, methods) == (2, 6)
    assert method_quota(13, {"a": 10, "b": 10, "c": 10}, methods) == (2, 6)
    # The scarcest method caps the others: methods stay equal, the shortfall is visible.
    assert method_quota(60, {"a": 10, "b": 4, "c": 10}, methods) == (4, 30)
    assert method_quota(60, {"a": 10, "b": 4}, ("a",)) == (10, 30)
    assert method_quota(60, {}, ()) == (0, 0)


def test_selection_is_independent_of_input_order():
    rows = [{"method": "m", "source_instr_id": f"{i}_0", "variant": 0} for i in range(50)]
    first = select_negatives(3, rows, 10)
    assert select_negatives(3, rows[::-1], 10) == first and len(first) == 10
    assert select_negatives(4, rows, 10) != first


def test_record_rng_depends_only_on_seed_and_keys_in_any_process():
    draws = record_rng(5, "random_walk", "12_0", 0).integers(1 << 30, size=4).tolist()
    assert draws == record_rng(5, "random_walk", "12_0", 0).integers(1 << 30, size=4).tolist()
    assert draws != record_rng(6, "random_walk", "12_0", 0).integers(1 << 30, size=4).tolist()
    code = "from vlnkit.hashing import stable_hash; from vlnkit.perturbations.compat import record_rng; print(stable_hash('x', 1), record_rng(5, 'random_walk', '12_0', 0).integers(1 << 30, size=4).tolist())"
    other = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert other.stdout.split(" ", 1) == [str(stable_hash("x", 1)), f"{draws}\n"]


def test_parse_methods():
    assert parse_methods("viewpoint_swap, direction_swap") == ("direction_swap", "viewpoint_swap")
    with pytest.raises(ValueError, match="unknown perturbation method 'flip'"):
        parse_methods("direction_swap,flip")
