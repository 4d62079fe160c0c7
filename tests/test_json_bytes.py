"""The compiled JSON number readers, against Python's own reading of the same text."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalframe.core._json_bytes import exact_double, exact_integer


def _bytes(text: str) -> np.ndarray:  # type: ignore[type-arg]
    return np.frombuffer(text.encode(), np.uint8)


spellings = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.floats(-1e6, 1e6).map(lambda x: f"{x:.6f}"),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda x: f"{x:.12e}"),
    st.integers(-(10**20), 10**20).map(str),
    st.decimals(allow_nan=False, allow_infinity=False, places=4).map(str),
).filter(lambda text: text.lstrip("-")[:1].isdigit())


@settings(max_examples=500, deadline=None)
@given(spellings)
def test_exact_double_reads_as_python_does_or_declines(text: str) -> None:
    end, value = exact_double(_bytes(text), 0, len(text))
    if end < 0:
        return  # declined: the caller's exact reader takes it
    assert end == len(text)
    want = json.loads(text)
    assert value == float(want)
    assert math.copysign(1.0, value) == math.copysign(1.0, float(want))


@pytest.mark.parametrize(
    ("text", "value"),
    [("0", 0.0), ("-0", -0.0), ("-0.0", -0.0), ("12.5", 12.5), ("1e2", 100.0), ("0.1", 0.1),
     ("123456789.125", 123456789.125), ("2.5E-3", 0.0025), ("0.000001", 1e-06)],
)  # fmt: skip
def test_exact_double_vouches_for_plain_numbers(text: str, value: float) -> None:
    end, got = exact_double(_bytes(text), 0, len(text))
    assert (end, got) == (len(text), value)
    assert math.copysign(1.0, got) == math.copysign(1.0, value)


@pytest.mark.parametrize(
    "text", ["01", "1.", ".5", "-", "+1", "1e", "1e+", "-.5", "x", "1e400", "1" * 19]
)
def test_exact_double_refuses_what_it_cannot_vouch_for(text: str) -> None:
    end, _ = exact_double(_bytes(text), 0, len(text))
    assert end < len(text)  # declined, or stopped before text that is not its number


@settings(deadline=None)  # the first example compiles the kernel
@given(st.integers(-(10**18) + 1, 10**18 - 1))
def test_exact_integer_reads_every_integer_of_up_to_18_digits(value: int) -> None:
    text = str(value)
    assert exact_integer(_bytes(text), 0, len(text)) == (len(text), value)


@pytest.mark.parametrize("text", ["1.0", "1e2", "01", "-", "", "1" * 19, "true"])
def test_exact_integer_declines_anything_else(text: str) -> None:
    assert exact_integer(_bytes(text), 0, len(text))[0] == -1
