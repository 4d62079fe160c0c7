"""environment-robustness, fault-robustness and prompt-robustness(measure=ratio): harness-evals'
documented cases (the ratio and its precomputed per-row form), repetitions, and the ratio
against a plain reference."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evalframe as ef


def scores(
    metric: str,
    samples: list[tuple[str, dict[str, Any], list[str]]],
) -> dict[str, dict[str, Any]]:
    """Score samples (id, metadata, one output per repetition); expected output is "ok"."""
    ds = ef.Dataset.from_records(
        [{"id": sid, "input": {"q": sid}, "expected_output": "ok", "metadata": m}
         for sid, m, _ in samples],
        name="robustness",
    )  # fmt: skip
    outputs = {sid: iter(runs) for sid, _, runs in samples}
    repetitions = len(samples[0][2])
    run = ef.evaluate(
        ds,
        system=lambda sample: next(outputs[sample["q"]]),
        metrics=[metric],
        repetitions=repetitions,
        concurrency=1,
    )
    out: dict[str, dict[str, Any]] = {}
    for r in run.scores.sort("sample_id", "repetition").iter_rows(named=True):
        out.setdefault(r["sample_id"], r | {"details": json.loads(r["details"] or "null")})
    return out


def test_the_ratio_of_perturbed_to_original_accuracy() -> None:
    rows = scores(
        "environment-robustness",
        [
            ("q", {}, ["ok", "ok"]),
            ("q-env1", {"variant_of": "q", "environment": "reorder"}, ["ok", "no"]),
            ("q-env2", {"variant_of": "q", "environment": "dates"}, ["no", "no"]),
            ("q-fault", {"variant_of": "q", "fault": "timeout"}, ["no", "no"]),
        ],
    )
    assert {r["score"] for r in rows.values()} == {0.25}  # 1 of 4 perturbed runs vs 2 of 2
    details = rows["q"]["details"]
    assert details["nominal_runs"] == 2
    assert details["nominal_accuracy"] == 1.0
    assert details["perturbed"] == 4
    assert details["perturbed_accuracy"] == 0.25
    assert details["labels"] == 2
    assert details["metric"] == "exact-match"
    fault = scores(
        "fault-robustness",
        [("q", {}, ["ok"]), ("q-fault", {"variant_of": "q", "fault": "timeout"}, ["ok"])],
    )
    assert fault["q"]["score"] == 1.0


def test_an_original_that_never_passes_scores_one_and_the_ratio_is_capped() -> None:
    rows = scores(
        "fault-robustness",
        [
            ("a", {}, ["no"]),
            ("a-f", {"variant_of": "a", "fault": "x"}, ["no"]),
            ("b", {}, ["ok", "no"]),
            ("b-f", {"variant_of": "b", "fault": "x"}, ["ok", "ok"]),
        ],
    )
    assert rows["a"]["score"] == 1.0
    assert rows["b"]["score"] == 1.0  # 1.0 / 0.5, capped


def test_harness_evals_precomputed_form() -> None:
    rows = scores(
        "environment-robustness",
        [
            ("fails", {"nominal_passed": False, "perturbed_results": [False, False]}, ["ok"]),
            ("half", {"nominal_passed": True, "perturbed_results": [True, False]}, ["ok"]),
            ("empty", {"nominal_passed": True, "perturbed_results": []}, ["ok"]),
            ("partial", {"nominal_passed": True}, ["ok"]),
        ],
    )
    assert rows["fails"]["score"] == 1.0
    assert rows["half"]["score"] == 0.5
    assert rows["half"]["details"]["perturbed"] == 2
    assert rows["empty"]["error"] == (
        "Sample 'empty' has an empty metadata.perturbed_results for environment-robustness metric."
    )
    assert "needs both metadata.nominal_passed" in rows["partial"]["error"]


def test_rows_without_variants_or_without_their_original_are_errors() -> None:
    rows = scores(
        "environment-robustness",
        [
            ("alone", {}, ["ok"]),
            ("orphan", {"variant_of": "gone", "environment": "x"}, ["ok"]),
            ("q", {}, ["ok"]),
            ("q-fault", {"variant_of": "q", "fault": "timeout"}, ["ok"]),
        ],
    )
    assert rows["alone"]["error"] == (
        "Sample 'alone' has no environment variants for environment-robustness metric: link "
        "variants to their original with metadata.variant_of and label each with "
        "metadata.environment."
    )
    assert (
        "metadata.variant_of names 'gone', which is not in the dataset" in (rows["orphan"]["error"])
    )
    assert rows["q"]["error"].startswith("Sample 'q' has no environment variants")


OUTCOMES = st.lists(st.booleans(), min_size=2, max_size=2)


@settings(max_examples=20, deadline=None)
@given(
    st.lists(
        st.tuples(OUTCOMES, st.lists(st.tuples(st.sampled_from(["fault", "environment"]), OUTCOMES),
                                     min_size=1, max_size=3)),
        min_size=1,
        max_size=3,
    )
)  # fmt: skip
def test_the_ratio_matches_a_plain_reference(
    groups: list[tuple[list[bool], list[tuple[str, list[bool]]]]],
) -> None:
    samples: list[tuple[str, dict[str, Any], list[str]]] = []
    for g, (original, variants) in enumerate(groups):
        samples.append((f"g{g}", {}, ["ok" if o else "no" for o in original]))
        for v, (kind, runs) in enumerate(variants):
            meta = {"variant_of": f"g{g}", kind: f"label{v}"}
            samples.append((f"g{g}-v{v}", meta, ["ok" if o else "no" for o in runs]))
    for kind in ("fault", "environment", "prompt"):
        spec = "prompt-robustness(measure=ratio)" if kind == "prompt" else f"{kind}-robustness"
        rows = scores(spec, samples)
        for g, (original, variants) in enumerate(groups):
            # harness-evals' prompt_robustness: every variant of the group counts
            runs = [o for k, rs in variants if kind in (k, "prompt") for o in rs]
            got = rows[f"g{g}"]
            if not runs:
                assert got["score"] is None
                continue
            nominal = sum(original) / len(original)
            want = 1.0 if nominal == 0 else min(1.0, (sum(runs) / len(runs)) / nominal)
            assert got["score"] == pytest.approx(round(want, 6), abs=1e-12)
