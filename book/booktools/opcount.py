"""Counting what a step asks of the hardware: the ATen operator calls made inside a
block of code."""

from __future__ import annotations

import collections

from torch.utils._python_dispatch import TorchDispatchMode


class OpCounter(TorchDispatchMode):
    """Counts the ATen operator calls made inside it (forward and backward; on a GPU
    each is a kernel launch or more), and apart from them the views, which only relabel
    memory and launch nothing. Used by `benchmarks/gpu_path_ops.py`,
    `scripts/gpu_check.py` and `tests/test_gpu_path.py`."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: collections.Counter = collections.Counter()
        self.views = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.calls[func.overloadpacket.__name__] += 1
        self.views += bool(func.is_view)
        return func(*args, **(kwargs or {}))

    @property
    def total(self) -> int:
        """All calls."""
        return sum(self.calls.values())

    @property
    def launches(self) -> int:
        """Calls that are not views: an upper bound on the kernels they launch on a GPU
        (a fused kernel may do several)."""
        return self.total - self.views
