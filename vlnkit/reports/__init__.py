"""Reports: mergeable statistics, deterministic figures (matplotlib, Agg) and one self-contained HTML page."""

from vlnkit._exports import lazy_exports

__getattr__, __all__ = lazy_exports(
    __name__,
    {
        "stats": ("detect_kind", "merge", "finalize", "drawing_spec"),
        "plots": ("dataset_figure", "score_histograms", "score_means_figure", "path_figure"),
        "html": ("Figure", "Table", "Section", "assemble", "render_page"),
    },
)
