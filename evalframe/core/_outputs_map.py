"""The map form of a large saved outputs file, read by one compiled pass over its bytes.

``{"outputs": {"<sample id>": "<output>", ...}}`` is how eval-harness saves outputs; at
100,000 outputs of ranked ids (89 MB) Python's ``json`` module spends 0.3 s building a
dictionary of strings that the reader then copies into a frame. :func:`outputs_map` reads
that shape straight into the frame's Arrow buffers instead, or declines (returns None) and the
exact reader takes the file: any other shape (the list form, members beside ``outputs``), any
text Python's reader would refuse or keep differently (a lone surrogate, a control character,
a bad escape), invalid UTF-8, an empty, blank or repeated sample id, or a value that is not a
string. So what the pass vouches for is what the exact reader returns, and every error keeps
its message. ``read_outputs`` tries it on files of 4 MiB and more.

Examples:
    >>> outputs_map(b'{"outputs": {"q1": "30 days", "q2": "[\\\\"d1\\\\"]"}}').rows()
    [('q1', '30 days'), ('q2', '["d1"]')]
    >>> outputs_map(b'{"outputs": {"q1": 3}}') is None
    True
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np
import polars as pl

from evalframe.core import schema as C
from evalframe.core._arrow_text import string_array
from evalframe.core._json_bytes import json_string, member_key, next_member, skip_ws
from evalframe.core._njit import njit

__all__ = ["outputs_map"]

_OUTPUTS = np.frombuffer(b"outputs", np.uint8)
_QUOTE, _COLON, _OPEN, _CLOSE = 34, 58, 123, 125
# Ids Python's str.strip() may empty: Unicode whitespace, and the separators it also strips.
_MAYBE_BLANK: Final = r"^[\s\x1c-\x1f]*$"


@njit
def _scan(data: Any, ids: Any, texts: Any) -> tuple[int, Any, Any]:
    """The number of entries, and the id and text offsets into ``ids`` and ``texts``; -1 for a
    document this pass does not vouch for. ``ids`` and ``texts`` are ``data``'s size."""
    end = data.size
    # An entry takes at least 7 bytes ('"a":"",'); sized once, the offsets are not reassigned
    # in the loop, where Numba would count references on every entry.
    id_off = np.empty(end // 7 + 2, np.int64)
    text_off = np.empty(end // 7 + 2, np.int64)
    id_off[0] = text_off[0] = 0
    p = skip_ws(data, 0, end)
    if p >= end or data[p] != _OPEN:
        return -1, id_off, text_off
    p, k = member_key(data, skip_ws(data, p + 1, end), end, texts)
    if p < 0 or k != _OUTPUTS.size or data[p] != _OPEN:
        return -1, id_off, text_off
    for i in range(k):
        if texts[i] != _OUTPUTS[i]:
            return -1, id_off, text_off
    p = skip_ws(data, p + 1, end)
    n = 0
    done = p < end and data[p] == _CLOSE
    if done:
        p += 1
    while not done:
        if p >= end or data[p] != _QUOTE:
            return -1, id_off, text_off
        p, id_stop = json_string(data, p, end, ids, id_off[n])
        if p < 0 or id_stop == id_off[n]:
            return -1, id_off, text_off
        p = skip_ws(data, p, end)
        if p >= end or data[p] != _COLON:
            return -1, id_off, text_off
        p = skip_ws(data, p + 1, end)
        if p >= end or data[p] != _QUOTE:
            return -1, id_off, text_off
        p, text_stop = json_string(data, p, end, texts, text_off[n])
        if p < 0:
            return -1, id_off, text_off
        n += 1
        id_off[n] = id_stop
        text_off[n] = text_stop
        p, done = next_member(data, p, end, _CLOSE)
        if p < 0:
            return -1, id_off, text_off
    p = skip_ws(data, p, end)
    if p >= end or data[p] != _CLOSE or skip_ws(data, p + 1, end) != end:
        return -1, id_off, text_off
    return n, id_off, text_off


def _strings(n: int, offsets: Any, values: Any) -> Any:
    """An Arrow array of ``n`` strings, or None when they are not valid UTF-8."""
    import pyarrow as pa

    try:
        pa.LargeStringArray.from_buffers(
            n, pa.py_buffer(offsets[: n + 1]), pa.py_buffer(values[: offsets[n]])
        ).validate(full=True)
    except pa.ArrowInvalid:
        return None
    return string_array(offsets[: n + 1], values)


def outputs_map(data: bytes) -> pl.DataFrame | None:
    """The saved outputs of a map-form file's bytes (no BOM), or None: see the module.

    Returns:
        ``sample_id`` and ``actual_output``, one row per output in file order, as the exact
        reader returns them.
    """
    raw = np.frombuffer(data, np.uint8)
    ids = np.empty(raw.size, np.uint8)
    texts = np.empty(raw.size, np.uint8)
    n, id_off, text_off = _scan(raw, ids, texts)
    if n < 0:
        return None
    id_array = _strings(n, id_off, ids)
    text_array = _strings(n, text_off, texts)
    if id_array is None or text_array is None:
        return None
    frame = pl.DataFrame([pl.Series(C.SAMPLE_ID, id_array), pl.Series(C.ACTUAL_OUTPUT, text_array)])
    sample_ids = frame.get_column(C.SAMPLE_ID)
    if sample_ids.is_duplicated().any() or sample_ids.str.contains(_MAYBE_BLANK).any():
        return None  # the exact reader names the id
    return frame
