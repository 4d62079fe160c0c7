"""read_dataset, Dataset, and the canonical JSON and row hash behind them."""

from __future__ import annotations

import json
import pickle
import re
import textwrap
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import DATA, write

from evalframe import DatasetError, schema
from evalframe.core._canon import php_canonical_json, row_hash, to_json_value
from evalframe.core._dataset import SCHEMA_VERSION, Dataset, read_dataset


def yaml_dataset(tmp_path: Path, samples: str, head: str = "name: d\n") -> Path:
    """A YAML dataset whose ``samples:`` block is ``samples`` (indented by the caller)."""
    return write(tmp_path, "d.yaml", head + "samples:\n" + textwrap.dedent(samples))


def expected_values(ds: pl.DataFrame) -> list[object]:
    """Decode expected_output back into the values the file held."""
    return [
        text if kind == "string" else json.loads(text)
        for text, kind in ds.select("expected_output", "expected_type").iter_rows()
    ]


def error_text(excinfo: pytest.ExceptionInfo[DatasetError]) -> str:
    return str(excinfo.value)


# --- row identity -----------------------------------------------------------------------------


def test_row_hash_matches_the_reference_example() -> None:
    digest = row_hash({"question": "How many days?"}, "30 days")
    assert digest == "4d2e94278cc66e21259576a1f00a0f113abbc6675969f6b45f745565bf878845"
    assert digest.startswith("4d2e9427")
    assert digest.endswith("8845")


def test_dataset_row_hash_ignores_id_and_metadata() -> None:
    ds = Dataset.from_records(
        [
            {"id": "a", "input": {"question": "How many days?"}, "expected_output": "30 days"},
            {
                "id": "b",
                "input": {"question": "How many days?"},
                "expected_output": "30 days",
                "metadata": {"tags": ["x"]},
            },
        ],
        name="d",
    )
    hashes = ds.get_column("row_hash").to_list()
    assert hashes == [row_hash({"question": "How many days?"}, "30 days")] * 2


def test_row_hash_sorts_map_keys_recursively_and_keeps_list_order() -> None:
    a = row_hash({"b": 1, "a": {"y": [2, 1], "x": None}}, {"k": [3, 1]})
    b = row_hash({"a": {"x": None, "y": [2, 1]}, "b": 1}, {"k": [3, 1]})
    c = row_hash({"a": {"x": None, "y": [1, 2]}, "b": 1}, {"k": [3, 1]})
    assert a == b
    assert a != c


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        ({}, "[]"),
        ({"a": {}}, '{"a":[]}'),
        ([], "[]"),
        (1.0, "1.0"),
        (-2.0, "-2.0"),
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (0.1, "0.1"),
        (1.5, "1.5"),
        (0.0001, "0.0001"),
        (0.00001, "1.0e-5"),
        (1.25e-7, "1.25e-7"),
        (1e16, "10000000000000000.0"),
        (1e17, "1.0e+17"),
        (123e15, "1.23e+17"),
        (1e18, "1.0e+18"),
        (1e25, "1.0e+25"),
        (123456.789, "123456.789"),
        (2**64, "1.8446744073709552e+19"),
        (7, "7"),
        (True, "true"),
        (None, "null"),
        ("a/b é ✓", '"a/b é ✓"'),
        ("line\u2028sep\u2029", '"line\\u2028sep\\u2029"'),
        ('quote " tab \t nul \x00', '"quote \\" tab \\t nul \\u0000"'),
        ({"10": 1, "9": 2, "a": 3, "B": 4}, '{"9":2,"10":1,"B":4,"a":3}'),
        ({"1": "x", "0": "y"}, '["y","x"]'),
        ({"0": "a", "1": "b"}, '["a","b"]'),
        ({"1": "a", "2": "b"}, '{"1":"a","2":"b"}'),
        ({"b": 1, "a": 2, "-1": 3, "1.5": 4, "07": 5}, '{"-1":3,"1.5":4,"07":5,"a":2,"b":1}'),
    ],
)
def test_canonical_json_spells_values_as_php_json_encode(value: object, encoded: str) -> None:
    assert php_canonical_json(to_json_value(value)) == encoded


# --- YAML ---------------------------------------------------------------------------------------


def test_read_yaml_builds_the_dataset_schema_and_attributes() -> None:
    ds = read_dataset(DATA / "faq.yaml")
    assert isinstance(ds, Dataset)
    assert ds.schema == schema.DATASET_SCHEMA
    assert ds.columns == list(schema.DATASET_SCHEMA.names())
    assert ds.name == "support.faq"
    assert ds.metrics == ["exact-match", "rouge-l"]
    assert ds.repetitions == 3
    assert ds.path == DATA / "faq.yaml"
    assert ds.schema_version == SCHEMA_VERSION
    assert ds.get_column("sample_id").to_list() == [
        "refund-window",
        "retrieval",
        "gains",
        "answer-no",
    ]
    assert ds.get_column("input").to_list() == [
        '{"question":"How many days?"}',
        '{"query":"refund policy","k":3}',
        "{}",
        '{"question":"Is shipping free?"}',
    ]
    assert ds.get_column("expected_type").to_list() == ["string", "list", "map", "string"]
    assert expected_values(ds) == ["30 days", ["doc-7", "doc/2"], {"doc-7": 3, "doc-2": 1}, "no"]
    assert ds.get_column("expected_output").to_list()[1] == '["doc-7","doc/2"]'
    assert ds.get_column("metadata").to_list() == [
        '{"tags":["policy"," refunds ","policy",""]}',
        '{"tags":"retrieval","k":3}',
        "{}",
        "{}",
    ]
    assert ds.get_column("tags").to_list() == [["policy", "refunds"], ["retrieval"], [], []]
    assert ds.get_column("row_hash")[0] == row_hash({"question": "How many days?"}, "30 days")


def test_yaml_without_optional_fields_uses_defaults(tmp_path: Path) -> None:
    path = yaml_dataset(
        tmp_path,
        """\
        - id: q1
          input: {}
          expected_output: x
        """,
    )
    ds = read_dataset(str(path))
    assert (ds.metrics, ds.repetitions, ds.schema_version) == ([], None, SCHEMA_VERSION)
    assert ds.row(0) == ("q1", "{}", "x", "string", "{}", [], row_hash({}, "x"))


