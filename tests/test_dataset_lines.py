"""The compiled JSONL dataset reader (core/_dataset_lines.py) against the exact reader as the
oracle: on generated files the same frame, or the same error message, whichever lines the
pass reads and whichever it leaves to the exact code."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import evalframe as ef
from evalframe.core import _dataset
from evalframe.core._errors import DatasetError

_Outcome = tuple[str, Any]


def outcome(path: Path) -> _Outcome:
    """The dataset read from ``path``, or the message it fails with."""
    try:
        dataset = ef.read_dataset(path)
    except DatasetError as exc:
        return "error", str(exc)
    return "ok", dataset


def exact(path: Path) -> _Outcome:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_dataset, "_compiled_jsonl", lambda *_: None)
        return outcome(path)


def compiled(path: Path, *, only_pass: bool = False) -> _Outcome:
    """Read through the pass, whatever the size; ``only_pass``: no line may reach the exact
    per-sample code."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EVALFRAME_KERNELS", "compiled")
        if only_pass:

            def refuse(records: object, source: object) -> None:
                raise AssertionError("a line was left to the exact code")

            patch.setattr(_dataset, "_samples_frame", refuse)
        return outcome(path)


def assert_same(path: Path, *, only_pass: bool = False) -> _Outcome:
    want, got = exact(path), compiled(path, only_pass=only_pass)
    assert got[0] == want[0], (got, want)
    if want[0] == "error":
        assert got[1] == want[1]
    else:
        assert_frame_equal(got[1], want[1])
        assert (got[1].name, got[1].path, got[1].metrics, got[1].repetitions) == (
            want[1].name,
            want[1].path,
            want[1].metrics,
            want[1].repetitions,
        )
    return want


# Hostile text: quotes, backslashes, control characters, escapes' look-alikes, separators
# Python splits lines at, Unicode spaces, astral characters, brackets and keys' look-alikes.
_CHARS = st.characters(codec="utf-8") | st.sampled_from(
    '"\\/\b\f\n\r\t\x00\x1f\x7f\u2028\u2029\u00a0\u3000\x1c é😀{}[]:,' + "tags"
)
texts = st.text(_CHARS, max_size=12)
keys = texts | st.sampled_from(["tags", "expected_any", "trajectory", "1", "-a", " a", ""])
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | texts
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
    max_leaves=8,
)
string_maps = st.dictionaries(keys, texts, max_size=4)
tags = st.lists(st.sampled_from(["a", " a", "b\n", "", "  ", "\u00a0c"]), max_size=3)
trajectories = st.sampled_from(
    [
        {"tools": ["search"], "max_steps": 3},
        {"max_steps": "x"},  # not a count: an error naming the sample
        {"order": ["a", "b"], "forbidden_tools": ["c"]},
    ]
)
ids = st.sampled_from(["q1", "q2", "q3", " q4", "q\u00e95", "😀"]) | texts


@st.composite
def samples(draw: st.DrawFn) -> dict[str, Any]:
    """A sample record: usually plain, sometimes any shape the exact reader judges."""
    sample: dict[str, Any] = {}
    spelling = draw(st.sampled_from(["id", "id", "sample_id", "both", "none", "null", "int"]))
    sample_id = draw(ids)
    if spelling in ("id", "sample_id"):
        sample[spelling] = sample_id
    elif spelling == "both":
        sample["sample_id"] = sample_id
        sample["id"] = draw(st.just(sample_id) | ids)
    elif spelling == "null":
        sample["id"] = None
        sample["sample_id"] = sample_id
    elif spelling == "int":
        sample["id"] = 7
    if draw(st.integers(0, 9)):
        sample["input"] = draw(
            string_maps | st.dictionaries(keys, values, max_size=3) | st.sampled_from([[], "q"])
        )
    if draw(st.integers(0, 9)):
        sample["expected_output"] = draw(texts | values)
    kind = draw(st.integers(0, 6))
    if kind == 1:
        sample["metadata"] = draw(st.dictionaries(keys, values, max_size=3))
    elif kind == 2:
        sample["metadata"] = {"trajectory": draw(trajectories), "n": draw(scalars)}
    elif kind == 3:
        sample["metadata"] = {"tags": draw(tags), "k": draw(texts)}
    elif kind == 4:
        sample["metadata"] = draw(st.sampled_from([None, [], "text", {"expected_any": ["a"]}]))
    if draw(st.integers(0, 12)) == 0:
        sample["tags"] = draw(tags | texts)
    if draw(st.integers(0, 12)) == 0:
        sample[draw(st.sampled_from(["expected_any", "reference_contexts"]))] = draw(
            st.none() | st.lists(texts, max_size=2)
        )
    if draw(st.integers(0, 4)) == 0:
        sample[draw(keys)] = draw(values)  # a member the dataset does not read
    return sample


