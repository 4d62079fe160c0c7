"""``metadata.trajectory`` decoded in one typed pass reads every row exactly as the per-field
path lookups do: the same names, counts and problems, whatever shapes the rows hold (the
per-field path is the oracle)."""

from __future__ import annotations

import json
from typing import Any

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from evalframe.core._trajectory import Expectations

FIELDS = (
    "tools",
    "forbidden_tools",
    "order",
    "expected_tools",
    "requires_approval",
    "max_steps",
    "optimal_steps",
)

scalar = st.one_of(
    st.sampled_from(["search", "pay", "true", "null", "a b", ""]),
    st.integers(-5, 40),
    st.sampled_from([1.5, 3.0, 1e2, True, False, None, 2**70]),
)
value = st.one_of(
    scalar,
    st.lists(scalar, max_size=4),
    st.lists(st.one_of(scalar, st.lists(scalar, max_size=2), st.just({"x": 1})), max_size=3),
    st.just({"name": "x"}),
    st.sampled_from(["4", "-1", " 7 "]),
)
block = st.dictionaries(st.sampled_from(FIELDS), value, max_size=7)
metadata = st.one_of(
    st.builds(lambda b: {"trajectory": b}, block),
    st.builds(lambda b: {"trajectory": b, "tags": ["x"], "note": "null"}, block),
    st.just({}),
    st.just({"trajectory": 5}),
)


def decoded(texts: list[str | None], *, typed: bool) -> dict[str, Any]:
    expect = Expectations(
        pl.Series("metadata", texts, dtype=pl.String),
        pl.Series("sample_id", [f"s{i}" for i in range(len(texts))]),
    )
    if not typed:
        expect._typed = lambda: None  # type: ignore[method-assign]
    out: dict[str, Any] = {f: expect.get_column(f).to_list() for f in FIELDS}
    out["problems"] = {f: expect.problem_for([f]).to_list() for f in FIELDS}
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(metadata, min_size=1, max_size=6), st.sampled_from([(", ", ": "), (",", ":")]))
def test_the_typed_pass_reads_every_row_as_the_path_lookups(
    rows: list[Any], separators: tuple[str, str]
) -> None:
    texts = [json.dumps(r, separators=separators) for r in rows]
    assert decoded(texts, typed=True) == decoded(texts, typed=False)


def test_wellformed_rows_take_the_typed_pass_and_odd_ones_the_path() -> None:
    good = json.dumps({"trajectory": {"tools": ["a", 2], "max_steps": 3, "order": []}})
    odd = json.dumps({"trajectory": {"tools": "a", "max_steps": 3.5}})
    expect = Expectations(pl.Series([good, odd]), pl.Series(["g", "o"]))
    typed = expect._typed()
    assert typed is not None
    assert typed.get_column("exact").to_list() == [True, False]
    assert expect.get_column("tools").to_list() == [["a", "2"], ["a"]]
    assert expect.get_column("max_steps").to_list() == [3, None]
    assert expect.problem_for(["max_steps"]).to_list() == [
        None,
        "Sample 'o' field 'metadata.trajectory.max_steps' must be an integer.",
    ]