def test_expected_outputs_of_mixed_types_survive_losslessly(tmp_path: Path) -> None:
    path = yaml_dataset(
        tmp_path,
        """\
        - {id: list, input: {}, expected_output: [d1, d7, 3]}
        - {id: gains, input: {}, expected_output: {d1: 3, d2: 0.5, 101: 2}}
        - {id: int, input: {}, expected_output: 42}
        - {id: float, input: {}, expected_output: 1.0}
        - {id: bool, input: {}, expected_output: true}
        - id: nested
          input: {}
          expected_output:
            answer: {text: "Paris", spans: [[0, 5], []]}
            empty: {}
        - {id: "null", input: {}, expected_output: null}
        - {id: tilde, input: {}, expected_output: ~}
        - {id: json-looking, input: {}, expected_output: "[1,2]"}
        - {id: text, input: {}, expected_output: "30 days"}
        - {id: empty, input: {}, expected_output: ""}
        """,
    )
    ds = read_dataset(path)
    assert ds.get_column("expected_type").to_list() == [
        "list", "map", "int", "float", "bool", "map", "null", "null", "string", "string", "string",
    ]  # fmt: skip
    assert expected_values(ds) == [
        ["d1", "d7", 3],
        {"d1": 3, "d2": 0.5, "101": 2},
        42,
        1.0,
        True,
        {"answer": {"text": "Paris", "spans": [[0, 5], []]}, "empty": {}},
        None,
        None,
        "[1,2]",
        "30 days",
        "",
    ]
    assert ds.get_column("expected_output").to_list()[3] == "1.0"
    decoded_float = json.loads(ds.get_column("expected_output")[3])
    assert isinstance(decoded_float, float)


def test_yaml_scalars_follow_the_yaml_12_core_schema(tmp_path: Path) -> None:
    path = yaml_dataset(
        tmp_path,
        """\
        - id: q
          input: {a: yes, b: no, c: on, d: off, e: 1:30, f: 1_000, g: 1e3, h: 010, i: 0x1F,
                  j: 0o17, k: True, m: -5, n: +5, o: .5, p: Null, q: 2024-05-01,
                  r: "2024-05-01", s: 2001-12-14t21:59:43.10-05:00, t: y, u: "true"}
          expected_output: no
        """,
    )
    ds = read_dataset(path)
    assert json.loads(ds.get_column("input")[0]) == {
        "a": "yes",
        "b": "no",
        "c": "on",
        "d": "off",
        "e": "1:30",
        "f": "1_000",
        "g": 1000.0,
        "h": 10,
        "i": 31,
        "j": 15,
        "k": True,
        "m": -5,
        "n": 5,
        "o": 0.5,
        "p": None,
        "q": "2024-05-01",
        "r": "2024-05-01",
        "s": "2001-12-14T21:59:43.100000-05:00",
        "t": "y",
        "u": "true",
    }
    assert ds.row(0)[2:4] == ("no", "string")


def test_yaml_non_finite_expected_output_is_rejected_naming_sample_and_field(
    tmp_path: Path,
) -> None:
    path = yaml_dataset(tmp_path, "- {id: q1, input: {}, expected_output: .nan}\n")
    with pytest.raises(DatasetError) as excinfo:
        read_dataset(path)
    assert error_text(excinfo) == (
        f"{path}: Sample 'q1' (index 0) field 'expected_output' is nan; "
        "JSON cannot carry NaN or infinite numbers."
    )
    path = yaml_dataset(tmp_path, "- {id: q2, input: {}, expected_output: {s: [1, -.inf]}}\n")
    with pytest.raises(
        DatasetError, match=r"Sample 'q2' \(index 0\) field 'expected_output.s\[1\]' is -inf"
    ):
        read_dataset(path)
    path = yaml_dataset(tmp_path, "- {id: q3, input: {x: .nan}, expected_output: a}\n")
    with pytest.raises(DatasetError, match=r"field 'input.x' is nan"):
        read_dataset(path)


def test_tags_are_normalised_like_the_reference(tmp_path: Path) -> None:
    path = yaml_dataset(
        tmp_path,
        """\
        - {id: a, input: {}, expected_output: x, metadata: {tags: "  solo\\t"}}
        - id: b
          input: {}
          expected_output: x
          metadata: {tags: [b, " a", "a ", "", "  ", b, "\\v\\0c\\n"]}
        - {id: c, input: {}, expected_output: x, metadata: {tags: ["\\u00a0nbsp\\u00a0", Ünï]}}
        - {id: d, input: {}, expected_output: x, metadata: {tags: null}}
        - {id: e, input: {}, expected_output: x, metadata: {tags: "   "}}
        - {id: f, input: {}, expected_output: x, metadata: {other: 1}}
        """,
    )
    assert read_dataset(path).get_column("tags").to_list() == [
        ["solo"],
        ["b", "a", "c"],
        ["\u00a0nbsp\u00a0", "Ünï"],  # PHP trim() leaves non-ASCII whitespace alone
        [],
        [],
        [],
    ]


def test_samples_may_be_a_map_whose_keys_are_ignored(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "d.yaml",
        """\
        name: d
        samples:
          first: {id: q1, input: {}, expected_output: a}
          second: {id: q2, input: {}, expected_output: b}
        """,
    )
    assert read_dataset(path).get_column("sample_id").to_list() == ["q1", "q2"]


def test_empty_input_and_metadata_are_allowed_in_either_spelling(tmp_path: Path) -> None:
    path = yaml_dataset(
        tmp_path,
        """\
        - {id: a, input: {}, expected_output: x, metadata: {}}
        - {id: b, input: [], expected_output: x, metadata: []}
        - {id: c, input: {}, expected_output: x, metadata: null}
        - id: d
          input: {}
          expected_output: x
          metadata:
        """,
    )
    ds = read_dataset(path)
    assert ds.get_column("input").to_list() == ["{}"] * 4
    assert ds.get_column("metadata").to_list() == ["{}"] * 4


def test_yaml_anchors_and_merge_keys_are_expanded(tmp_path: Path) -> None:
    path = yaml_dataset(
        tmp_path,
        """\
        - id: a
          input: &base {question: Q, lang: en}
          expected_output: x
        - id: b
          input: {<<: *base, lang: fr}
          expected_output: *base
        """,
    )
    ds = read_dataset(path)
    assert [json.loads(v) for v in ds.get_column("input")] == [
        {"question": "Q", "lang": "en"},
        {"question": "Q", "lang": "fr"},
    ]
    assert expected_values(ds)[1] == {"question": "Q", "lang": "en"}


# --- YAML validation rules (reference §3) ------------------------------------------------------


