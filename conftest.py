"""Settings for every pytest run of this repository (unit tests and nbval over chapters/).

The chapters' kernels inherit this process's environment. An exported ``MPLBACKEND=Agg``
(common on servers and CI images) would make ``plt.show()`` display nothing, and strict nbval
would then miss every stored figure. The kernel's inline backend is therefore forced here,
whatever the caller exported, so the suite does not depend on the caller's environment.
The unit tests that draw choose Agg themselves (``matplotlib.use("Agg")``).
"""
import os

INLINE_BACKEND = "module://matplotlib_inline.backend_inline"
os.environ["MPLBACKEND"] = INLINE_BACKEND
