"""Behavioral probes: skill-specific intervention episodes from truncated trajectories, and the
scoring of agents on them (probability mass, shift against control, hierarchical bootstrap)."""

from vlnkit._exports import lazy_exports

__getattr__, __all__ = lazy_exports(
    __name__,
    {
        "episodes": ("ProbeConfig", "probe_episodes", "truncation_candidates"),
        "templates": ("load_templates", "templates_for", "PROBES"),
        "pose_alignment": ("align_guide", "rxr_alignments", "AlignmentError"),
        "scoring": ("correct_mass", "summarize_skills", "hierarchical_bootstrap", "validate_probe_file"),
        "schemas": ("PROBE_EPISODES", "PROBE_SCORES"),
    },
)
