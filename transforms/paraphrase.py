"""Round-trip paraphrasing as Beam transforms (the rules live in `vlnkit.paraphrases.bleu_filter` / `vlnkit.paraphrases.translation`).

`RoundTripParaphrase`: R2R records -> one row per instruction x pivot (kept or not), dead letters
  for translations that failed, per-text paraphrases (for composing R4R) and run statistics.
  Distinct instruction texts are translated once, in batches: each batch sends every pivot's
  forward requests together, then every pivot's backward requests, through one per-worker
  translator (its own request pool, retries and rate limit) and one per-worker cache.
`ComposeR4RParaphrases`: R4R records -> rows composed from the R2R sentence paraphrases.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, field

import apache_beam as beam
from apache_beam.metrics import Metrics

from transforms.deadletter import DEAD_LETTER, dead_letter
from transforms.progress import Progress
from transforms.worker_cache import per_worker
from vlnkit.datasets.r2r import record_label
from vlnkit.paraphrases.bleu_filter import BleuBounds, ComposeError, compose, judge, r4r_sources
from vlnkit.paraphrases.cache import CachedTranslator, TranslationCache
from vlnkit.paraphrases.pivots import instruction_sources, pivots_for
from vlnkit.paraphrases.translation import GoogleConfig, TranslationJob, Translator, make_translator

BY_TEXT = "by_text"
STATS = "stats"


def worker_cache(path: str) -> TranslationCache:
    """One cache view per folder per worker process, shared by every DoFn in it (loaded once)."""
    return per_worker("translation_cache", path, lambda: TranslationCache(path))


@dataclass(frozen=True)
class TranslatorSpec:
    """What a worker needs to build its translator: picklable, holds no client and no credentials."""

    backend: str
    google: GoogleConfig | None = None
    cache_path: str | None = None

    def build(self) -> Translator:
        translator = make_translator(self.backend, self.google)
        if self.cache_path:
            translator = CachedTranslator(translator, worker_cache(self.cache_path))
        return translator


def instruction_rows(record: dict, r2r_language: str = "en"):
    """((source language, text), (instr_id, file, language tag)) for every instruction of an R2R or RxR
    guide record (`vlnkit.paraphrases.pivots.instruction_sources`)."""
    source = record.get("_source", "")
    for instr_id, text, tag, language in instruction_sources(record, r2r_language):
        yield (language, text), (instr_id, source, tag)


def _row(instr_id: str, instruction: str, verdict: dict, backend: str, source_language: str = "en") -> dict:
    return {
        "instr_id": instr_id,
        "instruction": instruction,
        "source_language": source_language,
        **verdict,
        "backend": backend,
    }


def _verdict_stats(verdicts: list[dict], times: int, prefix: str = "") -> dict:
    stats: dict = {}
    for v in verdicts:
        lang = v["language"]
        stats[f"{prefix}rows.{lang}"] = stats.get(f"{prefix}rows.{lang}", 0) + times
        stats[f"{prefix}kept.{lang}"] = stats.get(f"{prefix}kept.{lang}", 0) + times * v["kept"]
        stats[f"{prefix}reason.{v['reason']}"] = stats.get(f"{prefix}reason.{v['reason']}", 0) + times
    return stats


def _add(stats: dict, key: str, n: int = 1) -> None:
    stats[key] = stats.get(key, 0) + n


@dataclass
class _RoundTrip(beam.DoFn):
    """A batch of ((source language, text), [(instr_id, file, language tag)]) -> rows, dead letters,
    per-text paraphrases (texts in the R2R source language), stats."""

    spec: TranslatorSpec
    languages: tuple[str, ...]
    source_language: str
    bounds: BleuBounds
    texts = Metrics.counter("paraphrase", "texts")
    rows = Metrics.counter("paraphrase", "rows")
    kept = Metrics.counter("paraphrase", "kept")
    bad = Metrics.counter("paraphrase", "dead_letter")
    requests = Metrics.counter("translate", "requests")
    retries = Metrics.counter("translate", "retries")
    chars = Metrics.counter("translate", "characters_sent")
    hits = Metrics.counter("translate", "cache_hits")

    def setup(self):
        self.translator = self.spec.build()
        self.progress = Progress("paraphrase: distinct texts round-tripped")

    def process(self, batch):
        before = self.translator.stats.copy()
        stats: dict = {"texts": len(batch)}
        by_source: dict[str, list] = {}
        for entry in batch:
            by_source.setdefault(entry[0][0], []).append(entry)
        for src, entries in sorted(by_source.items()):
            yield from self._round_trip(src, entries, stats)
        used = self.translator.stats.minus(before)
        for key, value in used.as_dict().items():
            stats[f"translate.{key}"] = value
        n_rows = sum(v for k, v in stats.items() if k.startswith("rows."))
        n_kept = sum(v for k, v in stats.items() if k.startswith("kept."))
        self.texts.inc(len(batch))
        self.progress.tick(len(batch))
        self.rows.inc(n_rows)
        self.kept.inc(n_kept)
        self.bad.inc(sum(v for k, v in stats.items() if k.startswith("failed.")))
        self.requests.inc(used.requests)
        self.retries.inc(used.retries)
        self.chars.inc(used.characters_sent)
        self.hits.inc(used.cache_hits)
        yield beam.pvalue.TaggedOutput(STATS, stats)

    def _round_trip(self, src: str, batch: list, stats: dict):
        """The texts of one source language through every pivot but that language, and back into it."""
        languages = pivots_for(self.languages, src)
        texts = tuple(text for (_, text), _ in batch)
        forward = self.translator.translate([TranslationJob(texts, src, lang) for lang in languages])
        back_jobs = [
            TranslationJob(tuple(o.translation for o in outs if o.ok), lang, src)
            for lang, outs in zip(languages, forward)
        ]
        backward = [iter(outs) for outs in self.translator.translate(back_jobs)]
        # per text: [(language, back-translation)] and [(language, error)]
        candidates = [[] for _ in texts]
        errors = [[] for _ in texts]
        for lang, fwd_outs, back_outs in zip(languages, forward, backward):
            for i, fwd in enumerate(fwd_outs):
                out = next(back_outs) if fwd.ok else fwd
                if out.ok:
                    candidates[i].append((lang, out.translation))
                else:
                    errors[i].append((lang, out.error))
        for ((_, text), ids), cands, errs in zip(batch, candidates, errors):
            verdicts = judge(text, cands, self.bounds)
            if src == self.source_language:  # R4R instructions are composed from R2R ones (--source_language)
                yield beam.pvalue.TaggedOutput(BY_TEXT, (text, dict(cands)))
            for instr_id, _, tag in ids:
                for v in verdicts:
                    yield _row(instr_id, text, v, self.spec.backend, tag)
                _add(stats, f"source.{tag}.instructions")
                for key, value in _verdict_stats(verdicts, 1, prefix=f"source.{tag}.").items():
                    _add(stats, key, value)
            for key, value in _verdict_stats(verdicts, len(ids)).items():
                _add(stats, key, value)
            for lang, error in errs:
                for instr_id, source, tag in ids:
                    _add(stats, f"failed.{lang}")
                    _add(stats, f"source.{tag}.failed.{lang}")
                    yield beam.pvalue.TaggedOutput(
                        DEAD_LETTER, dead_letter("translate", source, f"instr_id={instr_id}", f"pivot {lang}: {error}")
                    )

    def finish_bundle(self):
        cache = getattr(self.translator, "cache", None)
        if cache is not None:
            cache.flush()

    def teardown(self):
        translator = getattr(self, "translator", None)
        if translator is not None:
            translator.close()


@dataclass
class RoundTripParaphrase(beam.PTransform):
    """Validated R2R or RxR guide records -> {"rows", "dead_letter", "by_text", "stats"}.

    Each text goes through every pivot but its own language and back into it: R2R instructions are in
    `source_language`, an RxR instruction in its record's `language` (so a Hindi one skips the "hi" pivot).

    `rows`: dicts with instr_id, instruction, source_language (R2R: `source_language`; RxR: the record's
    tag), language (the pivot), paraphrase, bleu, kept, reason, backend (the translator of `spec`, so
    every row says whether it came from a real translation);
    `by_text`: (original text, {language: back-translation}) for every distinct text in `source_language`;
    `stats`: {name: number} dicts to sum (rows/kept per pivot, per source language tag
    "source.<tag>.*", translation counters).
    """

    spec: TranslatorSpec
    languages: tuple[str, ...]
    bounds: BleuBounds = field(default_factory=BleuBounds)
    source_language: str = "en"
    batch_texts: int = 512

    def expand(self, records):
        out = (
            records
            | "Instructions" >> beam.FlatMap(instruction_rows, self.source_language)
            | "DistinctTexts" >> beam.GroupByKey()
            | "SortIds" >> beam.MapTuple(lambda text, ids: (text, sorted(ids)))
            | "Batch" >> beam.BatchElements(min_batch_size=self.batch_texts, max_batch_size=self.batch_texts)
            | "RoundTrip"
            >> beam.ParDo(_RoundTrip(self.spec, tuple(self.languages), self.source_language, self.bounds)).with_outputs(
                DEAD_LETTER, BY_TEXT, STATS, main="rows"
            )
        )
        return {"rows": out.rows, DEAD_LETTER: out[DEAD_LETTER], BY_TEXT: out[BY_TEXT], STATS: out[STATS]}


@dataclass
class _Compose(beam.DoFn):
    """An R4R record (with the R2R instructions and paraphrases as side inputs) -> composed paraphrase rows,
    dead letters, stats."""

    languages: tuple[str, ...]
    bounds: BleuBounds
    backend: str
    source_language: str
    rows = Metrics.counter("paraphrase", "r4r_rows")
    bad = Metrics.counter("paraphrase", "r4r_dead_letter")

    def process(self, record, r2r_instructions, paraphrases):
        where = (record.get("_source", ""), record_label(record))
        first = r2r_instructions.get(record.get("first_path_id"))
        second = r2r_instructions.get(record.get("second_path_id"))
        if first is None or second is None:
            missing = record.get("first_path_id") if first is None else record.get("second_path_id")
            self.bad.inc()
            yield beam.pvalue.TaggedOutput(
                DEAD_LETTER, dead_letter("compose", *where, f"R2R path_id {missing!r} is not in --dataset")
            )
            return
        try:
            sources = r4r_sources(record, first, second)
        except ComposeError as exc:
            self.bad.inc()
            yield beam.pvalue.TaggedOutput(DEAD_LETTER, dead_letter("compose", *where, str(exc)))
            return
        stats: dict = {"r4r_instructions": len(sources)}
        for k, x, y in sources:
            px, py = paraphrases.get(x, {}), paraphrases.get(y, {})
            instr_id = f"{record['path_id']}_{k}"
            cands = []
            for lang in self.languages:
                if lang in px and lang in py:
                    cands.append((lang, compose(x, px[lang], py[lang])))
                else:
                    stats[f"r4r_failed.{lang}"] = stats.get(f"r4r_failed.{lang}", 0) + 1
                    self.bad.inc()
                    yield beam.pvalue.TaggedOutput(
                        DEAD_LETTER,
                        dead_letter(
                            "compose",
                            where[0],
                            f"instr_id={instr_id}",
                            f"pivot {lang}: an R2R source was not translated",
                        ),
                    )
            verdicts = judge(x + y, cands, self.bounds)
            for v in verdicts:
                yield _row(instr_id, x + y, v, self.backend, self.source_language)
            for key, value in _verdict_stats(verdicts, 1, prefix="r4r_").items():
                stats[key] = stats.get(key, 0) + value
            self.rows.inc(len(verdicts))
        yield beam.pvalue.TaggedOutput(STATS, stats)


@dataclass
class ComposeR4RParaphrases(beam.PTransform):
    """R4R records + R2R records + `by_text` paraphrases -> {"rows", "dead_letter", "stats"}.

    `backend` is the translator that made `by_text`; every composed row records it, and the R2R
    `source_language` (the language of the rows' `source_language` column).

    The R2R side (instructions by path_id, paraphrases by text) is as large as one R2R split, so it
    travels as side inputs; the R4R records, up to hundreds of thousands, stream past it.
    """

    r2r_records: beam.PCollection
    by_text: beam.PCollection
    languages: tuple[str, ...]
    bounds: BleuBounds = field(default_factory=BleuBounds)
    _: KW_ONLY
    backend: str
    source_language: str = "en"

    def expand(self, r4r_records):
        by_path = self.r2r_records | "InstructionsByPathId" >> beam.Map(lambda r: (r["path_id"], r["instructions"]))
        out = r4r_records | "Compose" >> beam.ParDo(
            _Compose(tuple(self.languages), self.bounds, self.backend, self.source_language),
            r2r_instructions=beam.pvalue.AsDict(by_path),
            paraphrases=beam.pvalue.AsDict(self.by_text),
        ).with_outputs(DEAD_LETTER, STATS, main="rows")
        return {"rows": out.rows, DEAD_LETTER: out[DEAD_LETTER], STATS: out[STATS]}
