"""The trained English pipeline and R2R val_seen parsed with it, once per test session.

Parsing all 1,021 val_seen instructions with nlp.pipe takes about 4 s on one core of the 2-core
development machine (printed with -s), so the whole split is used, not a subset.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import pytest

from vlnkit.perturbations.compat import INSTRUCTION_METHODS
from vlnkit.perturbations.nlp import load_pipeline


@dataclass
class ParsedSplit:
    ids: list[str]
    texts: list[str]
    docs: list
    seconds: float


@pytest.fixture(scope="session")
def trained_nlp():
    """The default pipeline (en_core_web_sm, or its PyPI mirror installed with vlnkit) for all methods."""
    return load_pipeline(None, INSTRUCTION_METHODS)


@pytest.fixture(scope="session")
def val_seen(r2r_dir, trained_nlp) -> ParsedSplit:
    records = json.loads((r2r_dir / "R2R_val_seen.json").read_text())
    ids = [f"{r['path_id']}_{k}" for r in records for k in range(len(r["instructions"]))]
    texts = [t for r in records for t in r["instructions"]]
    start = time.perf_counter()
    docs = list(trained_nlp.pipe(texts, batch_size=256))
    seconds = time.perf_counter() - start
    print(f"\nparsed {len(texts)} val_seen instructions in {seconds:.1f} s")
    return ParsedSplit(ids, texts, docs, seconds)
