"""json-valid, json-schema, json-diff, and the JSON scanner under them (also list-contains and
numeric-diff, the deterministic family, which reads expected lists with the same scanner)."""

from __future__ import annotations

import json
import math

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evalframe as ef
from evalframe.metrics._json_scan import json_leaves

KINDS = {str: "string", bool: "bool", int: "int", float: "float", list: "list", dict: "map"}


def frame(rows: list[tuple[object, str | None]], metadata: list[str] | None = None) -> pl.DataFrame:
    """Rows of (expected value, actual output)."""
    n = len(rows)
    return pl.DataFrame(
        {
            "sample_id": [f"s{i}" for i in range(n)],
            "input": ["{}"] * n,
            "expected_output": [
                e if isinstance(e, str) else json.dumps(e, separators=(",", ":")) for e, _ in rows
            ],
            "expected_type": [KINDS.get(type(e), "null") for e, _ in rows],
            "metadata": metadata or ["{}"] * n,
            "tags": [[] for _ in range(n)],
            "row_hash": ["h"] * n,
            "actual_output": [a for _, a in rows],
        },
        schema_overrides={"tags": pl.List(pl.String), "actual_output": pl.String},
    )


def run(metric: str, rows: list[tuple[object, str | None]], **kw: object) -> pl.DataFrame:
    return ef.score(frame(rows, **kw), [ef.metrics.get(metric)])  # type: ignore[arg-type]


def details(out: pl.DataFrame, i: int) -> dict[str, object]:
    return json.loads(out.get_column("details")[i])  # type: ignore[no-any-return]


# --- the scanner: strict RFC 8259 against Python's json with NaN/Infinity refused ----------------


def _python_valid(text: str) -> bool:
    def refuse(name: str) -> None:
        raise ValueError(name)

    if text.strip(" \t\n\r") != text.strip():  # Python strips more kinds of whitespace
        return False
    try:
        json.loads(text, parse_constant=refuse)
    except (ValueError, RecursionError):
        return False
    return True


JSONISH = st.text(alphabet='{}[]",:0123456789.eE+-tfrulnsa \\/\n\tbu\x01', max_size=30)


@settings(max_examples=800, deadline=None)
@given(st.lists(JSONISH, min_size=1, max_size=20))
def test_scanner_accepts_exactly_what_strict_python_json_accepts(texts: list[str]) -> None:
    status, _ = json_leaves(pl.Series(texts, dtype=pl.String), leaves=False)
    assert status.get_column("valid").to_list() == [_python_valid(t) for t in texts]


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=4)
    ),
    max_leaves=20,
)


def _python_leaves(value: object, path: str = "$") -> list[tuple[str, str]]:
    if isinstance(value, dict):
        if not value:
            return [(path, "empty object")]
        out = []
        for k, v in value.items():
            key = k.replace("\\", "\\\\").replace("'", "\\'")
            out += _python_leaves(v, f"{path}['{key}']")
        return out
    if isinstance(value, list):
        if not value:
            return [(path, "empty array")]
        return [leaf for i, v in enumerate(value) for leaf in _python_leaves(v, f"{path}[{i}]")]
    kind = {type(None): "null", str: "string"}.get(type(value), "number")
    if isinstance(value, bool):
        kind = "true" if value else "false"
    return [(path, kind)]


@settings(max_examples=300, deadline=None)
@given(st.lists(json_values, min_size=1, max_size=5), st.booleans())
def test_scanner_leaves_match_a_recursive_python_walk(values: list[object], ascii_: bool) -> None:
    texts = [json.dumps(v, ensure_ascii=ascii_, indent=None if ascii_ else 1) for v in values]
    status, leaves = json_leaves(pl.Series(texts))
    assert status.get_column("valid").all()
    for i, v in enumerate(values):
        got = leaves.filter(pl.col("row") == i)
        assert list(zip(got["path"], got["kind"], strict=True)) == _python_leaves(v)
        strings = got.filter(pl.col("kind") == "string")
        expected = _strings(v)
        assert strings.get_column("value").to_list() == expected


def _strings(value: object) -> list[str]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return [value] if isinstance(value, str) else []


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        ("1", "1.0", True),
        ("10e-1", "1", True),
        ("-0", "0.000", True),
        ("1.5e3", "1500", True),
        ("0.1", "0.10", True),
        ("12345678901234567890123", "12345678901234567890124", False),
        ("1e400", "1E+400", True),
        ("1e400", "1e401", False),
        ("-1", "1", False),
    ],
)
def test_numbers_compare_by_exact_decimal_value(a: str, b: str, equal: bool) -> None:
    _, leaves = json_leaves(pl.Series([a, b]))
    values = leaves.get_column("value").to_list()
    assert (values[0] == values[1]) is equal


# --- json-valid ---------------------------------------------------------------------------


