"""Tool arguments matched as JSON texts by the compiled pass, against ``loose_subset`` over the
parsed maps (the Python definition) as the oracle."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import polars as pl
import pytest
from borrowed import borrowing_kernels
from hypothesis import given, settings
from hypothesis import strategies as st

from evalframe.metrics._arguments import loose_subset, loose_subsets

keys = st.sampled_from(["id", "q", "n", "é", "a\nb", "\u2028", ""]) | st.text(max_size=3)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**20), 10**20)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([7, 7.0, "7", " 7 ", "7.0", "1e3", "1_000", "inf", "nan", "\u0667", "x", ""])
    | st.text(max_size=4)
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
    max_leaves=5,
)
maps = st.dictionaries(keys, values, max_size=4)


@st.composite
def pairs(draw: st.DrawFn) -> tuple[str | None, str | None]:
    actual = draw(maps | st.none())
    if actual and draw(st.booleans()):  # often a subset of the actual arguments, respelled
        chosen = draw(st.lists(st.sampled_from(sorted(actual)), unique=True))
        respell = {"7": 7.0, "x": "X", "": None}
        expected = {
            k: respell.get(actual[k], actual[k])
            if isinstance(actual[k], str) and draw(st.booleans())
            else actual[k]
            for k in chosen
        }
    else:
        expected = draw(maps | st.none())
    spelling: dict[str, Any] = draw(
        st.sampled_from([{"separators": (",", ":"), "ensure_ascii": False}, {}])
    )
    return (
        None if expected is None else json.dumps(expected, **spelling),
        None if actual is None else json.dumps(actual, **spelling),
    )


@pytest.fixture(autouse=True)
def compiled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALFRAME_KERNELS", "compiled")


@settings(max_examples=500, deadline=None)
@given(st.lists(pairs(), min_size=1, max_size=8))
def test_every_verdict_is_loose_subsets_of_the_parsed_maps(
    batch: list[tuple[str | None, str | None]],
) -> None:
    expected = pl.Series([e for e, _ in batch], dtype=pl.String)
    actual = pl.Series([a for _, a in batch], dtype=pl.String)
    want = [loose_subset(json.loads(e or "{}"), json.loads(a) if a else {}) for e, a in batch]
    assert loose_subsets(expected, actual).tolist() == want


@pytest.mark.parametrize(
    ("expected", "actual", "verdict"),
    [
        ('{"id":7}', '{"id":"7","mode":"a"}', True),
        ('{"id":"7"}', '{"id":7.0}', True),
        ('{"id":"7"}', '{"id":"7.0"}', False),  # two strings compare as strings
        ('{"ok":true}', '{"ok":1}', False),
        ('{"x":null}', '{"x":null}', True),
        ('{"x":1}', '{"y":1}', False),
        ('{"x":1}', None, False),
        (None, None, True),
    ],
)
def test_usual_pairs_are_decided_without_python(
    expected: str | None, actual: str | None, verdict: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_python(*_: object) -> bool:
        raise AssertionError("judged in Python")

    monkeypatch.setattr("evalframe.metrics._arguments.loose_subset", no_python)
    got = loose_subsets(
        pl.Series([expected], dtype=pl.String), pl.Series([actual], dtype=pl.String)
    )
    assert got.tolist() == [verdict]
    assert got.dtype == np.bool_


def test_the_matchers_helpers_compiled_without_reference_counts_hand_back_no_array() -> None:
    """The matcher's helpers borrow their arrays (``njit(borrows=True)``): run as Python
    here, none returns an array, which would be freed under its caller once compiled."""
    from evalframe.metrics import _arguments

    expected = pl.Series(['{"id":"7","q":[1],"m":{"a":1},"s":"x\\u0001"}', '{"n":1.5}'])
    actual = pl.Series(['{"id":7,"q":[1],"m":{"a":1},"s":"x\\u0001"}', '{"n":"1.5 "}'])
    with borrowing_kernels() as seen:
        _arguments._subsets(
            *_arguments.text_buffers(expected), *_arguments.text_buffers(actual),
            np.zeros(2, np.int8),
        )  # fmt: skip
    assert {"_subset", "_find", "_value", "_equal", "_number", "_string_number", "_canonical",
            "_kind"} <= seen  # fmt: skip
