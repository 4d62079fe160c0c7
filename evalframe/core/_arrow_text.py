"""Strings between Polars and compiled kernels: a column's bytes, and strings a kernel wrote,
as an Arrow array Polars takes without copying.

:func:`text_buffers` gives a kernel a String column as Arrow lays it out (bytes, offsets,
validity).

A kernel that decodes text writes its bytes one after the other with Arrow-style offsets.
Polars keeps strings as views (16 bytes each: the length and, up to 12 bytes, the string
itself, else its first 4 bytes and where it lies in a data buffer); handed offsets and bytes it
copies every string into that form, 0.05-0.1 s per 5 million. :func:`string_array` writes
the views in one compiled pass instead and hands Polars a ``string_view`` array over the same
bytes, which it imports as it is.

Examples:
    >>> import numpy as np, polars as pl
    >>> data = np.frombuffer(b"shorta string longer than twelve", np.uint8)
    >>> pl.Series(string_array(np.array([0, 5, data.size]), data)).to_list()
    ['short', 'a string longer than twelve']
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from evalframe.core._json._text import copy_bytes
from evalframe.core._njit import njit, worth_compiling

if TYPE_CHECKING:
    import polars as pl
    import pyarrow as pa

__all__ = [
    "fits_views",
    "list_array",
    "numbers_array",
    "put_view",
    "spans",
    "string_array",
    "strings_array",
    "text_buffers",
    "views_array",
]

_INLINE = 12  # bytes a view holds in place
_MAX_OFFSET = 2**31 - 1  # a view names its place in the buffer with an int32
_INTERPRETED_UP_TO = 10_000  # strings whose views are written without compiling


@njit(borrows=True, inline="always")
def _put_int32(views: Any, at: int, value: int) -> None:
    for k in range(4):
        views[at + k] = (value >> (8 * k)) & 0xFF


@njit(borrows=True, inline="always")
def put_view(views: Any, i: int, data: Any, lo: int, length: int, offset: int) -> None:
    """Write all 16 bytes of view ``i``: the string ``data[lo:lo + length]``, which lies at
    ``offset`` in the array's one data buffer (:func:`views_array`)."""
    at = 16 * i
    _put_int32(views, at, length)
    if length <= _INLINE:
        for j in range(length):
            views[at + 4 + j] = data[lo + j]
        for j in range(length, _INLINE):
            views[at + 4 + j] = 0
    else:
        for j in range(4):
            views[at + 4 + j] = data[lo + j]
        _put_int32(views, at + 8, 0)  # buffer 0
        _put_int32(views, at + 12, offset)


@njit
def _views(lo: Any, length: Any, data: Any) -> Any:
    """The views of the strings ``data[lo[i]:lo[i] + length[i]]`` (``length`` -1: empty)."""
    n = lo.size
    views = np.empty(16 * n, np.uint8)
    for i in range(n):
        put_view(views, i, data, lo[i], max(length[i], 0), lo[i])
    return views


def fits_views(size: int) -> bool:
    """Whether a data buffer of ``size`` bytes can back a ``string_view`` array (a view names
    its place in the buffer with an int32)."""
    return size <= _MAX_OFFSET


def views_array(views: npt.NDArray[np.uint8], data: npt.NDArray[np.uint8]) -> pa.Array:
    """The ``string_view`` array of the views :func:`put_view` wrote (16 bytes a string) over
    ``data`` (``fits_views``), which Polars imports without a copy."""
    import pyarrow as pa

    return pa.Array.from_buffers(
        pa.string_view(), views.size // 16, [None, pa.py_buffer(views), pa.py_buffer(data)]
    )


def _views_numpy(lo: npt.NDArray[np.int64], length: Any, data: npt.NDArray[np.uint8]) -> Any:
    """What :func:`_views` writes, by NumPy over all strings at once (a small input compiles
    nothing, and runs at NumPy's speed rather than as interpreted kernel code)."""
    n = lo.size
    length = np.maximum(length, 0)
    lo = np.where(length > 0, lo, 0)  # a null's place is not set
    views = np.zeros((n, 16), np.uint8)
    views[:, :4] = length.astype("<i4").view(np.uint8).reshape(n, 4)
    if data.size:
        k = np.arange(_INLINE)
        inline = length <= _INLINE
        take = np.where(inline[:, None], k < length[:, None], k < 4)
        at = np.minimum(lo[:, None] + k, data.size - 1)
        views[:, 4:] = np.where(take, data[at], 0)
        far = ~inline
        views[far, 12:] = lo[far].astype("<i4").view(np.uint8).reshape(-1, 4)
    return views.reshape(-1)