def _yaml_error(tmp_path: Path, text: str) -> tuple[Path, str]:
    path = write(tmp_path, "bad.yaml", text)
    with pytest.raises(DatasetError) as excinfo:
        read_dataset(path)
    return path, error_text(excinfo)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ("samples: []\n", "Dataset YAML missing required string field 'name'."),
        ("name: ''\nsamples: []\n", "Dataset YAML missing required string field 'name'."),
        ("name: 42\nsamples: []\n", "Dataset YAML missing required string field 'name'."),
        ("name: d\n", "Dataset YAML missing required list field 'samples'."),
        ("name: d\nsamples: 3\n", "Dataset YAML missing required list field 'samples'."),
        ("name: d\nsamples:\n", "Dataset YAML missing required list field 'samples'."),
        ("name: d\nsamples: []\n", "Dataset YAML must declare at least one sample."),
        ("name: d\nsamples: {}\n", "Dataset YAML must declare at least one sample."),
        (
            "name: d\nsamples: [{id: q1, input: {}, expected_output: a}, 3]\n",
            "Sample at index 1 is not an associative array.",
        ),
        (
            "name: d\nsamples: [[1, 2]]\n",
            "Sample at index 0 is not an associative array.",
        ),
        (
            "name: d\nsamples: [{id: 7, input: {}, expected_output: a}]\n",
            "Sample at index 0 missing required string field 'id' (got int 7).",
        ),
        (
            "name: d\nsamples: [{input: {}, expected_output: a}]\n",
            "Sample at index 0 missing required string field 'id'.",
        ),
        (
            "name: d\nsamples: [{id: '', input: {}, expected_output: a}]\n",
            "Sample at index 0 missing required string field 'id' (got str '').",
        ),
        (
            "name: d\nsamples:\n"
            "  - {id: q1, input: {}, expected_output: a}\n"
            "  - {id: q2, input: {}, expected_output: a}\n"
            "  - {id: q3, input: {}, expected_output: a}\n"
            "  - {id: q1, input: {}, expected_output: a}\n",
            "Duplicate sample id 'q1' at index 3.",
        ),
        (
            "name: d\nsamples:\n"
            "  - {id: q1, input: {}, expected_output: a}\n"
            "  - {id: q2, expected_output: a}\n",
            "Sample 'q2' (index 1) missing required associative-array field 'input'.",
        ),
        (
            "name: d\nsamples: [{id: q1, input: hello, expected_output: a}]\n",
            "Sample 'q1' (index 0) missing required associative-array field 'input'.",
        ),
        (
            "name: d\nsamples: [{id: q1, input: null, expected_output: a}]\n",
            "Sample 'q1' (index 0) missing required associative-array field 'input'.",
        ),
        (
            "name: d\nsamples: [{id: q1, input: [a, b], expected_output: a}]\n",
            "Sample 'q1' (index 0) field 'input' must be an associative array (got a YAML list).",
        ),
        (
            "name: d\nsamples: [{id: q1, input: {}}]\n",
            "Sample 'q1' (index 0) missing required field 'expected_output'.",
        ),
        (
            "name: d\nsamples: [{id: q1, input: {}, expected_output: a, metadata: oops}]\n",
            "Sample 'q1' (index 0) field 'metadata' must be an associative array.",
        ),
        (
            "name: d\nsamples: [{id: q1, input: {}, expected_output: a, metadata: [x]}]\n",
            "Sample 'q1' (index 0) field 'metadata' must be an associative array "
            "(got a YAML list).",
        ),
        (
            "schema_version: ''\nname: d\nsamples: []\n",
            "Dataset YAML field 'schema_version' must be a non-empty string.",
        ),
        (
            "schema_version:\nname: d\nsamples: []\n",
            "Dataset YAML field 'schema_version' must be a non-empty string.",
        ),
        (
            "schema_version: 1\nname: d\nsamples: []\n",
            "Dataset YAML field 'schema_version' must be a non-empty string.",
        ),
        (
            "schema_version: eval-harness.dataset.v2\nname: d\nsamples: []\n",
            "Dataset YAML field 'schema_version' has unsupported value "
            "'eval-harness.dataset.v2'. Supported versions: eval-harness.dataset.v1.",
        ),
        (
            "name: d\nrepetitions: two\nsamples: []\n",
            "Dataset YAML field 'repetitions' must be an integer; got 'two'.",
        ),
        (
            "name: d\nrepetitions: true\nsamples: []\n",
            "Dataset YAML field 'repetitions' must be an integer; got True.",
        ),
        (
            "name: d\nrepetitions: 0\nsamples: []\n",
            "Dataset YAML field 'repetitions' must be at least 1; got 0.",
        ),
        (
            "name: d\nmetrics: exact-match\nsamples: []\n",
            "Dataset YAML field 'metrics' must be a list of non-empty metric spec strings; "
            "got 'exact-match'.",
        ),
        (
            "name: d\nmetrics: [exact-match, '']\nsamples: []\n",
            "Dataset YAML field 'metrics' must be a list of non-empty metric spec strings; "
            "got ['exact-match', ''].",
        ),
        ("", "Dataset YAML missing required string field 'name'. (the file is empty)"),
        (
            "# only a comment\n",
            "Dataset YAML missing required string field 'name'. (the file is empty)",
        ),
        (
            "- {id: q1, input: {}, expected_output: a}\n",
            "Dataset YAML missing required string field 'name'. "
            "(the document is a list, not a mapping)",
        ),
    ],
)
def test_yaml_validation_rules_name_file_sample_and_field(
    tmp_path: Path, document: str, message: str
) -> None:
    path, text = _yaml_error(tmp_path, document)
    assert text == f"{path}: {message}"


