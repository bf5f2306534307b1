"""What the score job writes besides its episode rows (`transforms.write.WriteTables`): the two episode
lists, and the partials gathered for the summary.

`WriteEpisodeLists(paths)`: (list name, lines) pairs -> one sorted text file per list name in `paths` (an
empty file for a list without lines). `MergeBootstrap()` and `MergeFollowerComparisons()`: the score step's
per-bucket partials -> one dict each, added exactly in any order (`MergeWith`), for the summary.
"""

from __future__ import annotations

from dataclasses import dataclass

import apache_beam as beam

from transforms.gather import GatherToOne
from transforms.tally import MergeWith
from vlnkit.comparison.accumulate import merge_sums
from vlnkit.io import fileio
from vlnkit.scoring.followers import merge_by_agent


def _write_lists(pairs: list, paths: dict[str, str]) -> dict[str, int]:
    lines: dict[str, list[str]] = {name: [] for name in paths}
    for name, part in pairs:
        lines[name] += part
    for name, path in paths.items():
        with fileio.open_write(path) as f:
            f.write("".join(x + "\n" for x in sorted(lines[name])).encode("utf-8"))
    return {name: len(found) for name, found in lines.items()}


@dataclass
class WriteEpisodeLists(beam.PTransform):
    """(list name, lines) -> one sorted text file per name of `paths` ({name: file path}), one line each."""

    paths: dict[str, str]

    def expand(self, pairs):
        return pairs | "Gather" >> GatherToOne() | "Write" >> beam.Map(_write_lists, self.paths)


class MergeBootstrap(beam.PTransform):
    """Per-bucket bootstrap sums -> one dict (`vlnkit.comparison.accumulate.merge_sums`), or nothing when
    there are none: read it as `AsSingleton(..., default_value={})`."""

    def expand(self, sums):
        return sums | "MergeSums" >> beam.CombineGlobally(MergeWith(merge_sums)).without_defaults()


class MergeFollowerComparisons(beam.PTransform):
    """Per-bucket {agent: comparison} -> one (`vlnkit.scoring.followers.merge_by_agent`), or nothing when
    there are none: read it as `AsSingleton(..., default_value={})`."""

    def expand(self, parts):
        return parts | "MergeComparisons" >> beam.CombineGlobally(MergeWith(merge_by_agent)).without_defaults()