def _view_array(lo: Any, length: Any, data: npt.NDArray[np.uint8]) -> pa.Array:
    """A ``string_view`` array of the strings at ``lo`` (``length`` long) in ``data``."""
    if worth_compiling(lo.size, _INTERPRETED_UP_TO):
        return views_array(_views(lo, length, data), data)
    return views_array(_views_numpy(lo, length, data), data)


def string_array(offsets: npt.NDArray[np.int64], data: npt.NDArray[np.uint8]) -> pa.Array:
    """The strings ``data[offsets[i]:offsets[i + 1]]`` (valid UTF-8) as an Arrow array:
    ``string_view`` (which Polars imports without a copy) while the bytes fit a view's offset,
    else ``large_string``."""
    import pyarrow as pa

    n, size = offsets.size - 1, int(offsets[-1])
    if size > _MAX_OFFSET:
        return pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data[:size]))
    return _view_array(offsets[:-1], np.diff(offsets), data[:size])


# The buffer of a column without any bytes: one zero byte, so a kernel may read ``buf[0]``, and
# read-only like the buffers np.frombuffer gives, so the kernels compile one specialisation.
_NO_BYTES = np.frombuffer(b"\0", dtype=np.uint8)


def text_buffers(
    s: pl.Series,
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    """The byte buffer, Arrow offsets (``len(s) + 1``) and validity of a String Series.

    Row ``i`` is ``data[offsets[i]:offsets[i + 1]]``; both arrays are read-only views of
    Arrow memory.
    """
    import polars as pl

    arr = s.cast(pl.String).to_arrow()
    if str(arr.type) != "large_string":
        arr = arr.cast("large_string")
    _validity, off_buf, data_buf = arr.buffers()
    offsets = np.frombuffer(off_buf, dtype=np.int64)[arr.offset : arr.offset + len(arr) + 1]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else _NO_BYTES
    return data, offsets, s.is_not_null().to_numpy()


@njit
def spans(lo: Any, ln: Any, data: Any) -> tuple[Any, Any]:
    """The strings ``data[lo[i]:lo[i] + ln[i]]`` (``ln`` -1: null) copied one after the
    other: their Arrow offsets and bytes."""
    n = lo.size
    offsets = np.zeros(n + 1, np.int64)
    for i in range(n):
        offsets[i + 1] = offsets[i] + max(ln[i], 0)
    body = np.empty(offsets[n], np.uint8)
    for i in range(n):
        if ln[i] > 0:
            copy_bytes(data, lo[i], lo[i] + ln[i], body, offsets[i])
    return offsets, body


def strings_array(lo: Any, length: Any, data: Any, *, copy: bool = True) -> Any:
    """The strings ``data[lo[i]:lo[i] + length[i]]`` (``length`` -1: null) as an Arrow array:
    copied one after the other, or (``copy`` false) as views into ``data`` itself, which the
    array then keeps alive whole."""
    import pyarrow as pa

    if copy or data.size > _MAX_OFFSET:
        offsets, body = spans(lo, length, data)
        array = string_array(offsets, body)
    else:
        array = _view_array(lo, length, data)
    nulls = length < 0
    if not nulls.any():
        return array
    bitmap = pa.py_buffer(np.packbits(~nulls, bitorder="little"))
    return pa.Array.from_buffers(
        array.type, lo.size, [bitmap, *array.buffers()[1:]], null_count=int(nulls.sum())
    )


def numbers_array(values: Any, nulls: Any) -> Any:
    """``values`` as an Arrow array, null where ``nulls`` (any integer or boolean array)."""
    import pyarrow as pa

    return pa.array(values, mask=nulls.astype(np.bool_))


def list_array(offsets: Any, items: Any, valid: Any) -> Any:
    """A large list array of ``items`` cut at ``offsets``, null where not ``valid`` (None: no
    nulls)."""
    import pyarrow as pa

    mask = None if valid is None else pa.array(~valid)
    return pa.LargeListArray.from_arrays(pa.array(offsets, pa.int64()), items, mask=mask)
