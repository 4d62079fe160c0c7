"""Kernels compiled without reference counts (``njit(borrows=True)``), run as Python and
watched: an array one of them returned would be freed under its caller once compiled."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from unittest.mock import patch

import numpy as np

from evalframe.core._njit import Kernel


@contextmanager
def borrowing_kernels() -> Iterator[set[str]]:
    """While the block runs, every kernel runs as Python; each one compiled without
    reference counts has its name added to the set yielded and fails the test if it
    returns an array."""
    seen: set[str] = set()

    def call(kernel: Kernel[..., object], *args: object) -> object:
        result = kernel.fn(*args)
        if kernel.options.get("_nrt") is False:
            seen.add(kernel.__name__)
            parts = result if isinstance(result, tuple) else (result,)
            assert not any(isinstance(r, np.ndarray) for r in parts), kernel.__name__
        return result

    with patch.object(Kernel, "__call__", call):
        yield seen
