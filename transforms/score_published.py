"""Comparing scored follower paths with the metrics RxR published for them (`human_metrics_comparison.json`).

`ComparePublished({agent: [follower files]})`: the score job's episode tables -> one dict {agent:
merged partial comparison} (`vlnkit.reports.published_metrics`), for the job's summary step to write.
The follower files are read once per worker; each scored table is compared with one Arrow lookup.
"""

from __future__ import annotations

import apache_beam as beam
import pyarrow as pa
import pyarrow.compute as pc

from transforms.tally import MergeWith
from transforms.worker_cache import per_worker
from vlnkit.datasets.rxr import parse_followers
from vlnkit.io import fileio
from vlnkit.io.dead_letters import RecordError
from vlnkit.reports.published_metrics import differences, merge_differences, published_table

COMPARISON_FILE = "human_metrics_comparison.json"


def load_published(files: tuple[str, ...]) -> pa.Table:
    """The published metrics of every valid follower line of `files` (invalid lines are the score job's
    dead letters already: they were read as predictions)."""
    followers = []
    for path in files:
        followers += [f for f in parse_followers(fileio.read_bytes(path), path) if not isinstance(f, RecordError)]
    return published_table(followers)


class _Compare(beam.DoFn):
    def __init__(self, published: dict[str, list[str]]):
        super().__init__()
        self.published = {agent: tuple(files) for agent, files in published.items()}

    def setup(self):
        self.tables = {
            agent: per_worker("published_metrics", "\x1f".join(files), lambda f=files: load_published(f))
            for agent, files in self.published.items()
        }

    def process(self, table: pa.Table):
        for agent, published in self.tables.items():
            mine = table.filter(pc.equal(table.column("agent"), agent))
            if mine.num_rows:
                yield agent, differences(mine, published)


def merge_by_agent(acc: dict, other: dict) -> dict:
    """{agent: comparison partial} dicts merged agent by agent."""
    for agent, part in other.items():
        acc[agent] = merge_differences([acc.get(agent, {}), part])
    return acc


class ComparePublished(beam.PTransform):
    """Episode tables (EPISODE_SCORES) -> one {agent: merged comparison} for the agents in `published`."""

    def __init__(self, published: dict[str, list[str]]):
        super().__init__()
        self.published = published

    def expand(self, tables):
        return (
            tables
            | "CompareWithPublished" >> beam.ParDo(_Compare(self.published))
            | "ByAgent" >> beam.MapTuple(lambda agent, part: {agent: part})
            | "MergeComparisons" >> beam.CombineGlobally(MergeWith(merge_by_agent))
        )
