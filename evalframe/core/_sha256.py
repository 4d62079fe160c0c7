"""SHA-256 hex digests of many short byte strings in one compiled pass.

A dataset's row hash is the SHA-256 of a short text per row; ``hashlib`` costs about 2 us of
Python per call, more than hashing 60 bytes takes. :func:`sha256_hex` hashes every string of
an Arrow-style buffer (bytes and offsets) in one kernel (the same digests
``hashlib.sha256(...).hexdigest()`` gives) and returns them as an Arrow string array.

Examples:
    >>> import hashlib, numpy as np, polars as pl
    >>> data = np.frombuffer(b"abc" + b"x" * 100, np.uint8)
    >>> digests = pl.Series(sha256_hex(np.array([0, 3, 103]), data)).to_list()
    >>> digests == [hashlib.sha256(b"abc").hexdigest(), hashlib.sha256(b"x" * 100).hexdigest()]
    True
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from evalframe.core._arrow_text import string_array
from evalframe.core._njit import njit

__all__ = ["digests_kernel", "sha256_hex"]

_K = np.array(
    [
        0x428A2F98, 0x71374491, 0xB5C0FBCF, 0xE9B5DBA5, 0x3956C25B, 0x59F111F1, 0x923F82A4,
        0xAB1C5ED5, 0xD807AA98, 0x12835B01, 0x243185BE, 0x550C7DC3, 0x72BE5D74, 0x80DEB1FE,
        0x9BDC06A7, 0xC19BF174, 0xE49B69C1, 0xEFBE4786, 0x0FC19DC6, 0x240CA1CC, 0x2DE92C6F,
        0x4A7484AA, 0x5CB0A9DC, 0x76F988DA, 0x983E5152, 0xA831C66D, 0xB00327C8, 0xBF597FC7,
        0xC6E00BF3, 0xD5A79147, 0x06CA6351, 0x14292967, 0x27B70A85, 0x2E1B2138, 0x4D2C6DFC,
        0x53380D13, 0x650A7354, 0x766A0ABB, 0x81C2C92E, 0x92722C85, 0xA2BFE8A1, 0xA81A664B,
        0xC24B8B70, 0xC76C51A3, 0xD192E819, 0xD6990624, 0xF40E3585, 0x106AA070, 0x19A4C116,
        0x1E376C08, 0x2748774C, 0x34B0BCB5, 0x391C0CB3, 0x4ED8AA4A, 0x5B9CCA4F, 0x682E6FF3,
        0x748F82EE, 0x78A5636F, 0x84C87814, 0x8CC70208, 0x90BEFFFA, 0xA4506CEB, 0xBEF9A3F7,
        0xC67178F2,
    ],
    np.int64,
)  # fmt: skip
_H0 = np.array(
    [0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A, 0x510E527F, 0x9B05688C, 0x1F83D9AB,
     0x5BE0CD19],
    np.int64,
)  # fmt: skip
_HEX = np.frombuffer(b"0123456789abcdef", np.uint8)
_MASK = 0xFFFFFFFF


@njit(inline="always")
def _rotr(x: int, n: int) -> int:
    return ((x >> n) | (x << (32 - n))) & _MASK


@njit
def _compress(h: Any, block: Any, w: Any) -> None:
    """Fold the 64-byte ``block`` into the state ``h`` (``w`` is scratch: 64 words)."""
    for t in range(16):
        w[t] = (block[4 * t] << 24) | (block[4 * t + 1] << 16) | (block[4 * t + 2] << 8)
        w[t] |= block[4 * t + 3]
    for t in range(16, 64):
        x, y = w[t - 15], w[t - 2]
        s0 = _rotr(x, 7) ^ _rotr(x, 18) ^ (x >> 3)
        s1 = _rotr(y, 17) ^ _rotr(y, 19) ^ (y >> 10)
        w[t] = (w[t - 16] + s0 + w[t - 7] + s1) & _MASK
    a, b, c, d, e, f, g, k = h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]
    for t in range(64):
        s1 = _rotr(e, 6) ^ _rotr(e, 11) ^ _rotr(e, 25)
        choice = (e & f) ^ (~e & _MASK & g)
        t1 = (k + s1 + choice + _K[t] + w[t]) & _MASK
        s0 = _rotr(a, 2) ^ _rotr(a, 13) ^ _rotr(a, 22)
        majority = (a & b) ^ (a & c) ^ (b & c)
        t2 = (s0 + majority) & _MASK
        k, g, f, e = g, f, e, (d + t1) & _MASK
        d, c, b, a = c, b, a, (t1 + t2) & _MASK
    h[0] = (h[0] + a) & _MASK
    h[1] = (h[1] + b) & _MASK
    h[2] = (h[2] + c) & _MASK
    h[3] = (h[3] + d) & _MASK
    h[4] = (h[4] + e) & _MASK
    h[5] = (h[5] + f) & _MASK
    h[6] = (h[6] + g) & _MASK
    h[7] = (h[7] + k) & _MASK


@njit
def _digests(offsets: Any, data: Any) -> Any:
    """The hex digests of ``data[offsets[i]:offsets[i + 1]]``, 64 bytes each, one after the
    other."""
    n = offsets.size - 1
    out = np.empty(64 * n, np.uint8)
    h = np.empty(8, np.int64)
    w = np.empty(64, np.int64)
    block = np.empty(64, np.int64)
    for i in range(n):
        lo, size = offsets[i], offsets[i + 1] - offsets[i]
        for j in range(8):
            h[j] = _H0[j]
        blocks = (size + 8) // 64 + 1  # the message, the 0x80 byte, the 8-byte bit length
        for m in range(blocks):
            for j in range(64):
                at = 64 * m + j
                block[j] = data[lo + at] if at < size else 0x80 if at == size else 0
            if m == blocks - 1:
                bits = 8 * size
                for j in range(8):
                    block[63 - j] = (bits >> (8 * j)) & 0xFF
            _compress(h, block, w)
        for j in range(8):
            for k in range(8):
                out[64 * i + 8 * j + k] = _HEX[(h[j] >> (28 - 4 * k)) & 0xF]
    return out


def sha256_hex(offsets: npt.NDArray[np.int64], data: npt.NDArray[np.uint8]) -> Any:
    """The SHA-256 hex digest of each string ``data[offsets[i]:offsets[i + 1]]``, as an Arrow
    string array (compiled: for many strings)."""
    digests = _digests(offsets, data)
    return string_array(np.arange(0, digests.size + 1, 64, dtype=np.int64), digests)


digests_kernel = _digests
"""The kernel :func:`sha256_hex` runs (for callers that say when it compiles)."""
