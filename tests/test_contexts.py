"""Retrieved contexts as data: read from saved outputs and systems, reference contexts in
datasets, stored with the run, and bad shapes reported with file, sample and field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import evalframe as ef
from evalframe.core._contexts import parse_contexts, reference_contexts
from evalframe.core._errors import DatasetError
from evalframe.core._outputs import read_outputs
from evalframe.core._system import call_system

LIST = pl.List(pl.String)


def _dataset() -> ef.Dataset:
    return ef.Dataset.from_records(
        [
            {"id": "a", "input": {"question": "qa"}, "expected_output": "A"},
            {"id": "b", "input": {"question": "qb"}, "expected_output": "B"},
        ],
        name="rag",
    )


def test_json_list_entries_give_contexts_and_ids(tmp_path: Path) -> None:
    file = tmp_path / "out.json"
    file.write_text(
        json.dumps(
            {
                "outputs": [
                    {
                        "id": "a",
                        "actual_output": "A",
                        "contexts": ["one", {"id": 7, "text": "two"}],
                    },
                    {"id": "b", "actual_output": "B"},
                ]
            }
        )
    )
    out = read_outputs(file)
    assert out.schema["contexts"] == LIST
    assert out.schema["context_ids"] == LIST
    assert out["contexts"].to_list() == [["one", "two"], None]
    assert out["context_ids"].to_list() == [[None, "7"], None]


def test_jsonl_csv_and_parquet_columns(tmp_path: Path) -> None:
    jsonl = tmp_path / "out.jsonl"
    jsonl.write_text('{"id": "a", "actual_output": "A", "contexts": ["x", "y"]}\n')
    assert read_outputs(jsonl)["contexts"].to_list() == [["x", "y"]]
    assert "context_ids" not in read_outputs(jsonl).columns  # no id given
    csv = tmp_path / "out.csv"
    pl.DataFrame(
        {"sample_id": ["a", "b"], "actual_output": ["A", "B"], "contexts": ['["x", "y"]', None]}
    ).write_csv(csv)
    assert read_outputs(csv)["contexts"].to_list() == [["x", "y"], None]
    parquet = tmp_path / "out.parquet"
    pl.DataFrame(
        {"sample_id": ["a", "b"], "actual_output": ["A", "B"], "contexts": [["x"], []]}
    ).write_parquet(parquet)
    assert read_outputs(parquet)["contexts"].to_list() == [["x"], []]


@pytest.mark.parametrize(
    ("contexts", "problem"),
    [
        ("text", "field 'contexts' must be a list of strings or of {id, text} objects; got str."),
        (
            [1],
            "field 'contexts' item 0 must be a string or an object with a string 'text'; got int.",
        ),
        (
            [{"id": "x"}],
            "field 'contexts' item 0 must be a string or an object with a string 'text'; got null.",
        ),
        (
            [{"id": True, "text": "t"}],
            "field 'contexts' item 0 'id' must be a string or an integer; got bool.",
        ),
    ],
)
def test_bad_contexts_name_file_sample_and_field(
    tmp_path: Path, contexts: Any, problem: str
) -> None:
    file = tmp_path / "out.json"
    file.write_text(
        json.dumps({"outputs": [{"id": "a", "actual_output": "A", "contexts": contexts}]})
    )
    with pytest.raises(DatasetError) as err:
        read_outputs(file)
    assert str(err.value) == (f"{file}: Saved outputs entry at index 0 (sample 'a') {problem}")


def test_csv_cell_that_is_not_json_is_an_error(tmp_path: Path) -> None:
    csv = tmp_path / "out.csv"
    pl.DataFrame({"sample_id": ["a"], "actual_output": ["A"], "contexts": ["[oops"]}).write_csv(csv)
    with pytest.raises(DatasetError, match=r"sample 'a'\) field 'contexts' is not a JSON list"):
        read_outputs(csv)


def test_a_system_may_return_output_and_contexts() -> None:
    frame = pl.DataFrame(
        {"sample_id": ["a", "b", "c"], "input": ['{"q": 1}', '{"q": 2}', '{"q": 3}']}
    )

    def system(inp: dict[str, Any]) -> Any:
        if inp["q"] == 1:
            return {"output": "one", "contexts": ["c1", {"id": "d2", "text": "c2"}]}
        if inp["q"] == 2:
            return "two"
        return {"output": "three", "contexts": "not a list"}

    out = call_system(frame, system, concurrency=1)
    assert out["actual_output"].to_list() == ["one", "two", None]
    assert out["contexts"].to_list() == [["c1", "c2"], None, None]
    assert out["context_ids"].to_list() == [[None, "d2"], None, None]
    assert out["system_error"].to_list()[2] == (
        "System-under-test for sample 'c' returned 'contexts' that must be a list of strings "
        "or of {id, text} objects; got str."
    )
    bare = call_system(frame.head(1), lambda inp: {"contexts": []})
    assert bare["system_error"][0].startswith(
        "System-under-test for sample 'a' returned a mapping without 'output'"
    )


def test_dataset_reference_contexts_go_to_metadata(tmp_path: Path) -> None:
    ds = ef.Dataset.from_records(
        [
            {
                "id": "a",
                "input": {},
                "expected_output": "A",
                "reference_contexts": ["r1", {"id": 3, "text": "r2"}],
            },
            {"id": "b", "input": {}, "expected_output": "B"},
        ],
        name="d",
    )
    meta = [json.loads(m) for m in ds["metadata"].to_list()]
    assert meta[0] == {"reference_contexts": ["r1", "r2"], "reference_context_ids": [None, "3"]}
    assert ds.select(reference_contexts()).to_series().to_list() == [["r1", "r2"], None]
    csv = tmp_path / "d.csv"
    pl.DataFrame(
        {"id": ["a"], "input": ["q"], "expected_output": ["A"], "reference_contexts": ['["r"]']}
    ).write_csv(csv)
    assert json.loads(ef.read_dataset(csv)["metadata"][0]) == {"reference_contexts": ["r"]}
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"id": "z", "input": {}, "expected_output": "Z", "reference_contexts": {"a": 1}}\n'
    )
    with pytest.raises(DatasetError) as err:
        ef.read_dataset(bad)
    assert str(err.value) == (
        f"{bad}: Sample 'z' (index 0) field 'reference_contexts' must be a list of strings or "
        "of {id, text} objects; got map."
    )


def test_contexts_are_stored_with_the_run_and_survive_export(tmp_path: Path) -> None:
    outputs = pl.DataFrame(
        {
            "sample_id": ["a", "b"],
            "actual_output": ["A", "B"],
            "contexts": [["x", "y"], []],
        }
    )
    db = tmp_path / "runs.duckdb"
    run = ef.evaluate(_dataset(), outputs=outputs, metrics=["exact-match"], store=db)
    store = ef.Store(db)
    assert store.load(run.run_id).frame["contexts"].to_list() == [["x", "y"], []]
    exported = store.export(run.run_id, tmp_path / "export")
    other = ef.Store(tmp_path / "other.duckdb")
    (imported,) = other.import_runs(exported)
    assert other.load(imported).frame["contexts"].to_list() == [["x", "y"], []]
    rescored = store.rescore(["exact-match(threshold=0.9)"], runs=run.run_id)
    assert store.load(rescored[0]).frame["contexts"].to_list() == [["x", "y"], []]


def test_parse_contexts_doctest_shapes() -> None:
    assert parse_contexts(None) is None
    assert parse_contexts("", from_text=True) is None
    assert parse_contexts([]) == ([], [])
