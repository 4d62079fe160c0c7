"""Importers: other tools' files to an evalframe dataset and saved outputs, rescored here.

The Ragas, DeepEval, Inspect and promptfoo fixtures were written by those tools themselves
(tests/data/importers/PROVENANCE.md names the versions and the scripts); the Hugging Face files
are written by the real ``datasets`` library in the tests.
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


@pytest.mark.parametrize("file", ["ragas_capitals.jsonl", "ragas_capitals.csv"])
def test_ragas(tmp_path: Path, file: str) -> None:
    # written by ragas itself (EvaluationDataset.to_jsonl / to_csv; see PROVENANCE.md)
    to, outs = tmp_path / "ragas.yaml", tmp_path / "ragas.outputs.json"
    imported = ef.io.from_ragas(DATA / file, to=to, outputs=outs)
    assert imported.dataset.height == 2
    doc = json.loads(outs.read_text())
    assert doc["outputs"] == [
        {
            "id": "0",
            "actual_output": "The capital of France is Paris.",
            "contexts": ["Paris is the capital and largest city of France."],
        },
        {
            "id": "1",
            "actual_output": "Munich, I think.",
            "contexts": ["Munich is the capital of Bavaria.", "Berlin is Germany's capital."],
        },
    ]
    dataset = ef.read_dataset(to)
    assert dataset.name == "ragas_capitals"
    assert json.loads(dataset.get_column("input")[1]) == {
        "question": "What is the capital of Germany?"
    }
    assert json.loads(dataset.get_column("metadata")[0]) == {
        "reference_contexts": ["Paris is the capital of France."]
    }
    assert dataset.get_column("expected_output").to_list() == ["Paris", "Berlin"]
    assert _verdicts(to, outs, "contains") == {"0": True, "1": False}


def test_deepeval_trajectory_and_contexts(tmp_path: Path) -> None:
    # written by deepeval itself (EvaluationDataset.save_as; see PROVENANCE.md)
    to, outs = tmp_path / "d.yaml", tmp_path / "d.outputs.json"
    ef.io.from_deepeval(DATA / "deepeval_test_cases.json", to=to, outputs=outs)
    entries = {e["id"]: e for e in json.loads(outs.read_text())["outputs"]}
    assert entries["0"]["trajectory"] == {
        "tool_calls": [{"name": "policy_search", "arguments": {"topic": "returns"}}]
    }
    assert entries["0"]["contexts"] == ["Items can be returned within 30 days of delivery."]
    assert "trajectory" not in entries["1"]
    dataset = ef.read_dataset(to)
    meta = {sid: json.loads(m) for sid, m in dataset.select("sample_id", "metadata").iter_rows()}
    assert meta["0"] == {
        "context": ["Returns policy, section 2"],
        "trajectory": {"tools": ["policy_search"]},
        "additional_metadata": {"team": "support"},
    }
    assert json.loads(dataset.get_column("input")[1]) == {
        "question": "How long does shipping take?"
    }
    assert _verdicts(to, outs, "contains") == {"0": True, "1": False}
    # goldens: a dataset without outputs
    imported = ef.io.from_deepeval(DATA / "deepeval_goldens.json")
    assert imported.outputs is None
    assert imported.dataset.get_column("expected_output").to_list() == [
        "Yes, to 40 countries.",
        "Yes, for business accounts.",
    ]


def test_inspect_log_every_epoch(tmp_path: Path) -> None:
    # written by inspect_ai itself (mockllm, a lookup tool, 2 epochs; see PROVENANCE.md)
    to, outs = tmp_path / "i.yaml", tmp_path / "i.outputs.json"
    imported = ef.io.from_inspect(DATA / "inspect_capitals.json", to=to, outputs=outs)
    assert imported.dataset.name == "capitals"  # the task's name
    log = json.loads((DATA / "inspect_capitals.json").read_text("utf-8"))
    dataset = ef.read_dataset(to)
    inputs = dict(dataset.select("sample_id", "input").iter_rows())
    assert json.loads(inputs["de"]) == {"question": "Capital of Germany?"}
    assert dict(dataset.select("sample_id", "expected_output").iter_rows()) == {
        "fr": "Paris",
        "de": "Berlin",
    }
    assert imported.variant_files == {"epoch1": outs, "epoch2": tmp_path / "i.outputs.epoch2.json"}
    # each epoch's completions, as Inspect logged them
    for epoch in (1, 2):
        logged = {s["id"]: s["output"]["completion"] for s in log["samples"] if s["epoch"] == epoch}
        frame = imported.variants[f"epoch{epoch}"]
        assert dict(frame.select("sample_id", "actual_output").iter_rows()) == logged
    entries = {e["id"]: e for e in json.loads(outs.read_text())["outputs"]}
    assert entries["de"]["trajectory"] == {
        "tool_calls": [{"name": "lookup", "arguments": {"country": "Germany"}, "result": "Berlin"}],
        "steps": 2,
        "finish_reason": "stop",
    }
    meta = dict(dataset.select("sample_id", "metadata").iter_rows())
    assert json.loads(meta["de"])["inspect_scores"] == {"includes": "I"}
    # Rescoring here agrees with Inspect's own verdicts (includes: C correct, I incorrect)
    for epoch in (1, 2):
        theirs = {
            s["id"]: s["scores"]["includes"]["value"] == "C"
            for s in log["samples"]
            if s["epoch"] == epoch
        }
        assert _verdicts(to, imported.variant_files[f"epoch{epoch}"], "contains") == theirs


def test_promptfoo_every_prompt_and_provider_pair(tmp_path: Path) -> None:
    # written by promptfoo itself (echo provider, 2 prompts x 2 providers; see PROVENANCE.md)
    to, outs = tmp_path / "p.yaml", tmp_path / "p.outputs.json"
    imported = ef.io.from_promptfoo(DATA / "promptfoo_results.json", to=to, outputs=outs)
    assert imported.dataset.get_column("sample_id").to_list() == ["0", "1"]
    dataset = ef.read_dataset(to)
    assert dataset.get_column("input").to_list() == [
        '{"country":"France"}',
        '{"country":"Germany"}',
    ]
    # the first assertion that names an expected value: "contains France", "equals Berlin"
    assert dataset.get_column("expected_output").to_list() == ["France", "Berlin"]
    labels = ["prompt0-echo-a", "prompt1-echo-a", "prompt2-echo-b", "prompt3-echo-b"]
    assert list(imported.variants) == labels
    assert imported.variant_files == {
        "prompt0-echo-a": outs,
        **{label: tmp_path / f"p.outputs.{label}.json" for label in labels[1:]},
    }
    # the echo provider answers with the prompt: each pair's outputs are its own prompt
    assert ef.read_outputs(outs).get_column("actual_output").to_list() == [
        "Capital of France?",
        "Capital of Germany?",
    ]
    second = ef.read_outputs(imported.variant_files["prompt1-echo-a"])
    assert second.get_column("actual_output").to_list() == [
        "Name the capital city of France in one word.",
        "Name the capital city of Germany in one word.",
    ]
    for label in labels:
        assert imported.variants[label].get_column("latency_ms").null_count() == 0
    # rescored here, contains agrees with promptfoo's own verdicts on the first pair
    doc = json.loads((DATA / "promptfoo_results.json").read_text("utf-8"))
    theirs = {
        str(r["testIdx"]): r["success"] for r in doc["results"]["results"] if r["promptIdx"] == 0
    }
    assert _verdicts(to, outs, "contains") == theirs == {"0": True, "1": False}


def test_convert_lists_every_set_of_outputs(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli,
        ["convert", "--from", "promptfoo", str(DATA / "promptfoo_results.json"),
         "--to", str(tmp_path / "p.yaml"), "--outputs", str(tmp_path / "out.json")],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "4 sets of outputs, one file each:" in result.output
    assert f"prompt3-echo-b: {tmp_path / 'out.prompt3-echo-b.json'}" in result.output


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


@pytest.mark.parametrize(
    ("record", "field"),
    [
        ({"user_input": "q\\ud800", "response": "a", "reference": "r"}, "input"),
        ({"user_input": "q", "response": "a\\udc00", "reference": "r"}, "actual_output"),
        ({"user_input": "q", "response": "a", "reference": "r\\udbff"}, "expected_output"),
    ],
)
def test_a_lone_surrogate_in_the_source_names_its_row_and_field(
    tmp_path: Path, record: dict[str, str], field: str
) -> None:
    # Written before anything else: the dataset and outputs files are never half made.
    source = tmp_path / "ragas.json"
    source.write_text("[" + json.dumps({"user_input": "fine", "response": "a"}) + ", " + "{"
        + ", ".join(f'"{k}": "{v}"' for k, v in record.items()) + "}]")  # fmt: skip
    with pytest.raises(DatasetError) as excinfo:
        ef.io.from_ragas(source, to=tmp_path / "d.yaml", outputs=tmp_path / "o.json")
    assert str(excinfo.value).startswith(f"{source}: row 1 (sample '1') holds a lone surrogate ")
    assert str(excinfo.value).endswith(f" in field '{field}'; text must be valid Unicode.")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ragas.json"]


def test_in_memory_result_scores_like_the_files(tmp_path: Path) -> None:
    imported = ef.io.from_promptfoo(DATA / "promptfoo_results.json")
    assert imported.outputs is not None
    run = ef.evaluate(imported.dataset, outputs=imported.outputs, metrics=["contains"])
    assert run.scores.filter(pl.col("passed")).get_column("sample_id").to_list() == ["0"]
