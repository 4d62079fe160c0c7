"""ordinal-distance: reference semantics (§2.16), the scale override, errors, linear mode."""

from __future__ import annotations

import json
from typing import Any

import polars as pl
import pytest

import evalframe as ef
from evalframe.core._canon import expected_type_of

SCALE = "ordinal-distance(scale=[low,medium,high,urgent])"


def _frame(
    expected: list[Any], actual: list[str], metadata: list[dict[str, Any]] | None = None
) -> pl.DataFrame:
    n = len(expected)
    return pl.DataFrame(
        {
            "sample_id": [f"s{i}" for i in range(n)],
            "input": ["{}"] * n,
            "expected_output": [v if isinstance(v, str) else json.dumps(v) for v in expected],
            "expected_type": [expected_type_of(v) for v in expected],
            "metadata": [json.dumps(m) for m in (metadata or [{}] * n)],
            "tags": [[] for _ in range(n)],
            "actual_output": actual,
        },
        schema_overrides={"tags": pl.List(pl.String)},
    )


def _rows(
    expected: list[Any],
    actual: list[str],
    spec: str = SCALE,
    metadata: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    scores = ef.score(_frame(expected, actual, metadata), [ef.metrics.get(spec)])
    rows = scores.to_dicts()
    for row in rows:
        row["details"] = json.loads(row["details"]) if row["details"] else None
    return rows


def test_step_credit_by_distance() -> None:
    rows = _rows(["high"] * 4 + ["low"], ["high", "medium", "low", "urgent", "urgent"])
    assert [r["score"] for r in rows] == [1.0, 0.5, 0.0, 0.5, 0.0]


def test_details_give_labels_indices_and_distance() -> None:
    (row,) = _rows(["high"], ["medium"])
    assert row["details"] == {
        "expected": "high",
        "actual": "medium",
        "expected_index": 2,
        "actual_index": 1,
        "distance": 1,
    }


@pytest.mark.parametrize("actual", ["High", "high ", " high", "", "critical"])
def test_lookup_is_exact_and_an_unknown_output_scores_zero(actual: str) -> None:
    (row,) = _rows(["high"], [actual])
    assert row["score"] == 0.0
    assert row["error"] is None
    assert row["details"]["actual_index"] is None
    assert row["details"]["distance"] is None


def test_linear_mode_decays_by_distance_over_the_scale_width() -> None:
    spec = "ordinal-distance(scale=[low,medium,high,urgent], mode=linear)"
    rows = _rows(["low"] * 5, ["low", "medium", "high", "urgent", "nope"], spec)
    assert [r["score"] for r in rows] == pytest.approx([1.0, 2 / 3, 1 / 3, 0.0, 0.0])


def test_linear_mode_on_a_one_label_scale() -> None:
    (row,) = _rows(["only"], ["only"], "ordinal-distance(scale=[only], mode=linear)")
    assert row["score"] == 1.0


def test_the_default_mode_is_the_reference_step_rule() -> None:
    m = ef.metrics.ordinal_distance(scale=("low", "high"))
    assert m.id == "ordinal-distance(scale=[low,high])"
    assert ef.metrics.ordinal_distance(scale=("low", "high"), mode="linear").id == (
        "ordinal-distance(scale=[low,high], mode=linear)"
    )
    assert ef.metrics.get(m.id) == m


def test_a_valid_metadata_scale_replaces_the_parameter() -> None:
    rows = _rows(
        ["b", "b"],
        ["a", "a"],
        metadata=[{"ordinal_scale": ["a", "b"]}, {"ordinal_scale": ["a", "x", "b"]}],
    )
    assert [r["score"] for r in rows] == [0.5, 0.0]
    assert rows[1]["details"]["expected_index"] == 2


@pytest.mark.parametrize(
    "override",
    [
        [],
        ["a", "a"],
        ["a", ""],
        ["a", 1],
        ["a", None],
        "a,b",
        '["a","b"]',
        5,
        None,
    ],
)
def test_an_invalid_metadata_scale_is_silently_ignored(override: Any) -> None:
    (row,) = _rows(["high"], ["medium"], metadata=[{"ordinal_scale": override}])
    assert row["score"] == 0.5
    assert row["error"] is None


def test_unicode_labels_and_labels_with_quotes() -> None:
    spec = 'ordinal-distance(scale=["ni\u00f1o","a\\"b",\u00e9t\u00e9])'
    rows = _rows(['a"b', "\u00e9t\u00e9"], ["ni\u00f1o", 'a"b'], spec)
    assert [r["score"] for r in rows] == [0.5, 0.5]
    override = [{"ordinal_scale": ["\u00fc", 'q"', "\\z"]}]
    (row,) = _rows(["\\z"], ['q"'], metadata=override)
    assert row["score"] == 0.5


@pytest.mark.parametrize(
    ("expected", "got"),
    [
        (5, "int"),
        (1.5, "float"),
        (True, "bool"),
        (None, "null"),
        (["a"], "list"),
        ({"a": 1}, "map"),
    ],
)
def test_a_non_string_expected_output_is_an_error(expected: Any, got: str) -> None:
    (row,) = _rows([expected], ["low"])
    assert row["score"] is None
    assert row["error"] == (
        f"Sample 's0' expected_output must be a string for ordinal-distance metric; got {got}."
    )


def test_an_expected_label_outside_the_scale_is_an_error_naming_the_scale() -> None:
    rows = _rows(["critical", "z"], ["low", "a"], metadata=[{}, {"ordinal_scale": ["a", "b"]}])
    assert [r["score"] for r in rows] == [None, None]
    assert rows[0]["error"] == (
        "Sample 's0' expected_output 'critical' is not in the ordinal scale "
        "[low, medium, high, urgent]."
    )
    assert rows[1]["error"] == "Sample 's1' expected_output 'z' is not in the ordinal scale [a, b]."


def test_the_bare_alias_raises_because_the_scale_is_required() -> None:
    with pytest.raises(ef.MetricError, match=r"requires the parameter 'scale'"):
        ef.metrics.get("ordinal-distance")
    with pytest.raises(ef.MetricError, match=r"requires the parameter 'scale'"):
        ef.metrics.ordinal_distance()


@pytest.mark.parametrize("scale", ["[]", "[a,a]", '[a,""]'])
def test_an_invalid_scale_parameter_raises_at_bind_time(scale: str) -> None:
    with pytest.raises(
        ef.MetricError, match=r"^Ordinal scale must be a non-empty list of unique strings\.$"
    ):
        ef.metrics.get(f"ordinal-distance(scale={scale})")


def test_an_unknown_mode_is_rejected() -> None:
    with pytest.raises(ef.MetricError, match="'mode' must be one of step, linear"):
        ef.metrics.get("ordinal-distance(scale=[a,b], mode=cubic)")


def test_family_and_dimension() -> None:
    d = ef.metrics.definition("ordinal-distance")
    assert (d.family, d.dimension) == ("ordinal", "correctness")


def test_one_hundred_thousand_rows_and_row_order_invariance() -> None:
    labels = ["low", "medium", "high", "urgent"]
    n = 100_000
    expected = [labels[i % 4] for i in range(n)]
    actual = [labels[(i * 7) % 4] if i % 11 else "??" for i in range(n)]
    frame = _frame(expected, actual)
    metric = ef.metrics.get(SCALE)
    scores = ef.score(frame, [metric])
    assert scores.get_column("error").null_count() == n
    want = [
        0.0 if a == "??" else {0: 1.0, 1: 0.5}.get(abs(labels.index(e) - labels.index(a)), 0.0)
        for e, a in zip(expected, actual, strict=True)
    ]
    assert scores.get_column("score").to_list() == want
    reversed_scores = ef.score(frame.reverse(), [metric]).reverse()
    assert reversed_scores.get_column("score").equals(scores.get_column("score"))
