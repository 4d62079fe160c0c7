"""The strict JSON scanner behind the structural metrics (:func:`json_leaves`).

One compiled scanner reads the Arrow byte buffer of a whole column. It is
strict: no ``NaN``/``Infinity``, no comments, no trailing commas, no single quotes, no control
characters inside strings, exactly one value per text (surrounded by optional space, tab, CR or
LF). Nesting depth is unlimited (the scanner keeps its own stack) and numbers of any size are
kept exactly, as canonical decimal text, so ``1``, ``1.0`` and ``10e-1`` are equal and
``12345678901234567890123`` is not rounded. It yields one row per *leaf*: a scalar, or an empty
object or array, with its path in JSONPath bracket notation (``$['a'][0]``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

from evalframe.core._json._strings import hex4, put_utf8, short_escape
from evalframe.core._json._text import skip_ws
from evalframe.core._njit import compiling, njit, worth_compiling
from evalframe.metrics._text import utf8_buffers

__all__ = ["JSON_ERRORS", "KINDS", "json_leaves"]

KINDS = ("null", "false", "true", "number", "string", "empty object", "empty array")
"""Leaf kinds, indexed by the ``kind`` code :func:`json_leaves` returns."""

JSON_ERRORS = (
    "",
    "empty input",
    "unexpected character",
    "unexpected end of input",
    "invalid escape sequence",
    "control character in string",
    "invalid number",
    "extra data after the JSON value",
)
"""Parse error reasons, indexed by the ``error`` code :func:`json_leaves` returns."""

# Bytes up to which the scanner runs interpreted (about 0.1 s) instead of compiling.
_INTERPRETED_UP_TO = 1 << 16

_E_EMPTY, _E_CHAR, _E_END, _E_ESCAPE, _E_CONTROL, _E_NUMBER, _E_EXTRA = range(1, 8)
_K_NULL, _K_FALSE, _K_TRUE, _K_NUMBER, _K_STRING, _K_OBJECT, _K_ARRAY = range(7)


@njit
def _room(arr: Any, used: int, extra: int) -> Any:
    """``arr``, or a copy twice as large, so that ``used + extra`` items fit."""
    if used + extra <= len(arr):
        return arr
    bigger = np.empty(max(2 * len(arr), used + extra), dtype=arr.dtype)
    bigger[:used] = arr[:used]
    return bigger


@njit
def _string(buf: Any, pos: int, end: int, out: Any, n: int) -> tuple[int, int, int]:
    """Decode the string whose opening quote is at ``pos`` into ``out[n:]``.

    Returns (position after the closing quote, new ``n``, error code). ``out`` must have
    room for ``end - pos`` more bytes (decoding never lengthens a string). A lone UTF-16
    surrogate escape decodes to U+FFFD, the replacement character.
    """
    pos += 1
    while pos < end:
        c = buf[pos]
        if c == 0x22:
            return pos + 1, n, 0
        if c < 0x20:
            return pos, n, _E_CONTROL
        if c != 0x5C:
            out[n] = c
            n += 1
            pos += 1
            continue
        if pos + 1 >= end:
            return pos + 1, n, _E_END
        e = buf[pos + 1]
        pos += 2
        b = short_escape(e)
        if b >= 0:
            out[n] = b
            n += 1
            continue
        if e != 0x75:
            return pos - 1, n, _E_ESCAPE
        cp = hex4(buf, pos, end)
        if cp < 0:
            return pos, n, _E_ESCAPE
        pos += 4
        if 0xD800 <= cp <= 0xDBFF:
            low = -1
            if pos + 1 < end and buf[pos] == 0x5C and buf[pos + 1] == 0x75:
                low = hex4(buf, pos + 2, end)
            if 0xDC00 <= low <= 0xDFFF:
                cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00)
                pos += 6
            else:
                cp = 0xFFFD
        elif 0xDC00 <= cp <= 0xDFFF:
            cp = 0xFFFD
        n = put_utf8(out, n, cp)
    return pos, n, _E_END


@njit
def _number(buf: Any, pos: int, end: int, out: Any, n: int) -> tuple[int, int, int]:
    """Parse a number at ``pos``; write its canonical form ``[-]d[.ddd]e<exp>`` (or ``0``).

    The canonical form keeps every significant digit and normalises the exponent, so two
    numbers are equal exactly when their decimal values are. Exponents beyond +-10^15 are
    clamped (no finite double is that far out).
    """
    neg = buf[pos] == 0x2D
    if neg:
        pos += 1
    if pos >= end or not 0x30 <= buf[pos] <= 0x39:
        return pos, n, _E_NUMBER
    int_start = pos
    if buf[pos] == 0x30:
        pos += 1
    else:
        while pos < end and 0x30 <= buf[pos] <= 0x39:
            pos += 1
    int_end = pos
    frac_start = pos
    frac_end = pos
    if pos < end and buf[pos] == 0x2E:
        pos += 1
        frac_start = pos
        while pos < end and 0x30 <= buf[pos] <= 0x39:
            pos += 1
        frac_end = pos
        if frac_end == frac_start:
            return pos, n, _E_NUMBER
    exp = 0
    if pos < end and (buf[pos] == 0x65 or buf[pos] == 0x45):
        pos += 1
        exp_neg = False
        if pos < end and (buf[pos] == 0x2B or buf[pos] == 0x2D):
            exp_neg = buf[pos] == 0x2D
            pos += 1
        if pos >= end or not 0x30 <= buf[pos] <= 0x39:
            return pos, n, _E_NUMBER
        while pos < end and 0x30 <= buf[pos] <= 0x39:
            if exp < 1_000_000_000_000_000:
                exp = exp * 10 + (buf[pos] - 0x30)
            pos += 1
        if exp_neg:
            exp = -exp
    # Significant digits: the integer and fraction digits without leading/trailing zeros.
    first = -1
    last = -1
    k = 0
    for p in range(int_start, frac_end):
        if p == int_end and frac_start > int_end:
            continue
        if buf[p] != 0x30:
            if first < 0:
                first = k
            last = k
        k += 1
    if first < 0:
        out[n] = 0x30
        return pos, n + 1, 0
    # Value = 0.d1d2... x 10^(int digits - first) x 10^exp; write it as d1.d2... e(that - 1).
    scale = (int_end - int_start) - first - 1 + exp
    if neg:
        out[n] = 0x2D
        n += 1
    k = 0
    written = 0
    for p in range(int_start, frac_end):
        if p == int_end and frac_start > int_end:
            continue
        if first <= k <= last:
            if written == 1:
                out[n] = 0x2E
                n += 1
            out[n] = buf[p]
            n += 1
            written += 1
        k += 1
    out[n] = 0x65
    n += 1
    if scale < 0:
        out[n] = 0x2D
        n += 1
        scale = -scale
    digits = 1
    probe = scale
    while probe >= 10:
        probe //= 10
        digits += 1
    for d in range(digits - 1, -1, -1):
        out[n + d] = 0x30 + scale % 10
        scale //= 10
    return pos, n + digits, 0


@njit
def _scan(
    buf: Any, off: Any, valid: Any, emit: bool
) -> tuple[Any, Any, Any, Any, Any, Any, Any, Any, Any, Any]:
    """Validate every text; with ``emit``, also list its leaves.

    Returns per row (error code, error byte offset, leaf count, root kind) and per leaf
    (row, kind, path offsets and bytes, value offsets and bytes).
    """
    n_rows = len(off) - 1
    err = np.zeros(n_rows, dtype=np.int8)
    err_at = np.zeros(n_rows, dtype=np.int64)
    n_leaves = np.zeros(n_rows, dtype=np.int64)
    root = np.full(n_rows, -1, dtype=np.int8)
    longest = 1
    for i in range(n_rows):
        longest = max(longest, off[i + 1] - off[i])
    st_kind = np.empty(longest + 1, dtype=np.int8)
    st_index = np.empty(longest + 1, dtype=np.int64)
    st_path = np.empty(longest + 1, dtype=np.int64)
    path = np.empty(64, dtype=np.uint8)
    scratch = np.empty(2 * longest + 16, dtype=np.uint8)
    leaf_row = np.empty(16, dtype=np.int64)
    leaf_kind = np.empty(16, dtype=np.int8)
    leaf_path_off = np.zeros(17, dtype=np.int64)
    leaf_path = np.empty(64, dtype=np.uint8)
    leaf_val_off = np.zeros(17, dtype=np.int64)
    leaf_val = np.empty(64, dtype=np.uint8)
    nl = 0
    for i in range(n_rows):
        if not valid[i]:
            continue
        s = off[i]
        e = off[i + 1]
        pos = skip_ws(buf, s, e)
        if pos >= e:
            err[i] = _E_EMPTY
            err_at[i] = pos - s
            continue
        depth = 0
        plen = 1
        path[0] = 0x24  # "$"
        code = 0
        state = 0  # 0: a value is expected, 1: a key, 2: after a value
        row_start = nl
        count = 0
        while True:
            if state == 0:
                if pos >= e:
                    code = _E_END
                    break
                c = buf[pos]
                kind = -1
                vlen = 0
                if c in (0x7B, 0x5B):
                    is_obj = c == 0x7B
                    if depth == 0:
                        root[i] = _K_OBJECT if is_obj else _K_ARRAY
                    pos = skip_ws(buf, pos + 1, e)
                    if pos < e and buf[pos] == (0x7D if is_obj else 0x5D):
                        pos += 1
                        kind = _K_OBJECT if is_obj else _K_ARRAY
                    else:
                        st_kind[depth] = 0 if is_obj else 1
                        st_index[depth] = 0
                        st_path[depth] = plen
                        depth += 1
                        if is_obj:
                            state = 1
                        else:
                            path = _room(path, plen, 3)
                            path[plen] = 0x5B
                            path[plen + 1] = 0x30
                            path[plen + 2] = 0x5D
                            plen += 3
                        continue
                elif c == 0x22:
                    pos, vlen, code = _string(buf, pos, e, scratch, 0)
                    if code:
                        break
                    kind = _K_STRING
                elif c == 0x2D or 0x30 <= c <= 0x39:
                    pos, vlen, code = _number(buf, pos, e, scratch, 0)
                    if code:
                        break
                    kind = _K_NUMBER
                else:
                    lit = -1
                    if c == 0x74 and pos + 4 <= e:
                        if buf[pos + 1] == 0x72 and buf[pos + 2] == 0x75 and buf[pos + 3] == 0x65:
                            lit = _K_TRUE
                            vlen = 4
                    elif c == 0x66 and pos + 5 <= e:
                        if (
                            buf[pos + 1] == 0x61
                            and buf[pos + 2] == 0x6C
                            and buf[pos + 3] == 0x73
                            and buf[pos + 4] == 0x65
                        ):
                            lit = _K_FALSE
                            vlen = 5
                    elif (
                        c == 0x6E
                        and pos + 4 <= e
                        and buf[pos + 1] == 0x75
                        and buf[pos + 2] == 0x6C
                        and buf[pos + 3] == 0x6C
                    ):
                        lit = _K_NULL
                        vlen = 4
                    if lit < 0:
                        code = _E_CHAR
                        break
                    for k in range(vlen):
                        scratch[k] = buf[pos + k]
                    pos += vlen
                    kind = lit
                if depth == 0 and root[i] < 0:
                    root[i] = kind
                if emit:
                    if kind == _K_OBJECT:
                        scratch[0] = 0x7B
                        scratch[1] = 0x7D
                        vlen = 2
                    elif kind == _K_ARRAY:
                        scratch[0] = 0x5B
                        scratch[1] = 0x5D
                        vlen = 2
                    leaf_row = _room(leaf_row, nl, 1)
                    leaf_kind = _room(leaf_kind, nl, 1)
                    leaf_path_off = _room(leaf_path_off, nl + 1, 1)
                    leaf_val_off = _room(leaf_val_off, nl + 1, 1)
                    po = leaf_path_off[nl]
                    vo = leaf_val_off[nl]
                    leaf_path = _room(leaf_path, po, plen)
                    leaf_val = _room(leaf_val, vo, vlen)
                    leaf_path[po : po + plen] = path[:plen]
                    leaf_val[vo : vo + vlen] = scratch[:vlen]
                    leaf_row[nl] = i
                    leaf_kind[nl] = kind
                    leaf_path_off[nl + 1] = po + plen
                    leaf_val_off[nl + 1] = vo + vlen
                    nl += 1
                count += 1
                state = 2
            elif state == 1:
                pos = skip_ws(buf, pos, e)
                if pos >= e:
                    code = _E_END
                    break
                if buf[pos] != 0x22:
                    code = _E_CHAR
                    break
                pos, klen, code = _string(buf, pos, e, scratch, 0)
                if code:
                    break
                # Path segment ['key'], with \ and ' escaped by a backslash.
                path = _room(path, plen, 2 * klen + 4)
                path[plen] = 0x5B
                path[plen + 1] = 0x27
                plen += 2
                for k in range(klen):
                    b = scratch[k]
                    if b in (0x27, 0x5C):
                        path[plen] = 0x5C
                        plen += 1
                    path[plen] = b
                    plen += 1
                path[plen] = 0x27
                path[plen + 1] = 0x5D
                plen += 2
                pos = skip_ws(buf, pos, e)
                if pos >= e:
                    code = _E_END
                    break
                if buf[pos] != 0x3A:
                    code = _E_CHAR
                    break
                pos = skip_ws(buf, pos + 1, e)
                state = 0
            else:
                pos = skip_ws(buf, pos, e)
                if depth == 0:
                    if pos < e:
                        code = _E_EXTRA
                    break
                if pos >= e:
                    code = _E_END
                    break
                c = buf[pos]
                top = depth - 1
                if c == 0x2C:
                    pos = skip_ws(buf, pos + 1, e)
                    plen = st_path[top]
                    if st_kind[top] == 0:
                        state = 1
                    else:
                        st_index[top] += 1
                        idx = st_index[top]
                        digits = 1
                        probe = idx
                        while probe >= 10:
                            probe //= 10
                            digits += 1
                        path = _room(path, plen, digits + 2)
                        path[plen] = 0x5B
                        for d in range(digits, 0, -1):
                            path[plen + d] = 0x30 + idx % 10
                            idx //= 10
                        path[plen + digits + 1] = 0x5D
                        plen += digits + 2
                        state = 0
                elif (c == 0x7D and st_kind[top] == 0) or (c == 0x5D and st_kind[top] == 1):
                    pos += 1
                    plen = st_path[top]
                    depth -= 1
                else:
                    code = _E_CHAR
                    break
        if code:
            err[i] = code
            err_at[i] = pos - s
            nl = row_start
            root[i] = -1
        else:
            n_leaves[i] = count
    return (
        err,
        err_at,
        n_leaves,
        root,
        leaf_row[:nl].copy(),
        leaf_kind[:nl].copy(),
        leaf_path_off[: nl + 1].copy(),
        leaf_path[: leaf_path_off[nl]].copy(),
        leaf_val_off[: nl + 1].copy(),
        leaf_val[: leaf_val_off[nl]].copy(),
    )


@njit
def _char_offsets(buf: Any, off: Any, at: Any) -> Any:
    """Byte offsets within each text to character (code point) offsets."""
    out = np.zeros(len(at), dtype=np.int64)
    for i in range(len(at)):
        chars = 0
        for p in range(off[i], min(off[i] + at[i], off[i + 1])):
            if buf[p] & 0xC0 != 0x80:
                chars += 1
        out[i] = chars
    return out


def _strings(offsets: npt.NDArray[np.int64], data: npt.NDArray[np.uint8]) -> pl.Series:
    import pyarrow as pa

    arr = pa.LargeStringArray.from_buffers(
        len(offsets) - 1, pa.py_buffer(offsets.tobytes()), pa.py_buffer(data.tobytes())
    )
    return pl.Series(arr, dtype=pl.String)


def json_leaves(texts: pl.Series, *, leaves: bool = True) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Parse a column of JSON texts; return per-text status and, optionally, the leaves.

    Args:
        texts: a String Series.
        leaves: also list the leaves (otherwise the second frame is empty).

    Returns:
        ``(status, leaves)``. ``status`` has one row per text: ``valid`` (null for a null
        text), ``error`` (the reason, null when valid), ``position`` (character offset of
        the error), ``n_leaves`` and ``root`` (the top-level kind: object, array, or a leaf
        kind). ``leaves`` has ``row`` (index into ``texts``), ``path``, ``kind`` (one of
        :data:`KINDS`) and ``value``: decoded text for strings, the canonical decimal
        ``d.ddde<exp>`` (or ``0``) for numbers, the literal for true/false/null, ``{}`` or
        ``[]`` for empty containers.

    Examples:
        >>> status, leaves = json_leaves(pl.Series(['{"a": [1.50, "x"], "b": {}}', "NaN"]))
        >>> status.select("valid", "error", "position").rows()
        [(True, None, None), (False, 'unexpected character', 0)]
        >>> leaves.rows()
        [(0, "$['a'][0]", 'number', '1.5e0'), (0, "$['a'][1]", 'string', 'x'), (0, "$['b']", 'empty object', '{}')]
    """  # noqa: E501 - the doctest output is one line
    buf, off, valid = utf8_buffers(texts)
    if worth_compiling(len(buf), _INTERPRETED_UP_TO):
        compiling("the JSON scanner", _scan, _char_offsets)
        scanned = _scan(buf, off, valid, leaves)
        positions = _char_offsets(buf, off, scanned[1])
    else:  # Python ints from bytes and lists, as the compiled code has them
        data, bounds = bytes(buf), off.tolist()
        scanned = _scan.interpreted(data, bounds, valid.tolist(), leaves)
        positions = _char_offsets.interpreted(data, bounds, scanned[1])
    err, _, n_leaves, root, row, kind, p_off, p_buf, v_off, v_buf = scanned
    # Root codes: leaf kinds 0-4, then 5 (object) and 6 (array), empty or not; -1 unparsed.
    root_names = np.array(["object", "array", *KINDS[:5], ""], dtype=object)
    root_index = np.where(root == 5, 0, np.where(root == 6, 1, root + 2))
    root_index = np.where(root < 0, len(root_names) - 1, root_index)
    is_valid = err == 0
    status = pl.DataFrame(
        {
            "valid": pl.Series(is_valid).set(pl.Series(~valid), None),
            "error": pl.Series(np.array(JSON_ERRORS, dtype=object)[err]),
            "position": positions,
            "n_leaves": n_leaves,
            "root": pl.Series(root_names[root_index], dtype=pl.String),
        }
    ).with_columns(
        pl.when(~pl.col("valid")).then(pl.col("error")).alias("error"),
        pl.when(~pl.col("valid")).then(pl.col("position")).alias("position"),
        pl.when(pl.col("valid")).then(pl.col("n_leaves")).alias("n_leaves"),
        pl.when(pl.col("valid")).then(pl.col("root")).alias("root"),
    )
    leaf_frame = pl.DataFrame(
        {
            "row": row,
            "path": _strings(p_off, p_buf),
            "kind": pl.Series(np.array(KINDS, dtype=object)[kind], dtype=pl.String),
            "value": _strings(v_off, v_buf),
        },
        schema={"row": pl.Int64, "path": pl.String, "kind": pl.String, "value": pl.String},
    )
    return status, leaf_frame
