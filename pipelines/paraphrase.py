"""Paraphrase instructions by round-trip back-translation, kept by BLEU (docs/jobs/paraphrase.md).

    python -m pipelines.paraphrase --runner=DirectRunner --dataset=R2R_val_seen.json --output_dir=out/para
    python -m pipelines.paraphrase --dataset=R2R_train.json --output_dir=out/para --gcp_project=my-project \
        --translation_cache=gs://bucket/translation_cache
    python -m pipelines.paraphrase --dataset=R2R_val_seen.json --compose_from=R4R_val_seen.json ...

Writes `paraphrases-SSSSS-of-NNNNN.parquet` (every instruction x pivot, kept or not; each row names
the `backend` that made it), with --compose_from also `r4r_paraphrases-SSSSS-of-NNNNN.parquet`,
`dead_letter-00000-of-00001.jsonl`, `summary.json`, `manifest.json` and `_SUCCESS` into --output_dir.

Cloud Translation is paid per character, so before anything is sent the job prints its plan
(characters and requests per pivot, translations already in the cache, estimated cost).
`--plan_only` stops there (exit 0); `--max_cost_usd=X` stops before the first request (exit 2,
one line) when the uncached characters would cost more than X.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipelines.command import Job, run_as_command
from pipelines.flags import add_shared
from pipelines.verdict import JobError, user_error
from vlnkit.paraphrases.bleu_filter import DEFAULT_LANGUAGES
from vlnkit.paraphrases.translation import (
    BACKENDS,
    GOOGLE,
    MAX_CODEPOINTS,
    MAX_SEGMENTS,
    OFFLINE_DEMO,
    USD_PER_MILLION_CHARS,
    GoogleConfig,
    RetryPolicy,
    default_backend,
)

if TYPE_CHECKING:
    from pipelines.job import Run
    from transforms.paraphrase import TranslatorSpec
    from vlnkit.runs.staging import Staging
    from vlnkit.runs.verdict import Outcome


DEFAULTS = {
    "languages": ",".join(DEFAULT_LANGUAGES),
    "source_language": "en",
    "min_bleu": 0.25,
    "max_bleu": 0.7,
    "translate_location": "global",
    "max_segments_per_request": MAX_SEGMENTS,
    "max_codepoints_per_request": MAX_CODEPOINTS,
    "max_in_flight": 8,
    "max_attempts": 6,
    "retry_initial_delay": 0.5,
    "request_timeout": 60.0,
    "batch_texts": 512,
    "num_shards": 0,
    "usd_per_million_chars": USD_PER_MILLION_CHARS,
    "seed": 0,
}


def declare_flags(parser) -> None:
    add_shared(parser, "dataset", "num_shards")
    add_shared(parser, "seed", seed={"help": "Seeds retry jitter only (outputs never depend on it)"})

    def add(flag, **kwargs):
        name = flag[2:]
        if name in DEFAULTS and "default" not in kwargs:
            kwargs["default"] = DEFAULTS[name]
        parser.add_argument(flag, **kwargs)

    add("--languages", help="Comma-separated pivot languages")
    add("--source_language", help="Language of R2R-format instructions (an RxR instruction's is its own tag)")
    add(
        "--translator",
        choices=(*BACKENDS, "offline"),
        help="google (default when --gcp_project is given) or offline-demo (alias: offline)",
    )
    add("--gcp_project", help="Cloud project billed for Cloud Translation (credentials: the Google auth chain)")
    add("--translate_location", help="Cloud Translation location")
    add("--translate_model", help="Optional model resource name (default: the service's NMT model)")
    add("--translate_endpoint", help="HOST:PORT of a Translation v3 emulator or stand-in")
    add("--translate_insecure", action="store_true", help="Plain gRPC channel, anonymous credentials (emulators)")
    add("--translation_cache", help="Folder of the Parquet translation cache (local or gs://); read and extended")
    add("--min_bleu", type=float, help="Keep paraphrases with sentence BLEU >= this (0-1)")
    add("--max_bleu", type=float, help="... and <= this (0-1)")
    add("--compose_from", help="R4R JSON file(s) built from --dataset: compose their paraphrases")
    add("--max_segments_per_request", type=int, help=f"Texts per TranslateText call (<= {MAX_SEGMENTS})")
    add("--max_codepoints_per_request", type=int, help=f"Codepoints per TranslateText call (<= {MAX_CODEPOINTS})")
    add("--max_in_flight", type=int, help="Concurrent TranslateText calls per worker")
    add("--chars_per_minute", type=float, help="Client-side rate limit per worker process")
    add("--max_attempts", type=int, help="Attempts per request on transient errors")
    add("--retry_initial_delay", type=float, help="First backoff, seconds; doubles per retry")
    add("--request_timeout", type=float, help="Seconds per TranslateText call")
    add("--batch_texts", type=int, help="Distinct texts per translation batch in a worker")
    add("--usd_per_million_chars", type=float, help="Price for the cost estimate")
    add("--plan_only", action="store_true", help="Print the translation plan and cost estimate, then exit 0")
    add(
        "--max_cost_usd",
        type=float,
        help="Refuse to start (exit 2) when the estimated cost of the uncached characters exceeds this",
    )


JOB = Job("paraphrase", __doc__, declare_flags)


def resolved_flags(opts) -> dict:
    """The flags as one dict, with the translator resolved and the pivots split."""
    s = dict(vars(opts))
    s["translator"] = s.get("translator") or default_backend(s["gcp_project"])
    if s["translator"] == "offline":
        s["translator"] = OFFLINE_DEMO
    s["languages"] = tuple(x.strip() for x in s["languages"].split(",") if x.strip())
    return s


def translator_spec(s: dict) -> TranslatorSpec:
    from transforms.paraphrase import TranslatorSpec

    with user_error():
        if not s["languages"]:
            raise ValueError("--languages names no pivot language")
        if s["source_language"] in s["languages"]:
            raise ValueError(f"--languages contains the source language {s['source_language']!r}")
        google = None
        if s["translator"] == GOOGLE:
            google = GoogleConfig(
                project=s["gcp_project"],
                location=s["translate_location"],
                endpoint=s["translate_endpoint"],
                insecure=s["translate_insecure"],
                model=s["translate_model"],
                max_segments=s["max_segments_per_request"],
                max_codepoints=s["max_codepoints_per_request"],
                max_in_flight=s["max_in_flight"],
                chars_per_minute=s["chars_per_minute"],
                timeout=s["request_timeout"],
                retry=RetryPolicy(max_attempts=s["max_attempts"], initial_delay=s["retry_initial_delay"]),
                seed=s["seed"],
            )
        elif s["translate_endpoint"] or s["translate_insecure"]:
            raise ValueError("--translate_endpoint/--translate_insecure only apply to --translator=google")
        if s["batch_texts"] < 1:
            raise ValueError(f"--batch_texts must be >= 1, got {s['batch_texts']}")
    return TranslatorSpec(s["translator"], google, s["translation_cache"])


def check_credentials() -> None:
    """Fail before reading anything when the Google auth chain finds no credentials (never printing them)."""
    import google.auth
    from google.auth.exceptions import DefaultCredentialsError

    try:
        google.auth.default(scopes=["https://www.googleapis.com/auth/cloud-translation"])
    except DefaultCredentialsError:
        raise JobError(
            "--translator=google: no Google credentials found (run `gcloud auth application-default login`, "
            "set GOOGLE_APPLICATION_CREDENTIALS, or run on a worker with a service account)"
        ) from None


def print_plan(p: dict, s: dict) -> None:
    from pipelines.console import format_table
    from vlnkit.paraphrases.planning import plan_rows

    print(format_table(plan_rows(p, s), "Translation plan"), flush=True)


def check_cost_cap(p: dict, s: dict) -> None:
    """Stop before the first request when the uncached characters would cost more than the cap."""
    cap = s.get("max_cost_usd")
    if cap is None or s["translator"] == OFFLINE_DEMO:
        return
    if p["estimated_cost_usd_exact"] > cap:
        raise JobError(
            f"--max_cost_usd={cap:g}: this run would send about {p['estimated_characters']:,} uncached characters, "
            f"an estimated ${p['estimated_cost_usd_exact']:,.2f}; nothing was sent (raise the cap, or narrow "
            "--dataset/--languages)"
        )


def build(
    pipeline, out: Staging, files: list[str], compose_files: list[str], s: dict, spec: TranslatorSpec, static: dict
) -> None:
    import apache_beam as beam

    from transforms.deadletter import DEAD_LETTER
    from transforms.paraphrase import BY_TEXT, STATS, ComposeR4RParaphrases, RoundTripParaphrase
    from transforms.read import ReadR2R, ReadUniqueR2R, SpreadRecords
    from transforms.run_summary import finish_run
    from transforms.tally import tally
    from transforms.write import WriteParquetShards
    from vlnkit.datasets.languages import language_counts
    from vlnkit.paraphrases.bleu_filter import BleuBounds
    from vlnkit.paraphrases.schemas import PARAPHRASES
    from vlnkit.paraphrases.summary import paraphrase_summary

    bounds = BleuBounds(s["min_bleu"], s["max_bleu"])
    read = pipeline | "ReadDataset" >> ReadUniqueR2R(files, rxr_guides=True)
    records = read["records"]
    para = records | "RoundTrip" >> RoundTripParaphrase(
        spec, s["languages"], bounds, s["source_language"], s["batch_texts"]
    )
    para["rows"] | "WriteParaphrases" >> WriteParquetShards(out.join("paraphrases"), PARAPHRASES, s["num_shards"])
    dead = [read[DEAD_LETTER], para[DEAD_LETTER]]
    tallies = [
        para[STATS],
        records | "TallyRecords" >> tally("records_read"),
        records | "TallyInstructions" >> beam.Map(language_counts),
    ]
    if compose_files:
        # Read in lists like every reader; composing (BLEU per candidate) is per-record work, so the
        # records are then spread over workers in small lists.
        r4r_read = pipeline | "ReadR4R" >> ReadR2R(compose_files, reshuffle=False, batched=True)
        r4r_records = r4r_read["records"] | "SpreadR4R" >> SpreadRecords()
        r4r = r4r_records | "ComposeR4R" >> ComposeR4RParaphrases(
            records,
            para[BY_TEXT],
            s["languages"],
            bounds,
            backend=s["translator"],
            source_language=s["source_language"],
        )
        r4r["rows"] | "WriteR4RParaphrases" >> WriteParquetShards(
            out.join("r4r_paraphrases"), PARAPHRASES, s["num_shards"]
        )
        dead += [r4r_read[DEAD_LETTER], r4r[DEAD_LETTER]]
        tallies.append(r4r[STATS])
    _ = finish_run(out.folder, lambda totals: paraphrase_summary(static, totals), dead, tallies)


def print_summary(summary: dict, ctx: Run) -> None:
    from pipelines.console import format_table, print_outputs

    output_dir = ctx.output_dir
    tr = summary["translation"]
    rows = [
        ("instructions read", summary["instructions"]),
        ("distinct texts translated", summary["distinct_texts"]),
        ("rows (instruction x pivot)", summary["rows"]),
        ("paraphrases kept", summary["kept"]),
    ]
    rows += [(f"  kept via {lang}", v["kept"]) for lang, v in summary["per_language"].items()]
    rows += [
        (f"  {tag} instructions: kept / rows", f"{v['kept']} / {v['rows']} (pivots {','.join(v['pivots'])})")
        for tag, v in summary["by_source_language"].items()
    ]
    rows += [(f"  rejected: {reason}", n) for reason, n in summary["reasons"].items() if reason != "kept"]
    if "r4r" in summary:
        rows += [("R4R instructions", summary["r4r"]["instructions"]), ("R4R paraphrases kept", summary["r4r"]["kept"])]
    rows += [
        ("translation calls", tr["calls"]),
        ("segments per call", "n/a" if tr["segments_per_call"] is None else tr["segments_per_call"]),
        ("characters sent", tr["characters_sent"]),
        ("retries", tr["retries"]),
        ("cache hits", tr["cache_hits"]),
        ("cost (USD, list price)", tr["cost_usd"]),
        ("dead-lettered records", summary["dead_letters"]),
    ]
    print(format_table(rows, f"Paraphrase summary ({summary['translator']})"))
    print_outputs(output_dir, summary["dead_letters"])


def outcome(summary: dict) -> Outcome:
    """A paraphrase run counts when records were read and enough translations came back.

    A record whose translations all failed is not a dead letter (its rows say `failed`), so the
    failed share of rows is judged here too: with no network, every translation fails and the run
    must not look complete.
    """
    from vlnkit.runs.verdict import Outcome

    rows = int(summary.get("rows", 0))
    failed = sum(int(v.get("failed", 0)) for v in summary.get("per_language", {}).values())
    translations = (failed, rows, "translations failed (see the reasons in summary.json)")
    return Outcome(int(summary.get("records_read", 0)), int(summary.get("dead_letters", 0)), shares=(translations,))


def run(ctx: Run) -> dict:
    from vlnkit.io.schemas import schema_version
    from vlnkit.paraphrases.bleu_filter import BleuBounds
    from vlnkit.paraphrases.cache import CacheError
    from vlnkit.paraphrases.planning import translation_plan
    from vlnkit.paraphrases.schemas import PARAPHRASES

    s = resolved_flags(ctx.args)
    with user_error():
        bounds = BleuBounds(s["min_bleu"], s["max_bleu"])
    spec = translator_spec(s)
    if s["translator"] == OFFLINE_DEMO and s["gcp_project"]:
        print("warning: --translator=offline-demo was chosen explicitly; --gcp_project is ignored", flush=True)
    if spec.google is not None and not spec.google.insecure:
        check_credentials()
    files = ctx.inputs("dataset", s["dataset"])
    compose_files = ctx.inputs("compose_from", s["compose_from"], required=False)
    with user_error(errors=(CacheError,)):  # an unreadable cache stops the job before it sends anything
        the_plan = translation_plan(files, s)
    print_plan(the_plan, s)
    if s["plan_only"]:
        print("--plan_only: nothing was sent and nothing was written", flush=True)
        return {"skipped": True, "plan_only": True, "plan": the_plan}
    check_cost_cap(the_plan, s)
    static = {
        "job": JOB.name,
        "schema_version": schema_version(PARAPHRASES),
        "translator": s["translator"],
        # The `backend` column of every row; a consumer of the files can refuse offline-demo rows.
        "backend": s["translator"],
        "languages": list(s["languages"]),
        "source_language": s["source_language"],
        "min_bleu": bounds.min_bleu,
        "max_bleu": bounds.max_bleu,
        "translation_cache": s["translation_cache"],
        "compose_from": s["compose_from"],
        "usd_per_million_chars": s["usd_per_million_chars"],
    }
    return ctx.execute(
        lambda p, out: build(p, out, files, compose_files, s, spec, static),
        ["paraphrases", "r4r_paraphrases"],
        outcome=outcome,
        declared=declared_outputs,
    )


def declared_outputs(summary: dict) -> dict[str, int]:
    """One Parquet row per instruction and pivot counted (and per R4R instruction and pivot, composed)."""
    out = {"paraphrases": summary["rows"]}
    if "r4r" in summary:
        out["r4r_paraphrases"] = summary["r4r"]["rows"]
    return out


main = JOB.main(run, print_summary)


if __name__ == "__main__":
    run_as_command(main)
