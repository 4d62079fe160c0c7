"""exact-match, contains and regex (reference §2.1-§2.3)."""

from __future__ import annotations

import json

import polars as pl
import pytest

import evalframe as ef


def frame(rows: list[tuple[object, str]]) -> pl.DataFrame:
    """Rows of (expected value, actual output)."""
    n = len(rows)
    kinds = {
        str: "string",
        int: "int",
        float: "float",
        list: "list",
        dict: "map",
        type(None): "null",
    }
    return pl.DataFrame(
        {
            "sample_id": [f"s{i}" for i in range(n)],
            "input": ["{}"] * n,
            "expected_output": [
                e if isinstance(e, str) else json.dumps(e, separators=(",", ":")) for e, _ in rows
            ],
            "expected_type": [kinds[type(e)] for e, _ in rows],
            "metadata": ["{}"] * n,
            "tags": [[] for _ in range(n)],
            "row_hash": ["h"] * n,
            "actual_output": [a for _, a in rows],
        },
        schema_overrides={"tags": pl.List(pl.String)},
    )


def scores(metric: str, rows: list[tuple[object, str]]) -> pl.DataFrame:
    return ef.score(frame(rows), [ef.metrics.get(metric)])


def test_exact_match_is_byte_exact_and_case_sensitive() -> None:
    out = scores(
        "exact-match",
        [("Paris", "Paris"), ("Paris", "paris"), ("Paris", "Paris "), ("é", "e\u0301")],
    )
    assert out.get_column("score").to_list() == [1.0, 0.0, 0.0, 0.0]
    details = json.loads(out.get_column("details")[0])
    assert details == {"expected": "Paris", "actual": "Paris", "match": True}


def test_exact_match_rejects_non_string_expected() -> None:
    out = scores("exact-match", [(42, "42"), (["a"], "a")])
    assert out.get_column("score").to_list() == [None, None]
    assert out.get_column("error").to_list() == [
        "Sample 's0' expected_output must be a string for exact-match metric; got int.",
        "Sample 's1' expected_output must be a string for exact-match metric; got list.",
    ]


def test_an_errored_row_has_no_details() -> None:
    out = scores("exact-match", [(42, "42"), ("a", "a")])
    assert out.get_column("error")[0] is not None
    assert out.get_column("details").to_list()[0] is None
    assert json.loads(out.get_column("details")[1])["match"] is True


def test_contains_is_a_case_sensitive_substring() -> None:
    out = scores("contains", [("30 days", "within 30 days."), ("Days", "30 days"), (" ", "a b")])
    assert out.get_column("score").to_list() == [1.0, 0.0, 1.0]
    assert json.loads(out.get_column("details")[0]) == {
        "expected_substring": "30 days",
        "match": True,
    }


def test_contains_rejects_an_empty_expected_string() -> None:
    out = scores("contains", [("", "anything")])
    assert out.get_column("error")[0] == (
        "Sample 's0' expected_output must not be empty for contains metric."
    )


@pytest.mark.parametrize(
    ("pattern", "actual", "expected"),
    [
        ("/order #[0-9]+/i", "Your ORDER #123 shipped", 1.0),
        ("/order #[0-9]+/", "Your ORDER #123 shipped", 0.0),
        ("/^a.c$/s", "a\nc", 1.0),
        ("/^a.c$/", "a\nc", 0.0),
        ("/^two$/m", "one\ntwo\nthree", 1.0),
        ("#a/b#", "xa/by", 1.0),
        ("/a\\/b/", "a/b", 1.0),
        ("{\\d{3}}", "abc123", 1.0),
        ("/ a b c /x", "abc", 1.0),
        ("/bc/A", "abc", 0.0),
        ("/ab/A", "abc", 1.0),
        ("/école/iu", "ÉCOLE", 1.0),
    ],
)
def test_regex_honours_delimiters_and_flags(pattern: str, actual: str, expected: float) -> None:
    out = scores("regex", [(pattern, actual)])
    assert out.get_column("error")[0] is None
    assert out.get_column("score")[0] == expected


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ("order", "the pattern must be delimited"),
        ("/a/q", "unknown modifier 'q'"),
        ("/(a/", "unclosed group"),
        ("/(a)\\1/", "a backreference or octal escape"),
        ("/(?<=a)b/", "look-around"),
    ],
)
def test_regex_errors_name_the_sample_and_the_engine_reason(pattern: str, reason: str) -> None:
    out = scores("regex", [(pattern, "aab"), ("/ok/", "ok")])
    error = out.get_column("error")[0]
    assert error.startswith(
        "Sample 's0' regex metric could not evaluate expected_output against actual output. "
        "PCRE error: "
    )
    assert reason in error
    assert out.get_column("score").to_list() == [None, 1.0]


def test_pathological_regex_is_scored() -> None:
    # Its speed (linear, not exponential, in the subject) is measured in benchmarks/bench_scale.py.
    subject = "a" * 50_000 + "!"
    out = scores("regex", [("/(a+)+$/", subject), ("/(a|aa)*b/", subject)])
    assert out.get_column("score").to_list() == [0.0, 0.0]


def test_lexical_metrics_keep_one_row_per_sample_in_order() -> None:
    rows = [(f"v{i % 7}", f"v{i % 5}") for i in range(1000)]
    out = scores("exact-match", rows)
    assert out.get_column("sample_id").to_list() == [f"s{i}" for i in range(1000)]
    expected = [1.0 if i % 7 == i % 5 else 0.0 for i in range(1000)]
    assert out.get_column("score").to_list() == expected


def test_regex_groups_rows_by_distinct_pattern_with_the_same_results() -> None:
    patterns = ["/a+b/", "/^x/i", "/(bad/"]
    outputs = ["aab", "Xy", "zzz", "ab"]
    rows = [(patterns[i % 3], outputs[i % 4]) for i in range(3000)]  # grouped path
    few = rows[:12]  # row-by-row path: under 64 rows per pattern
    for subset in (rows, few):
        out = scores("regex", subset)
        expected = []
        for pattern, actual in subset:
            if pattern == "/(bad/":
                expected.append(None)
            elif pattern == "/a+b/":
                expected.append(1.0 if "ab" in actual else 0.0)
            else:
                expected.append(1.0 if actual.lower().startswith("x") else 0.0)
        assert out.get_column("score").to_list() == expected
        assert out.get_column("error").null_count() == len(subset) - expected.count(None)
