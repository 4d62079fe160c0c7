"""Any-of expected answers (``expected_any``): hand-written datasets in every format, the
lexical metrics scoring the best over the answers (against a slow obvious oracle and Google's
rouge-score), and runs saved to and rescored from a store."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner
from rouge_score import rouge_scorer

import evalframe as ef
from evalframe.cli import cli

SAMPLES = [
    {"id": "plain", "input": {"q": "capital of France"}, "expected_output": "Paris"},
    {"id": "any", "input": {"q": "capital of Germany"}, "expected_any": ["Berlin", "berlin city"]},
    {
        "id": "both",
        "input": {"q": "capital of Italy"},
        "expected_output": "Rome",
        "expected_any": ["Roma", "the eternal city"],
    },
    {"id": "none-match", "input": {"q": "x"}, "expected_any": ["alpha", "beta gamma"]},
]
OUTPUTS = {
    "plain": "Paris",
    "any": "It is BERLIN city, of course",
    "both": "roma",
    "none-match": "delta gamma epsilon",
}


def _answers(sample: dict[str, object]) -> list[str]:
    """The oracle's acceptable answers: expected_output (when given), then expected_any."""
    given = sample.get("expected_output")
    found = [given] if isinstance(given, str) else []
    return [*found, *sample.get("expected_any", [])]  # type: ignore[list-item]


def _write(path: Path, fmt: str) -> Path:
    if fmt == "yaml":
        import yaml

        path.write_text(yaml.safe_dump({"name": "caps", "samples": SAMPLES}), encoding="utf-8")
    elif fmt == "json":
        path.write_text(json.dumps(SAMPLES), encoding="utf-8")
    elif fmt == "jsonl":
        path.write_text("\n".join(json.dumps(s) for s in SAMPLES) + "\n", encoding="utf-8")
    else:  # csv: input and expected_any as JSON text, an empty expected_output cell
        rows = [
            {
                "id": s["id"],
                "input": json.dumps(s["input"]),
                "expected_output": s.get("expected_output", ""),
                "expected_any": json.dumps(s["expected_any"]) if "expected_any" in s else "",
            }
            for s in SAMPLES
        ]
        pl.DataFrame(rows).write_csv(path)
    return path


@pytest.mark.parametrize("fmt", ["yaml", "json", "jsonl", "csv"])
def test_hand_written_datasets_carry_the_answers(tmp_path: Path, fmt: str) -> None:
    dataset = ef.read_dataset(_write(tmp_path / f"caps.{fmt}", fmt))
    meta = {sid: json.loads(m) for sid, m in dataset.select("sample_id", "metadata").iter_rows()}
    assert meta["plain"] == {}
    assert meta["any"] == {"expected_any": ["Berlin", "berlin city"]}
    assert meta["both"] == {"expected_any": ["Roma", "the eternal city"]}
    # without expected_output, the first answer is the expected output
    expected = dict(dataset.select("sample_id", "expected_output").iter_rows())
    assert expected == {"plain": "Paris", "any": "Berlin", "both": "Rome", "none-match": "alpha"}


def _oracle(metric: str, sample: dict[str, object], output: str) -> float:
    answers = _answers(sample)
    if metric == "exact-match":
        return float(output in answers)
    if metric == "exact-match(case_sensitive=false)":
        return float(output.lower() in [a.lower() for a in answers])
    if metric == "contains":
        return float(any(a in output for a in answers))
    if metric == "contains(case_sensitive=false)":
        return float(any(a.lower() in output.lower() for a in answers))
    scorer = rouge_scorer.RougeScorer(["rougeL"])
    return max(scorer.score(a, output)["rougeL"].fmeasure for a in answers)


@pytest.mark.parametrize(
    "metric",
    [
        "exact-match",
        "exact-match(case_sensitive=false)",
        "contains",
        "contains(case_sensitive=false)",
        "rouge-l",
    ],
)
def test_a_row_scores_the_best_over_its_answers(tmp_path: Path, metric: str) -> None:
    dataset = ef.read_dataset(_write(tmp_path / "caps.yaml", "yaml"))
    run = ef.evaluate(dataset, outputs=OUTPUTS, metrics=[metric])
    got = dict(run.scores.select("sample_id", "score").iter_rows())
    for sample in SAMPLES:
        want = _oracle(metric, sample, OUTPUTS[str(sample["id"])])
        assert got[sample["id"]] == pytest.approx(want, abs=1e-9), sample["id"]
    assert run.scores.get_column("error").null_count() == run.scores.height


