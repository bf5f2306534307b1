"""The score job's warm-up: every kernel loads, and numba starts without SciPy's linear algebra and cffi,
which stay importable (and a compiled np.dot still works)."""

import subprocess
import sys
import textwrap


def test_warm_up_starts_numba_without_what_its_kernels_do_not_use():
    code = """
        import sys, threading
        from vlnkit.scoring.warm import NUMBA_UNUSED, warm_up
        warm_up()
        print("after warm-up:", sorted(m for m in NUMBA_UNUSED if m in sys.modules))
        import numpy as np
        from numba import njit
        print("np.dot:", njit(lambda a, b: np.dot(a, b))(np.ones(3), np.arange(3.0)))
        import scipy.linalg, cffi
        print("importable:", scipy.linalg.__name__, cffi.__name__)
    """
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "after warm-up: []" in done.stdout
    assert "np.dot: 3.0" in done.stdout
    assert "importable: scipy.linalg cffi" in done.stdout
