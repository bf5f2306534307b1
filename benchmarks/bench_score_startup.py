"""How long a small score run waits beyond Beam's own floor: R2R val_unseen against a trivial pipeline.

Two commands, each a fresh process, in interleaved rounds (the median round is reported), as in every
benchmark (`benchmarks.measure`):

1. Beam's floor: a trivial pipeline (`beam.Create` of three numbers, `beam.Map`, the DirectRunner), the
   least any Beam job started as a command costs (interpreter, Beam's imports, the runner);
2. the score job on R2R val_unseen with the PREVALENT agent's 2,349 predictions
   (`../shared/data/agent_outputs/weituo12321+PREVALENT_R2R`), default flags (1,000 bootstrap replicates).

    python -m benchmarks.bench_score_startup [--rounds 5] [--data ../shared/data]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

from benchmarks.measure import ROOT, interleaved_rounds

PREVALENT = "agent_outputs/weituo12321+PREVALENT_R2R/seq2seq_teacher_imagenet_val_unseen_iter_36000.json"
TRIVIAL = """
import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
with beam.Pipeline(options=PipelineOptions(["--runner=DirectRunner"])) as p:
    _ = p | beam.Create([1, 2, 3]) | beam.Map(lambda x: x * 2)
"""


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds; medians are reported")
    parser.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data"))
    args = parser.parse_args(argv)
    data = os.path.abspath(args.data)
    out = tempfile.mkdtemp(prefix="bench_startup_")
    commands = {
        "trivial pipeline": [sys.executable, "-c", TRIVIAL],
        "score val_unseen": [
            sys.executable, "-m", "pipelines.score", "--runner=DirectRunner",
            f"--predictions=prevalent={data}/{PREVALENT}", f"--dataset={data}/r2r/R2R_val_unseen.json",
            f"--connectivity_dir={data}/connectivity", f"--output_dir={out}",
        ],
    }  # fmt: skip

    def check(runs):
        summary = json.load(open(os.path.join(out, "summary.json")))
        assert summary["count"] == 2349 and summary["leaderboard"][0]["spl_ci"] is not None

    table = interleaved_rounds(commands, args.rounds, check, baseline="trivial pipeline")
    print(f"\nscore val_unseen / trivial pipeline: {table['score val_unseen']['ratio']:.2f}x")
    return table


if __name__ == "__main__":
    main()
