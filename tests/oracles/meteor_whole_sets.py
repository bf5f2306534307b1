"""METEOR 1.5 on the shared speaker sets whole: `vlnkit.captioning.meteor.Meteor` against pycocoevalcap's wrapper.

    python -m tests.oracles.meteor_whole_sets [--speaker ../shared/data/speaker]

The suite checks three sets (tests/vlnkit/captioning/test_meteor.py) and the job's column on 20 items
(tests/pipelines/test_score_instructions.py); this command checks every set issue 48 names, once: the 13
zhao2023 systems against their own references and against the common held-out ones, the 8 AC-GG sets
and the T5 greedy set. Both sides run the same jar on the same lines (PTB tokens, space-joined), so
"equal" is identical output: every per-item score and the set's aggregate compared with `==`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tests.vlnkit.captioning import shared_sets
from vlnkit.captioning.meteor import Meteor
from vlnkit.captioning.ptb import tokenize


def all_sets(speaker: Path) -> dict[str, tuple[list, list, list]]:
    sets = {f"zhao/{s}": v for s, v in shared_sets.zhao_sets(speaker, common=False).items()}
    sets.update({f"zhao_common/{s}": v for s, v in shared_sets.zhao_sets(speaker, common=True).items()})
    sets.update({f"acgg/{n}": shared_sets.acgg_set(speaker, n) for n in shared_sets.ACGG})
    sets["t5_greedy"] = shared_sets.t5_greedy_set(speaker)
    return sets


def main(argv=None) -> int:
    from pycocoevalcap.meteor.meteor import Meteor as Reference

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--speaker", type=Path, default=Path("../shared/data/speaker"))
    args = parser.parse_args(argv)
    reference, ours = Reference(), Meteor.shared()
    differ = items = 0
    for name, (_, hyps, refs) in all_sets(args.speaker).items():
        h = [" ".join(tokenize(x)) for x in hyps]
        r = [[" ".join(tokenize(x)) for x in rs] for rs in refs]
        keys = list(range(len(h)))
        expected = reference.compute_score({k: r[k] for k in keys}, {k: [h[k]] for k in keys})
        got = ours.score(h, r)
        same = sum(a == b for a, b in zip(got[1], expected[1]))
        items += len(h)
        differ += len(h) - same + (got[0] != expected[0])
        print(
            f"{name:45} {len(h):5} items, {same:5} identical, aggregate {got[0]:.6f} == {expected[0]:.6f}: {got[0] == expected[0]}"
        )
    print(f"{items} items over every set: {'all identical' if not differ else f'{differ} differ'}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
