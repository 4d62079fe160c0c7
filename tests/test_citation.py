"""citation-groundedness: marker and evidence modes (reference §2.9), every validation rule,
normalisation, and details that carry counts only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import evalframe as ef

METRIC = "citation-groundedness"


def _frame(metadata: list[Any], actual: list[str]) -> pl.DataFrame:
    n = len(actual)
    return pl.DataFrame(
        {
            "sample_id": [f"s{i}" for i in range(n)],
            "input": ["{}"] * n,
            "expected_output": ["ignored"] * n,
            "expected_type": ["string"] * n,
            "metadata": [json.dumps(m) for m in metadata],
            "tags": [[] for _ in range(n)],
            "actual_output": actual,
        },
        schema_overrides={"tags": pl.List(pl.String)},
    )


def _rows(metadata: list[Any], actual: list[str]) -> list[dict[str, Any]]:
    rows = ef.score(_frame(metadata, actual), [ef.metrics.get(METRIC)]).to_dicts()
    for row in rows:
        row["details"] = json.loads(row["details"]) if row["details"] else None
    return rows


def _one(metadata: Any, actual: str) -> dict[str, Any]:
    return _rows([metadata], [actual])[0]


# --- marker mode ----------------------------------------------------------------------------


def test_marker_mode_scores_the_fraction_of_markers_present() -> None:
    row = _one({"citations": ["[1]", "[2]", "[3]"]}, "As [1] and [3] say.")
    assert row["score"] == pytest.approx(2 / 3)
    assert round(row["score"], 4) == 0.6667
    assert row["details"] == {
        "mode": "citations",
        "required_citation_count": 3,
        "matched_citation_count": 2,
        "missing_citation_count": 1,
    }


def test_a_single_string_is_one_marker() -> None:
    assert _one({"citations": "[doc-7]"}, "see [doc-7]")["score"] == 1.0


def test_markers_are_trimmed_deduplicated_and_non_strings_skipped() -> None:
    row = _one({"citations": [" [1] ", "[1]", "\t", 7, None, ["x"], "[2]"]}, "[1]")
    assert row["details"]["required_citation_count"] == 2
    assert row["score"] == 0.5


def test_markers_match_as_raw_case_sensitive_substrings() -> None:
    assert _one({"citations": ["[A]"]}, "see [a]")["score"] == 0.0
    assert _one({"citations": ["Doc 7"]}, "see Doc  7")["score"] == 0.0
    assert _one({"citations": ["\u00e9"]}, "caf\u00e9")["score"] == 1.0


def test_expected_output_is_ignored() -> None:
    frame = _frame([{"citations": ["[1]"]}], ["[1]"]).with_columns(
        expected_output=pl.lit("[2]"), expected_type=pl.lit("list")
    )
    assert ef.score(frame, [ef.metrics.get(METRIC)]).get_column("score").to_list() == [1.0]


@pytest.mark.parametrize(
    "metadata",
    [{}, {"citations": []}, {"citations": ""}, {"citations": [" ", 3]}, {"citations": 5}],
)
def test_marker_mode_needs_at_least_one_marker(metadata: dict[str, Any]) -> None:
    row = _one(metadata, "anything")
    assert row["score"] is None
    assert row["error"] == (
        "Sample 's0' metadata.citations must contain at least one citation string for "
        "citation-groundedness metric."
    )


# --- evidence mode --------------------------------------------------------------------------


def test_evidence_mode_needs_both_the_citation_and_a_quote() -> None:
    spans = [
        {"citation": "[1]", "quote": "The sky is blue"},
        {"citation": "[2]", "quotes": ["grass is green", "grass is wet"]},
        {"citation": "[3]", "quote": "water is dry"},
        {"citation": "[4]", "quote": "fire is hot"},
    ]
    row = _one(
        {"citation_evidence": spans, "citations": ["ignored"]},
        "[1] the sky is blue. [2] Grass is wet. fire is hot. [3]",
    )
    assert row["score"] == 0.5
    assert row["details"] == {
        "mode": "citation_evidence",
        "required_evidence_count": 4,
        "matched_evidence_count": 2,
        "missing_citation_count": 1,
        "missing_quote_count": 1,
    }


def test_one_span_can_count_in_both_missing_counters() -> None:
    row = _one({"citation_evidence": [{"citation": "[9]", "quote": "absent"}]}, "nothing")
    assert row["details"]["missing_citation_count"] == 1
    assert row["details"]["missing_quote_count"] == 1
    assert row["score"] == 0.0


def test_quotes_match_after_trim_unicode_lowercase_and_whitespace_collapse() -> None:
    spans = [
        {"citation": "[1]", "quote": "  CAF\u00c9\u00a0AU \t\n LAIT  "},
        {"citation": "[2]", "quote": "\u03a3\u039f\u03a6\u0399\u0391"},
    ]
    actual = "[1] Un caf\u00e9 au\u2003lait. [2] \u03c3\u03bf\u03c6\u03b9\u03b1"
    assert _one({"citation_evidence": spans}, actual)["score"] == 1.0


def test_the_citation_itself_stays_case_sensitive_in_evidence_mode() -> None:
    row = _one({"citation_evidence": [{"citation": "[A]", "quote": "x"}]}, "[a] x")
    assert row["score"] == 0.0
    assert row["details"]["missing_citation_count"] == 1


def test_quote_and_quotes_are_unioned() -> None:
    span = {"citation": "[1]", "quote": "first", "quotes": ["second"]}
    assert _one({"citation_evidence": [span]}, "[1] second")["score"] == 1.0


_E = "metadata.citation_evidence"


@pytest.mark.parametrize(
    ("evidence", "message"),
    [
        ([], f"{_E} must be a non-empty list of evidence spans."),
        ({}, f"{_E} must be a non-empty list of evidence spans."),
        ("span", f"{_E} must be a non-empty list of evidence spans."),
        (None, f"{_E} must be a non-empty list of evidence spans."),
        (
            {"a": {"citation": "x", "quote": "y"}},
            f"{_E} must be a non-empty list of evidence spans.",
        ),
        (["span"], f"{_E}[0] must be an object with citation and quote fields."),
        (
            [{"citation": "a", "quote": "b"}, 5],
            f"{_E}[1] must be an object with citation and quote fields.",
        ),
        (
            [{"quote": "b"}],
            f"{_E}[0].citation must be a non-empty string for citation-groundedness metric.",
        ),
        (
            [{"citation": 5, "quote": "b"}],
            f"{_E}[0].citation must be a non-empty string for citation-groundedness metric.",
        ),
        (
            [{"citation": "  ", "quote": "b"}],
            f"{_E}[0].citation must be a non-empty string for citation-groundedness metric.",
        ),
        (
            [{"citation": "a", "quote": ""}],
            f"{_E}[0].quote must be a non-empty string for citation-groundedness metric.",
        ),
        (
            [{"citation": "a", "quote": 3}],
            f"{_E}[0].quote must be a non-empty string for citation-groundedness metric.",
        ),
        (
            [{"citation": "a", "quotes": "b"}],
            f"{_E}[0].quotes must be a list of non-empty strings for citation-groundedness metric.",
        ),
        (
            [{"citation": "a", "quotes": ["b", " "]}],
            f"{_E}[0].quotes[1] must be a non-empty string for citation-groundedness metric.",
        ),
        (
            [{"citation": "a", "quotes": [["b"]]}],
            f"{_E}[0].quotes[0] must be a non-empty string for citation-groundedness metric.",
        ),
        ([{"citation": "a"}], f"{_E}[0] must contain a non-empty quote string or quotes list."),
        (
            [{"citation": "a", "quotes": []}],
            f"{_E}[0] must contain a non-empty quote string or quotes list.",
        ),
    ],
)
def test_every_evidence_validation_rule(evidence: Any, message: str) -> None:
    row = _one({"citation_evidence": evidence, "citations": ["[1]"]}, "[1] b")
    assert row["score"] is None
    assert row["details"] is None
    assert row["error"] == f"Sample 's0' {message}"


def test_a_lone_surrogate_in_a_quote_is_not_valid_utf8() -> None:
    metadata = '{"citation_evidence":[{"citation":"a","quote":"\\ud800"}]}'
    frame = _frame([{}], ["a"]).with_columns(metadata=pl.lit(metadata))
    error = ef.score(frame, [ef.metrics.get(METRIC)]).get_column("error")[0]
    assert error == (
        "Sample 's0' metadata.citation_evidence[0] must be valid UTF-8 for "
        "citation-groundedness metric."
    )


# --- no text in any output ------------------------------------------------------------------

_SECRETS = ["SECRET-CITE-1", "Top Secret Quote", "top secret quote", "SECRET-MARK"]


def _secret_dataset() -> tuple[ef.Dataset, dict[str, str]]:
    records = [
        {
            "id": "e1",
            "input": {"q": "a"},
            "expected_output": "x",
            "metadata": {
                "citation_evidence": [{"citation": "SECRET-CITE-1", "quote": "Top Secret Quote"}]
            },
        },
        {
            "id": "m1",
            "input": {"q": "b"},
            "expected_output": "x",
            "metadata": {"citations": ["SECRET-MARK"]},
        },
        {
            "id": "bad",
            "input": {"q": "c"},
            "expected_output": "x",
            "metadata": {"citation_evidence": [{"citation": "SECRET-CITE-1", "quotes": ["ok", 5]}]},
        },
    ]
    return ef.Dataset.from_records(records, name="secrets"), {"e1": "no", "m1": "no", "bad": "no"}


def test_details_and_errors_never_carry_marker_or_quote_text(tmp_path: Path) -> None:
    dataset, outputs = _secret_dataset()
    run = ef.evaluate(dataset, outputs=outputs, metrics=[METRIC])
    texts = {
        "details and errors": run.scores.select("details", "error").write_csv(),
        "report JSON": run.to_json(),
        "report Markdown": run.to_markdown(),
    }
    assert run.scores.get_column("error").drop_nulls().len() == 1
    for where, text in texts.items():
        for secret in _SECRETS:
            assert secret not in text, (secret, where)
    import duckdb

    path = tmp_path / "runs.duckdb"
    run.save(path)
    with duckdb.connect(str(path)) as con:
        stored = str(con.execute("select * from scores").fetchall())
    for secret in _SECRETS:
        assert secret not in stored


# --- scale and contract ---------------------------------------------------------------------


def test_family_dimension_and_alias() -> None:
    d = ef.metrics.definition(METRIC)
    assert (d.family, d.dimension) == ("citation", "groundedness")
    assert ef.metrics.citation_groundedness().id == METRIC


def test_many_rows_with_shared_and_distinct_metadata() -> None:
    n = 20_000
    metadata = [
        {"citations": [f"[{i % 50}]", "[x]"]}
        if i % 3
        else {"citation_evidence": [{"citation": f"[{i % 7}]", "quote": f"fact {i % 7}"}]}
        for i in range(n)
    ]
    actual = [f"[{i % 50}] Fact  {i % 7} [{i % 7}]" for i in range(n)]
    rows = _rows(metadata, actual)
    assert all(r["error"] is None for r in rows)
    assert {r["score"] for i, r in enumerate(rows) if i % 3} == {0.5}
    assert {r["score"] for i, r in enumerate(rows) if i % 3 == 0} == {1.0}


def test_empty_frame() -> None:
    assert ef.score(_frame([], []), [ef.metrics.get(METRIC)]).height == 0