def test_invalid_yaml_reports_the_parser_message_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.yaml", "name: d\nsamples:\n  - id: q1\n   input: [unclosed\n")
    with pytest.raises(DatasetError) as excinfo:
        read_dataset(path)
    assert error_text(excinfo).startswith(f"{path}: Dataset YAML is not valid YAML: ")
    assert re.search(r"at line \d+, column \d+$", error_text(excinfo))
    assert excinfo.value.__cause__ is not None


def test_repeated_yaml_keys_are_invalid_yaml(tmp_path: Path) -> None:
    path, text = _yaml_error(
        tmp_path, "name: d\nsamples:\n  - {id: q1, input: {}, id: q2, expected_output: a}\n"
    )
    assert text == (
        f"{path}: Dataset YAML is not valid YAML: while constructing a mapping: "
        "found duplicate key 'id' at line 3, column 25"
    )


def test_self_referencing_anchor_is_invalid_yaml(tmp_path: Path) -> None:
    path, text = _yaml_error(
        tmp_path, "name: d\nsamples:\n  - {id: q1, input: {}, expected_output: &a [*a]}\n"
    )
    assert text.startswith(f"{path}: Dataset YAML is not valid YAML: ")


def test_multiple_yaml_documents_are_invalid(tmp_path: Path) -> None:
    _, text = _yaml_error(tmp_path, "name: d\n---\nname: e\n")
    assert "expected a single document" in text


def test_missing_or_unreadable_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(DatasetError) as excinfo:
        read_dataset(missing)
    assert error_text(excinfo) == f"Dataset YAML file is missing or unreadable: {missing}"
    assert isinstance(excinfo.value.__cause__, OSError)
    folder = tmp_path / "folder.yaml"
    folder.mkdir()
    with pytest.raises(DatasetError, match="Dataset YAML file is missing or unreadable"):
        read_dataset(folder)
    with pytest.raises(DatasetError, match="Dataset CSV file is missing or unreadable"):
        read_dataset(tmp_path / "nope.csv")


def test_invalid_utf8_bytes_are_reported_with_line_and_offset(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.yaml", b"name: d\nsamples:\n  - id: caf\xe9\n")
    with pytest.raises(DatasetError) as excinfo:
        read_dataset(path)
    assert error_text(excinfo) == (
        f"{path}: Dataset YAML is not valid UTF-8: byte 0xe9 at line 3 (byte offset 28) "
        "is invalid continuation byte."
    )
    jsonl = write(tmp_path, "bad.jsonl", b'{"id": "\xff"}\n')
    with pytest.raises(
        DatasetError, match=r"Dataset JSONL is not valid UTF-8: byte 0xff at line 1"
    ):
        read_dataset(jsonl)
    csv = write(tmp_path, "bad.csv", b"sample_id,input,expected_output\nq\xc3,a,b\n")
    with pytest.raises(DatasetError, match=r"Dataset CSV is not valid UTF-8: byte 0xc3 at line 2"):
        read_dataset(csv)


def test_a_utf8_byte_order_mark_is_skipped(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "bom.yaml",
        b"\xef\xbb\xbfname: d\nsamples: [{id: q, input: {}, expected_output: x}]\n",
    )
    assert read_dataset(path).name == "d"


def test_name_argument_must_match_the_yaml_name(tmp_path: Path) -> None:
    path = yaml_dataset(tmp_path, "- {id: q, input: {}, expected_output: x}\n")
    assert read_dataset(path, name="d").name == "d"
    with pytest.raises(DatasetError) as excinfo:
        read_dataset(path, name="other")
    assert error_text(excinfo) == (
        f"{path}: Dataset name mismatch: the file declares 'd' but 'other' was requested."
    )


def test_unsupported_extension(tmp_path: Path) -> None:
    path = write(tmp_path, "d.txt", "name: d\n")
    with pytest.raises(DatasetError, match=r"unsupported dataset file extension '\.txt'"):
        read_dataset(path)


def test_extension_is_case_insensitive(tmp_path: Path) -> None:
    path = write(tmp_path, "D.YML", "name: d\nsamples: [{id: q, input: {}, expected_output: x}]\n")
    assert read_dataset(path).height == 1


# --- JSON and JSONL -------------------------------------------------------------------------


def test_json_document_shape_follows_the_yaml_rules(tmp_path: Path) -> None:
    doc = {
        "schema_version": SCHEMA_VERSION,
        "name": "j",
        "metrics": ["contains"],
        "repetitions": 2,
        "samples": [{"id": "q1", "input": {"q": "a/b"}, "expected_output": {"x": [1, 2.0]}}],
    }
    ds = read_dataset(write(tmp_path, "j.json", json.dumps(doc)))
    assert (ds.name, ds.metrics, ds.repetitions) == ("j", ["contains"], 2)
    assert ds.row(0)[:4] == ("q1", '{"q":"a/b"}', '{"x":[1,2.0]}', "map")
    del doc["name"]
    path = write(tmp_path, "k.json", json.dumps(doc))
    with pytest.raises(DatasetError) as excinfo:
        read_dataset(path)
    assert error_text(excinfo) == f"{path}: Dataset JSON missing required string field 'name'."


def test_json_list_of_samples_takes_its_name_from_the_argument_or_stem(tmp_path: Path) -> None:
    samples = [
        {"sample_id": "q1", "input": {}, "expected_output": 1, "tags": ["a", "a", " b"]},
        {"id": "q2", "input": {}, "expected_output": None},
    ]
    path = write(tmp_path, "golden.json", json.dumps(samples))
    ds = read_dataset(path)
    assert ds.name == "golden"
    assert ds.get_column("tags").to_list() == [["a", "b"], []]
    assert ds.get_column("metadata").to_list() == ['{"tags":["a","b"]}', "{}"]
    assert read_dataset(path, name="named").name == "named"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "Dataset JSON file is empty."),
        ("  \n", "Dataset JSON file is empty."),
        (
            "3",
            "Dataset JSON must be an object with 'name' and 'samples', or a list of samples; "
            "got int.",
        ),
        ("[]", "Dataset JSON must declare at least one sample."),
        (
            '[{"id": "q", "input": {}, "expected_output": NaN}]',
            "Sample 'q' (index 0) field 'expected_output' is nan; "
            "JSON cannot carry NaN or infinite numbers.",
        ),
        (
            '[{"id": "q", "input": {}, "expected_output": [1, Infinity]}]',
            "Sample 'q' (index 0) field 'expected_output[1]' is inf; "
            "JSON cannot carry NaN or infinite numbers.",
        ),
        (  # nested metadata parsed from JSON is taken as it is, but for non-finite numbers
            '[{"id": "q", "input": {"q": "a"}, "expected_output": "x", '
            '"metadata": {"trajectory": {"max_steps": [2, NaN]}}}]',
            "Sample 'q' (index 0) field 'metadata.trajectory.max_steps[1]' is nan; "
            "JSON cannot carry NaN or infinite numbers.",
        ),
        (
            '[{"id": "q", "input": {"q": "a"}, "expected_output": "x", '
            '"metadata": {"k": {"w": -1e999}}}]',
            "Sample 'q' (index 0) field 'metadata.k.w' is -inf; "
            "JSON cannot carry NaN or infinite numbers.",
        ),
        (
            '[{"id": "q", "input": [1], "expected_output": 1}]',
            "Sample 'q' (index 0) field 'input' must be an associative array (got a list).",
        ),
    ],
)
def test_json_errors(tmp_path: Path, content: str, message: str) -> None:
    path = write(tmp_path, "d.json", content)
    with pytest.raises(DatasetError) as excinfo:
        read_dataset(path)
    assert error_text(excinfo) == f"{path}: {message}"


def test_invalid_json(tmp_path: Path) -> None:
    path = write(tmp_path, "d.json", '{"name": "d",')
    with pytest.raises(DatasetError, match=r"d\.json: Dataset JSON is not valid JSON: Expecting"):
        read_dataset(path)


