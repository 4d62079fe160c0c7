"""read_outputs and align_outputs: eval-harness saved outputs (reference §4) and tables."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import DATA, write

from evalframe import DatasetError
from evalframe.core._dataset import Dataset, read_dataset
from evalframe.core._outputs import align_outputs, read_outputs


def outputs_error(path: Path) -> str:
    with pytest.raises(DatasetError) as excinfo:
        read_outputs(path)
    return str(excinfo.value)


def dataset(*ids: str) -> Dataset:
    return Dataset.from_records(
        [{"id": i, "input": {}, "expected_output": "x"} for i in ids], name="d"
    )


# --- eval-harness documents ---------------------------------------------------------------------


def test_map_form_json() -> None:
    frame = read_outputs(DATA / "outputs.json")
    assert frame.schema == pl.Schema({"sample_id": pl.String, "actual_output": pl.String})
    assert frame.rows() == [
        ("refund-window", "30 days"),
        ("retrieval", '["doc-7"]'),
        ("gains", "{}"),
        ("answer-no", "no"),
    ]


def test_list_form_yaml_with_operational_columns() -> None:
    frame = read_outputs(str(DATA / "outputs.yaml"))
    assert frame.schema == pl.Schema(
        {
            "sample_id": pl.String,
            "actual_output": pl.String,
            "latency_ms": pl.Float64,
            "prompt_tokens": pl.Int64,
            "completion_tokens": pl.Int64,
        }
    )
    assert frame.rows() == [
        ("refund-window", "You have 30 days.", 12.5, 40, None),
        ("retrieval", '["doc-7"]', None, None, None),
        ("gains", "{}", None, None, 3),
        ("answer-no", "no", None, None, None),
    ]


def test_yaml_map_keys_are_ids_as_written(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "o.yaml",
        """\
        outputs:
          1: one
          007: seven
          1.50: x
          true: yes
          "q/2": no
        """,
    )
    assert read_outputs(path).rows() == [
        ("1", "one"),
        ("007", "seven"),
        ("1.50", "x"),
        ("true", "yes"),
        ("q/2", "no"),
    ]


def test_json_numeric_looking_keys_stay_strings(tmp_path: Path) -> None:
    path = write(tmp_path, "o.json", '{"outputs": {"1": "a", "2": "b"}}')
    assert read_outputs(path).get_column("sample_id").to_list() == ["1", "2"]


def test_unknown_extension_tries_json_then_yaml(tmp_path: Path) -> None:
    as_json = write(tmp_path, "o.txt", '{"outputs": [{"id": "a", "actual_output": "x"}]}')
    assert read_outputs(as_json).rows() == [("a", "x")]
    as_yaml = write(tmp_path, "o.out", "outputs:\n  a: x\n")
    assert read_outputs(as_yaml).rows() == [("a", "x")]
    neither = write(tmp_path, "outputs", "outputs: [unclosed\n")
    message = outputs_error(neither)
    assert message.startswith(
        f"{neither}: Saved outputs file could not be parsed as JSON or YAML. JSON error: "
    )
    assert ". YAML error: " in message


def test_json_extension_is_strict_json(tmp_path: Path) -> None:
    path = write(tmp_path, "o.json", "outputs:\n  a: x\n")
    assert outputs_error(path).startswith(f"{path}: Saved outputs file contains invalid JSON: ")


def test_yaml_extension_is_yaml(tmp_path: Path) -> None:
    path = write(tmp_path, "o.yml", "outputs: {a: [unclosed\n")
    assert outputs_error(path).startswith(f"{path}: Saved outputs file contains invalid YAML: ")


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("o.json", "", "Saved outputs file must not be empty."),
        ("o.yaml", " \n\t\n", "Saved outputs file must not be empty."),
        (
            "o.json",
            '[{"id": "a", "actual_output": "x"}]',
            "Saved outputs file must be a JSON/YAML object and must contain an outputs field.",
        ),
        (
            "o.yaml",
            "just text\n",
            "Saved outputs file must be a JSON/YAML object and must contain an outputs field.",
        ),
        (
            "o.yaml",
            "# nothing but a comment\n",
            "Saved outputs file must be a JSON/YAML object and must contain an outputs field.",
        ),
        ("o.json", '{"results": {}}', "Saved outputs file must contain an outputs field."),
        (
            "o.json",
            '{"outputs": "x"}',
            "Saved outputs file must contain an outputs object or list.",
        ),
        ("o.yaml", "outputs:\n", "Saved outputs file must contain an outputs object or list."),
        (
            "o.json",
            '{"outputs": [{"id": "a", "actual_output": "x"}, "b"]}',
            "Saved outputs entry at index 1 must be an object with id and actual_output.",
        ),
        (
            "o.json",
            '{"outputs": [{"actual_output": "x"}]}',
            "Saved outputs entry at index 0 must contain a non-empty string id.",
        ),
        (
            "o.yaml",
            "outputs:\n  - {id: 3, actual_output: x}\n",
            "Saved outputs entry at index 0 must contain a non-empty string id.",
        ),
        (
            "o.json",
            '{"outputs": [{"id": "", "actual_output": "x"}]}',
            "Saved outputs entry at index 0 must contain a non-empty string id.",
        ),
        (
            "o.json",
            '{"outputs": [{"id": "a", "actual_output": null}]}',
            "Saved outputs entry at index 0 (sample 'a') must contain a string actual_output.",
        ),
        (
            "o.json",
            '{"outputs": [{"id": "a"}]}',
            "Saved outputs entry at index 0 (sample 'a') must contain a string actual_output.",
        ),
        (
            "o.json",
            '{"outputs": {"a": 3}}',
            "Saved output for sample 'a' must be a string; got int.",
        ),
        (
            "o.yaml",
            "outputs:\n  a: [x]\n",
            "Saved output for sample 'a' must be a string; got list.",
        ),
        (
            "o.json",
            '{"outputs": {"a": null}}',
            "Saved output for sample 'a' must be a string; got null.",
        ),
        ("o.json", '{"outputs": {"": "x"}}', "Saved outputs contain an empty sample id."),
        ("o.yaml", 'outputs:\n  "": x\n', "Saved outputs contain an empty sample id."),
        (
            "o.json",
            '{"outputs": [{"id": "a", "actual_output": "x"}, {"id": "a", "actual_output": "y"}]}',
            "Duplicate saved output for sample 'a'.",
        ),
        (
            "o.json",
            '{"outputs": {"a": "x", "b": "y", "a": "z"}}',
            "Duplicate saved output for sample 'a'.",
        ),
        ("o.yaml", "outputs:\n  a: x\n  a: z\n", "Duplicate saved output for sample 'a'."),
        ("o.yaml", "outputs:\n  1: x\n  '1': z\n", "Duplicate saved output for sample '1'."),
        (
            "o.json",
            '{"outputs": {}, "outputs": {"a": "x"}}',
            "Saved outputs file has the key 'outputs' more than once.",
        ),
        (
            "o.json",
            '{"outputs": [{"id": "a", "actual_output": "x", "prompt_tokens": 1.5}]}',
            "Saved outputs entry at index 0 (sample 'a') field 'prompt_tokens' must be an "
            "integer; got float 1.5.",
        ),
        (
            "o.json",
            '{"outputs": [{"id": "a", "actual_output": "x", "latency_ms": "fast"}]}',
            "Saved outputs entry at index 0 (sample 'a') field 'latency_ms' must be a number; "
            "got str 'fast'.",
        ),
        (
            "o.json",
            '{"outputs": [{"id": "a", "actual_output": "x", "retries": true}]}',
            "Saved outputs entry at index 0 (sample 'a') field 'retries' must be an integer; "
            "got bool True.",
        ),
    ],
)
def test_saved_outputs_rules(tmp_path: Path, name: str, content: str, message: str) -> None:
    path = write(tmp_path, name, content)
    assert outputs_error(path) == f"{path}: {message}"


def test_repeated_keys_elsewhere_in_yaml_are_invalid_yaml(tmp_path: Path) -> None:
    path = write(tmp_path, "o.yaml", "outputs:\n  - {id: a, id: b, actual_output: x}\n")
    assert outputs_error(path).startswith(
        f"{path}: Saved outputs file contains invalid YAML: while constructing a mapping: "
        "found duplicate key 'id'"
    )


def test_missing_file_and_directory(tmp_path: Path) -> None:
    missing = tmp_path / "none.json"
    assert outputs_error(missing) == (
        f"Saved outputs file {missing} does not exist or is not a regular file."
    )
    assert outputs_error(tmp_path) == (
        f"Saved outputs file {tmp_path} does not exist or is not a regular file."
    )


def test_unreadable_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "o.json", '{"outputs": {}}')

    def refuse(self: Path) -> bytes:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_bytes", refuse)
    with pytest.raises(DatasetError) as excinfo:
        read_outputs(path)
    assert str(excinfo.value) == f"Saved outputs file {path} is not readable."
    assert isinstance(excinfo.value.__cause__, PermissionError)


@pytest.mark.parametrize(
    ("name", "content", "sample", "field"),
    [
        ("o.json", '{"outputs": {"a": "x\\ud800y"}}', "a", "actual_output"),
        ("o.json", '{"outputs": {"a\\udc00": "y", "b": "x"}}', "a\\udc00", "sample_id"),
        ("o.json", '{"outputs": [{"id": "a", "actual_output": "\\udbff"}]}', "a", "actual_output"),
        (
            "o.jsonl",
            '{"id": "a", "actual_output": "x", "contexts": ["ok\\ud800"]}\n',
            "a",
            "contexts",
        ),
        (
            "o.jsonl",
            '{"id": "a", "actual_output": "x", '
            '"trajectory": {"tool_calls": [{"name": "s\\ud800", "arguments": {}}]}}\n',
            "a",
            "trajectory",
        ),
        (
            "o.jsonl",
            '{"id": "a", "actual_output": "x", '
            '"turns": [{"role": "user", "content": "\\ud800"}]}\n',
            "a",
            "turns",
        ),
        ("o.csv", 'sample_id,actual_output,contexts\na,x,"[""\\ud800""]"\n', "a", "contexts"),
    ],
)
def test_a_lone_surrogate_names_the_sample_and_field(
    tmp_path: Path, name: str, content: str, sample: str, field: str
) -> None:
    # JSON can spell half a UTF-16 pair (\\ud800); no UTF-8 text can hold it.
    path = write(tmp_path, name, content)
    message = outputs_error(path)
    assert message.startswith(f"{path}: Saved output for sample '{sample}' (index 0) holds a lone ")
    assert message.endswith(f" in field '{field}'; text must be valid Unicode.")


def test_invalid_utf8(tmp_path: Path) -> None:
    path = write(tmp_path, "o.json", b'{"outputs": {"a": "\xff"}}')
    assert outputs_error(path) == (
        f"{path}: Saved outputs file is not valid UTF-8: byte 0xff at line 1 (byte offset 19) "
        "is invalid start byte."
    )


def test_empty_outputs_map_gives_an_empty_frame(tmp_path: Path) -> None:
    frame = read_outputs(write(tmp_path, "o.json", '{"outputs": {}}'))
    assert frame.shape == (0, 2)
    assert frame.schema == pl.Schema({"sample_id": pl.String, "actual_output": pl.String})


def test_list_entries_may_carry_other_fields(tmp_path: Path) -> None:
    entry = {"id": "a", "actual_output": "x", "note": 1, "extra": {"k": [1]}}
    frame = read_outputs(write(tmp_path, "o.json", json.dumps({"outputs": [entry]})))
    assert frame.rows() == [("a", "x")]


def test_list_entries_trajectory_is_read_not_dropped(tmp_path: Path) -> None:
    # A trajectory block is a column of its own (tests/test_trajectory_data.py has the rest).
    entry = {"id": "a", "actual_output": "x", "trajectory": {"tool_calls": [{"tool": "search"}]}}
    frame = read_outputs(write(tmp_path, "o.json", json.dumps({"outputs": [entry]})))
    assert frame.columns == ["sample_id", "actual_output", "trajectory"]
    assert frame.get_column("trajectory").struct.field("steps").to_list() == [1]


# --- JSONL, CSV, Parquet ------------------------------------------------------------------------


def test_jsonl_outputs(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "o.jsonl",
        '{"sample_id": "a", "actual_output": "x", "cost_usd": 1, "retries": 0}\n'
        "\n"
        '{"id": "b", "actual_output": "", "cost_usd": 0.25}\n',
    )
    frame = read_outputs(path)
    assert frame.schema == pl.Schema(
        {
            "sample_id": pl.String,
            "actual_output": pl.String,
            "cost_usd": pl.Float64,
            "retries": pl.Int64,
        }
    )
    assert frame.rows() == [("a", "x", 1.0, 0), ("b", "", 0.25, None)]


def test_jsonl_errors(tmp_path: Path) -> None:
    path = write(tmp_path, "o.jsonl", '{"id": "a", "actual_output": "x"}\n{nope\n')
    assert outputs_error(path).startswith(f"{path}: Saved outputs line 2 is not valid JSON: ")
    path = write(tmp_path, "p.jsonl", '["a", "x"]\n')
    assert outputs_error(path) == (
        f"{path}: Saved outputs entry at index 0 must be an object with id and actual_output."
    )


def test_csv_outputs(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "o.csv",
        'sample_id,actual_output,latency_ms,prompt_tokens,extra\n1,"a, b",12,7,z\n2,,,, \n',
    )
    frame = read_outputs(path)
    assert frame.schema == pl.Schema(
        {
            "sample_id": pl.String,
            "actual_output": pl.String,
            "latency_ms": pl.Float64,
            "prompt_tokens": pl.Int64,
        }
    )
    assert frame.rows() == [("1", "a, b", 12.0, 7), ("2", "", None, None)]


def test_csv_errors(tmp_path: Path) -> None:
    path = write(tmp_path, "o.csv", "id,answer\na,x\n")
    assert outputs_error(path) == (
        f"{path}: Saved outputs file is missing required column 'actual_output'; "
        "found columns: id, answer."
    )
    path = write(tmp_path, "p.csv", "id,actual_output,prompt_tokens\na,x,1.5\n")
    assert outputs_error(path) == (
        f"{path}: Saved outputs entry at index 0 (sample 'a') field 'prompt_tokens' must be an "
        "integer; got str '1.5'."
    )
    path = write(tmp_path, "q.csv", "id,actual_output\na,x\na,y\n")
    assert outputs_error(path) == f"{path}: Duplicate saved output for sample 'a'."


def test_parquet_outputs(tmp_path: Path) -> None:
    path = tmp_path / "o.parquet"
    pq.write_table(
        pa.table(
            {
                "sample_id": ["a", "b"],
                "actual_output": ["x", "y"],
                "completion_tokens": pa.array([3, None], pa.int32()),
                "latency_ms": pa.array([1, 2], pa.int64()),
            }
        ),
        path,
    )
    frame = read_outputs(path)
    assert frame.columns == ["sample_id", "actual_output", "latency_ms", "completion_tokens"]
    assert frame.rows() == [("a", "x", 1.0, 3), ("b", "y", 2.0, None)]


def test_parquet_errors(tmp_path: Path) -> None:
    path = tmp_path / "o.parquet"
    pq.write_table(
        pa.table({"sample_id": ["a"], "actual_output": pa.array([None], pa.string())}), path
    )
    assert outputs_error(path) == (
        f"{path}: Saved outputs entry at index 0 (sample 'a') must contain a string actual_output."
    )
    pq.write_table(pa.table({"sample_id": [1], "actual_output": ["x"]}), path)
    assert outputs_error(path) == (
        f"{path}: Saved outputs entry at index 0 must contain a non-empty string id."
    )
    pq.write_table(pa.table({"sample_id": ["a"], "actual_output": ["x"], "retries": [0.5]}), path)
    assert outputs_error(path) == (
        f"{path}: Saved outputs entry at index 0 (sample 'a') field 'retries' must be an "
        "integer; got float 0.5."
    )
    junk = write(tmp_path, "j.parquet", b"PAR1 nope")
    assert outputs_error(junk).startswith(f"{junk}: Saved outputs file is not a valid Parquet file")
    empty = write(tmp_path, "e.parquet", b"")
    assert outputs_error(empty) == f"{empty}: Saved outputs file must not be empty."


# --- alignment ----------------------------------------------------------------------------------


def test_align_outputs_reorders_to_dataset_order() -> None:
    ds = read_dataset(DATA / "faq.yaml")
    outputs = read_outputs(DATA / "outputs.yaml").reverse()
    aligned = align_outputs(ds, outputs)
    assert aligned.get_column("sample_id").to_list() == ds.get_column("sample_id").to_list()
    assert aligned.columns == outputs.columns
    assert aligned.row(0) == ("refund-window", "You have 30 days.", 12.5, 40, None)


def test_align_outputs_in_any_order_and_column_order_is_the_joined_frame() -> None:
    ds = read_dataset(DATA / "faq.yaml")
    outputs = read_outputs(DATA / "outputs.yaml")
    assert outputs.get_column("sample_id").equals(ds.get_column("sample_id"))  # in order
    for frame in (outputs, outputs.select(pl.exclude("sample_id"), "sample_id"), outputs[::-1]):
        order = ds.select("sample_id")
        joined = order.join(frame, on="sample_id", how="left", maintain_order="left")
        aligned = align_outputs(ds, frame)
        assert aligned.columns == joined.columns
        assert aligned.equals(joined, null_equal=True)


def test_align_outputs_lists_missing_and_unknown_ids() -> None:
    ds = dataset("a", "b", "c")
    outputs = pl.DataFrame({"sample_id": ["c", "x"], "actual_output": ["1", "2"]})
    with pytest.raises(DatasetError) as excinfo:
        align_outputs(ds, outputs)
    assert str(excinfo.value) == (
        "Saved outputs for dataset 'd' are missing sample ids: a, b. "
        "Saved outputs for dataset 'd' contain unknown sample ids: x."
    )
    with pytest.raises(DatasetError) as excinfo:
        align_outputs(ds, outputs.filter(pl.col("sample_id") != "x"))
    assert str(excinfo.value) == "Saved outputs for dataset 'd' are missing sample ids: a, b."


def test_align_outputs_lists_at_most_twenty_ids() -> None:
    ids = [f"s{i:02d}" for i in range(25)]
    outputs = pl.DataFrame({"sample_id": ["s00"], "actual_output": ["x"]})
    with pytest.raises(DatasetError) as excinfo:
        align_outputs(dataset(*ids), outputs)
    listed = ", ".join(ids[1:21])
    assert str(excinfo.value) == (
        f"Saved outputs for dataset 'd' are missing sample ids: {listed} and 4 more."
    )


def test_align_outputs_checks_the_frame() -> None:
    ds = dataset("a")
    with pytest.raises(DatasetError, match="missing column\\(s\\) actual_output"):
        align_outputs(ds, pl.DataFrame({"sample_id": ["a"]}))
    with pytest.raises(DatasetError, match="Duplicate saved output for sample 'a'"):
        align_outputs(ds, pl.DataFrame({"sample_id": ["a", "a"], "actual_output": ["1", "2"]}))
    with pytest.raises(DatasetError, match="must be String; got Int64"):
        align_outputs(ds, pl.DataFrame({"sample_id": [1], "actual_output": ["1"]}))
    with pytest.raises(DatasetError, match="empty sample id"):
        align_outputs(
            ds,
            pl.DataFrame(
                {"sample_id": [None], "actual_output": ["1"]},
                schema={"sample_id": pl.String, "actual_output": pl.String},
            ),
        )


# --- blank ids --------------------------------------------------------------------------------


@pytest.mark.parametrize("blank", [" ", "\t", " \n"])
def test_a_blank_output_id_is_an_error_in_every_format(tmp_path: Path, blank: str) -> None:
    as_map = write(tmp_path, "m.json", json.dumps({"outputs": {"a": "x", blank: "y"}}))
    assert outputs_error(as_map) == (
        f"{as_map}: Saved outputs contain a blank sample id: key {blank!r} at index 1 of field "
        "'outputs' is only whitespace; an id must be a non-empty string that is not only "
        "whitespace."
    )
    as_list = write(
        tmp_path, "l.yaml", "outputs:\n  - {id: " + json.dumps(blank) + ", actual_output: y}\n"
    )
    assert outputs_error(as_list) == (
        f"{as_list}: Saved outputs entry at index 0 must contain a non-empty string id: field "
        f"'id' holds {blank!r}, which is only whitespace."
    )
    jsonl = write(
        tmp_path,
        "o.jsonl",
        json.dumps({"sample_id": "a", "actual_output": "x"})
        + "\n"
        + json.dumps({"sample_id": blank, "actual_output": "y"})
        + "\n",
    )
    assert outputs_error(jsonl) == (
        f"{jsonl}: Saved outputs entry at index 1 must contain a non-empty string id: field "
        f"'sample_id' holds {blank!r}, which is only whitespace."
    )
    csv = tmp_path / "o.csv"
    pl.DataFrame({"sample_id": [blank], "actual_output": ["y"]}).write_csv(csv)
    assert "entry at index 0 must contain a non-empty string id: field 'sample_id'" in (
        outputs_error(csv)
    )


def test_align_outputs_refuses_a_blank_id_naming_the_row() -> None:
    outputs = pl.DataFrame({"sample_id": ["a", "  "], "actual_output": ["1", "2"]})
    with pytest.raises(DatasetError) as excinfo:
        align_outputs(dataset("a"), outputs)
    assert str(excinfo.value) == (
        "Saved outputs contain an empty sample id: row 1 has '  '; an id must be a non-empty "
        "string, not only whitespace."
    )
