"""The metric contract: canonical ids, spec strings, the registry and user metrics."""

from __future__ import annotations

import threading
from typing import Any

import polars as pl
import pytest
from conftest import frame

import evalframe as ef
from evalframe.metrics import Scored
from evalframe.metrics._spec import format_value, parse_spec


def test_canonical_id_lists_only_non_default_parameters() -> None:
    assert ef.metrics.rouge_l().id == "rouge-l"
    assert ef.metrics.rouge_l(beta=2.0).id == "rouge-l(beta=2.0)"
    assert ef.metrics.rouge_l(max_tokens=2048, beta=2).id == "rouge-l(beta=2.0, max_tokens=2048)"


def test_canonical_id_includes_a_non_default_threshold() -> None:
    assert ef.metrics.rouge_l(threshold=0.7).id == "rouge-l(threshold=0.7)"
    assert ef.metrics.get("rouge-l(threshold=0.7)").threshold == 0.7


def test_metric_is_a_frozen_hashable_value() -> None:
    a, b = ef.metrics.get("rouge-l(beta=2.0)"), ef.metrics.rouge_l(beta=2.0)
    assert a == b
    assert hash(a) == hash(b)
    assert {a, b} == {a}
    with pytest.raises(AttributeError):
        a.threshold = 0.1  # type: ignore[misc]


def test_spec_round_trips_through_its_id() -> None:
    for spec in ["rouge-l(beta=2.0)", "rouge-l(max_tokens=2048)", "exact-match(threshold=1.0)"]:
        m = ef.metrics.get(spec)
        assert ef.metrics.get(m.id) == m
        assert m.id == spec


def test_parse_spec_reads_lists_quotes_and_spaces() -> None:
    name, params = parse_spec("ordinal-distance( scale = [low, medium,high], label='a, b' )")
    assert name == "ordinal-distance"
    assert [v.text for v in params["scale"]] == ["low", "medium", "high"]
    assert params["label"].text == "a, b"


@pytest.mark.parametrize(
    "spec",
    ["rouge-l(", "rouge-l(beta)", "rouge-l(beta=)", "rouge-l(beta=1,,)", "(x=1)", "a b"],
)
def test_malformed_specs_raise_metric_error(spec: str) -> None:
    with pytest.raises(ef.MetricError, match="Metric spec"):
        ef.metrics.get(spec)


def test_bad_parameter_values_name_the_parameter() -> None:
    with pytest.raises(ef.MetricError, match="'beta' must be a number; got high"):
        ef.metrics.get("rouge-l(beta=high)")
    with pytest.raises(ef.MetricError, match="'max_tokens' must be an integer"):
        ef.metrics.get("rouge-l(max_tokens=1.5)")
    with pytest.raises(ef.MetricError, match="'max_tokens' must be at least 1; got 0"):
        ef.metrics.rouge_l(max_tokens=0)
    with pytest.raises(ef.MetricError, match="has no parameter 'bta'"):
        ef.metrics.get("rouge-l(bta=2)")
    with pytest.raises(ef.MetricError, match="threshold must be in"):
        ef.metrics.get("rouge-l(threshold=2)")


def test_unknown_metric_suggests_close_names() -> None:
    with pytest.raises(ef.MetricError, match=r"Unknown metric 'rouge_l'.*'rouge-l'"):
        ef.metrics.get("rouge_l")
    with pytest.raises(ef.MetricError, match="Did you mean 'exact-match'"):
        ef.metrics.get("exact-mach")


def test_format_value_quotes_only_when_needed() -> None:
    assert format_value(("low", "high")) == "[low,high]"
    assert format_value("a b") == '"a b"'
    assert format_value(True) == "true"
    assert format_value(2.0) == "2.0"


def test_duplicate_metrics_in_one_run_are_rejected() -> None:
    with pytest.raises(ef.MetricError, match="more than once"):
        ef.metrics.resolve(["exact-match", ef.metrics.exact_match()])


