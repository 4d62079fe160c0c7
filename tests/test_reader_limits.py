"""Reader limits: nesting depth and YAML alias expansion, in every dataset and outputs format."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import write

from evalframe import DatasetError
from evalframe.core._dataset import read_dataset
from evalframe.core._formats import MAX_ALIAS_NODES, MAX_DEPTH
from evalframe.core._outputs import read_outputs

ROOT = Path(__file__).resolve().parents[1]
DEPTH_MESSAGE = f"nests lists and maps more than {MAX_DEPTH} levels deep"


def nested(levels: int) -> str:
    """JSON (and YAML flow) text of ``levels`` lists, one inside the other."""
    return "[" * levels + "]" * levels


def error_of(read: object, path: Path) -> str:
    with pytest.raises(DatasetError) as excinfo:
        read(path)  # type: ignore[operator]
    return str(excinfo.value)


def test_the_limits_are_the_documented_numbers() -> None:
    assert MAX_DEPTH == 100
    assert MAX_ALIAS_NODES == 100_000
    docs = (ROOT / "docs" / "concepts" / "dataset-schema.md").read_text(encoding="utf-8")
    assert "100 levels" in docs
    assert "100,000 nodes" in docs


# --- nesting: a real process, the 50,000-level YAML that used to kill it --------------------------


def run_options(outputs: Path) -> list[str]:
    return ["--outputs", str(outputs), "-m", "exact-match"]


def test_cli_answers_a_50000_level_yaml_dataset_with_exit_2_and_one_paragraph(
    tmp_path: Path,
) -> None:
    dataset = write(
        tmp_path,
        "deep.yaml",
        "name: d\nsamples:\n  - id: a\n    input: {}\n    expected_output: "
        + nested(50_000)
        + "\n",
    )
    outputs = write(tmp_path, "outputs.json", '{"outputs": {"a": "x"}}')
    proc = subprocess.run(
        [sys.executable, "-m", "evalframe", "run", str(dataset), *run_options(outputs)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=tmp_path,
    )
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr
    message = proc.stderr.strip()
    assert str(dataset) in message
    assert f"{DEPTH_MESSAGE} (line 5)" in message
    assert message.count("\n\n") == 0


def test_cli_answers_a_yaml_outputs_file_that_nests_50000_levels_with_exit_2(
    tmp_path: Path,
) -> None:
    dataset = write(
        tmp_path, "d.yaml", "name: d\nsamples:\n  - {id: a, input: {}, expected_output: x}\n"
    )
    outputs = write(tmp_path, "outputs.yaml", "outputs:\n  a: " + nested(50_000) + "\n")
    proc = subprocess.run(
        [sys.executable, "-m", "evalframe", "run", str(dataset), *run_options(outputs)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=tmp_path,
    )
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr
    assert f"{outputs}: Saved outputs file {DEPTH_MESSAGE} (line 2)" in proc.stderr


# --- nesting: every dataset reader, at the limit and one past it ----------------------------------


def yaml_dataset(tmp_path: Path, levels: int) -> Path:
    # The document is level 1, samples level 2, the sample level 3.
    return write(
        tmp_path,
        "d.yaml",
        "name: d\nsamples:\n  - id: a\n    input: {}\n    expected_output: "
        + nested(levels - 3)
        + "\n",
    )


def json_document(tmp_path: Path, levels: int) -> Path:
    doc = '{"name": "d", "samples": [{"id": "a", "input": {}, "expected_output": @}]}'
    return write(tmp_path, "d.json", doc.replace("@", nested(levels - 3)))


def json_list(tmp_path: Path, levels: int) -> Path:
    doc = '[{"id": "a", "input": {}, "expected_output": @}]'
    return write(tmp_path, "d.json", doc.replace("@", nested(levels - 2)))


def jsonl_lines(tmp_path: Path, levels: int) -> Path:
    first = '{"id": "a", "input": {}, "expected_output": 1}\n'
    second = '{"id": "b", "input": {}, "expected_output": @}\n'.replace("@", nested(levels - 1))
    return write(tmp_path, "d.jsonl", first + second)


def csv_cell(tmp_path: Path, levels: int) -> Path:
    cell = '{""k"": @}'.replace("@", nested(levels - 1))
    return write(tmp_path, "d.csv", f'id,input,expected_output\na,"{cell}",x\n')


@pytest.mark.parametrize(
    ("make", "where"),
    [
        (yaml_dataset, "Dataset YAML {message} (line 5)"),
        (json_document, "Dataset JSON {message} (line 1)"),
        (json_list, "Dataset JSON {message} (line 1)"),
        (jsonl_lines, "Dataset JSONL {message} (line 2)"),
        (csv_cell, "Sample 'a' (index 0) field 'input' {message};"),
    ],
)
def test_datasets_nest_at_most_100_levels_in_every_text_format(
    tmp_path: Path, make: object, where: str
) -> None:
    path = make(tmp_path, MAX_DEPTH)  # type: ignore[operator]
    assert read_dataset(path).height >= 1
    path = make(tmp_path, MAX_DEPTH + 1)  # type: ignore[operator]
    assert f"{path}: " + where.format(message=DEPTH_MESSAGE) in error_of(read_dataset, path)


@pytest.mark.parametrize("make", [json_document, json_list, jsonl_lines, csv_cell])
def test_3000_levels_of_json_are_a_dataset_error_not_a_recursion_error(
    tmp_path: Path, make: object
) -> None:
    path = make(tmp_path, 3000)  # type: ignore[operator]
    message = error_of(read_dataset, path)
    assert message.startswith(f"{path}: ")
    assert DEPTH_MESSAGE in message


def test_brackets_and_escaped_quotes_inside_json_strings_do_not_count(tmp_path: Path) -> None:
    text = ']]]"\\\\[[[[\\"' * 200 + "\\\\"
    value = {"a": [[text]]}
    path = write(
        tmp_path,
        "d.jsonl",
        json.dumps({"id": "a", "input": value, "expected_output": text}) + "\n",
    )
    ds = read_dataset(path)
    assert json.loads(ds.get_column("input")[0]) == value
    assert ds.get_column("expected_output")[0] == text


def parquet_nested(tmp_path: Path, levels: int) -> Path:
    kind: pa.DataType = pa.int64()
    value: object = 1
    for _ in range(levels):
        kind, value = pa.list_(kind), [value]
    table = pa.table(
        {
            "id": ["a"],
            "input": ["q"],
            "expected_output": pa.array([value], kind),
        }
    )
    path = tmp_path / "d.parquet"
    pq.write_table(table, path)
    return path


def test_parquet_nesting_is_capped_by_arrows_own_schema_depth_limit(tmp_path: Path) -> None:
    # Arrow refuses Parquet schemas more than 100 Parquet levels deep (a list takes two), so
    # no Parquet value can nest past evalframe's limit: 49 levels read, 50 are refused.
    path = parquet_nested(tmp_path, 49)
    assert read_dataset(path).get_column("expected_type").to_list() == ["list"]
    path = parquet_nested(tmp_path, 50)
    message = error_of(read_dataset, path)
    assert message.startswith(f"{path}: Dataset Parquet is not a valid Parquet file:")
    assert "too deeply nested" in message


# --- nesting: every outputs reader -------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "template", "top"),
    [
        ("o.json", '{"outputs": [{"id": "a", "actual_output": "x", "extra": @}]}', 3),
        ("o.txt", '{"outputs": [{"id": "a", "actual_output": "x", "extra": @}]}', 3),
        ("o.jsonl", '{"id": "a", "actual_output": "x", "extra": @}\n', 1),
        ("o.yaml", "outputs:\n  - {id: a, actual_output: x, extra: @}\n", 3),
        ("o.yml", "outputs:\n  a: x\nextra: @\n", 1),
    ],
)
def test_outputs_files_nest_at_most_100_levels_in_every_format(
    tmp_path: Path, name: str, template: str, top: int
) -> None:
    path = write(tmp_path, name, template.replace("@", nested(MAX_DEPTH - top)))
    assert read_outputs(path).get_column("sample_id").to_list() == ["a"]
    for levels in (MAX_DEPTH + 1 - top, 3000):
        path = write(tmp_path, name, template.replace("@", nested(levels)))
        message = error_of(read_outputs, path)
        assert message.startswith(f"{path}: Saved outputs file {DEPTH_MESSAGE}")


def test_outputs_parquet_nesting_is_capped_by_arrows_own_schema_depth_limit(
    tmp_path: Path,
) -> None:
    kind: pa.DataType = pa.int64()
    for _ in range(50):
        kind = pa.list_(kind)
    path = tmp_path / "o.parquet"
    table = pa.table({"id": ["a"], "actual_output": ["x"], "extra": pa.array([None], kind)})
    pq.write_table(table, path)
    message = error_of(read_outputs, path)
    assert message.startswith(f"{path}: Saved outputs file is not a valid Parquet file:")
    assert "too deeply nested" in message


# --- YAML aliases ------------------------------------------------------------------------------


def alias_bomb(levels: int, fan_out: int) -> str:
    """The billion-laughs shape: each anchor is a list of ``fan_out`` aliases of the last one."""
    lines = ["name: d", "l0: &l0 [" + ", ".join(["lol"] * fan_out) + "]"]
    lines += [
        f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * fan_out) + "]" for i in range(1, levels)
    ]
    lines += ["samples:", f"  - {{id: a, input: {{}}, expected_output: *l{levels - 1}}}"]
    return "\n".join(lines) + "\n"


def test_a_600_byte_alias_bomb_is_refused_at_once(tmp_path: Path) -> None:
    text = alias_bomb(9, 9)  # 9**9 = 387 million strings once expanded
    assert len(text) < 600
    path = write(tmp_path, "d.yaml", text)
    message = error_of(read_dataset, path)
    assert message.startswith(
        f"{path}: Dataset YAML expands its aliases to more than 100,000 nodes beyond those it "
        "writes out (line"
    )
    assert "aliases may add at most 100,000 nodes" in message
    outputs = write(tmp_path, "o.yaml", text.replace("samples:", "outputs: {a: x}\nsamples:"))
    assert "Saved outputs file expands its aliases" in error_of(read_outputs, outputs)


def test_aliases_within_the_limit_are_expanded_copies(tmp_path: Path) -> None:
    # 10**4 strings plus the lists holding them: under 100,000 nodes.
    path = write(tmp_path, "d.yaml", alias_bomb(4, 10))
    value = json.loads(read_dataset(path).get_column("expected_output")[0])
    assert len(value) == 10
    assert sum(len(c) for b in value for a in b for c in a) == 10**4


def test_a_large_file_may_use_aliases_as_often_as_it_writes_nodes_out(tmp_path: Path) -> None:
    # Each of 30,000 samples repeats a 5-node anchor: 150,000 added nodes, fewer than the
    # file writes out itself (about 9 nodes a sample).
    head = "name: d\ncommon: &common {tags: [x, y], source: faq}\nsamples:\n"
    samples = "".join(
        f"  - {{id: s{i}, input: {{q: {i}}}, expected_output: a, metadata: *common}}\n"
        for i in range(30_000)
    )
    ds = read_dataset(write(tmp_path, "d.yaml", head + samples))
    assert ds.height == 30_000
    assert set(ds.get_column("metadata").to_list()) == {'{"tags":["x","y"],"source":"faq"}'}
