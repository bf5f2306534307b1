"""The score job's core, without Beam: one function per step, each rule of the job written once.

- `reading`: a prediction or dataset file (or a byte range of one) -> columnar batches and dead letters
  (`read_predictions`, `read_references`), gathered and split by bucket (`in_buckets`).
- `join`: a bucket's batches -> the scoreable pairs of every agent, their missing episodes and dead
  letters (`join_bucket`): duplicates, matching, graph / reference / viewpoint / start checks.
- `score`: a joined bucket -> an Arrow table of episode rows and exact totals (`score_bucket`), every
  pair scored by one compiled call (`score_pairs`) on the worker's flat scan tables (`scans`).
- `bootstrap`: a bucket's rows -> mergeable bootstrap sums (`bucket_sums`).
- `task`: what a VLN task declares (`Task`: its flags and typed options, its rule's `Decision`, its rows
  and summary text); `registry`: the tasks the job knows (`TASKS`) and which one a dataset is scored by;
  `reverie`: REVERIE's (`REVERIE`: success by object visibility, remote grounding);
- `cvdn`: CVDN's task for the score job (`CVDN`: its episode rows and `cvdn_rule`, success by the
  official evaluator's rule, oracle path success and goal progress, non-edge moves refused).
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
        "task": ("Task", "TaskOptions", "Decision", "RulePairs", "R2R_TASK"),
        "registry": ("TASKS", "task_for"),
        "vlnce": ("VLNCE",),
        "reverie": ("REVERIE", "ReverieOptions", "reverie_rule", "REVERIE_METRICS", "REVERIE_EPISODE_SCORES"),
        "cvdn": ("CVDN", "CVDNOptions", "cvdn_rule", "CVDN_METRICS", "CVDN_EPISODE_SCORES"),
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
