"""Large scratch arrays that compiled passes write sparsely, in small memory pages.

NumPy asks the kernel for transparent huge pages on every array of 4 MiB and more, and a huge
page is faulted in (zeroed) 2 MiB at a time wherever it is first touched; on a machine whose
memory is fragmented, the kernel compacts memory first. The compiled readers size their
buffers for the most the input could hold (a table row per column, as many items as the
input has commas) and write each only at its start, so there huge pages cost system time
for memory nobody reads. Measured on the 2-core VM: the 53.6 MB list-form trajectory file's
pass spent 0.15-0.3 s of system time with huge pages against 0.07 s without (in a process
that had just freed a large heap).

Examples:
    >>> import numpy as np
    >>> table = small_pages((2, 3), np.int64)
    >>> table[1, 2] = 7
    >>> table.shape, int(table[1, 2])
    ((2, 3), 7)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["small_pages"]

_HUGE_FROM = 1 << 22  # NumPy's own threshold for asking for huge pages


def small_pages(shape: int | tuple[int, ...], dtype: npt.DTypeLike) -> Any:
    """An array of ``shape`` and ``dtype``, left unset (as ``np.empty``), in small pages
    where the system has transparent huge pages and the array is large enough for NumPy to
    ask for them."""
    import mmap

    kind = np.dtype(dtype)
    size = int(np.prod(shape)) * kind.itemsize
    if not hasattr(mmap, "MADV_NOHUGEPAGE") or size < _HUGE_FROM:
        return np.empty(shape, kind)
    # Private: an anonymous mmap is shared memory unless told otherwise, which the kernel
    # faults in a third more slowly (84 ms against 118 ms for 150 MB on the 2-core VM).
    pages = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    pages.madvise(mmap.MADV_NOHUGEPAGE)
    return np.frombuffer(pages, kind).reshape(shape)  # keeps the mapping alive
