"""Importers: other tools' files to an evalframe dataset and saved outputs, rescored here.

Ragas, DeepEval, Inspect and promptfoo fixtures are hand-written in each tool's layout
(tests/data/importers/PROVENANCE.md); the Hugging Face files are written by the real
``datasets`` library in the tests.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

import evalframe as ef
from evalframe.cli import cli
from evalframe.core._errors import DatasetError

DATA = Path(__file__).parent / "data" / "importers"


def _verdicts(dataset: Path, outputs: Path, metric: str) -> dict[str, bool]:
    run = ef.evaluate(dataset, outputs=outputs, metrics=[metric])
    return dict(run.scores.select("sample_id", "passed").iter_rows())


def test_ragas(tmp_path: Path) -> None:
    to, outs = tmp_path / "ragas.yaml", tmp_path / "ragas.outputs.json"
    imported = ef.io.from_ragas(DATA / "ragas_capitals.jsonl", to=to, outputs=outs)
    assert imported.dataset.height == 2
    doc = json.loads(outs.read_text())
    assert doc["outputs"][0] == {
        "id": "0",
        "actual_output": "The capital of France is Paris.",
        "contexts": [
            "Paris is the capital and largest city of France.",
            "France is in Western Europe.",
        ],
    }
    dataset = ef.read_dataset(to)
    assert dataset.name == "ragas_capitals"
    assert json.loads(dataset.get_column("input")[1]) == {
        "question": "What is the capital of Germany?"
    }
    assert json.loads(dataset.get_column("metadata")[1]) == {
        "reference_contexts": ["Berlin is the capital of Germany."]
    }
    assert _verdicts(to, outs, "contains") == {"0": True, "1": False}


def test_deepeval_trajectory_and_contexts(tmp_path: Path) -> None:
    to, outs = tmp_path / "d.yaml", tmp_path / "d.outputs.json"
    ef.io.from_deepeval(DATA / "deepeval_goldens.json", to=to, outputs=outs)
    entries = {e["id"]: e for e in json.loads(outs.read_text())["outputs"]}
    assert entries["rome-booking"]["trajectory"] == {
        "tool_calls": [
            {"name": "search_restaurants", "arguments": {"city": "Rome"}},
            {"name": "book_table", "arguments": {"party_size": 2}},
        ]
    }
    assert entries["rome-booking"]["contexts"] == ["Da Enzo, Via dei Vascellari 29, Rome."]
    assert "trajectory" not in entries["cancel"]
    dataset = ef.read_dataset(to)
    meta = {sid: json.loads(m) for sid, m in dataset.select("sample_id", "metadata").iter_rows()}
    assert meta["cancel"] == {"trajectory": {"tools": ["cancel_booking"]}}
    assert meta["rome-booking"]["context"] == ["Da Enzo takes bookings until 21:00."]
    assert _verdicts(to, outs, "contains") == {"rome-booking": True, "cancel": False}


def test_inspect_log(tmp_path: Path) -> None:
    to, outs = tmp_path / "i.yaml", tmp_path / "i.outputs.json"
    imported = ef.io.from_inspect(DATA / "inspect_capitals.json", to=to, outputs=outs)
    assert imported.dataset.name == "capitals"  # the task's name
    dataset = ef.read_dataset(to)
    inputs = dict(dataset.select("sample_id", "input").iter_rows())
    assert json.loads(inputs["2"]) == {"question": "What is the capital of Germany?"}
    entries = {e["id"]: e for e in json.loads(outs.read_text())["outputs"]}
    assert entries["1"]["trajectory"] == {
        "tool_calls": [{"name": "lookup", "arguments": {"country": "France"}}],
        "steps": 2,
        "finish_reason": "stop",
    }
    meta = dict(dataset.select("sample_id", "metadata").iter_rows())
    assert json.loads(meta["1"])["inspect_scores"] == {"match": "C"}
    # Rescoring here agrees with Inspect's own verdicts (C and I).
    assert _verdicts(to, outs, "exact-match") == {"1": True, "2": False}


def test_promptfoo_first_prompt_and_provider(tmp_path: Path) -> None:
    to, outs = tmp_path / "p.yaml", tmp_path / "p.outputs.json"
    imported = ef.io.from_promptfoo(DATA / "promptfoo_results.json", to=to, outputs=outs)
    assert imported.dataset.get_column("sample_id").to_list() == ["0", "1"]
    frame = ef.read_outputs(outs)
    assert frame.get_column("latency_ms").to_list() == [412.0, 388.0]
    assert frame.get_column("prompt_tokens").to_list() == [12, 12]
    assert frame.get_column("actual_output").to_list() == ["Paris", "Munich"]
    dataset = ef.read_dataset(to)
    assert dataset.get_column("expected_output").to_list() == ["Paris", "Berlin"]
    assert _verdicts(to, outs, "contains") == {"0": True, "1": False}


def test_hf_save_to_disk_splits_and_parquet(tmp_path: Path) -> None:
    import datasets  # the real library writes the files (test extra)

    rows = {
        "qid": ["a", "b"],
        "prompt": ["2+2?", "3+3?"],
        "gold": ["4", "6"],
        "model_answer": ["4", "7"],
        "passages": [["two plus two is four"], []],
    }
    table = datasets.Dataset.from_dict(rows)
    table.save_to_disk(str(tmp_path / "saved"))
    datasets.DatasetDict({"train": table, "test": table.select([1])}).save_to_disk(
        str(tmp_path / "splits")
    )
    table.to_parquet(str(tmp_path / "rows.parquet"))
    mapping = {
        "qid": "id",
        "prompt": "input.question",
        "gold": "expected_output",
        "model_answer": "actual_output",
        "passages": "contexts",
    }
    for source in ("saved", "rows.parquet"):
        imported = ef.io.from_hf(
            tmp_path / source,
            to=tmp_path / "hf.yaml",
            outputs=tmp_path / "hf.json",
            mapping=mapping,
        )
        assert imported.outputs is not None
        assert imported.outputs.get_column("actual_output").to_list() == ["4", "7"]
        entries = json.loads((tmp_path / "hf.json").read_text())["outputs"]
        assert entries[0]["contexts"] == ["two plus two is four"]
        assert _verdicts(tmp_path / "hf.yaml", tmp_path / "hf.json", "exact-match") == {
            "a": True,
            "b": False,
        }
    split = ef.io.from_hf(tmp_path / "splits", mapping=mapping)  # "test" by default
    assert split.dataset.get_column("sample_id").to_list() == ["b"]
    train = ef.io.from_hf(tmp_path / "splits", mapping=mapping, split="train")
    assert train.dataset.height == 2


def test_cli_convert_with_map(tmp_path: Path) -> None:
    to, outs = tmp_path / "r.yaml", tmp_path / "r.json"
    result = CliRunner().invoke(
        cli,
        [
            "convert", "--from", "ragas", str(DATA / "ragas_capitals.jsonl"),
            "--to", str(to), "--outputs", str(outs),
            "--map", "user_input=input.query", "--map", "reference=metadata.gold",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "wrote 2 sample(s)" in result.output
    dataset = ef.read_dataset(to)
    assert json.loads(dataset.get_column("input")[0]) == {"query": "What is the capital of France?"}
    assert json.loads(dataset.get_column("metadata")[0])["gold"] == "Paris"
    assert dataset.get_column("expected_output").to_list() == ["null", "null"]


@pytest.mark.parametrize(
    ("pairs", "message"),
    [
        (["user_input=input"], "Unknown field 'input'"),
        (["nope=input.q"], "does not have: nope"),
        (["latency=outputs.speed"], "Unknown outputs column"),
        (["user_input"], "expects COLUMN=FIELD"),
        (["user_input=metadata.q"], "has no input field"),
    ],
)
def test_cli_convert_rejects_bad_maps(tmp_path: Path, pairs: list[str], message: str) -> None:
    args = [
        "convert",
        "--from",
        "ragas",
        str(DATA / "ragas_capitals.jsonl"),
        "--to",
        str(tmp_path / "x.yaml"),
    ]
    for pair in pairs:
        args += ["--map", pair]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2
    assert message in result.output


def test_outputs_requested_from_a_source_without_outputs(tmp_path: Path) -> None:
    source = tmp_path / "goldens.json"
    source.write_text(json.dumps([{"input": "hi", "expected_output": "hello"}]))
    with pytest.raises(DatasetError, match="holds no outputs"):
        ef.io.from_deepeval(source, to=tmp_path / "d.yaml", outputs=tmp_path / "o.json")
    imported = ef.io.from_deepeval(source)
    assert imported.outputs is None
    assert imported.dataset.height == 1


def test_in_memory_result_scores_like_the_files(tmp_path: Path) -> None:
    imported = ef.io.from_promptfoo(DATA / "promptfoo_results.json")
    assert imported.outputs is not None
    run = ef.evaluate(imported.dataset, outputs=imported.outputs, metrics=["contains"])
    assert run.scores.filter(pl.col("passed")).get_column("sample_id").to_list() == ["0"]
