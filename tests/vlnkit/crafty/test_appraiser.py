"""The Appraiser's IDF, worked by hand."""

import math
from collections import Counter

import pytest

from tests.vlnkit.crafty.small import objects
from vlnkit.crafty.appraiser import document_frequencies, idf_appraiser, scan_documents


def test_idf_by_hand():
    docs = [["sofa", "lamp"], ["lamp"], ["lamp", "lamp", "table"], []]
    df = document_frequencies(docs)
    assert df == Counter({"lamp": 3, "sofa": 1, "table": 1})  # a category counts once per document
    app = idf_appraiser(df, len(docs))
    assert app("lamp") == pytest.approx(math.log(1.1 + 1 / 3))
    assert app("sofa") == pytest.approx(math.log(1.1 + 3))
    assert app("piano") == pytest.approx((2 * math.log(4.1) + math.log(1.1 + 1 / 3)) / 3)  # unseen: the average
    assert app("lamp") < app("sofa")  # rarer is more interesting


def test_scan_documents_are_viewpoints():
    df, n = scan_documents(objects())
    assert n == 8  # one document per viewpoint, h's empty one included
    assert df == Counter({"sofa": 1, "lamp": 1, "table": 2, "piano": 1, "clock": 2})


def test_no_documents_refused():
    with pytest.raises(ValueError):
        idf_appraiser(Counter(), 0)