spellings = st.sampled_from(
    [
        {},
        {"ensure_ascii": False},
        {"separators": (",", ":")},
        {"separators": (" ,\t", " : "), "ensure_ascii": False},
    ]
)
# Lines that are not one plain JSON object: Python judges each.
odd_lines = st.sampled_from(
    [
        "",
        "  \t\r",
        "\u00a0",  # blank to str.strip(), not JSON
        "\x1c",
        "{oops",
        "[1]",
        '{"id": "d", "input": {}, "expected_output": 1, "id": "e"}',  # a repeated member
        '{"id": "f", "input": {"a": "x", "a": "y"}, "expected_output": "z"}',
        '{"id": "g", "input": {}, "expected_output": NaN}',
        '{"id": "h", "input": {"t": "\\ud800"}, "expected_output": "x"}',  # lone surrogate
        '{"id": "i", "input": {}, "expected_output": 12345678901234567890123}',
        '{"id": "j", "input": {}, "expected_output": [1.0, 1e5, -0, 0.1, 1E2]}',
        '{"id": "k", "input": {}, "expected_output": "x"} trailing',
        '{"id": "l", "input": {}, "expected_output": "x", "metadata": {"x": 1e400}}',
        '{"id": "m", "input": {}, "expected_output": "x", "deep": ' + "[" * 120 + "]" * 120 + "}",
        '\t {"id": "n", "input": {"b": "1", "a": "2"}, "expected_output": "y"}  ',
        '{"id": "o\\u0000", "input": {"\\u00e9": "\\n"}, "expected_output": "\\"\\/"}',
    ]
)


@st.composite
def jsonl_files(draw: st.DrawFn) -> bytes:
    lines: list[str] = []
    for sample in draw(st.lists(samples(), min_size=0, max_size=6)):
        lines.append(json.dumps(sample, **draw(spellings)))
        if draw(st.integers(0, 5)) == 0:
            lines.append(draw(odd_lines))
    text = "\n".join(lines) + draw(st.sampled_from(["", "\n", "\n\n"]))
    if draw(st.booleans()):
        text = text.replace("\n", "\r\n")
    data = text.encode("utf-8", "surrogatepass")
    return draw(st.sampled_from([b"", b"\xef\xbb\xbf"])) + data


@pytest.fixture
def jsonl(tmp_path: Path) -> Callable[[bytes], Path]:
    path = tmp_path / "data.jsonl"

    def write(data: bytes) -> Path:
        path.write_bytes(data)
        return path

    return write


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=jsonl_files())
def test_any_file_reads_as_the_exact_reader_reads_it(
    jsonl: Callable[[bytes], Path], data: bytes
) -> None:
    assert_same(jsonl(data))


