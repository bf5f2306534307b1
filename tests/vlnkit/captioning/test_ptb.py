"""The Java-free tokenizer against the official PTB tokenizer's output (checks/ptb_tokenizer_fixture.json)."""

from __future__ import annotations

import json

from vlnkit.captioning.ptb import reference_batch_lines, tokenize


def test_every_fixture_string_gets_the_official_tokens(speaker_dir):
    """All 11,920 strings, tokenized as the fixture was made: one batch, in the fixture's order.

    The fixture holds the reference's line shift (a caption with a carriage return becomes several
    lines, and every later caption reads another's tokens), so `reference_batch_lines` must reproduce
    the shift to match, and `tokenize` (one caption at a time) must match wherever no shift applies.
    """
    rows = json.loads((speaker_dir / "checks" / "ptb_tokenizer_fixture.json").read_text())
    assert len(rows) == 11920
    got = reference_batch_lines([r["raw"] for r in rows])
    wrong = [(i, rows[i]["raw"], g, rows[i]["ptb"]) for i, g in enumerate(got) if g != rows[i]["ptb"]]
    assert not wrong, wrong[:5]
    first_shift = next(i for i, r in enumerate(rows) if "\r" in r["raw"])
    unshifted = [" ".join(tokenize(r["raw"])) for r in rows[:first_shift]]
    assert unshifted == [r["ptb"] for r in rows[:first_shift]]


def test_hand_worked_rules():
    assert tokenize("Exit the room.Turn left, then walk-in (the closet).") == [
        "exit", "the", "room.turn", "left", "then", "walk-in", "-lrb-", "the", "closet", "-rrb-",
    ]  # fmt: skip
    assert tokenize("You'll see the women's door; don't stop at 2:00 or #25.") == [
        "you", "'ll", "see", "the", "women", "'s", "door", "do", "n't", "stop", "at", "2:00", "or", "#", "25",
    ]  # fmt: skip
    assert tokenize('Go to the "B" sign... then St. Mark\'s <UNK> cannot 11 o\'clock') == [
        "go", "to", "the", "b", "sign", "then", "st.", "mark", "'s", "<unk>", "can", "not", "11", "o'clock",
    ]  # fmt: skip
    assert tokenize("") == [] and tokenize(" . , ") == []
    assert tokenize("a\r\nb") == ["a", "b"]
    assert reference_batch_lines(["a\r\nb", "c", "d"]) == ["a", "b", "c"]
