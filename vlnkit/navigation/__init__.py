"""Navigation graphs of Matterport3D scans and the built-in synthetic environment.

>>> from vlnkit.navigation import make_environment
>>> connectivity, records = make_environment(scans=1, paths_per_scan=2)
>>> len(connectivity), len(records)
(1, 2)
"""

from vlnkit._exports import lazy_exports

__getattr__, __all__ = lazy_exports(
    __name__,
    {
        "graph": ("NavGraph", "GraphStore", "GraphError", "list_scans", "connectivity_path", "validate_connectivity"),
        "synthetic": ("make_environment", "write_environment", "grid_connectivity", "grid_paths"),
    },
)