# Tags PHP's trim empties or shortens, repeated once trimmed, and Unicode spaces it keeps.
_tag_like = st.sampled_from(["a", " a", "a\x00", "\x0b", "", "\u00a0b", "\\t"])
plain_samples = st.fixed_dictionaries(
    {
        # ids with a character that is surely not blank (the pass leaves the others' check
        # to the exact code)
        "id": texts.filter(lambda s: any(c.isascii() and not c.isspace() for c in s)),
        # keys Python's encoder writes as they are (the pass sorts the keys of such inputs)
        "input": st.dictionaries(
            texts.filter(lambda s: s == json.dumps(s)[1:-1]), texts, max_size=4
        ),
        "expected_output": texts
        | st.integers(-(2**60), 2**60)
        | st.booleans()
        | st.none()
        | st.lists(texts | st.integers(), max_size=3),
        "metadata": st.dictionaries(
            texts.filter(lambda s: s not in ("tags", "expected_any", "trajectory", "mcp")),
            st.recursive(
                st.none() | st.booleans() | st.integers(-(2**60), 2**60) | texts,
                lambda inner: (
                    st.lists(inner, max_size=3)
                    | st.dictionaries(st.sampled_from("abc"), inner, max_size=3)
                ),
                max_leaves=6,
            ),
            max_size=3,
        ),
    }
)


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    records=st.lists(plain_samples, min_size=1, max_size=8, unique_by=lambda s: s["id"]),
    spelling=spellings,
    tags=st.lists(st.none() | texts | st.lists(texts | _tag_like, max_size=3), max_size=8),
)
def test_plain_samples_are_read_by_the_pass_alone(
    jsonl: Callable[[bytes], Path],
    records: list[dict[str, Any]],
    spelling: dict[str, Any],
    tags: list[object],
) -> None:
    # Hostile strings, escapes, nested metadata, non-string expected values, metadata.tags
    # (null, a string, a list of strings): all the pass's.
    for record, value in zip(records, tags, strict=False):
        record["metadata"]["tags"] = value
    text = "".join(json.dumps(r, **spelling) + "\n" for r in records)
    if "expected_any" in text:  # a key inside a string: a false alarm
        return
    kind, dataset = assert_same(jsonl(text.encode()), only_pass=True)
    assert kind == "ok"
    assert dataset.get_column("sample_id").to_list() == [r["id"] for r in records]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"id": "a", "input": {}, "expected_output": 1}\n{oops\n', "line 2 is not valid JSON"),
        (
            '{"id": "a", "input": {}, "expected_output": 1}\n'
            '{"id": "a", "input": {}, "expected_output": 2}\n',
            "Duplicate sample id 'a' at index 1.",
        ),
        ("\n \n", "Dataset JSONL file is empty."),
        ("\u00a0\n\x1c", "Dataset JSONL file is empty."),
        (
            '{"id": "a", "input": {}, "expected_output": "x", '
            '"metadata": {"trajectory": {"tools": [1]}}}\n',
            "Sample 'a' (index 0)",
        ),
        ('{"id": "q", "input": {"t": "\\ud83d"}, "expected_output": 1}\n', "lone surrogate"),
        ('{"id": "\udcff", "input": {}, "expected_output": 1}\n', "not valid UTF-8"),
        ('{"id": "a", "input": {}, "expected_output": "x", "m": ' + "[" * 101 + "]" * 101 + "}\n",
         "more than 100 levels deep"),
    ],
)  # fmt: skip
def test_errors_are_the_exact_readers(
    jsonl: Callable[[bytes], Path], text: str, message: str
) -> None:
    kind, found = assert_same(jsonl(text.encode("utf-8", "surrogateescape")))
    assert kind == "error"
    assert message in found


def test_a_file_of_plain_and_odd_lines_keeps_its_order(
    jsonl: Callable[[bytes], Path],
) -> None:
    plain = '{"id": "p%d", "input": {"question": "q%d"}, "expected_output": "a"}'
    odd = '{"id": "o%d", "input": {"n": %d}, "expected_output": 1.5, "tags": ["t"]}'
    lines = [(plain if i % 3 else odd) % (i, i) for i in range(30)]
    kind, dataset = assert_same(jsonl(("\n".join(lines) + "\n\u3000\n").encode()))
    assert kind == "ok"
    assert dataset.get_column("sample_id").to_list() == [
        f"{'po'[i % 3 == 0]}{i}" for i in range(30)
    ]


@pytest.mark.parametrize(
    ("tags", "message"),
    [
        ("[1]", "field 'metadata.tags[0]' must be a string (a tag); got int 1."),
        ('{"a": "b"}', "field 'metadata.tags' must be a string or a list of strings"),
        ("true", "field 'metadata.tags' must be a string or a list of strings"),
    ],
)
def test_bad_metadata_tags_get_the_exact_readers_message(
    jsonl: Callable[[bytes], Path], tags: str, message: str
) -> None:
    plain = '{"id": "p%d", "input": {"q": "x"}, "expected_output": "a", "metadata": {"tags": "t"}}'
    bad = '{"id": "b", "input": {}, "expected_output": "x", "metadata": {"k": 1, "tags": %s}}'
    text = "\n".join([plain % 1, bad % tags, plain % 2]) + "\n"
    kind, found = assert_same(jsonl(text.encode()))
    assert kind == "error"
    assert "Sample 'b' (index 1)" in found
    assert message in found


