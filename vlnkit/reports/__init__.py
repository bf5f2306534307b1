"""Reports: mergeable statistics, deterministic figures (matplotlib, Agg), one self-contained HTML page, and
the agent comparison page (`comparison_page.comparison_page`) with what it reads (`comparison_inputs`)."""

from vlnkit._exports import lazy_exports

__getattr__, __all__ = lazy_exports(
    __name__,
    {
        "stats": ("detect_kind", "merge", "finalize", "drawing_spec"),
        "plots": ("dataset_figure", "score_histograms", "score_means_figure", "path_figure"),
        "html": ("Figure", "Table", "Section", "assemble", "render_page"),
        "comparison_inputs": ("read_episodes", "usable_episodes", "rename_agents", "missing_columns"),
    },
)
