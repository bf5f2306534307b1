"""Crafty's Appraiser: how interesting an object category is, as its inverse document frequency.

Each panorama of the training scans is a document whose words are the clean categories of the objects it
sees (appendix B.1). The score is the reference's "probabilistic IDF" (google-research/crafty
`appraise.py`, `create_idf_appraiser`): log(1.1 + (N - df) / df), with log(1.1) for a category never
seen, and the average score for a category the table lacks (`Appraiser.__call__`). The reference's
notable-boost and boring-penalty lists are applied with its default amounts, 0 (`create_appraiser.py`
flags `notable_boost` and `boring_penalty`), so they change nothing and are left out.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Appraiser:
    scores: dict[str, float]
    documents: int

    @property
    def average(self) -> float:
        return sum(self.scores.values()) / len(self.scores) if self.scores else math.log(1.1)

    def __call__(self, category: str) -> float:
        return self.scores.get(category, self.average)

    def lookup(self, categories) -> np.ndarray:
        avg = self.average
        return np.fromiter((self.scores.get(c, avg) for c in categories), dtype=np.float64, count=len(categories))

    def rows(self) -> list[dict]:
        """The table as rows (category, document frequency implied by the score, idf), sorted by category."""
        return [{"category": c, "idf": s} for c, s in sorted(self.scores.items())]


def document_frequencies(documents) -> Counter:
    """Per category, in how many documents (panoramas) it occurs."""
    df: Counter = Counter()
    for doc in documents:
        df.update(set(doc))
    return df


def idf_appraiser(df: Counter, documents: int) -> Appraiser:
    """The Appraiser of summed document frequencies over `documents` panoramas."""
    if documents <= 0:
        raise ValueError("cannot appraise: no panoramas")
    scores = {c: math.log(1.1 + (documents - n) / n) for c, n in df.items() if n > 0}
    return Appraiser(scores, documents)


def scan_documents(objects) -> tuple[Counter, int]:
    """(document frequency per clean category, number of panoramas) of one scan's `ScanObjects`:
    each viewpoint is a document, the categories of the objects it sees are its words."""
    df: Counter = Counter()
    for row in objects.visible:
        df.update(set(objects.categories[row].tolist()))
    return df, len(objects.visible)
