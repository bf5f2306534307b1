"""The suite's own rules: what counts as CI, and which tests carry the real_data marker."""

from __future__ import annotations

import pytest

from tests.conftest import in_ci


@pytest.mark.parametrize("value", ["1", "true", "TRUE", "yes", " Yes "])
def test_ci_true_values(value):
    assert in_ci(value)


@pytest.mark.parametrize("value", ["", "0", "false", "False", "no", "off", "2"])
def test_ci_other_values_are_not_ci(value):
    assert not in_ci(value)


def test_a_test_reading_the_data_through_another_fixture_is_marked(request, connectivity_dir):
    assert request.node.get_closest_marker("real_data") is not None


def test_a_test_without_the_data_is_not_marked(request):
    assert request.node.get_closest_marker("real_data") is None