def test_read_jsonl_accepts_sample_id_or_id_and_a_tags_field() -> None:
    ds = read_dataset(DATA / "faq.jsonl")
    assert ds.name == "faq"
    assert ds.get_column("sample_id").to_list() == ["q1", "q2"]
    assert ds.get_column("tags").to_list() == [["policy"], ["retrieval", "ranking"]]
    assert ds.get_column("metadata").to_list() == [
        '{"tags":["policy"]}',
        '{"k":2,"tags":["retrieval","ranking"]}',
    ]
    assert expected_values(ds) == ["30 days", ["d1", "d2"]]


def test_jsonl_errors_name_the_line_or_sample(tmp_path: Path) -> None:
    path = write(tmp_path, "d.jsonl", '{"id": "q1", "input": {}, "expected_output": 1}\n\n{oops\n')
    with pytest.raises(DatasetError) as excinfo:
        read_dataset(path)
    assert error_text(excinfo).startswith(f"{path}: Dataset JSONL line 3 is not valid JSON: ")
    path = write(tmp_path, "e.jsonl", '{"id": "q1", "input": {}, "expected_output": 1}\n[1]\n')
    with pytest.raises(DatasetError) as excinfo:
        read_dataset(path)
    assert error_text(excinfo) == f"{path}: Sample at index 1 is not an associative array."
    path = write(tmp_path, "f.jsonl", "\n\n")
    with pytest.raises(DatasetError) as excinfo:
        read_dataset(path)
    assert error_text(excinfo) == f"{path}: Dataset JSONL file is empty."
    path = write(tmp_path, "g.jsonl", '{"id": 3, "input": {}, "expected_output": 1}\n')
    with pytest.raises(DatasetError) as excinfo:
        read_dataset(path)
    assert error_text(excinfo) == (
        f"{path}: Sample at index 0 missing required string field 'sample_id' (got int 3)."
    )


def test_jsonl_lines_split_only_on_newlines(tmp_path: Path) -> None:
    record = {"id": "q", "input": {"t": "a\u2028b\u0085c"}, "expected_output": "x\u2029"}
    path = write(tmp_path, "d.jsonl", json.dumps(record, ensure_ascii=False) + "\r\n")
    ds = read_dataset(path)
    assert json.loads(ds.get_column("input")[0]) == {"t": "a\u2028b\u0085c"}
    assert ds.get_column("expected_output")[0] == "x\u2029"


def test_conflicting_sample_id_and_id(tmp_path: Path) -> None:
    path = write(
        tmp_path, "d.jsonl", '{"sample_id": "a", "id": "b", "input": {}, "expected_output": 1}\n'
    )
    with pytest.raises(DatasetError) as excinfo:
        read_dataset(path)
    assert error_text(excinfo) == (
        f"{path}: Sample at index 0 has different 'sample_id' ('a') and 'id' ('b'); give one."
    )


def test_tags_field_must_agree_with_metadata_tags(tmp_path: Path) -> None:
    same = {"id": "a", "input": {}, "expected_output": 1, "tags": "x", "metadata": {"tags": [" x"]}}
    differ = {
        "id": "b",
        "input": {},
        "expected_output": 1,
        "tags": ["y"],
        "metadata": {"tags": "x"},
    }
    ds = read_dataset(write(tmp_path, "ok.jsonl", json.dumps(same)))
    assert ds.get_column("tags").to_list() == [["x"]]
    assert ds.get_column("metadata").to_list() == ['{"tags":[" x"]}']
    path = write(tmp_path, "bad.jsonl", json.dumps(differ))
    with pytest.raises(DatasetError) as excinfo:
        read_dataset(path)
    assert error_text(excinfo) == (
        f"{path}: Sample 'b' (index 0) field 'tags' ['y'] disagrees with metadata.tags ['x']; "
        "give the tags once."
    )


def test_lone_surrogates_are_rejected(tmp_path: Path) -> None:
    path = write(
        tmp_path, "d.jsonl", '{"id": "q", "input": {"t": "half \\ud83d"}, "expected_output": 1}\n'
    )
    with pytest.raises(
        DatasetError, match=r"Sample 'q' \(index 0\) holds a lone surrogate \\ud83d"
    ):
        read_dataset(path)
    path = write(tmp_path, "e.jsonl", '{"id": "q\\udc00", "input": {}, "expected_output": 1}\n')
    with pytest.raises(DatasetError, match=r"Sample 'q\\udc00' \(index 0\) holds a lone surrogate"):
        read_dataset(path)


# --- CSV --------------------------------------------------------------------------------------


def test_read_csv_text_rules() -> None:
    ds = read_dataset(DATA / "faq.csv", name="faq-csv")
    assert ds.name == "faq-csv"
    assert ds.rows() == [
        (
            "q1",
            '{"question":"How many days?"}',
            "30 days",
            "string",
            '{"k":2,"tags":["policy"]}',
            ["policy"],
            row_hash({"question": "How many days?"}, "30 days"),
        ),
        (
            "q2",
            '{"question":"Capital?","lang":"en"}',
            "42",
            "string",
            '{"tags":["geo","trivia"]}',
            ["geo", "trivia"],
            row_hash({"question": "Capital?", "lang": "en"}, "42"),
        ),
        (
            "q3",
            '{"question":"Anything?"}',
            "",
            "string",
            "{}",
            [],
            row_hash({"question": "Anything?"}, ""),
        ),
    ]


def test_csv_accepts_an_id_column_and_ignores_others(tmp_path: Path) -> None:
    path = write(tmp_path, "d.csv", "id,input,expected_output,extra\na,hi,x,1\n")
    ds = read_dataset(path)
    assert ds.rows()[0][:3] == ("a", '{"question":"hi"}', "x")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "Dataset CSV file is empty."),
        (
            "sample_id,expected_output\nq,a\n",
            "Dataset CSV is missing required column 'input'; found columns: sample_id, "
            "expected_output.",
        ),
        (
            "input,expected_output\nq,a\n",
            "Dataset CSV is missing required column 'sample_id' (or 'id'); found columns: "
            "input, expected_output.",
        ),
        (
            "sample_id,input\nq,a\n",
            "Dataset CSV is missing required column 'expected_output'; found columns: "
            "sample_id, input.",
        ),
        ("sample_id,input,expected_output\n", "Dataset CSV must declare at least one sample."),
        (
            'sample_id,input,expected_output\nq,"{""a"": ",x\n',
            "Sample 'q' (index 0) field 'input' is not valid JSON: ",
        ),
        (
            "sample_id,input,expected_output\nq,,x\n",
            "Sample 'q' (index 0) missing required associative-array field 'input'.",
        ),
        (
            'sample_id,input,expected_output,metadata\nq,a,x,"[1]"\n',
            "Sample 'q' (index 0) field 'metadata' must be an associative array (got a list).",
        ),
        (
            'sample_id,input,expected_output,metadata\nq,a,x,"3"\n',
            "Sample 'q' (index 0) field 'metadata' must be an associative array.",
        ),
        (
            "sample_id,input,expected_output\nq,a,x\nq,b,y\n",
            "Duplicate sample id 'q' at index 1.",
        ),
        (
            "sample_id,input,expected_output\n,a,x\n",
            "Sample at index 0 missing required string field 'sample_id'.",
        ),
    ],
)
def test_csv_errors(tmp_path: Path, content: str, message: str) -> None:
    path = write(tmp_path, "d.csv", content)
    with pytest.raises(DatasetError) as excinfo:
        read_dataset(path)
    assert error_text(excinfo).startswith(f"{path}: {message}")


