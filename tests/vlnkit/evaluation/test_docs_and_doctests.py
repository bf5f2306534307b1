"""Every metric is written out with its formula and an example.

Every docstring example of every module runs in tests/docs/test_docstrings.py, and the rewards page's
code in tests/docs/test_docs.py."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_every_public_metric_is_written_out_with_its_formula_and_an_example():
    from vlnkit import evaluation
    from vlnkit.evaluation import metrics
    from vlnkit.evaluation.common import ALL

    for name in ALL:
        fn = getattr(metrics, name)
        assert fn.__name__ == name and fn.__module__ == "vlnkit.evaluation.metrics"
        assert "=" in fn.__doc__.splitlines()[0] + fn.__doc__.splitlines()[1], name  # the formula
        assert re.search(rf">>> .*\b{name}\(", fn.__doc__), name  # an example calling it
        assert name in evaluation.__all__
    assert all(hasattr(evaluation, n) for n in evaluation.__all__)