def test_row_hashes_take_the_canonical_json_where_the_encoder_differs(
    jsonl: Callable[[bytes], Path],
) -> None:
    # Keys PHP sorts differently, an empty input, floats and U+2028: the canonical JSON.
    lines = [
        {"id": "a", "input": {"10": "x", "9": "y", "b": "z"}, "expected_output": [1.5, 2]},
        {"id": "b", "input": {}, "expected_output": "\u2028"},
        {"id": "c", "input": {"z": "1", "a": "2"}, "expected_output": 12},
    ]
    text = "".join(json.dumps(line) + "\n" for line in lines)
    kind, dataset = assert_same(jsonl(text.encode()), only_pass=True)
    assert kind == "ok"
    expected = ef.Dataset.from_records(lines, name="data")
    assert dataset.get_column("row_hash").equals(expected.get_column("row_hash"))


def test_computed_floats_are_read_by_the_pass_as_python_wrote_them(
    jsonl: Callable[[bytes], Path],
) -> None:
    # More significant digits than the pass spells: copied as written, checked to be repr
    lines = [
        {"id": "a", "input": {"w": 0.8444218515250481}, "expected_output": 0.1 + 0.2,
         "metadata": {"difficulty": 1 / 3, "tags": ["x"]}},
        {"id": "b", "input": {"w": [1e-320, 2.5]}, "expected_output": "x",
         "metadata": {"trajectory": {"max_steps": 3}, "score": 2 / 3}},
    ]  # fmt: skip
    text = "".join(json.dumps(line) + "\n" for line in lines)
    kind, dataset = assert_same(jsonl(text.encode()), only_pass=True)
    assert kind == "ok"
    assert dataset.get_column("metadata")[0] == '{"difficulty":0.3333333333333333,"tags":["x"]}'
    # the same values spelled otherwise: the exact reader's, line by line
    other = text.replace("0.8444218515250481", "0.84442185152504810")
    assert_same(jsonl(other.encode()))


def test_a_large_file_takes_the_pass_and_a_small_one_stays_exact(tmp_path: Path) -> None:
    # In a fresh process: a small file loads no numba; a large one compiles (or loads) the pass.
    small = tmp_path / "small.jsonl"
    small.write_text('{"id": "a", "input": {}, "expected_output": "x"}\n')
    large = tmp_path / "large.jsonl"
    line = '{"id": "s%d", "input": {"question": "q"}, "expected_output": "x"}\n'
    large.write_text("".join(line % i for i in range(70_000)))
    assert large.stat().st_size > _dataset._COMPILED_FROM
    script = (
        "import sys, evalframe as ef\n"
        "from evalframe.core import _dataset_lines\n"
        f"ef.read_dataset({str(small)!r})\n"
        "print('numba' in sys.modules, _dataset_lines.lines_loaded())\n"
        f"ds = ef.read_dataset({str(large)!r})\n"
        "print(ds.height, _dataset_lines.lines_loaded())\n"
    )
    env = {k: v for k, v in __import__("os").environ.items() if k != "EVALFRAME_KERNELS"}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env
    )
    assert done.stdout.split("\n")[:2] == ["False False", "70000 True"]


def test_a_warm_process_reads_a_smaller_file_with_the_pass(
    jsonl: Callable[[bytes], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalframe.core import _dataset_lines

    line = '{"id": "s%d", "input": {"question": "q"}, "expected_output": "x"}\n'
    path = jsonl("".join(line % i for i in range(2_000)).encode())
    compiled(path)  # loads the pass
    assert _dataset_lines.lines_loaded()

    def refuse(*_: object) -> None:
        raise AssertionError("the exact reader read a file the warm pass takes")

    monkeypatch.setattr(_dataset, "_samples_frame", refuse)
    assert ef.read_dataset(path).height == 2_000
