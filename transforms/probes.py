"""Behavioral probes at scale: alignments -> probe episodes, and agent outputs -> per-skill scores.

Thin wrappers over `vlnkit.datasets.alignments`, `vlnkit.probes.episodes` and `vlnkit.probes.scoring`.
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass

import apache_beam as beam
from apache_beam.metrics import Metrics

from transforms.deadletter import DEAD_LETTER, dead_letter
from transforms.graphs import GraphDoFn
from transforms.progress import Progress
from transforms.read import SPREAD_RECORDS, ReadFiles, in_lists
from vlnkit.datasets.alignments import reader
from vlnkit.datasets.languages import R2R_LANGUAGE
from vlnkit.datasets.rxr import is_rxr, parse_dataset
from vlnkit.io import fileio
from vlnkit.io.dead_letters import RecordError
from vlnkit.navigation.graph import GraphError
from vlnkit.probes.episodes import (
    ProbeConfig,
    hop_matrix,
    load_objects,
    load_rooms,
    probe_episodes,
    truncation_candidates,
    unphrased_probes,
)
from vlnkit.probes.pose_alignment import RXR_FORMAT, rxr_alignments
from vlnkit.probes.scoring import ScoreError, correct_mass, parse_agent_outputs, summarize_skills

STATS = "stats"
MISSING = "missing"

_TABLES: dict[tuple[str, str], dict] = {}
_TABLES_LOCK = threading.Lock()


def worker_table(kind: str, path: str | None) -> dict:
    """A user table (rooms or objects) loaded once per worker process; {} when not given."""
    if not path:
        return {}
    with _TABLES_LOCK:
        table = _TABLES.get((kind, path))
        if table is None:
            table = _TABLES[(kind, path)] = (load_rooms if kind == "rooms" else load_objects)(path)
        return table


# ---------------------------------------------------------------------------- reading alignments
@dataclass
class ReadAlignments(beam.PTransform):
    """Alignment files of one format -> alignment records and dead letters.

    `fmt` is a reader of `vlnkit.datasets.alignments.READERS` ("fgr2r"), or "rxr": RxR guide files,
    each guide aligned to its path by the pose trace in `pose_traces` (`ReadRxRAlignments`).
    """

    files: list[str]
    fmt: str = "fgr2r"
    batched: bool = False
    pose_traces: str | None = None

    def __post_init__(self):  # a wrong format fails where the pipeline is built, not on a worker
        if self.fmt == RXR_FORMAT:
            if not self.pose_traces:
                raise ValueError("RxR alignments need the pose-trace folder (pose_traces)")
        else:
            reader(self.fmt)

    def expand(self, pbegin):
        if self.fmt == RXR_FORMAT:
            return pbegin | "ReadRxR" >> ReadRxRAlignments(self.files, self.pose_traces, self.batched)
        # One FGR2R record yields one alignment per instruction: instr_id makes the order total.
        return pbegin | "Read" >> ReadFiles(
            self.files,
            reader(self.fmt),
            "alignments",
            reshuffle=not self.batched,
            order_key=lambda a: (a["_index"], a["instr_id"]),
            batched=self.batched,
        )


def rxr_guide_lines(data: bytes | str, source: str):
    """The RxR guide lines of a file (`vlnkit.datasets.rxr.parse_dataset`); an R2R record is refused."""
    for item in parse_dataset(data, source):
        if isinstance(item, RecordError) or is_rxr(item):
            yield item
        else:
            yield RecordError(
                source, f"#{item['_index']}", "an R2R record, not an RxR guide line (--alignment_format=rxr)"
            )


@dataclass
class _AlignGuides(beam.DoFn):
    """A list of guide lines -> the list of their alignment records (`rxr_alignments`, one pose trace read
    per guide) and a dead letter per guide whose trace is missing, corrupt or off its path."""

    pose_traces: str
    aligned = Metrics.counter("alignments", "records")
    bad = Metrics.counter("alignments", "dead_letter")

    def process(self, guides):
        kept = []
        for guide, item in zip(guides, rxr_alignments(guides, self.pose_traces)):
            if isinstance(item, RecordError):
                self.bad.inc()
                yield beam.pvalue.TaggedOutput(DEAD_LETTER, dataclasses.replace(item, stage="align").to_dict())
            else:
                item["_order"] = guide["_order"]
                kept.append(item)
        self.aligned.inc(len(kept))
        if kept:
            yield kept


@dataclass
class ReadRxRAlignments(beam.PTransform):
    """RxR guide files + their pose-trace folder -> {"records": alignment records, "dead_letter"}.

    Guides are read per file, then spread over workers in small lists, since each needs its own pose trace
    read; with `batched=True` `records` holds lists of alignment records, otherwise single ones.
    """

    files: list[str]
    pose_traces: str
    batched: bool = False

    def expand(self, pbegin):
        read = pbegin | "ReadGuides" >> ReadFiles(self.files, rxr_guide_lines, "guides", reshuffle=False, batched=True)
        aligned = (
            read["records"]
            | "SmallLists" >> beam.FlatMap(in_lists, SPREAD_RECORDS)
            | "Spread" >> beam.Reshuffle()
            | "Align" >> beam.ParDo(_AlignGuides(self.pose_traces)).with_outputs(DEAD_LETTER, main="records")
        )
        records = aligned.records if self.batched else aligned.records | "OneByOne" >> beam.FlatMap(lambda b: b)
        dead = (read[DEAD_LETTER], aligned[DEAD_LETTER]) | "FlattenDead" >> beam.Flatten()
        return {"records": records, DEAD_LETTER: dead}


# ---------------------------------------------------------------------------- building episodes
@dataclass
class _ProbeEpisodes(GraphDoFn):
    """One alignment -> the probe episodes of all its truncation candidates (graphs and tables per worker)."""

    config: ProbeConfig
    rooms_path: str | None
    objects_path: str | None
    made = Metrics.counter("probes", "episodes")
    bad = Metrics.counter("probes", "dead_letter")

    def setup(self):
        super().setup()
        self.rooms = worker_table("rooms", self.rooms_path)
        self.objects = worker_table("objects", self.objects_path)
        self.hops: dict[str, object] = {}
        self.progress = Progress("build_probes: alignments")

    def process(self, alignment):
        self.progress.tick()
        scan = alignment["scan"]
        try:
            graph = self.graphs.get(scan)
            problem = graph.walk_problem(alignment["path"])  # unknown viewpoints, steps that are not edges
            if problem is not None:
                raise GraphError(problem)
            rooms = self.rooms.get(scan)
            if rooms and scan not in self.hops:
                self.hops[scan] = hop_matrix(graph)
            stats = {"alignments": 1}
            episodes = []
            for cand in truncation_candidates(alignment):
                made = probe_episodes(cand, graph, self.config, rooms, self.objects.get(scan), self.hops.get(scan))
                stats["candidates"] = stats.get("candidates", 0) + 1
                episodes += made
        except Exception as exc:  # noqa: BLE001 -- a refused scan, or anything else one alignment provokes
            self.bad.inc()
            label = f"#{alignment.get('_index', '?')} ({alignment.get('instr_id')})"
            stage, reason = (
                ("graph", str(exc)) if isinstance(exc, GraphError) else ("probe", f"{type(exc).__name__}: {exc}")
            )
            yield beam.pvalue.TaggedOutput(DEAD_LETTER, dead_letter(stage, alignment.get("_source", ""), label, reason))
            return
        for ep in episodes:
            if ep["variant"] == "intervention":
                key = f"pairs:{ep['skill']}"
                stats[key] = stats.get(key, 0) + 1
            ep["_order"] = alignment["_order"]
            yield ep
        # The same counts per instruction language (RxR's tag; Fine-Grained R2R is English), and per probe the
        # candidates it was not applicable to for want of phrasings in that language (Hindi and Telugu room/object).
        language = alignment.get("language") or R2R_LANGUAGE
        for key in ("alignments", "candidates"):
            stats[f"language:{language}:{key}"] = stats.get(key, 0)
        for probe in unphrased_probes(self.config, language, bool(rooms), bool(self.objects.get(scan))):
            stats[f"language:{language}:not_applicable.{probe}"] = stats.get("candidates", 0)
        stats[f"language:{language}:episodes"] = len(episodes)
        stats[f"language:{language}:pairs"] = sum(ep["variant"] == "intervention" for ep in episodes)
        self.made.inc(len(episodes))
        yield beam.pvalue.TaggedOutput(STATS, stats)


@dataclass
class MakeProbeEpisodes(beam.PTransform):
    """Alignment records -> {"episodes", "dead_letter", "stats"} (stats: {name: count} dicts to sum)."""

    connectivity_dir: str
    config: ProbeConfig
    rooms: str | None = None  # the room table's path
    objects: str | None = None  # the object table's path

    def expand(self, alignments):
        episodes = _ProbeEpisodes(self.connectivity_dir, self.config, self.rooms, self.objects)
        out = alignments | "Episodes" >> beam.ParDo(episodes).with_outputs(STATS, DEAD_LETTER, main="episodes")
        return {"episodes": out.episodes, DEAD_LETTER: out[DEAD_LETTER], STATS: out[STATS]}


# ---------------------------------------------------------------------------- scoring
class _ParseAgentOutputFile(beam.DoFn):
    """An agent output file -> (episode_id, (file, probs)) per line; an unreadable file or line is a dead letter."""

    bad = Metrics.counter("agent_outputs", "dead_letter")
    read = Metrics.counter("agent_outputs", "records")

    def process(self, path):
        try:
            data = fileio.read_bytes(path)
        except Exception as exc:
            self.bad.inc()
            yield beam.pvalue.TaggedOutput(
                DEAD_LETTER, dead_letter("agent_output", path, "", f"cannot read file ({exc})")
            )
            return
        try:
            items = list(parse_agent_outputs(data, path))
        except Exception as exc:  # noqa: BLE001 -- a file the parser cannot handle is that file's dead letter
            items = [RecordError(path, "", f"cannot parse ({type(exc).__name__}: {exc})", stage="agent_output")]
        for item in items:
            if isinstance(item, RecordError):
                self.bad.inc()
                yield beam.pvalue.TaggedOutput(DEAD_LETTER, item.to_dict())
            else:
                self.read.inc()
                yield item[0], (path, item[1])


@dataclass
class ReadAgentOutputs(beam.PTransform):
    """JSON Lines agent outputs -> (episode_id, (file, probs)) and dead letters."""

    files: list[str]

    def expand(self, pbegin):
        out = (
            pbegin
            | "Files" >> beam.Create(self.files)
            | "Parse" >> beam.ParDo(_ParseAgentOutputFile()).with_outputs(DEAD_LETTER, main="outputs")
        )
        return {"outputs": out.outputs, DEAD_LETTER: out[DEAD_LETTER]}


class _ScoreEpisode(beam.DoFn):
    """One episode id with its episode rows and agent outputs -> a scored row, a missing id, or dead letters."""

    scored = Metrics.counter("score", "episodes_scored")
    missing = Metrics.counter("score", "episodes_missing")
    bad = Metrics.counter("score", "dead_letter")
    renormalized = Metrics.counter("score", "renormalized")

    def process(self, element):
        episode_id = element[0]
        try:
            yield from self._score(*element)
        except Exception as exc:  # noqa: BLE001 -- whatever one record provokes, it is that record's dead letter
            self.bad.inc()
            yield beam.pvalue.TaggedOutput(
                DEAD_LETTER,
                dead_letter("score", "", str(episode_id), f"cannot score this episode ({type(exc).__name__}: {exc})"),
            )

    def _score(self, episode_id, groups):
        episodes, outputs = list(groups["episodes"]), sorted(groups["outputs"], key=lambda o: o[0])

        def dead(source, reason):
            self.bad.inc()
            return beam.pvalue.TaggedOutput(DEAD_LETTER, dead_letter("score", source, episode_id, reason))

        if not episodes:
            for source, _ in outputs:
                yield dead(source, "agent output for an episode id that is in no probe file")
            return
        episode = episodes[0]
        if len(episodes) > 1:
            yield dead("probes", f"episode id appears {len(episodes)} times in the probe files; scored once")
        if not outputs:
            self.missing.inc()
            yield beam.pvalue.TaggedOutput(MISSING, episode_id)
            return
        for source, _ in outputs[1:]:
            yield dead(source, f"duplicate agent output (used the one in {outputs[0][0]})")
        try:
            mass, renormalized = correct_mass(outputs[0][1], list(episode["candidates"]), list(episode["correct"]))
        except ScoreError as exc:
            yield dead(outputs[0][0], str(exc))
            return
        row = {
            "episode_id": episode_id,
            "pair_id": episode["pair_id"],
            "variant": episode["variant"],
            "skill": episode["skill"],
            "scan": episode["scan"],
            "trajectory": str(episode["path_id"]),
            "mass": mass,
            "renormalized": renormalized,
        }
        self.scored.inc()
        self.renormalized.inc(int(renormalized))
        yield row


class ScoreProbeEpisodes(beam.PTransform):
    """(episode rows, keyed agent outputs) -> {"scored", "missing", "dead_letter"}."""

    def expand(self, inputs):
        episodes, outputs = inputs
        keyed = episodes | "KeyEpisodes" >> beam.Map(lambda e: (e["episode_id"], e))
        out = (
            {"episodes": keyed, "outputs": outputs}
            | "MatchOutputs" >> beam.CoGroupByKey()
            | "Score" >> beam.ParDo(_ScoreEpisode()).with_outputs(MISSING, DEAD_LETTER, main="scored")
        )
        return {"scored": out.scored, MISSING: out[MISSING], DEAD_LETTER: out[DEAD_LETTER]}


@dataclass
class SummarizeSkills(beam.PTransform):
    """Scored rows -> one {skill: summary} dict (each skill's bootstrap runs on its own worker)."""

    seed: int
    bootstrap: int  # replicates per skill

    def expand(self, scored):
        seed, n_boot = self.seed, self.bootstrap

        def one(kv):
            skill, rows = kv
            return skill, summarize_skills(list(rows), seed, n_boot)[skill]

        return (
            scored
            | "BySkill" >> beam.Map(lambda r: (r["skill"], r))
            | "GroupSkill" >> beam.GroupByKey()
            | "Bootstrap" >> beam.Map(one)
            | "AllSkills" >> beam.combiners.ToDict()
        )
