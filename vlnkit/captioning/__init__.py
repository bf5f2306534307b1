"""Evaluating instruction generators as the field does: the COCO caption metrics, exactly, without Java.

- `ptb`: the PTB tokenizer of pycocoevalcap 1.2 (Stanford PTBLexer's rules, lowercased, its 17
  punctuation tokens dropped), and the reference's batch line shift (`reference_batch_lines`).
- `corpus`: a tokenized set as flat integer arrays; `ngrams`: its n-gram ids and per-caption counts.
- `bleu`: BLEU-1..4 per item and per set from per-item sufficient statistics (`BleuStats`).
- `rouge`: ROUGE-L per item.
- `cider`: CIDEr-D per item, document frequencies from the evaluated set's references.
- `scores`: every metric of a set in one call (`score_set` on split captions, `score_texts` on text).
- `layouts`: the files generated instructions come in, read into `Generated` records.
- `intervals`: bootstrap intervals of corpus scores (BLEU recomputed per replicate) and paired comparisons.
- `batches`: a set scored batch by batch on workers (document frequencies summed first), equal to
  `score_set`; `summary`: the job's summary.
- `meteor`, `spice`, `jars`: METEOR 1.5 and SPICE 1.0 through the reference jars (SPICE on JDK 17: Rhino,
  `--add-opens`, started by class); the jars fetched at install time.
- `agreement`: Kendall's tau-b between metrics and wayfinding outcomes, instance and system level.
- `outcomes`: the score job's episode rows as outcomes, read in Arrow batches and joined on
  (system, instr_id), every row that joins nothing told apart by its reason.

Beam-free; pycocoevalcap is a test oracle only and is never imported here. Each public name is
declared here, once.
"""

from vlnkit._exports import lazy_exports

__getattr__, __all__ = lazy_exports(
    __name__,
    {
        "ptb": ("tokenize", "reference_batch_lines", "PUNCTUATIONS"),
        "corpus": ("Tokenized", "NgramCounts", "build", "build_texts"),
        "ngrams": ("ngram_counts",),
        "bleu": ("BleuStats", "bleu_stats", "sentence_bleu", "corpus_bleu"),
        "rouge": ("rouge_l",),
        "cider": ("DocumentFrequencies", "document_frequencies", "cider_d"),
        "scores": ("SetScores", "score_set", "score_texts", "METRICS"),
        "layouts": ("Generated", "LayoutError", "LAYOUTS", "detect", "parse", "path_id_of"),
        "intervals": ("SystemItems", "path_weights", "replicate_scores", "point_scores", "system_intervals", "compare"),
        "batches": (
            "batch_document_frequencies",
            "merge_frequencies",
            "frequency_lookup",
            "score_batch",
            "corpus_sums",
            "gram_texts",
        ),
        "summary": (
            "instructions_summary",
            "corpus_from_sums",
            "system_rows",
            "comparisons",
            "leaderboard",
            "metric_agreement",
        ),
        "meteor": ("Meteor", "MeteorUnavailable"),
        "spice": ("Spice", "SpiceUnavailable"),
        "jars": ("fetch", "missing", "jar_folder", "INSTALL_COMMAND"),
        "agreement": ("weighted_tau_b", "multinomial_counts", "instance_tau", "system_tau"),
        "outcomes": (
            "episode_batches",
            "join_outcomes",
            "system_means",
            "outcome_name",
            "OutcomeFileError",
            "Unjoined",
        ),
    },
)