def test_json_valid_golden_values_and_reasons() -> None:
    deep = "[" * 5000 + "]" * 5000
    out = run(
        "json-valid",
        [
            ("", '{"a": [1, 2.5e-3, "x", null, true]}'),
            ("", "NaN"),
            ("", '{"a": NaN}'),
            ("", "Infinity"),
            ("", "[1,]"),
            ("", "{'a': 1}"),
            ("", ""),
            ("", deep),
            ("", "1e999"),
            ("", "123456789012345678901234567890"),
            ("", '{"a": 1} x'),
            ("", '"tab\there"'),
            ("", "é"),
        ],
    )
    assert out.get_column("score").to_list() == [1, 0, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0]
    assert out.get_column("error").null_count() == out.height
    assert details(out, 1) == {"valid": False, "reason": "unexpected character", "position": 0}
    assert details(out, 2)["position"] == 6
    assert details(out, 6)["reason"] == "empty input"
    assert details(out, 10)["reason"] == "extra data after the JSON value"
    assert details(out, 11)["reason"] == "control character in string"


def test_json_valid_positions_count_characters_not_bytes() -> None:
    out = run("json-valid", [("", '["é", x]')])
    assert details(out, 0)["position"] == 6


# --- json-diff ----------------------------------------------------------------------------


def test_json_diff_is_the_share_of_expected_leaves_matched() -> None:
    out = run(
        "json-diff",
        [
            ({"a": 1, "b": [1, 2], "c": {"d": "x"}},
             '{"a": 1.0, "b": [1, 3], "c": {"d": "x"}, "z": 0}'),
            ({"a": 1}, '{"a": "1"}'),
            ({"a": 1}, "not json"),
            ('{"q": [true, null]}', '{"q":[true,null]}'),
            ([], "[]"),
            ({}, '{"a": 1}'),
            ({"n": 12345678901234567890123}, '{"n": 12345678901234567890124}'),
            ({"k": "é"}, '{"k": "\\u00e9"}'),
        ],
    )  # fmt: skip
    assert out.get_column("score").to_list() == [0.75, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0]
    d = details(out, 0)
    assert (d["matched"], d["total"], d["missing"], d["different"]) == (3, 4, [], ["$['b'][1]"])
    assert details(out, 2)["actual_error"] == "unexpected character at character 0"


def test_json_diff_repeated_keys_keep_the_last_value() -> None:
    out = run("json-diff", [({"a": 2}, '{"a": 1, "a": 2}')])
    assert out.get_column("score").to_list() == [1.0]


def test_json_diff_invalid_expected_is_the_samples_error() -> None:
    out = run("json-diff", [("not json", "{}"), ({"a": 1}, '{"a": 1}')])
    assert out.get_column("score").to_list() == [None, 1.0]
    assert out.get_column("error")[0] == (
        "Sample 's0' expected_output is not valid JSON for json-diff metric: "
        "unexpected character at character 0."
    )


def test_json_diff_handles_deep_nesting() -> None:
    deep = "[" * 3000 + "1" + "]" * 3000
    out = run("json-diff", [(deep, deep), (deep, deep.replace("1", "2"))])
    assert out.get_column("score").to_list() == [1.0, 0.0]


# --- json-schema --------------------------------------------------------------------------

SCHEMA = {
    "type": "object",
    "required": ["id", "tags"],
    "properties": {
        "id": {"type": "integer"},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
    },
}


def test_json_schema_validates_with_path_and_reason() -> None:
    out = run(
        "json-schema",
        [
            (SCHEMA, '{"id": 1, "tags": ["a"]}'),
            (SCHEMA, '{"id": "1", "tags": []}'),
            (SCHEMA, '{"id": 1, "tags": ["a", 2]}'),
            (SCHEMA, '{"tags": []}'),
            (SCHEMA, '{"id": NaN, "tags": []}'),
            (SCHEMA, '{"id": 123456789012345678901234567890, "tags": []}'),
        ],
    )
    assert out.get_column("score").to_list() == [1.0, 0.0, 0.0, 0.0, 0.0, 1.0]
    assert details(out, 1) == {
        "valid": False,
        "path": "$.id",
        "reason": "'1' is not of type 'integer'",
    }
    assert details(out, 2)["path"] == "$.tags[1]"
    assert details(out, 3)["reason"] == "'id' is a required property"
    assert details(out, 4)["reason"] == (
        "output is not valid JSON: unexpected character at character 7"
    )


def test_json_schema_reads_the_schema_from_metadata_first() -> None:
    meta = json.dumps({"json_schema": {"type": "array", "maxItems": 1}})
    out = run("json-schema", [("free text", "[1]"), ("free text", "[1, 2]")], metadata=[meta] * 2)
    assert out.get_column("score").to_list() == [1.0, 0.0]


def test_json_schema_without_a_schema_or_with_a_bad_one_is_an_error() -> None:
    out = run("json-schema", [("just text", "{}"), ({"type": "nope"}, "{}")])
    assert out.get_column("score").to_list() == [None, None]
    errors = out.get_column("error").to_list()
    assert errors[0].startswith("Sample 's0' has no JSON Schema for json-schema metric")
    assert errors[1].startswith("Sample 's1' json-schema metric: invalid JSON Schema at $.type")