def test_csv_round_trip_keeps_expected_types(tmp_path: Path) -> None:
    ds = read_dataset(DATA / "faq.yaml")
    path = tmp_path / "faq.csv"
    ds.with_columns(pl.col("tags").list.join("|")).write_csv(path)
    again = read_dataset(path, name=ds.name)
    assert again.equals(ds)


# --- Parquet and frames -------------------------------------------------------------------------


def test_read_parquet_with_typed_columns(tmp_path: Path) -> None:
    table = pa.table(
        {
            "sample_id": ["a", "b"],
            "input": pa.array(
                [{"question": "Q1", "k": 1}, {"question": "Q2", "k": None}],
                pa.struct([("question", pa.string()), ("k", pa.int64())]),
            ),
            "expected_output": pa.array([["d1", "d2"], []], pa.list_(pa.string())),
            "metadata": pa.array([[("tags", "x")], []], pa.map_(pa.string(), pa.string())),
            "tags": pa.array([None, ["t"]], pa.list_(pa.string())),
        }
    )
    path = tmp_path / "d.parquet"
    pq.write_table(table, path)
    ds = read_dataset(path)
    assert ds.name == "d"
    assert ds.rows() == [
        ("a", '{"question":"Q1","k":1}', '["d1","d2"]', "list", '{"tags":"x"}', ["x"],
         row_hash({"question": "Q1", "k": 1}, ["d1", "d2"])),
        ("b", '{"question":"Q2","k":null}', "[]", "list", '{"tags":["t"]}', ["t"],
         row_hash({"question": "Q2", "k": None}, [])),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("column", "values", "types", "decoded"),
    [
        (pa.array(["x", "y"]), None, ["string", "string"], ["x", "y"]),
        (pa.array([1, None], pa.int64()), None, ["int", "null"], [1, None]),
        (pa.array([0.5, 2.0]), None, ["float", "float"], [0.5, 2.0]),
        (pa.array([True, False]), None, ["bool", "bool"], [True, False]),
        (
            pa.array([{"d1": 3}, {"d1": None}], pa.struct([("d1", pa.int32())])),
            None,
            ["map", "map"],
            [{"d1": 3}, {"d1": None}],
        ),
        (
            pa.array(
                [[("d1", 3.0)], [("d2", 1.5), ("d3", 0.0)]], pa.map_(pa.string(), pa.float64())
            ),
            None,
            ["map", "map"],
            [{"d1": 3.0}, {"d2": 1.5, "d3": 0.0}],
        ),
        (
            pa.array([pa.scalar(0, pa.date32()).as_py(), None], pa.date32()),
            None,
            ["string", "null"],
            ["1970-01-01", None],
        ),
    ],
)
def test_parquet_expected_output_may_be_any_arrow_type(
    tmp_path: Path, column: pa.Array, values: object, types: list[str], decoded: list[object]
) -> None:
    del values
    path = tmp_path / "d.parquet"
    pq.write_table(
        pa.table({"id": ["a", "b"], "input": ['{"q": 1}', "plain"], "expected_output": column}),
        path,
    )
    ds = read_dataset(path)
    assert ds.get_column("input").to_list() == ['{"q":1}', '{"question":"plain"}']
    assert ds.get_column("expected_type").to_list() == types
    assert expected_values(ds) == decoded


def test_parquet_errors(tmp_path: Path) -> None:
    empty = write(tmp_path, "e.parquet", b"")
    with pytest.raises(DatasetError) as excinfo:
        read_dataset(empty)
    assert error_text(excinfo) == f"{empty}: Dataset Parquet file is empty."
    junk = write(tmp_path, "j.parquet", b"not parquet at all")
    with pytest.raises(
        DatasetError, match=r"j\.parquet: Dataset Parquet is not a valid Parquet file"
    ):
        read_dataset(junk)
    binary = tmp_path / "b.parquet"
    pq.write_table(pa.table({"id": ["a"], "input": ["q"], "expected_output": [b"\x00"]}), binary)
    with pytest.raises(DatasetError) as excinfo:
        read_dataset(binary)
    assert error_text(excinfo) == (
        f"{binary}: Sample 'a' (index 0) field 'expected_output' has a value of unsupported "
        "type bytes; JSON cannot carry it."
    )


def test_parquet_round_trip_is_lossless(tmp_path: Path) -> None:
    ds = read_dataset(DATA / "faq.yaml")
    path = tmp_path / "faq.parquet"
    ds.write_parquet(path)
    assert read_dataset(path, name=ds.name).equals(ds)


def test_from_frame_round_trips_a_dataset() -> None:
    ds = read_dataset(DATA / "faq.yaml")
    again = Dataset.from_frame(ds, name="copy", metrics=["contains"], repetitions=2)
    assert again.equals(ds)
    assert (again.name, again.metrics, again.repetitions, again.path) == (
        "copy",
        ["contains"],
        2,
        None,
    )


def test_from_frame_checks_expected_type_against_the_value() -> None:
    frame = pl.DataFrame(
        {"sample_id": ["a"], "input": ["{}"], "expected_output": ["[1]"], "expected_type": ["map"]}
    )
    with pytest.raises(DatasetError) as excinfo:
        Dataset.from_frame(frame, name="f")
    assert error_text(excinfo) == (
        "Dataset 'f': Sample 'a' (index 0) field 'expected_output' holds a list value but "
        "expected_type is 'map'."
    )
    frame = frame.with_columns(expected_type=pl.lit("set"))
    with pytest.raises(DatasetError, match="field 'expected_type' must be one of string, int"):
        Dataset.from_frame(frame, name="f")


def test_from_frame_requires_the_sample_columns() -> None:
    with pytest.raises(DatasetError) as excinfo:
        Dataset.from_frame(pl.DataFrame({"sample_id": ["a"], "input": ["x"]}), name="f")
    assert error_text(excinfo) == (
        "Dataset 'f': Dataset frame is missing required column 'expected_output'; "
        "found columns: sample_id, input."
    )


