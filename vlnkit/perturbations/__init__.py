"""Hard negatives: instruction perturbations on spaCy parses (direction, entity, phrase swaps),
trajectory perturbations on the graph (random walk, reversal, viewpoint swap), compatibility sets."""

from vlnkit._exports import lazy_exports

__getattr__, __all__ = lazy_exports(
    __name__,
    {
        "instructions": ("direction_swap", "entity_swap", "phrase_swap", "InstructionPerturbation", "Change"),
        "trajectories": ("random_walk", "path_reversal", "viewpoint_swap", "TrajectoryPerturbation", "is_walk"),
        "direction_lexicons": ("lexicon_for", "DirectionLexicon", "LEXICONS"),
        "nlp": ("resolve_model", "load_pipeline", "NLPError"),
        "compat": ("ALL_METHODS", "INSTRUCTION_METHODS", "TRAJECTORY_METHODS", "NotApplicable", "parse_methods"),
        "schemas": ("PERTURBATIONS", "COMPAT"),
    },
)
