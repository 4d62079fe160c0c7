"""``evalframe estimate`` and ``calibrate`` inputs: a labels or cases file that is empty,
binary, of the wrong shape or types is exit 2 naming the file and what was expected, never a
traceback; and their readers, fuzzed, raise nothing but ``DatasetError``."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalframe.cli import cli
from evalframe.core._calibration import read_cases
from evalframe.core._errors import DatasetError
from evalframe.core._estimate import read_labels

DATASET = """\
name: tiny
samples:
  - {id: a, input: {q: x}, expected_output: "yes", metadata: {tags: [t]}}
  - {id: b, input: {q: y}, expected_output: "no"}
"""

SHAPE = "expected a CSV, JSONL or Parquet file with sample_id (or id) and label columns"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("labels")
    (root / "d.yaml").write_text(DATASET, encoding="utf-8")
    (root / "o.json").write_text('{"outputs": {"a": "yes", "b": "maybe"}}', encoding="utf-8")
    db = root / "s.duckdb"
    result = invoke("run", str(root / "d.yaml"), "--outputs", str(root / "o.json"),
                    "-m", "exact-match", "--store", str(db))  # fmt: skip
    assert result.exit_code == 0, result.output
    return db


def parquet_bytes(frame: pl.DataFrame, tmp_path: Path) -> bytes:
    path = tmp_path / "tmp.parquet"
    frame.write_parquet(path)
    return path.read_bytes()


BINARY = bytes(range(256)) * 3


def bad_files(tmp_path: Path) -> dict[str, tuple[bytes, str]]:
    """file name -> (content, a piece of the message)."""
    return {
        "empty.csv": (b"", "the labels file is empty"),
        "empty.jsonl": (b"\n\n", "the labels file is empty"),
        "empty.json": (b"", "the labels file is empty"),
        "empty.parquet": (b"", "the labels file is empty"),
        "binary.csv": (BINARY, "is not valid UTF-8"),
        "binary.jsonl": (BINARY, "is not valid UTF-8"),
        "binary.json": (BINARY, "is not valid UTF-8"),
        "binary.parquet": (BINARY, "is not a readable Parquet file"),
        "header-only.csv": (b"sample_id,label\n", "no labels"),
        "columns.csv": (b"a,b\n1,2\n", "missing column(s) sample_id, label; it has a, b"),
        "columns.parquet": (
            parquet_bytes(pl.DataFrame({"x": [1]}), tmp_path),
            "missing column(s) sample_id",
        ),
        "types.parquet": (
            parquet_bytes(pl.DataFrame({"sample_id": ["a"], "label": [[1]]}), tmp_path),
            "a label must be pass, fail, true, false or a number in [0, 1]; got [1]",
        ),
        "word.csv": (b"sample_id,label\na,maybe\n", "got 'maybe'"),
        "no-id.csv": (b"sample_id,label\n,pass\n", "label 1 has no sample id"),
        "null-id.jsonl": (b'{"sample_id": null, "label": "pass"}\n', "label 1 has no sample id"),
        "no-label.jsonl": (b'{"sample_id": "a"}\n', "labels line 1 has no 'label'"),
        "not-json.jsonl": (b'{"sample_id": "a", "label": 1}\nnot json\n', "line 2 is not valid"),
        "scalar.jsonl": (b"5\n", "labels line 1 is a number, not an object"),
        "list.json": (b"[1, 2]", "labels item 0 is a number"),
        "string.json": (b'"pass"', "labels JSON holds a string"),
        "nested.json": (b"[" * 5000 + b"]" * 5000, "nests lists and maps more than 100 levels"),
        "object-label.json": (b'{"a": {"x": 1}}', "got {'x': 1}"),
        "repeated.json": (b'[{"id": "a", "label": 1}, {"id": "a", "label": 0}]', "more than once"),
        "labels.txt": (b"a,pass\n", "labels must be .csv, .json, .jsonl or .parquet"),
    }


def test_estimate_names_the_labels_file_and_what_was_expected(tmp_path: Path, store: Path) -> None:
    for name, (content, message) in bad_files(tmp_path).items():
        path = tmp_path / name
        path.write_bytes(content)
        for args in (
            ("estimate", "latest", "--metric", "exact-match"),
            ("calibrate", "--suggest", "2", "--run", "latest", "--metric", "exact-match"),
        ):
            result = invoke(*args, "--store", str(store), "--labels", str(path))
            assert result.exit_code == 2, (name, result.output)
            assert isinstance(result.exception, SystemExit), (name, result.exception)
            assert f"error: {path}" in result.stderr or str(path) in result.stderr, name
            assert message in result.stderr, (name, result.stderr)
    missing = invoke("estimate", "latest", "--metric", "exact-match", "--store", str(store),
                     "--labels", str(tmp_path / "nothere.csv"))  # fmt: skip
    assert missing.exit_code == 2
    assert "Labels file is missing or unreadable" in missing.stderr
    empty = invoke("estimate", "latest", "--metric", "exact-match", "--store", str(store),
                   "--labels", str(tmp_path / "empty.csv"))  # fmt: skip
    assert SHAPE in empty.stderr  # what was expected


def test_good_labels_in_every_format_give_one_estimate(tmp_path: Path, store: Path) -> None:
    files = {
        "l.csv": "id,label\na,pass\nb,0\n",
        "l.jsonl": '{"sample_id": "a", "label": true}\n{"sample_id": "b", "label": "fail"}\n',
        "l.json": '{"a": 1, "b": "fail"}',
    }
    outputs = set()
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        result = invoke("estimate", "latest", "--metric", "exact-match", "--store", str(store),
                        "--labels", str(tmp_path / name), "--format", "json")  # fmt: skip
        assert result.exit_code == 0, result.output
        outputs.add(json.dumps(json.loads(result.stdout)["estimates"], sort_keys=True))
    assert len(outputs) == 1


def test_calibrate_names_the_cases_file(tmp_path: Path) -> None:
    cases = {
        "empty.yaml": (b"", "must be a map with a 'cases' list"),
        "binary.yaml": (BINARY, "is not valid UTF-8"),
        "cases.yaml": (b"cases: 3\n", "'cases' must be a non-empty list"),
        "types.yaml": (
            b"cases: [{id: a, input: x, expected: e, actual: y, human_verdict: pass}]\n",
            "field 'input' must be a map",
        ),
        "verdict.yaml": (
            b"cases: [{id: a, input: {q: x}, expected: e, actual: y, human_verdict: 1}]\n",
            "field 'human_verdict' must be one of: pass, fail",
        ),
        "missing.yaml": (b"cases: [{input: {q: x}}]\n", "field 'id' must be a non-empty string"),
    }
    for name, (content, message) in cases.items():
        path = tmp_path / name
        path.write_bytes(content)
        result = invoke("calibrate", str(path), "--judge-base-url", "http://127.0.0.1:9",
                        "--judge-model", "m")  # fmt: skip
        assert result.exit_code == 2, (name, result.output)
        assert str(path) in result.stderr, name
        assert message in result.stderr, (name, result.stderr)
    gone = invoke("calibrate", str(tmp_path / "gone.yaml"))
    assert gone.exit_code == 2
    assert "Calibration file is missing or unreadable" in gone.stderr


# --- fuzzing the readers -------------------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(["sample_id", "id", "label", "x"]), children, max_size=4)
    ),
    max_leaves=12,
)
FUZZ = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def read_or_refuse(path: Path) -> None:
    """A labels frame, or a DatasetError naming the file: nothing else may come out."""
    refused: DatasetError | None = None
    try:
        frame = read_labels(path)
    except DatasetError as exc:
        refused = exc
    if refused is not None:
        assert str(path) in str(refused)
        return
    assert frame.columns == ["sample_id", "label"]
    assert frame.height > 0
    assert frame.get_column("label").is_between(0.0, 1.0).all()


@FUZZ
@given(
    data=st.binary(max_size=300), suffix=st.sampled_from([".csv", ".json", ".jsonl", ".parquet"])
)
def test_labels_reader_takes_any_bytes(tmp_path: Path, data: bytes, suffix: str) -> None:
    path = tmp_path / f"fuzz{suffix}"
    path.write_bytes(data)
    read_or_refuse(path)


@FUZZ
@given(value=JSON, lines=st.booleans())
def test_labels_reader_takes_any_json(tmp_path: Path, value: object, lines: bool) -> None:
    path = tmp_path / ("fuzz.jsonl" if lines else "fuzz.json")
    items = value if lines and isinstance(value, list) else [value]
    text = "\n".join(json.dumps(v) for v in items) if lines else json.dumps(value)
    path.write_text(text, encoding="utf-8")
    read_or_refuse(path)


@FUZZ
@given(rows=st.lists(st.tuples(st.text(max_size=6), st.text(max_size=6)), max_size=5))
def test_labels_reader_takes_any_csv(tmp_path: Path, rows: list[tuple[str, str]]) -> None:
    path = tmp_path / "fuzz.csv"
    pl.DataFrame(rows, schema=["sample_id", "label"], orient="row").write_csv(path)
    read_or_refuse(path)


@FUZZ
@given(value=JSON)
def test_cases_reader_takes_any_document(tmp_path: Path, value: object) -> None:
    path = tmp_path / "cases.json"
    path.write_text(json.dumps({"cases": value} if isinstance(value, list) else value), "utf-8")
    refused: DatasetError | None = None
    try:
        cases = read_cases(path)
    except DatasetError as exc:
        refused = exc
    if refused is not None:
        assert str(path) in str(refused)
    else:
        assert len(cases.cases) > 0