def test_from_records_validates_like_yaml() -> None:
    ds = Dataset.from_records(
        [{"id": "q1", "input": {"b": 1, "a": 2}, "expected_output": {"z": 1}, "tags": "x|y"}],
        name="r",
        metrics=("exact-match",),
    )
    assert ds.row(0)[:6] == (
        "q1",
        '{"b":1,"a":2}',
        '{"z":1}',
        "map",
        '{"tags":["x","y"]}',
        ["x", "y"],
    )
    assert ds.metrics == ["exact-match"]
    with pytest.raises(DatasetError) as excinfo:
        Dataset.from_records([{"id": "q1", "input": {}}], name="r")
    assert error_text(excinfo) == (
        "Dataset 'r': Sample 'q1' (index 0) missing required field 'expected_output'."
    )
    with pytest.raises(DatasetError, match=r"Dataset records must declare at least one sample\."):
        Dataset.from_records([], name="r")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": ""}, "Dataset name must be a non-empty string; got ''."),
        ({"name": "r", "repetitions": 0}, "Dataset 'r': repetitions must be at least 1; got 0."),
        (
            {"name": "r", "repetitions": 1.5},
            "Dataset 'r': repetitions must be an integer; got 1.5.",
        ),
        (
            {"name": "r", "metrics": ["exact-match", " "]},
            "Dataset 'r': metrics must be a list of non-empty metric spec strings; "
            "got ['exact-match', ' '].",
        ),
    ],
)
def test_programmatic_datasets_validate_their_attributes(
    kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(DatasetError) as excinfo:
        Dataset.from_records([{"id": "q", "input": {}, "expected_output": 1}], **kwargs)  # type: ignore[arg-type]
    assert error_text(excinfo) == message


# --- the Dataset frame --------------------------------------------------------------------------


def test_polars_operations_return_plain_frames() -> None:
    ds = read_dataset(DATA / "faq.yaml")
    derived = [
        ds.head(1),
        ds.filter(pl.col("expected_type") == "string"),
        ds.select("sample_id"),
        ds.with_columns(pl.lit(1).alias("one")),
        ds.clone(),
        ds.clear(),
        ds[[]],
        ds[:, ["sample_id"]],
        ds[1:],
        pl.concat([ds, ds]),
    ]
    assert [type(frame) for frame in derived] == [pl.DataFrame] * len(derived)
    assert type(Dataset({"a": [1]})) is pl.DataFrame  # a dataset needs read_dataset/from_*


def test_dataset_repr_names_the_dataset() -> None:
    ds = read_dataset(DATA / "faq.yaml")
    assert repr(ds).startswith("Dataset 'support.faq': 4 samples\nshape: (4, 7)")


def test_dataset_pickles_with_its_attributes() -> None:
    ds = read_dataset(DATA / "faq.yaml")
    again = pickle.loads(pickle.dumps(ds))
    assert isinstance(again, Dataset)
    assert again.equals(ds)
    assert (again.name, again.metrics, again.repetitions, again.path) == (
        ds.name, ds.metrics, ds.repetitions, ds.path,
    )  # fmt: skip


# --- size -------------------------------------------------------------------------------------


def test_a_one_megabyte_sample_loads_intact(tmp_path: Path) -> None:
    big = "é" * 250_000 + "x" * 500_000  # 1.0 MB of UTF-8
    context = [f"passage {i} " * 20 for i in range(1_000)]
    record = {"id": "big", "input": {"question": "q", "context": context}, "expected_output": big}
    ds = read_dataset(write(tmp_path, "big.jsonl", json.dumps(record)))
    assert ds.get_column("expected_output")[0] == big
    assert json.loads(ds.get_column("input")[0])["context"] == context
    yaml_path = write(
        tmp_path,
        "big.yaml",
        "name: big\nsamples:\n  - id: big\n    input: {}\n"
        f"    expected_output: {json.dumps(big)}\n",
    )
    assert read_dataset(yaml_path).get_column("expected_output")[0] == big


def test_one_hundred_thousand_samples_load(tmp_path: Path) -> None:
    # How long this takes is measured in benchmarks/bench_scale.py, not asserted here.
    n = 100_000
    path = tmp_path / "many.jsonl"
    lines = (
        f'{{"id": "s{i}", "input": {{"question": "What is {i} + 1?"}}, '
        f'"expected_output": {json.dumps(str(i + 1)) if i % 2 else [i, i + 1]}, '
        f'"metadata": {{"tags": ["{"odd" if i % 2 else "even"}"]}}}}\n'
        for i in range(n)
    )
    path.write_text("".join(lines), encoding="utf-8")
    ds = read_dataset(path)
    assert ds.height == n
    assert ds.row(n - 1)[:4] == (
        f"s{n - 1}",
        f'{{"question":"What is {n - 1} + 1?"}}',
        str(n),
        "string",
    )
    assert ds.get_column("tags").list.first().value_counts().sort("tags").rows() == [
        ("even", n // 2),
        ("odd", n // 2),
    ]


# --- tags must be strings; ids must not be blank ---------------------------------------------


def test_a_tag_that_is_not_a_string_is_an_error_naming_sample_field_and_position(
    tmp_path: Path,
) -> None:
    path = yaml_dataset(
        tmp_path,
        """\
        - {id: a, input: {}, expected_output: x, metadata: {tags: [ok]}}
        - {id: b, input: {}, expected_output: x, metadata: {tags: [ok, 3]}}
        """,
    )
    with pytest.raises(DatasetError) as excinfo:
        read_dataset(path)
    assert error_text(excinfo) == (
        f"{path}: Sample 'b' (index 1) field 'metadata.tags[1]' must be a string (a tag); "
        "got int 3."
    )


@pytest.mark.parametrize(
    ("tags", "field", "got"),
    [
        ("[a, null]", "metadata.tags[1]", "got null None"),
        ("[[a]]", "metadata.tags[0]", "got list ['a']"),
        ("42", "metadata.tags", "must be a string or a list of strings; got int 42"),
        ("{a: 1}", "metadata.tags", "must be a string or a list of strings; got map {'a': 1}"),
        ("true", "metadata.tags", "must be a string or a list of strings; got bool True"),
    ],
)
def test_every_kind_of_non_string_tag_is_refused(
    tmp_path: Path, tags: str, field: str, got: str
) -> None:
    path = yaml_dataset(
        tmp_path, f"- {{id: q, input: {{}}, expected_output: x, metadata: {{tags: {tags}}}}}\n"
    )
    with pytest.raises(DatasetError) as excinfo:
        read_dataset(path)
    assert error_text(excinfo).startswith(f"{path}: Sample 'q' (index 0) field '{field}' ")
    assert got in error_text(excinfo)


def test_non_string_tags_are_refused_in_every_format(tmp_path: Path) -> None:
    jsonl = write(
        tmp_path, "d.jsonl", '{"id": "a", "input": {}, "expected_output": 1, "tags": [7]}\n'
    )
    csv = write(tmp_path, "d.csv", 'id,input,expected_output,tags\na,q,x,"[""t"", 1.5]"\n')
    parquet = tmp_path / "d.parquet"
    pq.write_table(
        pa.table({"id": ["a"], "input": ["q"], "expected_output": ["x"], "tags": [[1, 2]]}),
        parquet,
    )
    expected = {
        jsonl: "field 'tags[0]' must be a string (a tag); got int 7.",
        csv: "field 'tags[1]' must be a string (a tag); got float 1.5.",
        parquet: "field 'tags[0]' must be a string (a tag); got int 1.",
    }
    for path, tail in expected.items():
        with pytest.raises(DatasetError) as excinfo:
            read_dataset(path)
        assert error_text(excinfo) == f"{path}: Sample 'a' (index 0) {tail}"
    with pytest.raises(DatasetError, match=r"^Dataset 'r': Sample 'z' \(index 1\) field 'metadata"):
        Dataset.from_records(
            [
                {"id": "y", "input": {}, "expected_output": 1},
                {"id": "z", "input": {}, "expected_output": 1, "metadata": {"tags": [None]}},
            ],
            name="r",
        )


def test_empty_and_whitespace_string_tags_are_still_dropped_not_errors() -> None:
    ds = Dataset.from_records(
        [{"id": "a", "input": {}, "expected_output": 1, "metadata": {"tags": ["", " ", "x"]}}],
        name="r",
    )
    assert ds.get_column("tags").to_list() == [["x"]]


@pytest.mark.parametrize("blank", [" ", "\t", "  \n "])
def test_a_blank_sample_id_is_an_error_in_every_format(tmp_path: Path, blank: str) -> None:
    yaml_path = yaml_dataset(
        tmp_path, f"- {{id: {json.dumps(blank)}, input: {{}}, expected_output: x}}\n"
    )
    jsonl = write(
        tmp_path,
        "d.jsonl",
        json.dumps({"sample_id": "ok", "input": {}, "expected_output": 1})
        + "\n"
        + json.dumps({"sample_id": blank, "input": {}, "expected_output": 1})
        + "\n",
    )
    csv = tmp_path / "d.csv"
    pl.DataFrame({"id": [blank], "input": ["q"], "expected_output": ["x"]}).write_csv(csv)
    cases = {
        yaml_path: f"Sample at index 0 field 'id' must be a non-blank string; got {blank!r}",
        jsonl: f"Sample at index 1 field 'sample_id' must be a non-blank string; got {blank!r}",
        csv: f"Sample at index 0 field 'id' must be a non-blank string; got {blank!r}",
    }
    for path, message in cases.items():
        with pytest.raises(DatasetError) as excinfo:
            read_dataset(path)
        assert error_text(excinfo) == f"{path}: {message}, which is only whitespace."
    with pytest.raises(DatasetError, match="field 'id' must be a non-blank string"):
        Dataset.from_records([{"id": blank, "input": {}, "expected_output": 1}], name="r")


def test_an_empty_or_missing_id_keeps_the_reference_message(tmp_path: Path) -> None:
    path = yaml_dataset(tmp_path, "- {id: '', input: {}, expected_output: x}\n")
    with pytest.raises(DatasetError) as excinfo:
        read_dataset(path)
    assert error_text(excinfo) == (
        f"{path}: Sample at index 0 missing required string field 'id' (got str '')."
    )


def test_parquet_directories_globs_and_urls_read_as_one_dataset(tmp_path: Path) -> None:
    rows = pa.table(
        {
            "id": [f"q{i:02d}" for i in range(30)],
            "input": [f'{{"question": "Q{i}"}}' for i in range(30)],
            "expected_output": [f"a{i}" for i in range(30)],
            "tags": [["even"] if i % 2 == 0 else [] for i in range(30)],
        }
    )
    whole = tmp_path / "whole.parquet"
    pq.write_table(rows, whole)
    folder = tmp_path / "golden"
    (folder / "part=b").mkdir(parents=True)
    pq.write_table(rows.slice(0, 10), folder / "a.parquet")  # sorted paths keep this order
    pq.write_table(rows.slice(10, 15), folder / "part=b" / "b.parquet", row_group_size=4)
    pq.write_table(rows.slice(25), folder / "part=b" / "c.parquet")
    (folder / "notes.txt").write_text("not a dataset file")
    expected = read_dataset(whole, name="golden")
    assert read_dataset(folder).equals(expected)  # named after the directory
    assert read_dataset(f"{folder}/**/*.parquet").equals(expected)
    assert read_dataset(f"file://{folder}", name="golden").equals(expected)
    assert read_dataset(f"{folder}/part=b/*.parquet", name="x").height == 20


def test_parquet_source_errors_name_the_file_and_sample(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"no Parquet file found there"):
        read_dataset(tmp_path / "none" / "*.parquet")
    folder = tmp_path / "golden"
    folder.mkdir()
    pq.write_table(
        pa.table({"id": ["a"], "input": ["q"], "expected_output": ["x"]}), folder / "1.parquet"
    )
    pq.write_table(pa.table({"id": ["b"], "expected_output": ["y"]}), folder / "2.parquet")
    with pytest.raises(DatasetError) as excinfo:
        read_dataset(folder)
    assert error_text(excinfo) == (
        f"{folder}: Sample 'b' (index 1) missing required associative-array field 'input'."
    )
    (folder / "3.parquet").write_bytes(b"junk")
    with pytest.raises(DatasetError, match=r"3\.parquet: not a valid Parquet file"):
        read_dataset(folder)


@pytest.mark.parametrize(
    "metadata",
    [
        '{"n": 123456789012345678901234567890, "x": 1.5}',  # past 64 bits: kept exactly
        '{"n": -9223372036854775809}',
        '{"s": "\\u00e9\\u2028", "nested": {"deep": [[[1, 2.5e-324, -0.0]]]}}',
        '{"a": 1, "a": 2}',  # the last of a repeated key, as json reads it
    ],
)
def test_jsonl_metadata_reads_as_json_loads_reads_it(tmp_path: Path, metadata: str) -> None:
    line = f'{{"id": "q", "input": {{"q": "a"}}, "expected_output": "x", "metadata": {metadata}}}'
    ds = read_dataset(write(tmp_path, "d.jsonl", line + "\n"))
    expected = json.loads(metadata)
    assert json.loads(ds.get_column("metadata").item()) == expected
    assert ds.get_column("metadata").item() == json.dumps(
        expected, ensure_ascii=False, separators=(",", ":")
    )
