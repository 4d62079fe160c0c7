"""Retrieval-ranking metrics: reference semantics (§2.10-§2.15), every error path, the typed
column path, and oracles (a slow per-query reference and pytrec_eval) on random queries."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import evalframe as ef
from evalframe.core._canon import expected_type_of
from evalframe.metrics import _ranking, _retrieval_input, retrieval

RANKING = [
    "retrieval-hit-at-k",
    "retrieval-recall-at-k",
    "retrieval-mrr",
    "retrieval-ndcg-at-k",
]


def _frame(
    actual: Sequence[str],
    expected: Sequence[Any],
    metadata: Sequence[dict[str, Any]] | None = None,
    **extra: Any,
) -> pl.DataFrame:
    """An evaluation frame; ``expected`` values are typed the way the dataset loader types them."""
    n = len(actual)
    texts = [
        v if isinstance(v, str) else json.dumps(v, separators=(",", ":"), ensure_ascii=False)
        for v in expected
    ]
    frame = pl.DataFrame(
        {
            "sample_id": [f"s{i}" for i in range(n)],
            "input": ["{}"] * n,
            "expected_output": texts,
            "expected_type": [expected_type_of(v) for v in expected],
            "metadata": [json.dumps(m) for m in (metadata or [{}] * n)],
            "tags": [[] for _ in range(n)],
            "row_hash": ["h"] * n,
            "actual_output": list(actual),
        },
        schema_overrides={"tags": pl.List(pl.String)},
    )
    return frame.with_columns(**extra) if extra else frame


def _score(frame: pl.DataFrame, spec: str) -> pl.DataFrame:
    return ef.score(frame, [ef.metrics.get(spec)])


def _one(
    actual: str, expected: Any, spec: str, metadata: dict[str, Any] | None = None
) -> dict[str, Any]:
    row = _score(_frame([actual], [expected], [metadata or {}]), spec).row(0, named=True)
    row["details"] = json.loads(row["details"]) if row["details"] else None
    return row


# --- golden values -------------------------------------------------------------------------


def test_ndcg_golden_example_from_the_reference() -> None:
    row = _one('["a","b","c"]', ["a", "c"], "retrieval-ndcg-at-k(k=3)")
    assert row["score"] == pytest.approx(1.5 / (1 + 1 / math.log2(3)), abs=1e-12)
    assert row["score"] == pytest.approx(0.919720789, abs=1e-9)
    assert row["details"] == {"k": 3, "dcg": 1.5, "idcg": pytest.approx(1 + 1 / math.log2(3))}


def test_ndcg_uses_linear_graded_gains_and_the_ideal_order_truncated_at_k() -> None:
    row = _one('["b","a","x"]', {"a": 3, "b": 1, "c": 2}, "retrieval-ndcg-at-k(k=2)")
    dcg = 1 + 3 / math.log2(3)
    idcg = 3 + 2 / math.log2(3)
    assert row["score"] == pytest.approx(dcg / idcg, abs=1e-12)


def test_ndcg_clamps_negative_gains_and_scores_zero_without_ideal_gain() -> None:
    assert _one('["a"]', {"a": -1, "b": 0}, "retrieval-ndcg-at-k")["score"] == 0.0
    assert _one('["a","b"]', {"a": 0}, "retrieval-ndcg-at-k")["score"] == 0.0
    assert _one('["x"]', {"a": 1}, "retrieval-ndcg-at-k")["score"] == 0.0


def test_hit_recall_and_mrr_golden_values_and_details() -> None:
    actual = '["d","a","e","c"]'
    hit = _one(actual, ["a", "c", "z"], "retrieval-hit-at-k(k=2)")
    assert hit["score"] == 1.0
    assert hit["details"] == {"k": 2, "relevant": ["a", "c", "z"], "top_k": ["d", "a"]}
    recall = _one(actual, ["a", "c", "z"], "retrieval-recall-at-k(k=4)")
    assert recall["score"] == pytest.approx(2 / 3)
    assert recall["details"] == {
        "k": 4,
        "relevant_count": 3,
        "found": 2,
        "top_k": ["d", "a", "e", "c"],
    }
    mrr = _one(actual, ["c", "a"], "retrieval-mrr")
    assert mrr["score"] == 0.5
    assert mrr["details"] == {"first_relevant_rank": 2}
    assert _one(actual, ["q"], "retrieval-mrr")["details"] == {"first_relevant_rank": None}
    assert _one(actual, ["q"], "retrieval-hit-at-k")["score"] == 0.0


def test_mrr_ignores_k_and_searches_the_whole_ranking() -> None:
    ranking = json.dumps([f"d{i}" for i in range(40)])
    assert _one(ranking, ["d29"], "retrieval-mrr", {"k": 2})["score"] == pytest.approx(1 / 30)
    assert _one(ranking, ["d29"], "retrieval-hit-at-k(k=10)")["score"] == 0.0


def test_zero_gain_ids_still_count_as_relevant_for_hit_recall_and_mrr() -> None:
    for spec, want in [
        ("retrieval-hit-at-k", 1.0),
        ("retrieval-recall-at-k", 1.0),
        ("retrieval-mrr", 1.0),
        ("retrieval-ndcg-at-k", 0.0),
    ]:
        assert _one('["a"]', {"a": 0}, spec)["score"] == want, spec


def test_duplicate_retrieved_ids_keep_their_best_rank() -> None:
    row = _one('["a","a","b","a","c"]', ["c"], "retrieval-mrr")
    assert row["score"] == pytest.approx(1 / 3)
    top = _one('["a","a","b","a","c"]', ["c"], "retrieval-hit-at-k(k=3)")
    assert top["details"]["top_k"] == ["a", "b", "c"]
    assert top["score"] == 1.0


def test_duplicate_relevant_ids_count_once() -> None:
    assert _one('["a"]', ["a", "a", "b"], "retrieval-recall-at-k")["score"] == 0.5


# --- accepted input shapes ------------------------------------------------------------------


@pytest.mark.parametrize(
    "actual",
    [
        '["a","b","c"]',
        '["a", "b", "c"]',
        '  \n["a","b","c"]\t',
        '[{"id":"a","text":"t"},{"id":"b"},{"id":"c","text":5}]',
        '[{"text":"t","id":"a","score":0.9,"meta":{"x":[1,2]}},{"id":"b"},{"id":"c"}]',
        '{"retrieved":["a","b","c"]}',
        '{"retrieved":[{"id":"a"},"b",{"id":"c"}],"latency":3}',
        '{"0":"a","1":"b","2":"c"}',
        '[ "a" , "b" ,\n "c" ]',
    ],
)
def test_every_accepted_actual_output_shape_gives_the_same_ranking(actual: str) -> None:
    row = _one(actual, ["c"], "retrieval-mrr")
    assert row["error"] is None
    assert row["score"] == pytest.approx(1 / 3)


def test_ids_with_json_escapes_and_unicode_are_decoded() -> None:
    actual = json.dumps(['doc "1"', "caf\u00e9", "back\\slash", "\U0001f600"])
    assert _one(actual, ["back\\slash"], "retrieval-mrr")["score"] == pytest.approx(1 / 3)
    assert _one(actual, ['doc "1"'], "retrieval-mrr")["score"] == 1.0
    assert _one(actual, ["\U0001f600"], "retrieval-mrr")["score"] == 0.25


def test_an_empty_object_is_an_empty_retrieval() -> None:
    row = _one("{}", ["a"], "retrieval-recall-at-k")
    assert (row["score"], row["error"]) == (0.0, None)
    assert _one("[]", ["a"], "retrieval-mrr")["score"] == 0.0


@pytest.mark.parametrize(
    "expected",
    [["a", "c"], '["a","c"]', ' ["a", "c"] ', {"a": 1, "c": 1}, {"a": "1", "c": " 1.0"}],
)
def test_every_accepted_expected_output_shape(expected: Any) -> None:
    row = _one('["a","b","c"]', expected, "retrieval-ndcg-at-k(k=3)")
    assert row["score"] == pytest.approx(0.919720789, abs=1e-9)


def test_gain_map_accepts_php_numeric_strings() -> None:
    row = _one('["b","a"]', {"a": "1e1", "b": ".5"}, "retrieval-ndcg-at-k")
    dcg = 0.5 + 10 / math.log2(3)
    assert row["score"] == pytest.approx(dcg / (10 + 0.5 / math.log2(3)))


def test_a_gain_map_keyed_zero_to_n_is_read_as_a_list_like_php() -> None:
    row = _one('["x","y"]', {"0": "y", "1": "x"}, "retrieval-recall-at-k")
    assert row["score"] == 1.0


# --- k resolution ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("metadata", "want_k"),
    [
        ({"k": 2}, 2),
        ({"k": "2"}, 4),
        ({"k": 2.0}, 4),
        ({"k": 0}, 4),
        ({"k": -3}, 4),
        ({"k": True}, 4),
        ({"k": [2]}, 4),
        ({"nested": {"k": 2}}, 4),
        ({}, 4),
        ({"k": 12}, 12),
    ],
)
def test_k_comes_from_metadata_only_when_it_is_a_positive_integer(
    metadata: dict[str, Any], want_k: int
) -> None:
    row = _one('["a","b","c","d","e","f"]', ["a"], "retrieval-hit-at-k(k=4)", metadata)
    assert row["details"]["k"] == want_k


def test_k_spelled_with_an_escape_still_counts_and_rows_without_k_are_null() -> None:
    frame = pl.DataFrame({"metadata": ['{"\\u006b":3}', "{}", '{"kk":2}']})
    assert retrieval._metadata_k(frame).get_column("k").to_list() == [3, None, None]
    frame = pl.DataFrame({"metadata": ["{}", '{"kk":2}']})
    assert retrieval._metadata_k(frame).get_column("k").to_list() == [None, None]


def test_k_defaults_to_five() -> None:
    assert _one('["a"]', ["a"], "retrieval-recall-at-k")["details"]["k"] == 5
    assert ef.metrics.retrieval_recall_at_k(k=5).id == "retrieval-recall-at-k"
    assert ef.metrics.retrieval_ndcg_at_k(k=10).id == "retrieval-ndcg-at-k(k=10)"


@pytest.mark.parametrize("alias", [*RANKING, "answer-containment-at-k"])
@pytest.mark.parametrize("k", [0, -1])
def test_a_k_below_one_raises_at_bind_time(alias: str, k: int) -> None:
    with pytest.raises(
        ef.MetricError, match=rf"^Metric '{alias}' parameter 'k' must be at least 1; got {k}\.$"
    ):
        ef.metrics.get(f"{alias}(k={k})")


def test_mrr_without_k_keeps_its_id_and_the_whole_ranking() -> None:
    assert ef.metrics.get("retrieval-mrr").id == "retrieval-mrr"
    assert ef.metrics.retrieval_mrr(k=10).id == "retrieval-mrr(k=10)"
    ranking = json.dumps([f"d{i}" for i in range(40)])
    assert _one(ranking, ["d29"], "retrieval-mrr")["score"] == pytest.approx(1 / 30)


@pytest.mark.parametrize(
    ("k", "want"), [(1, 0.0), (2, 0.0), (3, 1 / 3), (10, 1 / 3), (None, 1 / 3)]
)
def test_mrr_at_k_counts_the_first_relevant_id_only_within_the_top_k(
    k: int | None, want: float
) -> None:
    spec = "retrieval-mrr" if k is None else f"retrieval-mrr(k={k})"
    row = _one(json.dumps(["a", "b", "c", "d"]), ["c", "d"], spec, {"k": 1})
    assert row["score"] == pytest.approx(want)
    assert row["details"]["first_relevant_rank"] == 3


# --- error paths ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("actual", "message"),
    [
        ("not json", "retrieval actualOutput is not valid JSON: Syntax error."),
        ("", "retrieval actualOutput is not valid JSON: Syntax error."),
        ('["a",]', "retrieval actualOutput is not valid JSON: Syntax error."),
        ("[NaN]", "retrieval actualOutput is not valid JSON: Syntax error."),
        (
            '["a\x01"]',
            "retrieval actualOutput is not valid JSON: "
            "Control character error, possibly incorrectly encoded.",
        ),
        (
            '["\\ud800"]',
            "retrieval actualOutput is not valid JSON: "
            "Single unpaired UTF-16 surrogate in unicode escape.",
        ),
        (
            '{"x":["a"]}',
            "retrieval actualOutput must be a JSON array or an object with a 'retrieved' array.",
        ),
        (
            '{"retrieved":"a"}',
            "retrieval actualOutput must be a JSON array or an object with a 'retrieved' array.",
        ),
        (
            '"a"',
            "retrieval actualOutput must be a JSON array or an object with a 'retrieved' array.",
        ),
        ("5", "retrieval actualOutput must be a JSON array or an object with a 'retrieved' array."),
        (
            "null",
            "retrieval actualOutput must be a JSON array or an object with a 'retrieved' array.",
        ),
        (
            '[{"id":7}]',
            "retrieval entry must be a non-empty id string or an object with a non-empty 'id'.",
        ),
        (
            '[{"id":""}]',
            "retrieval entry must be a non-empty id string or an object with a non-empty 'id'.",
        ),
        (
            '[{"text":"t"}]',
            "retrieval entry must be a non-empty id string or an object with a non-empty 'id'.",
        ),
        (
            '["a",""]',
            "retrieval entry must be a non-empty id string or an object with a non-empty 'id'.",
        ),
        (
            '["a",7]',
            "retrieval entry must be a non-empty id string or an object with a non-empty 'id'.",
        ),
        (
            '["a",null]',
            "retrieval entry must be a non-empty id string or an object with a non-empty 'id'.",
        ),
        (
            '[["a"]]',
            "retrieval entry must be a non-empty id string or an object with a non-empty 'id'.",
        ),
        (
            '{"retrieved":[{"id":true}]}',
            "retrieval entry must be a non-empty id string or an object with a non-empty 'id'.",
        ),
    ],
)
def test_actual_output_errors_use_the_reference_messages(actual: str, message: str) -> None:
    for spec in [*RANKING, "answer-containment-at-k"]:
        row = _one(actual, ["a"] if spec != "answer-containment-at-k" else "a", spec)
        assert row["score"] is None
        assert row["details"] is None
        assert row["error"] == f"Sample 's0' {message}", spec


@pytest.mark.parametrize(
    ("expected", "message"),
    [
        ([], "retrieval expected_output must list at least one relevant id."),
        ({}, "retrieval expected_output must list at least one relevant id."),
        ("[]", "retrieval expected_output must list at least one relevant id."),
        ("5", "retrieval expected_output must list at least one relevant id."),
        ('"a"', "retrieval expected_output must list at least one relevant id."),
        (5, "retrieval expected_output must list at least one relevant id."),
        (1.5, "retrieval expected_output must list at least one relevant id."),
        (True, "retrieval expected_output must list at least one relevant id."),
        (None, "retrieval expected_output must list at least one relevant id."),
        ("doc-1", "retrieval expected_output is not valid JSON: Syntax error."),
        ("", "retrieval expected_output is not valid JSON: Syntax error."),
        (["a", ""], "retrieval expected_output ids must be non-empty strings."),
        (["a", 3], "retrieval expected_output ids must be non-empty strings."),
        ('["a",null]', "retrieval expected_output ids must be non-empty strings."),
        ({"a": "high"}, "retrieval expected_output gain map must be id => numeric gain."),
        ({"a": True}, "retrieval expected_output gain map must be id => numeric gain."),
        ({"a": None}, "retrieval expected_output gain map must be id => numeric gain."),
        ({"a": [1]}, "retrieval expected_output gain map must be id => numeric gain."),
        ({"a": "nan"}, "retrieval expected_output gain map must be id => numeric gain."),
        ({"a": "0x1A"}, "retrieval expected_output gain map must be id => numeric gain."),
        ({"": 1}, "retrieval expected_output gain map must be id => numeric gain."),
    ],
)
def test_expected_output_errors_use_the_reference_messages(expected: Any, message: str) -> None:
    for spec in RANKING:
        row = _one('["a"]', expected, spec)
        assert row["score"] is None
        assert row["error"] == f"Sample 's0' {message}", spec


def test_an_unparseable_actual_output_is_reported_before_the_expected_one() -> None:
    row = _one("nope", [], "retrieval-recall-at-k")
    assert row["error"] == "Sample 's0' retrieval actualOutput is not valid JSON: Syntax error."


def test_errors_are_per_row_and_do_not_touch_other_rows() -> None:
    frame = _frame(['["a"]', "oops", '["b","a"]'], [["a"], ["a"], ["a"]])
    scores = _score(frame, "retrieval-mrr")
    assert scores.get_column("score").to_list() == [1.0, None, 0.5]
    assert scores.get_column("error").null_count() == 2


# --- answer containment ---------------------------------------------------------------------


def test_containment_finds_the_span_in_a_top_k_text_and_reports_its_rank() -> None:
    actual = json.dumps(
        [{"id": "a", "text": "nothing"}, {"id": "b", "text": "Paris is the capital"}]
    )
    row = _one(actual, "paris", "answer-containment-at-k")
    assert row["score"] == 1.0
    assert row["details"] == {"k": 5, "expected_span": "paris", "matched_rank": 2}
    assert _one(actual, "paris", "answer-containment-at-k(k=1)")["score"] == 0.0


def test_containment_normalises_unicode_whitespace_and_case() -> None:
    actual = json.dumps(
        [{"id": "a", "text": "Le  CAF\u00c9\u00a0au\tlait\u2003est chaud"}], ensure_ascii=False
    )
    assert _one(actual, " caf\u00e9 au\n lait ", "answer-containment-at-k")["score"] == 1.0
    assert (
        _one(actual, "caf\u00e9 au lait", "answer-containment-at-k(case_sensitive=true)")["score"]
        == 0.0
    )
    assert (
        _one(actual, "CAF\u00c9 au lait", "answer-containment-at-k(case_sensitive=true)")["score"]
        == 1.0
    )


def test_containment_lowercases_beyond_ascii() -> None:
    actual = json.dumps([{"id": "a", "text": "\u0391\u0398\u0397\u039d\u0391 STRASSE"}])
    assert (
        _one(actual, "\u03b1\u03b8\u03b7\u03bd\u03b1 strasse", "answer-containment-at-k")["score"]
        == 1.0
    )


def test_containment_skips_empty_texts_and_bare_ids_never_match() -> None:
    assert _one('["paris"]', "paris", "answer-containment-at-k")["score"] == 0.0
    actual = json.dumps([{"id": "a", "text": ""}, {"id": "b"}, {"id": "c", "text": "x paris"}])
    assert _one(actual, "paris", "answer-containment-at-k")["details"]["matched_rank"] == 3


def test_containment_uses_deduplicated_ranks() -> None:
    actual = json.dumps(
        [{"id": "a", "text": "x"}, {"id": "a", "text": "paris"}, {"id": "b", "text": "paris"}]
    )
    row = _one(actual, "paris", "answer-containment-at-k")
    assert row["details"]["matched_rank"] == 2


@pytest.mark.parametrize("expected", ["", "  \t", ["paris"], 5, None, {"a": 1}])
def test_containment_needs_a_non_empty_string_span(expected: Any) -> None:
    row = _one('[{"id":"a","text":"paris"}]', expected, "answer-containment-at-k")
    assert row["score"] is None
    assert row["error"] == (
        "Sample 's0' expected_output must be a non-empty string (the answer span) for "
        "answer-containment-at-k metric."
    )


# --- retrieval data already in columns ------------------------------------------------------


def test_typed_columns_skip_json_entirely() -> None:
    frame = _frame(["not json"] * 2, ["not json either"] * 2).with_columns(
        actual_output__retrieved=pl.Series([["a", "b", "c"], ["x", "x", "c"]]),
        expected_output__relevant=pl.Series([["a", "c"], ["c"]]),
    )
    scores = ef.score(
        frame, [ef.metrics.get("retrieval-ndcg-at-k(k=3)"), ef.metrics.retrieval_mrr()]
    )
    assert scores.get_column("error").null_count() == 4
    ndcg, mrr = scores.partition_by("metric", maintain_order=True)
    assert ndcg.get_column("score")[0] == pytest.approx(0.919720789, abs=1e-9)
    assert mrr.get_column("score").to_list() == [1.0, 0.5]


@pytest.mark.parametrize(
    "gains",
    [
        pl.Series([{"a": 3.0, "b": None, "c": 2.0}, {"a": None, "b": 1.0, "c": None}]),
        pl.Series(
            [[{"key": "a", "value": 3}, {"key": "c", "value": 2}], [{"key": "b", "value": 1}]]
        ),
        pl.Series(
            [[{"key": "a", "value": 3.0}, {"key": "c", "value": 2.0}], [{"key": "b", "value": 1.0}]]
        ).list.to_map(),
    ],
    ids=["struct", "list-of-key-value", "map"],
)
def test_typed_gain_columns_struct_list_or_map(gains: pl.Series) -> None:
    frame = _frame(["x"] * 2, ["x"] * 2).with_columns(
        actual_output__retrieved=pl.Series([["c", "a"], ["a", "b"]]),
        expected_output__gains=gains,
    )
    scores = _score(frame, "retrieval-ndcg-at-k").get_column("score").to_list()
    want = (2 + 3 / math.log2(3)) / (3 + 2 / math.log2(3))
    assert scores[0] == pytest.approx(want, abs=1e-12)
    assert scores[1] == pytest.approx(1 / math.log2(3), abs=1e-12)


def test_typed_columns_are_validated_like_json() -> None:
    frame = _frame(["x"] * 4, ["x"] * 4).with_columns(
        actual_output__retrieved=pl.Series([["a"], ["a", ""], None, ["a"]]),
        expected_output__relevant=pl.Series([[], ["a"], ["a"], ["a", ""]]),
    )
    errors = _score(frame, "retrieval-hit-at-k").get_column("error").to_list()
    assert errors == [
        "Sample 's0' retrieval expected_output must list at least one relevant id.",
        "Sample 's1' retrieval entry must be a non-empty id string or an object with a "
        "non-empty 'id'.",
        "Sample 's2' actual_output__retrieved is null.",
        "Sample 's3' retrieval expected_output ids must be non-empty strings.",
    ]


def test_typed_texts_feed_answer_containment() -> None:
    frame = _frame(["x"], ["Paris"]).with_columns(
        actual_output__retrieved=pl.Series([["a", "b"]]),
        actual_output__retrieved_text=pl.Series([["nope", "in paris"]]),
    )
    row = _score(frame, "answer-containment-at-k").row(0, named=True)
    assert row["score"] == 1.0
    assert json.loads(row["details"])["matched_rank"] == 2


def test_a_typed_column_of_the_wrong_type_fails_the_metric_on_every_row() -> None:
    frame = _frame(["x"], [["a"]]).with_columns(actual_output__retrieved=pl.Series([3]))
    error = _score(frame, "retrieval-mrr").get_column("error")[0]
    assert "actual_output__retrieved" in error
    assert "must be a list of id strings" in error


def test_inputs_are_parsed_once_per_frame_for_all_metrics(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = {"retrieval": 0, "relevance": 0, "ranking": 0}
    originals = {
        "retrieval": retrieval.parse_retrieval,
        "relevance": retrieval.parse_relevance,
        "ranking": retrieval.rank_matches,
    }

    def counting(name: str) -> Any:
        def wrapped(*args: Any) -> Any:
            calls[name] += 1
            return originals[name](*args)

        return wrapped

    monkeypatch.setattr(retrieval, "parse_retrieval", counting("retrieval"))
    monkeypatch.setattr(retrieval, "parse_relevance", counting("relevance"))
    monkeypatch.setattr(retrieval, "rank_matches", counting("ranking"))
    metrics = [ef.metrics.get(s) for s in [*RANKING, "retrieval-recall-at-k(k=10)"]]
    metrics.append(ef.metrics.answer_containment_at_k())
    ef.score(_frame(['["a"]'] * 3, [["a"]] * 3), metrics)
    assert calls == {"retrieval": 1, "relevance": 1, "ranking": 1}


# --- oracles --------------------------------------------------------------------------------


def _reference(ranking: Sequence[str], gains: dict[str, float], k: int) -> dict[str, float]:
    """A slow, obviously correct per-query implementation of the reference definitions."""
    ids = list(dict.fromkeys(ranking))
    top = ids[:k]
    relevant = set(gains)
    found = sum(1 for x in top if x in relevant)
    first = next((i + 1 for i, x in enumerate(ids) if x in relevant), None)
    dcg = sum(gains.get(x, 0.0) / math.log2(i + 2) for i, x in enumerate(top))
    ideal = sorted(gains.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return {
        "retrieval-hit-at-k": 1.0 if found else 0.0,
        "retrieval-recall-at-k": min(1.0, found / len(relevant)),
        "retrieval-mrr": 1.0 / first if first else 0.0,
        "retrieval-ndcg-at-k": min(1.0, max(0.0, dcg / idcg)) if idcg > 0 else 0.0,
    }


_IDS = st.sampled_from([f"d{i}" for i in range(30)] + ["a b", "é", 'q"', "x\\y", "007"])
_QUERY = st.tuples(
    st.lists(_IDS, max_size=25),
    st.dictionaries(
        _IDS, st.integers(-2, 4) | st.floats(-1, 5, allow_nan=False), min_size=1, max_size=6
    ),
    st.integers(1, 12),
)


def _score_queries(
    queries: Sequence[tuple[list[str], dict[str, float], int]], *, typed: bool
) -> dict[str, list[float | None]]:
    actual = [json.dumps(r) for r, _, _ in queries]
    expected = [dict(g) for _, g, _ in queries]
    metadata = [{"k": k} for _, _, k in queries]
    frame = _frame(actual, expected, metadata)
    if typed:
        frame = frame.with_columns(
            actual_output__retrieved=pl.Series(
                [r for r, _, _ in queries], dtype=pl.List(pl.String)
            ),
            expected_output__gains=pl.Series(
                [[{"key": k, "value": float(v)} for k, v in g.items()] for _, g, _ in queries]
            ),
            actual_output=pl.lit("not json"),
        )
    scores = ef.score(frame, [ef.metrics.get(s) for s in RANKING])
    assert scores.get_column("error").null_count() == scores.height
    return {
        m: part.get_column("score").to_list()
        for (m,), part in scores.partition_by("metric", as_dict=True, maintain_order=True).items()
    }


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queries=st.lists(_QUERY, min_size=1, max_size=60), typed=st.booleans())
def test_matches_the_slow_reference_on_random_queries(
    queries: list[tuple[list[str], dict[str, float], int]], typed: bool
) -> None:
    got = _score_queries(queries, typed=typed)
    for i, (ranking, gains, k) in enumerate(queries):
        want = _reference(ranking, {g: float(v) for g, v in gains.items()}, k)
        for metric, value in want.items():
            assert got[metric][i] == pytest.approx(value, abs=1e-12), (metric, i)


def _trec(
    queries: Sequence[tuple[list[str], dict[str, int]]], k: int
) -> dict[str, dict[str, float]]:
    import pytrec_eval

    qrels = {f"q{i}": dict(g) for i, (_, g) in enumerate(queries)}
    run = {
        f"q{i}": {doc: float(len(r) - rank) for rank, doc in enumerate(r)}
        for i, (r, _) in enumerate(queries)
    }
    measures = {f"ndcg_cut.{k}", f"recall.{k}", "recip_rank", f"success.{k}"}
    return pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)  # type: ignore[no-any-return]


# Where the definitions coincide: distinct retrieved ids (a trec_eval run cannot repeat a
# document) and positive integer gains (trec_eval counts only relevance > 0 as relevant).
_TREC_QUERY = st.tuples(
    st.lists(_IDS.filter(lambda s: " " not in s), max_size=40, unique=True),
    st.dictionaries(_IDS.filter(lambda s: " " not in s), st.integers(1, 3), min_size=1, max_size=6),
)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    queries=st.lists(_TREC_QUERY, min_size=50, max_size=200), k=st.sampled_from([1, 3, 5, 10, 20])
)
def test_agrees_with_pytrec_eval_on_random_graded_queries(
    queries: list[tuple[list[str], dict[str, int]]], k: int
) -> None:
    got = _score_queries([(r, dict(g), k) for r, g in queries], typed=False)
    trec = _trec(queries, k)
    names = {
        "retrieval-ndcg-at-k": f"ndcg_cut_{k}",
        "retrieval-recall-at-k": f"recall_{k}",
        "retrieval-mrr": "recip_rank",
        "retrieval-hit-at-k": f"success_{k}",
    }
    for i in range(len(queries)):
        for metric, trec_name in names.items():
            assert got[metric][i] == pytest.approx(trec[f"q{i}"][trec_name], abs=1e-9), (
                metric,
                queries[i],
            )


def _random_queries(n: int, seed: int) -> tuple[list[list[str]], list[dict[str, int]]]:
    rng = np.random.default_rng(seed)
    rankings, gains = [], []
    for _ in range(n):
        length = int(rng.integers(10, 101))
        ranking = [f"doc-{x}" for x in rng.choice(5000, size=length, replace=False)]
        pool = ranking + [f"doc-{x}" for x in rng.choice(5000, size=5)]
        chosen = rng.choice(len(pool), size=int(rng.integers(1, 6)), replace=False)
        rel = {pool[int(c)]: int(rng.integers(1, 4)) for c in chosen}
        rankings.append(ranking)
        gains.append(rel)
    return rankings, gains


def test_agrees_with_pytrec_eval_on_five_thousand_seeded_queries() -> None:
    rankings, gains = _random_queries(5000, seed=7)
    frame = _frame(["x"] * len(rankings), ["x"] * len(rankings)).with_columns(
        actual_output__retrieved=pl.Series(rankings),
        expected_output__gains=pl.Series(
            [[{"key": k, "value": float(v)} for k, v in g.items()] for g in gains]
        ),
    )
    for k in (5, 10):
        metrics = [ef.metrics.get(f"{s}(k={k})" if s != "retrieval-mrr" else s) for s in RANKING]
        specs = [m.id for m in metrics]
        scores = ef.score(frame, metrics)
        by = {
            m: p.get_column("score").to_numpy()
            for (m,), p in scores.partition_by("metric", as_dict=True).items()
        }
        trec = _trec(list(zip(rankings, gains, strict=True)), k)
        for spec, name in zip(
            specs, [f"success_{k}", f"recall_{k}", "recip_rank", f"ndcg_cut_{k}"], strict=True
        ):
            want = np.array([trec[f"q{i}"][name] for i in range(len(rankings))])
            np.testing.assert_allclose(by[spec], want, rtol=0, atol=1e-9, err_msg=spec)


def test_hash_clashes_fall_back_to_exact_matching(monkeypatch: pytest.MonkeyPatch) -> None:
    queries = [
        (["a", "b", "c", "d", "e", "b"], {"c": 2.0, "e": 1.0, "z": 3.0}, 5),
        (["p", "q", "r"], {"r": 1.0, "q": 1.0}, 2),
    ] * 20
    honest = _score_queries(queries, typed=True)
    monkeypatch.setattr(_ranking, "_hash", lambda s: s.hash().to_numpy() % np.uint64(2))
    assert _score_queries(queries, typed=True) == honest


# --- size -----------------------------------------------------------------------------------


def test_one_hundred_thousand_queries_from_json() -> None:
    rankings, gains = _random_queries(2000, seed=3)
    repeat = 50
    actual = pl.Series([json.dumps(r) for r in rankings] * repeat)
    expected = list(gains) * repeat
    n = actual.len()
    frame = pl.DataFrame(
        {
            "sample_id": [f"q{i}" for i in range(n)],
            "input": ["{}"] * n,
            "expected_output": [json.dumps(g, separators=(",", ":")) for g in expected],
            "expected_type": ["map"] * n,
            "metadata": ["{}"] * n,
            "tags": [[] for _ in range(n)],
            "actual_output": actual,
        },
        schema_overrides={"tags": pl.List(pl.String)},
    )
    assert n == 100_000
    scores = ef.score(frame, [ef.metrics.get(s) for s in RANKING])
    assert scores.height == 4 * n
    assert scores.get_column("error").null_count() == 4 * n
    ndcg = scores.filter(pl.col("metric") == "retrieval-ndcg-at-k").get_column("score")
    for i in range(0, n, 9973):
        q = i % len(rankings)
        want = _reference(rankings[q], {k: float(v) for k, v in gains[q].items()}, 5)
        assert ndcg[i] == pytest.approx(want["retrieval-ndcg-at-k"], abs=1e-12)


def test_parsing_many_rows_in_parts_keeps_ids_texts_and_rows() -> None:
    # Enough rows for one part per thread; texts only in the second half, ids short enough to
    # sit in a string view and long enough not to, escapes and non-ASCII among them.
    n = 20_000
    bare = [
        [f"d{i}", "a-long-document-id-" + "x" * (i % 7), "caf\u00e9", f"d{i}"] for i in range(n)
    ]
    objects = [[{"id": f"o{i}", "text": "t\n" * (i % 3)}, {"id": "é😀"}] for i in range(n)]
    rows = [json.dumps(r) for r in bare] + [json.dumps(r) for r in objects]
    parsed = retrieval.parse_retrieval(pl.Series(rows, dtype=pl.String))
    want_ids = [list(dict.fromkeys(r)) for r in bare] + [[e["id"] for e in r] for r in objects]
    want_texts = [None] * n + [[e.get("text", "") for e in r] for r in objects]
    assert parsed.get_column("ids").to_list() == want_ids
    assert parsed.get_column("texts").to_list() == want_texts
    assert parsed.get_column("error").null_count() == 2 * n


def test_short_ids_packed_tight_are_all_kept() -> None:
    # One- and two-character ids without spaces: more entries than the scanner first makes
    # room for (one per 8 bytes), so it scans again with room for every entry that can fit.
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    rows = [
        [alphabet[(i + j) % 36] + alphabet[j // 36][: j % 2] for j in range(60)] for i in range(500)
    ]
    text = pl.Series([json.dumps(r, separators=(",", ":")) for r in rows])
    parsed = retrieval.parse_retrieval(text)
    assert parsed.get_column("ids").to_list() == [list(dict.fromkeys(r)) for r in rows]
    assert parsed.get_column("error").null_count() == len(rows)


_GAIN_NUMBERS = st.one_of(
    st.integers(-(10**20), 10**20).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda x: f"{x:.17e}"),
    st.floats(-1e6, 1e6).map(lambda x: f"{x:.6f}"),
    st.sampled_from(["0", "-0", "-0.0", "0.000", "1e400", "-1E-400", "0.1e1", "4.9e-324"]),
)
_GAIN_KEYS = st.text(
    st.characters(codec="utf-8", exclude_characters='"\\'), min_size=1, max_size=6
).filter(lambda key: not key.isdigit())


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.lists(st.tuples(_GAIN_KEYS, _GAIN_NUMBERS), min_size=1, max_size=6),
        min_size=1,
        max_size=20,
    ),
    st.sampled_from(["", " ", "\n\t"]),
)
def test_gain_maps_read_as_the_exact_reader_reads_them(
    maps: list[list[tuple[str, str]]], space: str
) -> None:
    # Maps written as JSON text (repeated keys, any number spelling, control characters in
    # keys); the compiled reader must give what the PHP-compatible reader gives, row by row.
    texts = [
        "{" + f"{space},".join(f'{space}"{k}"{space}:{space}{v}' for k, v in m) + "}" for m in maps
    ]
    parsed = retrieval.parse_relevance(pl.Series(texts), pl.Series(["map"] * len(texts)))
    for row, text in zip(parsed.iter_rows(named=True), texts, strict=True):
        ids, gains, error = _retrieval_input._read_relevance("map", text)
        assert (row["ids"], row["gains"], row["error"]) == (ids, gains, error), text


def test_plain_gain_maps_take_the_compiled_reader() -> None:
    texts = pl.Series(['{"d1":1,"d2": 2.5}', '{ "a b" : 1e2 , "c":-0.125 }', '{"d":1e23}'])
    ids, gains, read = _retrieval_input._read_gain_maps(texts, pl.Series([True, True, True]))
    assert read.to_list() == [True, True, False]  # 10^23 is past the exact fast path
    assert ids.to_list()[:2] == [["d1", "d2"], ["a b", "c"]]
    assert gains.to_list()[:2] == [[1.0, 2.5], [100.0, -0.125]]


def test_empty_frame_scores_to_an_empty_long_frame() -> None:
    frame = _frame([], [])
    scores = ef.score(frame, [ef.metrics.get(s) for s in [*RANKING, "answer-containment-at-k"]])
    assert scores.height == 0


def test_scores_are_row_order_invariant() -> None:
    rankings, gains = _random_queries(300, seed=11)
    frame = _frame([json.dumps(r) for r in rankings], gains)
    metrics = [ef.metrics.get(s) for s in RANKING]
    forward = ef.score(frame, metrics).sort("metric", "sample_id")
    backward = ef.score(frame.reverse(), metrics).sort("metric", "sample_id")
    assert forward.equals(backward)


def test_factories_and_families() -> None:
    for alias in [*RANKING, "answer-containment-at-k"]:
        d = ef.metrics.definition(alias)
        assert (d.family, d.dimension) == ("retrieval", "correctness")
    assert ef.metrics.answer_containment_at_k(case_sensitive=True).id == (
        "answer-containment-at-k(case_sensitive=true)"
    )


def test_evaluate_passes_typed_retrieval_columns_through_from_the_outputs_frame() -> None:
    dataset = ef.Dataset.from_records(
        [
            {
                "id": "q1",
                "input": {"q": "a"},
                "expected_output": ["d1", "d3"],
                "metadata": {"k": 1},
            },
            {"id": "q2", "input": {"q": "b"}, "expected_output": {"d2": 2, "d9": 1}},
        ],
        name="rag",
    )
    outputs = pl.DataFrame(
        {
            "sample_id": ["q1", "q2"],
            "actual_output": ["unused", "unused"],
            "actual_output__retrieved": [["d2", "d3"], ["d9", "d2"]],
        }
    )
    run = ef.evaluate(dataset, outputs=outputs, metrics=["retrieval-mrr", "retrieval-hit-at-k"])
    by = {(r["sample_id"], r["metric"]): r["score"] for r in run.scores.to_dicts()}
    assert by == {
        ("q1", "retrieval-mrr"): 0.5,
        ("q1", "retrieval-hit-at-k"): 0.0,
        ("q2", "retrieval-mrr"): 1.0,
        ("q2", "retrieval-hit-at-k"): 1.0,
    }


def _mrr_at_k(ranking: Sequence[str], relevant: set[str], k: int | None) -> float:
    """Slow MRR@k: duplicates keep their first rank, then the list is cut at k."""
    top = list(dict.fromkeys(ranking))[:k]
    return next((1.0 / (i + 1) for i, x in enumerate(top) if x in relevant), 0.0)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    queries=st.lists(st.tuples(st.lists(_IDS, max_size=25), st.sets(_IDS, min_size=1)), min_size=1),
    k=st.integers(1, 30) | st.none(),
)
def test_mrr_at_k_matches_a_slow_reference(
    queries: list[tuple[list[str], set[str]]], k: int | None
) -> None:
    frame = _frame([json.dumps(r) for r, _ in queries], [sorted(g) for _, g in queries])
    spec = "retrieval-mrr" if k is None else f"retrieval-mrr(k={k})"
    got = _score(frame, spec).get_column("score").to_list()
    assert got == [pytest.approx(_mrr_at_k(r, g, k), abs=1e-12) for r, g in queries]


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queries=st.lists(_TREC_QUERY, min_size=20, max_size=100), k=st.sampled_from([1, 2, 5, 10]))
def test_mrr_at_k_agrees_with_pytrec_eval_recip_rank_on_the_cut_run(
    queries: list[tuple[list[str], dict[str, int]]], k: int
) -> None:
    import pytrec_eval

    cut = [(r[:k], g) for r, g in queries]  # trec_eval has no MRR@k: cut the run instead
    qrels = {f"q{i}": dict(g) for i, (_, g) in enumerate(cut)}
    run = {f"q{i}": {d: float(len(r) - j) for j, d in enumerate(r)} for i, (r, _) in enumerate(cut)}
    trec = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(run)
    frame = _frame([json.dumps(r) for r, _ in queries], [dict(g) for _, g in queries])
    got = _score(frame, f"retrieval-mrr(k={k})").get_column("score").to_list()
    want = [trec[f"q{i}"]["recip_rank"] if f"q{i}" in trec else 0.0 for i in range(len(queries))]
    assert got == [pytest.approx(w, abs=1e-9) for w in want]


# --- the compiled JSON scanner, against json.loads -------------------------------------------

_PHP_TRIM = " \t\n\r\0\x0b"
_SHAPE = "retrieval actualOutput must be a JSON array or an object with a 'retrieved' array."
_ENTRY = "retrieval entry must be a non-empty id string or an object with a non-empty 'id'."


def _loads_oracle(text: str) -> tuple[list[str], list[str] | None] | str:
    """What a row means by the reference rules (§2.10), read with json.loads: ``(ids, texts)``
    after deduplication, or ``"json"``, ``"shape"`` or ``"entry"`` for the failing rule."""

    def constant(name: str) -> Any:
        raise ValueError(name)

    def surrogate(v: Any) -> bool:
        if isinstance(v, str):
            return any(0xD800 <= ord(c) <= 0xDFFF for c in v)
        if isinstance(v, list):
            return any(surrogate(x) for x in v)
        return isinstance(v, dict) and any(surrogate(k) or surrogate(x) for k, x in v.items())

    def as_list(v: Any) -> list[Any] | None:
        if isinstance(v, list):
            return v
        if isinstance(v, dict) and list(v) == [str(i) for i in range(len(v))]:
            return list(v.values())
        return None

    try:
        value = json.loads(text.strip(_PHP_TRIM), parse_constant=constant)
    except (ValueError, RecursionError):
        return "json"
    if surrogate(value):
        return "json"
    entries = as_list(value)
    if entries is None and isinstance(value, dict) and "retrieved" in value:
        entries = as_list(value["retrieved"])
    if entries is None:
        return "shape"
    pairs = []
    for e in entries:
        if isinstance(e, str) and e:
            pairs.append((e, ""))
        elif isinstance(e, dict) and isinstance(e.get("id"), str) and e["id"]:
            pairs.append((e["id"], e["text"] if isinstance(e.get("text"), str) else ""))
        else:
            return "entry"
    first = dict(reversed(pairs))  # the first text of each id
    ids = list(dict.fromkeys(i for i, _ in pairs))
    objects = any(isinstance(e, dict) for e in entries)
    return ids, [first[i] for i in ids] if objects else None


def _check_against_loads(texts: list[str]) -> None:
    parsed = retrieval.parse_retrieval(pl.Series(texts, dtype=pl.String)).to_dicts()
    for text, row in zip(texts, parsed, strict=True):
        want = _loads_oracle(text)
        if want == "json":
            assert row["error"].startswith("retrieval actualOutput is not valid JSON: "), text
        elif want == "shape":
            assert row["error"] == _SHAPE, text
        elif want == "entry":
            assert row["error"] == _ENTRY, text
        else:
            assert row["error"] is None, text
            assert (row["ids"], row["texts"]) == want, text


_WS_PIECES = st.sampled_from(["", "", " ", "\n  ", "\t", "\r\n"])
_HANDMADE_STRINGS = st.sampled_from(
    [
        r'"\ud83d\ude00"',  # a surrogate pair
        r'"\ud800"',  # lone high surrogate
        r'"x\udc00"',  # lone low surrogate
        r'"\ud83dx"',
        r'"\ud83d\u0041"',
        r'"\u00e9\u00E9"',
        r'"\u0000"',
        r'"\/\b\f\n\r\t\"\\"',
        r'"\x"',  # bad escape
        r'"\u12"',
        '"tab\there"',  # a raw control character
        '"unterminated',
        '""',
        '"é 漢字 😀"',
        '"]}[{,:"',
    ]
)
_TEXT = st.text(st.characters(codec="utf-8"), max_size=12)
_STRINGS = st.one_of(
    _TEXT.map(lambda s: json.dumps(s, ensure_ascii=False)),
    _TEXT.map(json.dumps),
    _HANDMADE_STRINGS,
)
_SCALARS = st.sampled_from(
    ["7", "-0.5e3", "1E+2", "0", "true", "false", "null", "01", "1.", "-", "NaN", "tru", "1e999"]
)
_NESTED = st.sampled_from(["[]", "{}", '[1,{"a":[2]}]', '{"x":"y"}', "[", "[[[[[]]]]]"])
_KEYS = st.one_of(
    st.sampled_from(['"id"', '"text"', '"score"', r'"\u0069d"', r'"te\u0078t"', '"retrieved"']),
    _STRINGS,
)


@st.composite
def _json_objects(draw: st.DrawFn, values: st.SearchStrategy[str]) -> str:
    ws = draw(_WS_PIECES)
    members = draw(st.lists(st.tuples(_KEYS, values), max_size=4))
    body = f"{ws},{ws}".join(f"{k}{ws}:{draw(_WS_PIECES)}{v}" for k, v in members)
    return "{" + ws + body + ws + "}"


@st.composite
def _retrieval_texts(draw: st.DrawFn) -> str:
    values = st.one_of(_STRINGS, _SCALARS, _NESTED)
    entry = st.one_of(_STRINGS, _STRINGS, _json_objects(values), _SCALARS, _NESTED)
    ws = draw(_WS_PIECES)
    array = "[" + ws + f"{ws},{draw(_WS_PIECES)}".join(draw(st.lists(entry, max_size=6))) + "]"
    shape = draw(st.sampled_from(["array", "array", "wrapped", "object", "scalar"]))
    if shape == "wrapped":
        extra = draw(st.lists(st.tuples(_KEYS, values), max_size=2))
        members = [f'"retrieved":{ws}{array}', *(f"{k}:{v}" for k, v in extra)]
        text = "{" + ",".join(draw(st.permutations(members))) + "}"
    elif shape == "object":
        text = draw(_json_objects(values))
    elif shape == "scalar":
        text = draw(st.one_of(_SCALARS, _STRINGS))
    else:
        text = array
    pad = st.text(st.sampled_from(list(_PHP_TRIM)), max_size=3)
    text = draw(pad) + text + draw(pad)
    mutation = draw(st.sampled_from(["none", "none", "none", "drop", "insert", "cut"]))
    if text and mutation != "none":
        at = draw(st.integers(0, len(text) - 1))
        if mutation == "drop":
            text = text[:at] + text[at + 1 :]
        elif mutation == "insert":
            text = text[:at] + draw(st.sampled_from(list('[]{}",:\\ 0a'))) + text[at:]
        else:
            text = text[:at]
    return text


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_retrieval_texts(), min_size=1, max_size=12))
def test_scanner_reads_every_row_as_json_loads_does(texts: list[str]) -> None:
    _check_against_loads(texts)


@pytest.mark.parametrize(
    "text",
    [
        '["a","b","a"]',
        '[{"id":"a","id":"b","text":"x","text":7}]',
        '[{"id":7,"id":"a"}]',
        '[{"id":"a","id":7}]',
        '{"retrieved":["a"],"retrieved":["b"]}',
        '{"retrieved":5,"retrieved":["b"]}',
        '{"retrieved":[01],"retrieved":[]}',
        '{"retrieved":["a"],"other":{"nested":[1]}}',
        '{"0":"a","1":"b"}',
        '{"1":"a"}',
        '[{"\\u0069d":"a","te\\u0078t":"t"}]',
        '["a"]\x00',
        '\x0b ["a"] \x0b',
        '["a"] ["b"]',
        '["a",]',
        '[,"a"]',
        '["a" "b"]',
        '[{"id":"a",}]',
        '[{"id":"a" "text":"t"}]',
        '{"retrieved":["a"]} x',
        "{}",
        "{ }",
        "[ ]",
        "",
        "[" * 5000 + "]" * 5000,
        '["\\ud83d\\ude00", "\\uD83D\\uDE00"]',
    ],
)
def test_scanner_edge_cases_agree_with_json_loads(text: str) -> None:
    _check_against_loads([text])


def test_scanner_reads_huge_lists_and_sliced_columns() -> None:
    rng = np.random.default_rng(7)
    ids = [f'doc-{i}-\u00e9"\\{chr(0x1F600 + i % 50)}' for i in rng.integers(0, 10**9, 200_000)]
    objects = [{"id": i, "text": f"passage {i}", "score": 0.5} for i in ids[:50_000]]
    texts = [
        json.dumps(ids),
        json.dumps(ids, ensure_ascii=False, indent=2),
        json.dumps({"retrieved": objects, "latency_ms": 12}),
        json.dumps(ids[:10]),
    ]
    _check_against_loads(texts)
    column = pl.Series(["junk", *texts[3:], *texts[:3]])
    whole = retrieval.parse_retrieval(column)
    assert whole.slice(1).equals(retrieval.parse_retrieval(column.slice(1)))


def test_well_formed_json_never_takes_the_per_row_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    """Escapes, pretty printing, objects with extra members and wrappers are all read by the
    compiled scanner; only rows that break a rule take the exact (per distinct string) reader."""
    from evalframe.metrics import _retrieval_input

    calls: list[str] = []
    reader = _retrieval_input._read_retrieval

    def counting(text: str) -> Any:
        calls.append(text)
        return reader(text)

    monkeypatch.setattr(_retrieval_input, "_read_retrieval", counting)
    good = [
        json.dumps(["caf\u00e9", 'say "hi"', "\U0001f600"]),
        json.dumps(["a", "b"], indent=2),
        json.dumps([{"id": "a\u00e9", "text": "x\ny", "score": 0.5, "rank": 1, "ok": True}]),
        json.dumps({"retrieved": ["a"], "latency_ms": 3.5, "model": "bm25"}),
        '\t [ "a" ,"b" ] \n',
        '[""]',
    ]
    parsed = retrieval.parse_retrieval(pl.Series(good * 1000))
    assert calls == []
    assert parsed.get_column("ids").to_list()[:5] == [
        ["caf\u00e9", 'say "hi"', "\U0001f600"],
        ["a", "b"],
        ["a\u00e9"],
        ["a"],
        ["a", "b"],
    ]
    assert parsed.get_column("error").to_list()[5] == _ENTRY
    bad = ['["a",]', "nope", '["\\ud800"]', '{"retrieved":{"0":"a"}}']
    errors = retrieval.parse_retrieval(pl.Series(bad * 100)).get_column("error").to_list()
    assert sorted(calls) == sorted(bad)  # once per distinct string
    assert errors[:4] == [
        "retrieval actualOutput is not valid JSON: Syntax error.",
        "retrieval actualOutput is not valid JSON: Syntax error.",
        "retrieval actualOutput is not valid JSON: Single unpaired UTF-16 surrogate in unicode "
        "escape.",
        None,
    ]


def test_scanner_threads_split_rows_without_losing_any() -> None:
    """Enough rows for several threads: every row still matches json.loads, fallbacks too."""
    rng = np.random.default_rng(11)
    shapes = [
        lambda i: json.dumps([f"d{i}", f"caf\u00e9{i % 7}", f"d{i}"]),
        lambda i: json.dumps({"retrieved": [{"id": f"d{i}", "text": "t"}], "n": i}, indent=1),
        lambda i: f'["d{i}",]',
        lambda i: "[]" if i % 2 else '[""]',
        lambda i: json.dumps([f"d{j}" for j in range(i % 300)]),
    ]
    texts = [shapes[k](i) for i, k in enumerate(rng.integers(0, len(shapes), 40_000))]
    _check_against_loads(texts)
