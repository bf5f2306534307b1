"""pycocoevalcap 1.2's Python scorers (BLEU, ROUGE-L, CIDEr-D) on given tokens: the test oracle.

pycocoevalcap is installed by the test extra and never imported by vlnkit. Its tokenizer needs Java and
is slow, so the oracle scores the tokens the tests hand it (the tokenizer is checked separately
against `checks/ptb_tokenizer_fixture.json`, the official tokenizer's output).
"""

from __future__ import annotations

import contextlib
import io

import numpy as np


def reference_scores(hypotheses: list[list[str]], references: list[list[list[str]]]) -> dict:
    """{metric: (corpus score, per-item array)} as pycocoevalcap computes them, ids in item order."""
    return reference_text_scores([" ".join(h) for h in hypotheses], [[" ".join(r) for r in rs] for rs in references])


def reference_text_scores(hypotheses: list[str], references: list[list[str]]) -> dict:
    """`reference_scores` of captions given as text, which pycocoevalcap's scorers split themselves."""
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.rouge.rouge import Rouge

    res = {i: [h] for i, h in enumerate(hypotheses)}
    gts = {i: list(refs) for i, refs in enumerate(references)}
    with contextlib.redirect_stdout(io.StringIO()):  # Bleu prints its counts
        bleu, bleu_items = Bleu(4).compute_score(gts, res)
    out = {f"bleu_{k + 1}": (bleu[k], np.asarray(bleu_items[k])) for k in range(4)}
    rouge, rouge_items = Rouge().compute_score(gts, res)
    out["rouge_l"] = (rouge, np.asarray(rouge_items))
    cider, cider_items = Cider().compute_score(gts, res)
    out["cider_d"] = (cider, np.asarray(cider_items))
    return out
