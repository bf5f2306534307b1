"""The rewards page's code and every docstring example of vlnkit.evaluation run, so neither can drift."""

import doctest
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
MODULES = [
    "vlnkit.evaluation",
    "vlnkit.evaluation.batch",
    "vlnkit.evaluation.common",
    "vlnkit.evaluation.metrics",
    "vlnkit.evaluation.reference",
    "vlnkit.evaluation.rewards",
]


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", path.read_text(), flags=re.S | re.M)


def test_rewards_page_examples_run(capsys):
    blocks = python_blocks(ROOT / "docs" / "rewards.md")
    assert len(blocks) == 2
    for code in blocks:
        exec(compile(code, "docs/rewards.md", "exec"), {"__name__": "docs_example"})
    assert "mean return over 16 episodes" in capsys.readouterr().out


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


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