def test_score_takes_specs_as_evaluate_does_and_names_missing_columns() -> None:
    rows = frame(["Paris", "4"], ["Paris", "5"])
    by_spec = ef.score(rows, ["exact-match", ef.metrics.contains, "rouge-l(beta=2.0)"])
    by_value = ef.score(
        rows, [ef.metrics.exact_match(), ef.metrics.contains(), ef.metrics.rouge_l(beta=2.0)]
    )
    assert by_spec.equals(by_value)
    with pytest.raises(ef.MetricError, match="more than once"):
        ef.score(rows, ["contains", "contains"])
    with pytest.raises(ef.DatasetError) as excinfo:
        ef.score(rows.drop("actual_output"), ["contains"])
    assert str(excinfo.value).startswith(
        "The frame to score has no column 'actual_output': every row needs its sample_id and "
        "actual_output"
    )
    assert str(excinfo.value).endswith(f"Found: {', '.join(rows.drop('actual_output').columns)}.")


def test_decorated_user_metric_scores_and_resolves_by_name() -> None:
    @ef.metrics.metric("length-ratio", family="custom", replace=True)
    def length_ratio(*, cap: int = 100) -> Scored:
        """min(len(actual), len(expected)) / max(...), characters."""
        a = pl.col("actual_output").str.len_chars().clip(upper_bound=cap)
        e = pl.col("expected_output").str.len_chars().clip(upper_bound=cap)
        return Scored(score=pl.min_horizontal(a, e) / pl.max_horizontal(a, e, 1))

    scores = ef.score(frame(["abcd", "ab"], ["ab", "ab"]), [ef.metrics.get("length-ratio")])
    assert scores.get_column("score").to_list() == [0.5, 1.0]
    assert length_ratio(cap=3).id == "length-ratio(cap=3)"


def test_registering_an_instance_makes_its_parameters_the_defaults() -> None:
    @ef.metrics.metric("prefix-match", replace=True)
    def prefix_match(*, n: int) -> Scored:
        """Whether the first n characters agree."""
        a, e = pl.col("actual_output"), pl.col("expected_output")
        return Scored(score=(a.str.slice(0, n) == e.str.slice(0, n)).cast(pl.Float64))

    with pytest.raises(ef.MetricError, match="requires the parameter 'n'"):
        ef.metrics.get("prefix-match")
    ef.metrics.register(prefix_match(n=2), replace=True)
    assert ef.metrics.get("prefix-match").kwargs == {"n": 2}


def test_rowwise_jaccard_is_a_dozen_lines_of_user_code() -> None:
    @ef.metrics.rowwise("jaccard-words", replace=True)
    def jaccard(sample: ef.metrics.Sample, actual: str) -> float:
        expected = set(str(sample.expected_output).lower().split())
        got = set(actual.lower().split())
        union = expected | got
        if not union:
            return 0.0
        return len(expected & got) / len(union)

    scores = ef.score(frame(["a b c", "x"], ["a b d", "x"]), [jaccard()])
    assert scores.get_column("score").to_list() == [0.5, 1.0]


def test_rowwise_exceptions_and_out_of_range_scores_are_row_errors() -> None:
    @ef.metrics.rowwise("fragile", replace=True)
    def fragile(sample: ef.metrics.Sample, actual: str) -> float:
        if actual == "boom":
            raise RuntimeError("kaput")
        return 2.0 if actual == "big" else 1.0

    scores = ef.score(frame(["x", "x", "x"], ["boom", "big", "ok"]), [fragile()])
    assert scores.get_column("score").to_list() == [None, None, 1.0]
    errors = scores.get_column("error").to_list()
    assert errors[0] == "Sample 's0' fragile metric failed: kaput"
    assert "Metric score must be in [0.0, 1.0]; got 2.0." in errors[1]


def test_seed_style_object_with_name_and_score_methods() -> None:
    class Always:
        def name(self) -> str:
            return "always-one"

        def score(self, sample: ef.metrics.Sample, actual_output: str) -> ef.metrics.MetricScore:
            return ef.metrics.MetricScore(1.0, {"len": len(actual_output)})

    factory = ef.metrics.from_object(Always())
    scores = ef.score(frame(["x"], ["abc"]), [factory()])
    assert scores.row(0, named=True)["details"] == '{"len": 3}'


def test_a_metric_that_breaks_outright_errors_every_row_and_spares_the_others() -> None:
    @ef.metrics.metric("broken", replace=True)
    def broken() -> Scored:
        """Reads a column that does not exist."""
        return Scored(score=pl.col("no_such_column").cast(pl.Float64))

    scores = ef.score(frame(["a", "b"], ["a", "c"]), [broken(), ef.metrics.exact_match()])
    by = scores.partition_by("metric", as_dict=True)
    assert by[("broken",)].get_column("error").str.starts_with("Metric 'broken' failed").all()
    assert by[("exact-match",)].get_column("score").to_list() == [1.0, 0.0]


