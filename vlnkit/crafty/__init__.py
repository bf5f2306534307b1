"""Crafty: template instructions for any path, grounded in the objects along it (Zhao et al. 2021, appendix B).

One concept per module: `objects` (each scan's nameable objects and visibility), `house` (the `.house`
region rule, for comparison), `wheel` (the direction wheel), `walker` (headings and objects along a
path), `appraiser` (per-category IDF), `hmm` (Viterbi), `observer` (the landmark HMM of a path),
`phrases` and `talker` (the templates), `guide` (the whole chain for one path).
"""

from vlnkit._exports import lazy_exports

__getattr__, __all__ = lazy_exports(
    __name__,
    {
        "objects": ("ScanObjects", "CategoryTable", "ObjectsError", "load_scan_objects", "read_objpos"),
        "house": ("House", "read_house"),
        "wheel": ("Direction", "heading_change_type", "move_type"),
        "walker": ("Walk", "WalkError", "walk"),
        "appraiser": ("Appraiser", "idf_appraiser"),
        "hmm": ("viterbi",),
        "observer": ("Observer", "ObserverParams"),
        "talker": ("Talker",),
        "guide": ("Guide", "PathInstruction"),
    },
)
