"""The column-at-a-time dataset builder against the sample-by-sample reference functions."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalframe import DatasetError
from evalframe.core._canon import compact, expected_type_of, row_hash
from evalframe.core._dataset import Dataset

# Keys and text that reach every case where sorted-key JSON and PHP's canonical JSON differ:
# numeric and whitespace-led keys, keys 0..n-1, escapes, U+2028/U+2029, slashes, non-ASCII.
_KEYS = st.sampled_from(
    ["a", "b", "question", "0", "1", "2", "10", "07", "-1", "1.5", " 3", "\n4", "\t", "é", "/", "Z"]
)
_TEXT = st.text(alphabet=st.sampled_from('ab 0\n"\\/\u2028\u2029é{}[],:'), max_size=6)
_SCALARS = (
    _TEXT
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.booleans()
    | st.none()
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=8,
)
_INPUTS = st.dictionaries(_KEYS, _VALUES, max_size=4) | st.dictionaries(_KEYS, _TEXT, max_size=3)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_INPUTS, _VALUES, st.dictionaries(_KEYS, _VALUES, max_size=2))))
def test_columns_equal_the_per_sample_reference(samples: list[tuple[Any, Any, Any]]) -> None:
    records = [
        {"id": f"s{i}", "input": inp, "expected_output": exp, "metadata": meta}
        for i, (inp, exp, meta) in enumerate(samples)
    ] or [{"id": "only", "input": {}, "expected_output": "x"}]
    ds = Dataset.from_records(records, name="d")
    for record, row in zip(records, ds.iter_rows(named=True), strict=True):
        expected = record["expected_output"]
        assert row["row_hash"] == row_hash(record["input"], expected)
        assert row["input"] == compact(record["input"])
        assert row["expected_type"] == expected_type_of(expected)
        assert row["expected_output"] == (
            expected if isinstance(expected, str) else compact(expected)
        )
        assert json.loads(row["metadata"]) == (record.get("metadata") or {})


_TAGS = st.lists(st.sampled_from(["a", " a", "b\n", "", "  ", "\u00a0c", "\x00d"]), max_size=4)
_METADATA = st.dictionaries(_KEYS, _SCALARS, max_size=3).flatmap(
    lambda meta: st.just(meta) | _TAGS.map(lambda tags: {**meta, "tags": tags})
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_METADATA, min_size=1, max_size=6))
def test_metadata_and_tags_equal_the_general_path(metadata: list[dict[str, Any]]) -> None:
    records = [
        {"id": f"s{i}", "input": {"q": "x"}, "expected_output": "x", "metadata": meta}
        for i, meta in enumerate(metadata)
    ]
    fast = Dataset.from_records(records, name="d")
    # A float input sends every sample down the general path.
    slow = Dataset.from_records(
        [{**record, "input": {"q": "x", "f": 0.5}} for record in records], name="d"
    )
    assert fast.get_column("metadata").equals(slow.get_column("metadata"))
    assert fast.get_column("tags").to_list() == slow.get_column("tags").to_list()
    for meta, text in zip(metadata, fast.get_column("metadata"), strict=True):
        assert json.loads(text) == meta


def test_the_plain_and_the_general_path_give_the_same_row() -> None:
    plain = {"id": "a", "input": {"b": "2", "a": "1"}, "expected_output": "x"}
    general = {**plain, "input": {"b": "2", "a": "1", "n": None}}
    ds = Dataset.from_records([plain, {**general, "id": "b"}], name="d")
    assert ds.get_column("row_hash").to_list() == [
        row_hash(plain["input"], "x"),
        row_hash(general["input"], "x"),
    ]
    assert ds.get_column("input").to_list() == ['{"b":"2","a":"1"}', '{"b":"2","a":"1","n":null}']


def test_an_earlier_lone_surrogate_is_reported_before_a_later_error() -> None:
    records = [
        {"id": "a", "input": {"question": "ok"}, "expected_output": "x"},
        {"id": "b", "input": {"question": "bad \ud83d"}, "expected_output": "x"},
        {"id": "c", "input": {}},
    ]
    with pytest.raises(DatasetError) as excinfo:
        Dataset.from_records(records, name="d")
    assert str(excinfo.value) == (
        "Dataset 'd': Sample 'b' (index 1) holds a lone surrogate \\ud83d; "
        "text must be valid Unicode."
    )
    with pytest.raises(DatasetError, match=r"Sample 'c' \(index 1\) missing required field"):
        Dataset.from_records(records[::2], name="d")


def test_a_lone_surrogate_in_the_id_or_metadata_names_the_sample() -> None:
    with pytest.raises(DatasetError, match=r"Sample 'b\\udc00' \(index 1\) holds a lone surrogate"):
        Dataset.from_records(
            [
                {"id": "a", "input": {}, "expected_output": "x"},
                {"id": "b\udc00", "input": {}, "expected_output": "x"},
            ],
            name="d",
        )
    with pytest.raises(
        DatasetError, match=r"Sample 'm' \(index 0\) holds a lone surrogate \\udfff"
    ):
        Dataset.from_records(
            [{"id": "m", "input": {}, "expected_output": 1, "metadata": {"k": "\udfff"}}],
            name="d",
        )


def test_a_repeated_id_is_reported_in_file_order_among_other_problems() -> None:
    ok = {"input": {}, "expected_output": "x"}
    records = [{"id": "a", **ok}, {"id": "b", **ok}, {"id": "a", **ok}, {"id": "c", "input": {}}]
    with pytest.raises(DatasetError) as excinfo:
        Dataset.from_records(records, name="d")
    assert str(excinfo.value) == "Dataset 'd': Duplicate sample id 'a' at index 2."
    with pytest.raises(DatasetError) as excinfo:
        Dataset.from_records(records[:3], name="d")
    assert str(excinfo.value) == "Dataset 'd': Duplicate sample id 'a' at index 2."
    records[1] = {"id": "b", "input": {"q": "\ud800"}, "expected_output": "x"}
    with pytest.raises(DatasetError, match=r"Sample 'b' \(index 1\) holds a lone surrogate"):
        Dataset.from_records(records[:3], name="d")