def test_concurrent_metrics_score_on_threads_in_order_and_break_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Metrics marked ``concurrent`` run on a pool of threads: the frame is the serial one
    (rows in metric order), and one that breaks, on its thread or while building its
    expressions, errors alone."""
    from evalframe.core import _score

    @ef.metrics.metric("threaded-length", replace=True)
    def threaded_length(*, cap: int = 3) -> Scored:
        """len(actual) / cap, clipped."""
        n = pl.col("actual_output").str.len_chars().clip(upper_bound=cap)
        return Scored(score=n / cap, concurrent=True)

    @ef.metrics.metric("threaded-broken", replace=True)
    def threaded_broken() -> Scored:
        """Reads a column that does not exist."""
        return Scored(score=pl.col("no_such_column").cast(pl.Float64), concurrent=True)

    class Unbuildable:  # the runner's view of a metric whose expressions cannot be built
        id = name = "unbuildable"
        family, dimension, params, threshold, higher_is_better = "custom", "", (), 0.5, True

        def expressions(self) -> Scored:
            raise ValueError("no expressions")

        def derived(self) -> list[Any]:
            return []

        def needs(self) -> list[Any]:
            return []

    metrics = [
        threaded_length(),
        threaded_broken(),
        ef.metrics.exact_match(),
        Unbuildable(),
        threaded_length(cap=1),
    ]
    rows = frame(["a", "bb", "ccc"], ["a", "b", "cccc"])
    serial = _score.score(rows, metrics)
    monkeypatch.setattr(_score, "_CONCURRENT_FROM", 1)
    monkeypatch.setattr(_score, "threads", lambda: 2)
    seen: list[str] = []
    rows_of = _score._metric_rows

    def noting(frame: pl.DataFrame, scored: Any) -> pl.DataFrame:
        seen.append(threading.current_thread().name.split("_")[0])
        return rows_of(frame, scored)

    monkeypatch.setattr(_score, "_metric_rows", noting)
    threaded = _score.score(rows, metrics)
    assert sorted(seen) == ["MainThread", *["evalframe-score"] * 3]
    assert threaded.equals(serial)
    assert threaded.get_column("metric").unique(maintain_order=True).to_list() == [
        m.id for m in metrics
    ]
    by = threaded.partition_by("metric", as_dict=True)
    assert by[("threaded-length",)].get_column("score").to_list() == [1 / 3, 1 / 3, 1.0]
    broken = by[("threaded-broken",)].get_column("error")
    assert broken.str.starts_with("Metric 'threaded-broken' failed: ColumnNotFoundError").all()
    assert (
        by[("unbuildable",)].get_column("error")
        == "Metric 'unbuildable' failed: ValueError: no expressions"
    ).all()
    assert by[("exact-match",)].get_column("score").to_list() == [1.0, 0.0, 0.0]


def test_custom_metric_out_of_range_and_nan_become_errors() -> None:
    @ef.metrics.metric("wild", replace=True)
    def wild() -> Scored:
        """Returns scores outside [0, 1]."""
        return Scored(score=pl.Series([1.5, float("nan"), -0.1, 0.5]).implode().explode())

    scores = ef.score(frame(["a"] * 4, ["a"] * 4), [wild()])
    assert scores.get_column("score").to_list() == [None, None, None, 0.5]
    assert scores.get_column("error").null_count() == 1


def test_every_registered_builtin_has_a_family_dimension_and_summary() -> None:
    assert len(ef.metrics.available()) >= 15
    for d in ef.metrics.available():
        assert d.family, d.name
        assert d.dimension, d.name
        assert d.summary, d.name


def test_the_runner_drops_details_on_every_errored_row() -> None:
    @ef.metrics.metric("chatty", replace=True)
    def chatty() -> Scored:
        """Reports details even on the rows it declares errors."""
        bad = pl.col("actual_output") == "bad"
        return Scored(
            score=pl.when(~bad).then(1.0),
            error=pl.when(bad).then(pl.lit("bad row")),
            details=pl.struct(seen=pl.col("actual_output")),
        )

    scores = ef.score(frame(["x", "x"], ["bad", "ok"]), [chatty()])
    assert scores.get_column("error").to_list() == ["bad row", None]
    assert scores.get_column("details").to_list() == [None, '{"seen":"ok"}']
