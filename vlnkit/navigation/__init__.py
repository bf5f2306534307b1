"""Navigation graphs of Matterport3D scans: loading, validation, all-pairs distances, headings.

>>> from vlnkit.navigation import NavGraph
>>> graph = NavGraph.from_connectivity("demo", [
...     {"image_id": "a", "included": True, "unobstructed": [False, True], "pose": [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]},
...     {"image_id": "b", "included": True, "unobstructed": [True, False], "pose": [1, 0, 0, 2, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]},
... ])
>>> float(graph.distance("a", "b"))
2.0
"""

from vlnkit._exports import lazy_exports

__getattr__, __all__ = lazy_exports(
    __name__,
    {
        "graph": ("NavGraph", "GraphStore", "GraphError", "list_scans", "connectivity_path", "validate_connectivity"),
    },
)