def test_details_name_the_answers_plain_rows_keep_theirs(tmp_path: Path) -> None:
    dataset = ef.read_dataset(_write(tmp_path / "caps.yaml", "yaml"))
    run = ef.evaluate(dataset, outputs=OUTPUTS, metrics=["contains(case_sensitive=false)"])
    details = {s: json.loads(d) for s, d in run.scores.select("sample_id", "details").iter_rows()}
    assert details["plain"] == {"expected_substring": "Paris", "match": True}
    assert details["any"] == {
        "expected_any": ["Berlin", "berlin city"],
        "matched": "Berlin",
        "match": True,
    }
    assert details["both"]["expected_any"] == ["Rome", "Roma", "the eternal city"]
    rouge = ef.evaluate(dataset, outputs=OUTPUTS, metrics=["rouge-l"]).scores
    best = {
        s: json.loads(d).get("best_answer")
        for s, d in rouge.select("sample_id", "details").iter_rows()
    }
    assert best == {"plain": None, "any": "berlin city", "both": "Roma", "none-match": "beta gamma"}


def test_a_list_expected_output_with_answers_scores_from_the_answers(tmp_path: Path) -> None:
    # Inspect and SQuAD keep the whole list; the lexical metrics read the answers beside it
    dataset = ef.Dataset.from_records(
        [{"id": "q", "input": {}, "expected_output": ["a", "b"], "expected_any": ["a", "b"]}],
        name="l",
    )
    run = ef.evaluate(dataset, outputs={"q": "b"}, metrics=["exact-match", "contains"])
    assert run.scores.get_column("score").to_list() == [1.0, 1.0]


def test_an_empty_answer_is_the_rows_error_in_contains(tmp_path: Path) -> None:
    dataset = ef.Dataset.from_records(
        [
            {"id": "e", "input": {}, "expected_output": "x", "expected_any": ["y", ""]},
            {"id": "f", "input": {}, "expected_output": "x"},
        ],
        name="e",
    )
    run = ef.evaluate(dataset, outputs={"e": "y", "f": "x"}, metrics=["contains"])
    errors = dict(run.scores.select("sample_id", "error").iter_rows())
    assert errors["e"] == (
        "Sample 'e' an acceptable answer (expected_output or an expected_any item) is empty; "
        "contains metric needs non-empty answers."
    )
    assert errors["f"] is None


@pytest.mark.parametrize(
    ("field", "message"),
    [
        ({"expected_any": "Paris"}, "field 'expected_any' must be a list of strings"),
        ({"expected_any": ["Paris", 3]}, "field 'expected_any' item 1 must be a string; got int"),
        (
            {"expected_any": ["a"], "metadata": {"expected_any": ["b"]}},
            "disagrees with metadata.expected_any",
        ),
        ({"metadata": {"expected_any": "a"}}, "(metadata.expected_any) must be a list"),
    ],
)
def test_malformed_answers_name_the_sample_and_field(
    tmp_path: Path, field: dict[str, object], message: str
) -> None:
    sample = {"id": "q1", "input": {"q": "x"}, "expected_output": "a", **field}
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(sample) + "\n", encoding="utf-8")
    with pytest.raises(ef.DatasetError) as excinfo:
        ef.read_dataset(path)
    assert str(excinfo.value).startswith(f"{path}: Sample 'q1' (index 0)")
    assert message in str(excinfo.value)


def test_saved_runs_keep_the_answers_and_rescore_with_them(tmp_path: Path) -> None:
    store = tmp_path / "runs.duckdb"
    dataset = ef.read_dataset(_write(tmp_path / "caps.yaml", "yaml"))
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps({"outputs": OUTPUTS}), encoding="utf-8")
    result = CliRunner().invoke(
        cli,
        ["run", str(tmp_path / "caps.yaml"), "--outputs", str(outputs), "-m", "exact-match",
         "--store", str(store)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    result = CliRunner().invoke(
        cli, ["rescore", "--store", str(store), "-m", "contains(case_sensitive=false)"]
    )
    assert result.exit_code == 0, result.output
    scores = ef.Store(store).sql(
        "SELECT sample_id, score FROM scores WHERE metric = 'contains(case_sensitive=false)'"
    )
    want = {
        str(s["id"]): _oracle("contains(case_sensitive=false)", s, OUTPUTS[str(s["id"])])
        for s in SAMPLES
    }
    assert dict(scores.iter_rows()) == want
    assert dataset.height == 4
