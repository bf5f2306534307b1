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


def _dataset_instructions(data) -> dict[str, list[str]]:
    import glob

    texts: dict[str, set] = {"r2r": set(), "reverie": set(), "cvdn": set()}
    for f in glob.glob(str(data / "r2r" / "R2R_*.json")):
        texts["r2r"].update(i for r in json.loads(open(f).read()) for i in r["instructions"])
    for f in glob.glob(str(data / "reverie" / "v*" / "REVERIE_*.json")):
        texts["reverie"].update(i for r in json.loads(open(f).read()) for i in r["instructions"])
    for f in glob.glob(str(data / "cvdn" / "val_*.json")):
        for r in json.loads(open(f).read()):
            texts["cvdn"].add(r.get("target", ""))
            texts["cvdn"].update(t["message"] for t in r.get("dialog_history", []))
    return {k: sorted(v) for k, v in texts.items()}


def test_every_dataset_instruction_against_the_java_tokenizer(shared_data):
    """R2R (every split), REVERIE (v1, v2) and CVDN (targets, dialog turns): the official tokenizer runs here
    (pycocoevalcap's PTBTokenizer, Java), one caption per line (line breaks inside a caption become
    spaces first, so the reference's shift does not apply)."""
    import contextlib
    import io

    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    from vlnkit.captioning.ptb import NEWLINE

    for name, texts in _dataset_instructions(shared_data).items():
        assert len(texts) > 1000, name
        with contextlib.redirect_stderr(io.StringIO()):
            official = PTBTokenizer().tokenize({i: [{"caption": NEWLINE.sub(" ", t)}] for i, t in enumerate(texts)})
        wrong = [(t, official[i][0]) for i, t in enumerate(texts) if " ".join(tokenize(t)) != official[i][0]]
        assert not wrong, (name, len(wrong), wrong[:3])
