"""A ``str`` written in place: :func:`ascii_text`.

Turning a large UTF-8 buffer into a ``str`` allocates the string and copies every byte into
it, on top of the buffer the text was written to: for a 260 MB report, two passes over fresh
memory, each about as long as writing the text. CPython's ``PyUnicode_New`` makes a string whose
characters its caller then fills in (what ``str`` methods do internally); a writer that knows
its text is ASCII can write it straight into one, so the text is written once.

Examples:
    >>> text, chars = ascii_text(5)
    >>> chars[:] = np.frombuffer(b"hello", dtype=np.uint8)
    >>> text
    'hello'
"""

from __future__ import annotations

import ctypes
import sys

import numpy as np
import numpy.typing as npt

__all__ = ["ascii_text"]

_new = ctypes.pythonapi.PyUnicode_New
_new.restype = ctypes.py_object
_new.argtypes = (ctypes.c_ssize_t, ctypes.c_uint32)
# A compact ASCII string keeps its characters right after its header, and sys.getsizeof
# counts the header, the characters and their terminating NUL.
_HEADER = sys.getsizeof("") - 1


def ascii_text(n: int) -> tuple[str, npt.NDArray[np.uint8]]:
    """A new ``str`` of ``n`` characters, and its characters as a writable array.

    Write all ``n`` of them, ASCII only (below 128), before using the string any other way;
    the array is valid while the string is alive.
    """
    if n == 0:
        return "", np.zeros(0, dtype=np.uint8)  # the empty string is shared: never written
    text: str = _new(n, 127)
    chars = (ctypes.c_char * n).from_address(id(text) + _HEADER)
    return text, np.frombuffer(memoryview(chars), dtype=np.uint8)
