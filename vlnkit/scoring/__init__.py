"""The score job's core, without Beam: one function per step, each rule of the job written once.

- `reading`: a prediction or dataset file (or a byte range of one) -> columnar batches and dead letters
  (`read_predictions`, `read_references`), gathered and split by bucket (`in_buckets`).
- `join`: a bucket's batches -> the scoreable pairs of every agent, their missing episodes and dead
  letters (`join_bucket`): duplicates, matching, graph / reference / viewpoint / start checks.
- `score`: a joined bucket -> an Arrow table of episode rows and exact totals (`score_bucket`), every
  pair scored by one compiled call (`score_pairs`) on the worker's flat scan tables (`scans`).
- `bootstrap`: a bucket's rows -> mergeable bootstrap sums (`bucket_sums`).
- `ndh`: an agent's predictions of a CVDN/NDH split scored in one process as the official evaluator scores
  them, with dead letters where it stops (`score_ndh_split`).
- `followers`: RxR follower files' released metrics against ours (`follower_agents`, `differences`).
- `warm`: the job's compiled kernels loaded on a thread at start-up (`warm_up_in_background`).

Each public name is declared here, once (the modules declare no `__all__` of their own).

`transforms/score/` runs these on Beam; `pipelines/score.py` wires it (docs/architecture.md follows one
episode through it).
"""

from vlnkit._exports import lazy_exports

__getattr__, __all__ = lazy_exports(
    __name__,
    {
        "reading": ("read_predictions", "read_references", "in_buckets", "dataset_ranks"),
        "join": ("join_bucket", "BucketJoin", "AgentMatch", "instr_ids", "to_scan_nodes"),
        "score": ("score_bucket", "score_pairs", "BucketScores", "PairScores", "metric_columns"),
        "scans": ("ScanTables",),
        "ndh": ("score_ndh_split", "NDHSplitScores"),
        "bootstrap": ("bucket_sums",),
        "warm": ("warm_up", "warm_up_in_background"),
        "followers": (
            "follower_agents",
            "load_follower_metrics",
            "differences",
            "finish_differences",
            "COMPARISON_FILE",
        ),
    },
)
