"""vlnkit: the Beam-free core of the VLN data and evaluation toolkit.

Everything here works on plain Python and numpy objects so it can be used directly
(`from vlnkit.navigation.graph import NavGraph`) or inside Beam transforms (see `transforms/`).
"""

__version__ = "0.1.0"
