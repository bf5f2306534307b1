"""The score job's check of RxR follower lines' released metrics, thin over `vlnkit.scoring.followers`.

`CheckFollowerMetrics()`: (agent, [follower files]) -> {"counts": (agent, (lines, dead-lettered)),
"dead_letter": dicts}: each follower line whose `metrics` cannot be compared is a dead letter of stage
`compare` naming `metrics` (its path is scored as the agent's prediction all the same), and the counts
let `human_metrics_comparison.json` account for every line.
"""

from __future__ import annotations

import apache_beam as beam
from apache_beam.metrics import Metrics

from transforms.deadletter import DEAD_LETTER
from vlnkit.scoring.followers import check_follower_metrics


class _Check(beam.DoFn):
    def __init__(self):
        super().__init__()
        self.refused = Metrics.counter("score", "follower_metrics_dead_letter")

    def process(self, element):
        agent, files = element
        lines, refused = check_follower_metrics(files)
        self.refused.inc(len(refused))
        for error in refused:
            yield beam.pvalue.TaggedOutput(DEAD_LETTER, error.to_dict())
        yield agent, (lines, len(refused))


class CheckFollowerMetrics(beam.PTransform):
    """(agent, files) pairs -> {"counts", "dead_letter"} (see the module docstring)."""

    def expand(self, agents):
        out = agents | "CheckMetrics" >> beam.ParDo(_Check()).with_outputs(DEAD_LETTER, main="counts")
        return {"counts": out.counts, DEAD_LETTER: out[DEAD_LETTER]}
