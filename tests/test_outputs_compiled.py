"""The compiled readers of large saved outputs files (map form, JSONL), against Python's json
module and the exact reader as oracles."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from conftest import write
from hypothesis import given, settings
from hypothesis import strategies as st
from test_outputs import outputs_error

from evalframe.core import _outputs
from evalframe.core._outputs import read_outputs
from evalframe.core._outputs_compiled import outputs_lines, outputs_list, outputs_map


def expected_rows(document: bytes) -> list[tuple[str, str]]:
    """The rows of a map-form document as Python's json module reads it."""
    outputs = json.loads(document)["outputs"]
    return [(str(key), value) for key, value in outputs.items()]


# Text as users' outputs hold it: quotes, backslashes, control characters, non-ASCII, astral.
texts = st.text(
    st.characters(codec="utf-8") | st.sampled_from('"\\/\b\f\n\r\t\x00\x1f\u2028é😀'),
    max_size=30,
)
ids = texts.filter(lambda s: s.strip() != "")
spellings = st.sampled_from(
    [
        {},
        {"ensure_ascii": False},
        {"indent": 2},
        {"indent": "\t", "ensure_ascii": False},
        {"separators": (",", ":")},
        {"separators": (" ,\r\n", " :\t")},
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(ids, texts, max_size=12), spellings)
def test_vouches_for_every_map_of_strings_and_reads_it_as_python_does(
    outputs: dict[str, str], spelling: dict[str, object]
) -> None:
    document = json.dumps({"outputs": outputs}, **spelling).encode()  # type: ignore[arg-type]
    frame = outputs_map(document)
    assert frame is not None
    assert frame.schema == pl.Schema({"sample_id": pl.String(), "actual_output": pl.String()})
    assert frame.rows() == expected_rows(document)


@pytest.mark.parametrize(
    "document",
    [
        b'{"outputs": [{"id": "a", "actual_output": "x"}]}',  # the list form
        b'{"run": "r1", "outputs": {"a": "x"}}',  # a member beside outputs
        b'{"outputs": {"a": "x"}, "run": "r1"}',
        b'{"outputs": {"a": 3}}',  # not a string
        b'{"outputs": {"a": null}}',
        b'{"outputs": {"": "x"}}',  # empty id
        b'{"outputs": {" \\t": "x"}}',  # blank ids, as str.strip() sees them
        b'{"outputs": {"\\u001c": "x"}}',
        b'{"outputs": {"\\u00a0\\u2003": "x"}}',
        b'{"outputs": {"a": "x", "a": "y"}}',  # repeated id
        b'{"outputs": {}, "outputs": {"a": "x"}}',  # repeated member
        b'{"outputs": {"a": "x\\ud800"}}',  # lone surrogates
        b'{"outputs": {"a": "\\udc00x"}}',
        b'{"outputs": {"a": "x\xff"}}',  # invalid UTF-8
        b'{"outputs": {"\xc3": "x"}}',
        b'{"outputs": {"a": "x\ny"}}',  # a raw control character
        b'{"outputs": {"a": "\\x"}}',  # a bad escape
        b'{"outputs": {"a": "x",}}',  # a trailing comma
        b'{"outputs": {"a": "x"}} {}',  # data after the document
        b'{"outputs": {"a": "x"}',  # cut short
        b'{"outputs": {"a": "x"',
        b'["outputs"]',
        b"",
    ],
)
def test_declines_what_the_exact_reader_must_judge(document: bytes) -> None:
    assert outputs_map(document) is None


def test_accepts_what_python_accepts_at_the_edges() -> None:
    # an escaped key spelling "outputs", an empty map, a surrogate pair, a blank-looking id
    # that is not blank, space around everything
    document = b' \n{ "outp\\u0075ts" : { } } \r\n'
    frame = outputs_map(document)
    assert frame is not None
    assert frame.height == 0
    document = b'{"outputs": {"\\u200b": "\\ud83d\\ude00", "a": "\\/"}}'
    frame = outputs_map(document)
    assert frame is not None
    assert frame.rows() == expected_rows(document) == [("\u200b", "😀"), ("a", "/")]


@pytest.fixture
def compiled_always(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file tries the compiled reader first, whatever its size."""
    monkeypatch.setattr(_outputs, "_COMPILED_FROM", 0)


@pytest.mark.usefixtures("compiled_always")
@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"outputs": {"a": 3}}', "Saved output for sample 'a' must be a string; got int."),
        ('{"outputs": {"": "x"}}', "Saved outputs contain an empty sample id."),
        (
            '{"outputs": {"a": "x", "b": "y", "a": "z"}}',
            "Duplicate saved output for sample 'a'.",
        ),
        (
            '{"outputs": {}, "outputs": {"a": "x"}}',
            "Saved outputs file has the key 'outputs' more than once.",
        ),
        (
            '{"outputs": {"a": "x", "\\u001c ": "y"}}',
            "Saved outputs contain a blank sample id: key '\\x1c ' at index 1 of field "
            "'outputs' is only whitespace; an id must be a non-empty string that is not only "
            "whitespace.",
        ),
        (
            '{"outputs": {"a": "x\\ud800y"}}',
            "Saved output for sample 'a' (index 0) holds a lone surrogate \\ud800 in field "
            "'actual_output'; text must be valid Unicode.",
        ),
        (
            '{"outputs": {"b": "x", "a\\udc00": "y"}}',
            "Saved output for sample 'a\\udc00' (index 1) holds a lone surrogate \\udc00 in "
            "field 'sample_id'; text must be valid Unicode.",
        ),
    ],
)
def test_errors_keep_their_messages(tmp_path: Path, content: str, message: str) -> None:
    path = write(tmp_path, "o.json", content)
    assert outputs_error(path) == f"{path}: {message}"


@pytest.mark.usefixtures("compiled_always")
def test_invalid_utf8_keeps_its_message(tmp_path: Path) -> None:
    path = write(tmp_path, "o.json", b'{"outputs": {"b": "y", "a": "\xff"}}')
    assert outputs_error(path) == (
        f"{path}: Saved outputs file is not valid UTF-8: byte 0xff at line 1 (byte offset 29) "
        "is invalid start byte."
    )


def test_a_large_file_reads_as_a_small_one(tmp_path: Path) -> None:
    # 5 MiB of ranked lists with a BOM, over the size where the compiled reader takes over
    ranked = {f"q{i}": json.dumps([f"doc-{i * 7 + j}" for j in range(40)]) for i in range(9000)}
    ranked["é 😀"] = 'line\n"quoted"\t\\'
    document = json.dumps({"outputs": ranked}, ensure_ascii=False).encode()
    assert len(document) >= _outputs._COMPILED_FROM
    path = write(tmp_path, "o.json", b"\xef\xbb\xbf" + document)
    frame = read_outputs(path)
    assert frame.rows() == list(ranked.items())
    assert outputs_map(document) is not None  # this file was read by the compiled pass


def test_a_smaller_file_with_trajectories_takes_the_loaded_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import evalframe.core._outputs_compiled as compiled

    calls = {"name": "search", "arguments": {"q": "x", "n": 2}}
    entries = [
        {"id": f"q{i}", "actual_output": "ok", "trajectory": {"tool_calls": [calls] * (i % 4)}}
        for i in range(2000)
    ]
    document = json.dumps({"outputs": entries}).encode()
    assert _outputs._WARM_FROM <= len(document) < _outputs._COMPILED_FROM
    path = write(tmp_path, "o.json", document)
    seen: list[int] = []

    def spy(data: bytes, numbers: pl.Schema) -> pl.DataFrame | None:
        seen.append(len(data))
        return compiled._entries(data, numbers, listed=True)

    monkeypatch.setattr(compiled, "outputs_list", spy)
    monkeypatch.setattr(compiled, "entries_loaded", lambda: False)  # a fresh process
    exact = read_outputs(path)
    assert seen == []
    monkeypatch.undo()
    assert compiled.outputs_list(document, _outputs._NUMBERS) is not None  # now loaded
    assert compiled.entries_loaded()
    monkeypatch.setattr(compiled, "outputs_list", spy)
    assert read_outputs(path).equals(exact, null_equal=True)
    assert seen == [len(document)]


# --- JSONL ------------------------------------------------------------------------------------

NUMBERS = _outputs._NUMBERS
INTEGERS = [c for c, dtype in NUMBERS.items() if dtype == pl.Int64]
FLOATS = [c for c, dtype in NUMBERS.items() if dtype == pl.Float64]

numbers_for = {
    **{c: st.none() | st.integers(-(10**19), 10**19) for c in INTEGERS},
    **{
        c: st.none()
        | st.integers(-(2**60), 2**60)
        | st.floats(allow_nan=False, allow_infinity=False)
        for c in FLOATS
    },
}
ignored = st.dictionaries(
    st.sampled_from(["model", "note", "score", "ok"]),
    st.none() | st.booleans() | st.integers(-1000, 1000) | st.floats(-1e3, 1e3) | texts,
    max_size=2,
)


@st.composite
def entries(draw: st.DrawFn) -> dict[str, object]:
    entry: dict[str, object] = {}
    spelling = draw(st.sampled_from(["id", "sample_id", "both", "null id"]))
    sample_id = draw(ids)
    if spelling in ("id", "both"):
        entry["id"] = sample_id
    if spelling in ("sample_id", "both", "null id"):
        entry["sample_id"] = sample_id if spelling != "both" else draw(ids)
    if spelling == "null id":
        entry["id"] = None
    entry["actual_output"] = draw(texts)
    for column in draw(st.lists(st.sampled_from(list(NUMBERS)), unique=True, max_size=3)):
        entry[column] = draw(numbers_for[column])
    for column in draw(st.lists(st.sampled_from(["contexts", "trajectory", "turns"]), max_size=1)):
        entry[column] = None
    entry.update(draw(ignored))
    return dict(draw(st.permutations(list(entry.items()))))


def read_both(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[object, object]:
    """What the exact reader and the compiled-first reader make of ``path`` (a frame, or the
    error's message)."""
    results = []
    for threshold in (10**12, 0):
        monkeypatch.setattr(_outputs, "_COMPILED_FROM", threshold)
        monkeypatch.setattr(_outputs, "_WARM_FROM", threshold)
        monkeypatch.setattr(_outputs, "_QUICK_UP_TO", -1 if threshold else 10**12)
        try:
            results.append(read_outputs(path))
        except Exception as exc:
            results.append(f"{type(exc).__name__}: {exc}")
    return results[0], results[1]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(entries(), min_size=1, max_size=8),
    st.sampled_from(["\n", "\r\n", "\n\n", " \n"]),
    st.sampled_from([{}, {"ensure_ascii": False}, {"separators": (",", ":")}]),
)
def test_jsonl_reads_as_the_exact_reader_reads_it(
    tmp_path_factory: pytest.TempPathFactory,
    lines: list[dict[str, object]],
    newline: str,
    spelling: dict[str, object],
) -> None:
    path = tmp_path_factory.mktemp("jsonl") / "o.jsonl"
    path.write_text(newline.join(json.dumps(e, **spelling) for e in lines) + newline)  # type: ignore[arg-type]
    assert_same_reading(path)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(entries(), min_size=1, max_size=8),
    st.sampled_from([{}, {"indent": 2}, {"ensure_ascii": False}, {"separators": (",", ":")}]),
)
def test_the_list_form_reads_as_the_exact_reader_reads_it(
    tmp_path_factory: pytest.TempPathFactory,
    listed: list[dict[str, object]],
    spelling: dict[str, object],
) -> None:
    path = tmp_path_factory.mktemp("list") / "o.json"
    path.write_text(json.dumps({"outputs": listed}, **spelling))  # type: ignore[arg-type]
    assert_same_reading(path)


def assert_same_reading(path: Path) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        exact, compiled = read_both(path, monkeypatch)
    assert_same_outcome(exact, compiled)


def assert_same_outcome(exact: object, got: object) -> None:
    """``got`` is the exact reader's frame (dtypes included), or the same error message."""
    if isinstance(exact, pl.DataFrame):
        assert isinstance(got, pl.DataFrame)
        assert got.equals(exact)
        assert got.schema == exact.schema
    else:
        assert got == exact


@pytest.mark.parametrize(
    "line",
    [
        '{"id": "a", "actual_output": "x", "contexts": "c"}',  # not a list: the exact reader's
        '{"id": "a", "actual_output": "x", "trajectory": []}',
        '{"id": "a", "actual_output": "x", "meta": {"k": 1}}',  # a nested member
        '{"id": "a", "actual_output": "x", "id": "b"}',  # a repeated member
        '{"id": 3, "actual_output": "x"}',
        '{"id": "a", "actual_output": null}',
        '{"id": "", "actual_output": "x"}',
        '{"id": "a", "actual_output": "x", "prompt_tokens": 1.5}',
        '{"id": "a", "actual_output": "x", "prompt_tokens": true}',
        '{"id": "a", "actual_output": "x", "latency_ms": "fast"}',
        '{"id": "a", "actual_output": "x", "latency_ms": 1e400}',
        '{"id": "a", "actual_output": "x", "retries": 12345678901234567890}',
        '{"id": "a", "actual_output": "x\\ud800"}',
        '{"id": "a",\n "actual_output": "x"}',  # one object over two lines
        '{"id": "a", "actual_output": "x"} {"id": "b", "actual_output": "y"}',
        '\x0c{"id": "a", "actual_output": "x"}',
        '["a", "x"]',
    ],
)
def test_jsonl_declines_what_the_exact_reader_must_judge(line: str) -> None:
    assert outputs_lines(line.encode() + b"\n", NUMBERS) is None


def test_jsonl_vouches_for_the_usual_export() -> None:
    lines = [
        json.dumps({"id": "q1", "actual_output": "ok", "latency_ms": 12.5, "prompt_tokens": 30}),
        "",
        json.dumps({"sample_id": "q2", "id": None, "actual_output": "é\n", "model": "m", "x": 1}),
        json.dumps({"sample_id": "q3", "actual_output": "", "cost_usd": None, "retries": 0}),
    ]
    frame = outputs_lines("\r\n".join(lines).encode(), NUMBERS)
    assert frame is not None
    assert frame.rows() == [
        ("q1", "ok", 12.5, 30, None, None),
        ("q2", "é\n", None, None, None, None),
        ("q3", "", None, None, None, 0),
    ]
    assert frame.columns == [
        "sample_id", "actual_output", "latency_ms", "prompt_tokens", "cost_usd", "retries"
    ]  # fmt: skip


def test_floats_with_more_digits_than_the_exact_conversion_are_read_from_their_text() -> None:
    values = [1234.5678901234567, 0.0012345678901234567, 123456789012345678901, 1e-320, 2.5]
    lines = [
        json.dumps({"id": f"q{k}", "actual_output": "", "cost_usd": v, "score": v})
        for k, v in enumerate(values)  # ``score``: a member the reader ignores
    ]
    frame = outputs_lines("\n".join(lines).encode(), NUMBERS)
    assert frame is not None
    assert frame.get_column("cost_usd").to_list() == [float(v) for v in values]


@pytest.mark.parametrize(
    "document",
    [
        b'{"outputs": []}',  # empty: the exact reader's frame
        b'{"outputs": [{"id": "a", "actual_output": "x"}], "run": "r1"}',
        b'{"run": "r1", "outputs": [{"id": "a", "actual_output": "x"}]}',
        b'{"outputs": [{"id": "a", "actual_output": "x"},]}',
        b'{"outputs": [{"id": "a", "actual_output": "x"}]',
        b'{"outputs": [{"id": "a", "actual_output": "x"}, "b"]}',
        b'{"outputs": [{"id": "a", "actual_output": "x", "contexts": [3]}]}',
    ],
)
def test_the_list_form_declines_what_the_exact_reader_must_judge(document: bytes) -> None:
    assert outputs_list(document, NUMBERS) is None


def test_the_list_form_vouches_for_eval_harness_entries() -> None:
    document = json.dumps(
        {"outputs": [{"id": "q1", "actual_output": "ok", "latency_ms": 3}, {"id": "q2",
         "actual_output": "", "trajectory": None}]}, indent=2)  # fmt: skip
    frame = outputs_list(document.encode(), NUMBERS)
    assert frame is not None
    assert frame.rows() == [("q1", "ok", 3.0), ("q2", "", None)]


@pytest.mark.usefixtures("compiled_always")
def test_jsonl_errors_keep_their_messages(tmp_path: Path) -> None:
    path = write(tmp_path, "o.jsonl", '{"id": "a", "actual_output": "x"}\n{"id": "a"}\n')
    assert outputs_error(path) == (
        f"{path}: Saved outputs entry at index 1 (sample 'a') must contain a string actual_output."
    )
    path = write(tmp_path, "o.jsonl", '{"id": "a", "actual_output": "x"}\n{"id": "a", "actu')
    assert outputs_error(path).startswith(f"{path}: Saved outputs line 2 is not valid JSON: ")
    path = write(tmp_path, "o.jsonl", " \n\n")
    assert outputs_error(path) == f"{path}: Saved outputs file must not be empty."


@pytest.mark.usefixtures("compiled_always")
def test_invalid_utf8_in_a_member_the_reader_ignores_is_still_an_error(tmp_path: Path) -> None:
    good = b'{"id": "a", "actual_output": "x"}\n'
    bad = b'{"id": "b", "actual_output": "y", "note": "\xff"}\n'
    assert outputs_lines(good + bad, NUMBERS) is None
    path = write(tmp_path, "o.jsonl", good + bad)
    offset = (good + bad).index(0xFF)
    assert outputs_error(path) == (
        f"{path}: Saved outputs file is not valid UTF-8: byte 0xff at line 2 (byte offset "
        f"{offset}) is invalid start byte."
    )
