"""The compiled JSON number readers, against Python's own reading of the same text."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalframe.core._json._numbers import exact_double, exact_integer
from evalframe.core._json._values import compact_value, skip_value


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


# --- values skipped and re-encoded ------------------------------------------------------------

_texts = st.text(
    st.characters(codec="utf-8") | st.sampled_from('"\\/\b\f\n\r\t\x00\x1f\x7f\u2028é😀')
)
_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**30), 10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([0.0, -0.0, 1e16, 1e15, 0.0001, 1e-05, 123.456, 1e22, 1.5e300])
    | _texts,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_texts, inner, max_size=4),
    max_leaves=12,
)
_spellings = st.sampled_from(
    [{}, {"ensure_ascii": False}, {"indent": 2}, {"separators": (" ,\n", " :\t")}]
)


def _compact(text: str) -> str | None:
    data = _bytes(text)
    out = np.empty(data.size + 8, np.uint8)
    stack, keys = np.empty(128, np.int64), np.empty(1024, np.int64)
    end, stop = compact_value(data, 0, data.size, out, 0, stack, keys)
    if end < 0:
        return None
    assert end == data.size
    return bytes(out[:stop]).decode()


@settings(max_examples=500, deadline=None)
@given(_values, _spellings)
def test_compact_value_writes_what_pythons_encoder_writes_or_declines(
    value: object, spelling: dict[str, object]
) -> None:
    text = json.dumps(value, **spelling)  # type: ignore[arg-type]
    got = _compact(text)
    want = json.dumps(json.loads(text), ensure_ascii=False, separators=(",", ":"))
    assert got is None or got == want
    assert skip_value(_bytes(text), 0, len(text.encode()), np.empty(64, np.int64)) == len(
        text.encode()
    )


@settings(max_examples=300, deadline=None)
@given(
    st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | _texts
        | st.floats(-1e9, 1e9).map(lambda x: round(x, 4)),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_texts, inner, max_size=4),
        max_leaves=12,
    )
)
def test_compact_value_vouches_for_short_floats_and_everything_else(value: object) -> None:
    text = json.dumps(value)
    assert _compact(text) == json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1, "a": 2}',  # Python keeps the last value, at the first key's place
        '{"a": {"b": 1, "b": 1}}',
        "[NaN]",
        "Infinity",
        '"\\ud800"',  # a lone surrogate
        "1.50",  # not how Python spells 1.5
        "1E5",
        "0.30000000000000004",  # more significant digits than it can tell the repr of
        "[" * 70 + "]" * 70,  # deeper than its scratch space
        "[1,]",
        '{"a" 1}',
    ],
)
def test_compact_value_declines_what_it_cannot_vouch_for(text: str) -> None:
    assert _compact(text) is None


@pytest.mark.parametrize(
    ("text", "written"),
    [("-0", "0"), ("-0.0", "-0.0"), ('"\\u00e9\\/\\u0001"', '"é/\\u0001"'), ("1e-05", "1e-05"),
     ("100.0", "100.0"), ("1e+16", "1e+16"), ("  [ 1 , { } ]  ", "[1,{}]")],
)  # fmt: skip
def test_compact_value_at_the_edges(text: str, written: str) -> None:
    data = _bytes(text)
    out = np.empty(data.size + 8, np.uint8)
    end, stop = compact_value(
        data, 0, data.size, out, 0, np.empty(128, np.int64), np.empty(64, np.int64)
    )
    assert end == len(text.rstrip())  # the value's end, before any space after it
    assert bytes(out[:stop]).decode() == written
    assert written == json.dumps(json.loads(text), ensure_ascii=False, separators=(",", ":"))
