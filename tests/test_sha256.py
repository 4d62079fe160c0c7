"""The compiled SHA-256 of many strings (core/_sha256.py) against hashlib as the oracle."""

from __future__ import annotations

import hashlib

import numpy as np
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from evalframe.core._sha256 import sha256_hex


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=300), max_size=20))
def test_digests_are_hashlibs(strings: list[bytes]) -> None:
    offsets = np.cumsum([0, *map(len, strings)]).astype(np.int64)
    data = np.frombuffer(b"".join(strings) + b"\0", np.uint8)
    got = pl.Series(sha256_hex(offsets, data)).to_list()
    assert got == [hashlib.sha256(s).hexdigest() for s in strings]


def test_lengths_at_the_block_edges() -> None:
    # 55 bytes fit one block with the length, 56 need two; 64 and 119-120 likewise.
    strings = [b"a" * n for n in (0, 1, 55, 56, 63, 64, 65, 119, 120, 128, 1000)]
    offsets = np.cumsum([0, *map(len, strings)]).astype(np.int64)
    got = pl.Series(sha256_hex(offsets, np.frombuffer(b"".join(strings), np.uint8))).to_list()
    assert got == [hashlib.sha256(s).hexdigest() for s in strings]