def test_json_schema_formats_are_checked_only_on_request() -> None:
    schema = {"type": "string", "format": "email"}
    rows = [(schema, '"not an email"')]
    assert run("json-schema", rows).get_column("score").to_list() == [1.0]
    assert run("json-schema(check_formats=true)", rows).get_column("score").to_list() == [0.0]


def test_json_schema_deep_output_is_an_error_not_a_crash() -> None:
    deep = "[" * 5000 + "]" * 5000
    out = run("json-schema", [({"type": "array"}, deep)])
    assert out.get_column("score").to_list() in ([1.0], [None])


# --- list-contains and numeric-diff (deterministic) --------------------------------------------


def test_list_contains_golden_values() -> None:
    out = run(
        "list-contains",
        [
            (["Paris", "France"], "Paris is the capital of France."),
            (["a", "b", "c"], "a and c"),
            (["x", "x"], "x"),
            (["Paris"], "paris"),
            (["日本"], "東京は日本にある"),
        ],
    )
    assert out.get_column("score").to_list() == [1.0, pytest.approx(2 / 3), 1.0, 0.0, 1.0]
    assert details(out, 1) == {"found": 2, "total": 3, "missing": ["b"]}
    folded = run("list-contains(case_sensitive=false)", [(["Paris"], "paris")])
    assert folded.get_column("score").to_list() == [1.0]


def test_list_contains_rejects_what_is_not_a_list_of_strings() -> None:
    out = run(
        "list-contains", [("text", "t"), ([], "x"), ([1, "a"], "a"), ([["a"]], "a"), ([""], "a")]
    )
    assert out.get_column("score").null_count() == 5
    assert out.get_column("error").to_list() == [
        "Sample 's0' expected_output must be a list for list-contains metric; got string.",
        "Sample 's1' expected_output must not be an empty list for list-contains metric.",
        *[f"Sample 's{i}' expected_output must be a list of non-empty strings for "
          "list-contains metric." for i in (2, 3, 4)],
    ]  # fmt: skip


def test_numeric_diff_golden_values() -> None:
    out = run(
        "numeric-diff",
        [
            (42, "The answer is 42."),
            (3.14, "about 3.14159"),
            ("1,000", "1000 units"),
            (1e6, "1,000,000.0"),
            (5, "-5"),
            (0.1 + 0.2, "0.3"),
            (2.5e-3, "2.5e-3"),
        ],
    )
    assert out.get_column("score").to_list() == [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0]
    d = details(out, 1)
    assert d["actual_number"] == 3.14159
    assert d["expected_number"] == 3.14
    assert math.isclose(d["abs_diff"], 0.00159)  # type: ignore[arg-type]


def test_numeric_diff_tolerances_and_extraction() -> None:
    rows: list[tuple[object, str | None]] = [(3.14, "about 3.14159"), (100, "99 or 101")]
    assert run("numeric-diff(abs_tol=0.01)", rows).get_column("score").to_list() == [1.0, 0.0]
    assert run("numeric-diff(abs_tol=1.0)", rows).get_column("score").to_list() == [1.0, 1.0]
    assert run("numeric-diff(rel_tol=0.001)", rows).get_column("score").to_list() == [1.0, 0.0]
    last = run("numeric-diff(extract=last, abs_tol=1.0)", [(101, "99 or 101")])
    assert last.get_column("score").to_list() == [1.0]
    whole = run("numeric-diff(extract=whole)", [(7, "7"), (7, "7 apples")])
    assert whole.get_column("score").to_list() == [1.0, None]


def test_numeric_diff_unparsable_output_or_expected_is_the_samples_error() -> None:
    out = run("numeric-diff", [(10, "no number here"), ("ten", "10"), ([1], "1")])
    assert out.get_column("score").to_list() == [None, None, None]
    assert out.get_column("error").to_list() == [
        "Sample 's0' numeric-diff metric found no number (first) in actual output no number here.",
        "Sample 's1' expected_output must be a number for numeric-diff metric; got string ten.",
        "Sample 's2' expected_output must be a number for numeric-diff metric; got list [1].",
    ]


def test_numeric_diff_huge_numbers() -> None:
    out = run("numeric-diff", [(1e308, "1e308"), ("1e400", "1e400")])
    assert out.get_column("score").to_list() == [1.0, 1.0]


def test_bad_parameters_are_rejected_at_bind_time() -> None:
    with pytest.raises(ef.MetricError, match=r"parameter 'abs_tol' must be at least 0; got -1\.0"):
        ef.metrics.numeric_diff(abs_tol=-1.0)
    with pytest.raises(ef.MetricError, match="max_paths"):
        ef.metrics.json_diff(max_paths=-1)
