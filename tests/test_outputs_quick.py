"""Saved outputs read by orjson and checked a column at a time (``core/_outputs_quick.py``),
against the exact reader as the oracle: over generated entries with every wrong shape the
exact parsers judge, and over files made hostile as text (repeated keys at every level, lone
surrogates, ``NaN`` and ``Infinity``, integers past 64 bits, nesting about the depth limit, a
BOM, invalid UTF-8), every frame and every error message is the exact reader's."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest
from conftest import write
from hypothesis import given, settings
from hypothesis import strategies as st
from test_outputs_compiled import ids, texts
from test_outputs_nested import (
    CONTEXTS,
    TRAJECTORY,
    TURNS,
    entries,
    plain_contexts,
    plain_trajectories,
    plain_turns,
)

from evalframe.core import _outputs, _outputs_quick
from evalframe.core._outputs import _NUMBERS, read_outputs
from evalframe.core._outputs_quick import quick_lines, quick_list


def read(path: Path, *, quick: bool) -> pl.DataFrame | str:
    """What ``read_outputs`` makes of ``path`` (a frame, or the error's message) with no
    compiled pass, and the quick reader first or not at all (the exact reader). The quick
    reader parses a list form's array in runs of about a sixth of the file, and looks for
    floats and splits lines in pieces of 7 bytes, so that every file crosses their edges."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_outputs, "_COMPILED_FROM", 10**12)
        patch.setattr(_outputs, "_WARM_FROM", 10**12)
        patch.setattr(_outputs, "_QUICK_UP_TO", 10**12 if quick else -1)
        patch.setattr(_outputs_quick, "_RUN", max(1, path.stat().st_size // 6))
        patch.setattr(_outputs_quick, "_PIECE", 7)
        try:
            return read_outputs(path)
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"


def assert_same(path: Path) -> None:
    exact, quick = read(path, quick=False), read(path, quick=True)
    if isinstance(exact, pl.DataFrame):
        assert isinstance(quick, pl.DataFrame)
        assert quick.schema == exact.schema
        assert quick.equals(exact)
    else:
        assert quick == exact


@settings(max_examples=150, deadline=None)
@given(
    st.lists(entries(), min_size=1, max_size=6),
    st.booleans(),
    st.sampled_from([{}, {"ensure_ascii": False}, {"indent": 1}, {"separators": (",", ":")}]),
)
def test_generated_entries_read_as_the_exact_reader_reads_them(
    tmp_path_factory: pytest.TempPathFactory,
    listed: list[dict[str, Any]],
    lines: bool,
    spelling: dict[str, Any],
) -> None:
    folder = tmp_path_factory.mktemp("quick")
    if lines:
        spelling.pop("indent", None)
        path = write(folder, "o.jsonl", "\n".join(json.dumps(e, **spelling) for e in listed))
    else:
        path = write(folder, "o.json", json.dumps({"outputs": listed}, **spelling))
    assert_same(path)


# --- files hostile as text -----------------------------------------------------------------


plain_entries = st.fixed_dictionaries(
    {"id": ids, "actual_output": texts},
    optional={
        "trajectory": plain_trajectories,
        "contexts": plain_contexts,
        "turns": plain_turns,
        "latency_ms": st.floats(0, 1e4) | st.integers(0, 99),
        "prompt_tokens": st.integers(0, 10**6),
    },
)


class Members(list[tuple[str, object]]):
    """An object written member by member, so a key may repeat."""


class Token(str):
    """Text written into the document as it is."""


def dumps(value: object) -> str:
    if isinstance(value, Token):
        return str(value)
    if isinstance(value, dict):
        value = Members(value.items())
    if isinstance(value, Members):
        return "{" + ", ".join(f"{json.dumps(k)}: {dumps(v)}" for k, v in value) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(dumps(v) for v in value) + "]"
    return json.dumps(value)


TOKENS = [
    "NaN", "Infinity", "-Infinity", "1e999", "-1E400", "123456789012345678901234",
    "-9223372036854775809", "18446744073709551615", "9223372036854775807", "-0.0", "1.5e-07",
    '"\\ud800"', '"a\\udc00b"', '"\\ud83d\\ude00"', '"\\u0000\\u001f"', "true", "{}", "[]",
]  # fmt: skip


def nested(levels: int) -> object:
    value: object = 1
    for level in range(levels):
        value = [value] if level % 2 else {"k": value}
    return value


def nodes(value: object) -> list[Any]:
    """Every map and list in ``value``, outermost first."""
    found: list[Any] = []
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict | list) and not isinstance(node, Members):
            found.append(node)
            stack.extend(node.values() if isinstance(node, dict) else node)
    return found


@st.composite
def hostile_files(draw: st.DrawFn) -> tuple[str, bytes]:
    """A JSONL or list-form file of generated entries, then changed as text."""
    kind = draw(st.sampled_from([entries(), plain_entries]))
    listed = copy.deepcopy(draw(st.lists(kind, min_size=1, max_size=4)))  # changed below
    lines = draw(st.booleans())
    document: Any = listed if lines else {"outputs": listed}
    for _ in range(draw(st.integers(0, 2))):
        targets = nodes(document)
        node = targets[draw(st.integers(0, len(targets) - 1))]
        keys = list(node) if isinstance(node, dict) else list(range(len(node)))
        if not keys:
            continue
        key = draw(st.sampled_from(keys))
        change = draw(st.sampled_from(["repeat", "repeat", "token", "deep"]))
        if change == "repeat" and isinstance(node, dict):  # the key again, before or after
            again = draw(st.sampled_from([node[key], "other", 3, None, Token("NaN")]))
            members = Members(node.items())
            members.insert(draw(st.integers(0, len(members))), (key, again))
            node.clear()
            node["members"] = members  # written as these members (see _unwrap)
        elif change == "token":
            node[key] = Token(draw(st.sampled_from(TOKENS)))
        else:
            node[key] = nested(draw(st.sampled_from([60, 90, 92, 95, 97, 100, 130])))
    data = _unwrap(document, lines)
    if draw(st.booleans()):
        data = b"\xef\xbb\xbf" + data
    if draw(st.integers(0, 3)) == 0:  # invalid UTF-8 inside a string
        quotes = [i for i, byte in enumerate(data) if byte == 0x22]
        if quotes:
            at = quotes[draw(st.integers(0, len(quotes) - 1))] + 1
            bad = draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xef\xbb\xbf"]))
            data = data[:at] + bad + data[at:]
    return ("o.jsonl" if lines else "o.json"), data


def _unwrap(document: Any, lines: bool) -> bytes:
    """The document as text, each map emptied for a repetition written as its members."""

    def plain(value: object) -> object:
        if isinstance(value, dict):
            if list(value) == ["members"] and isinstance(value["members"], Members):
                return Members((k, plain(v)) for k, v in value["members"])
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, list) and not isinstance(value, Members):
            return [plain(v) for v in value]
        return value

    value: Any = plain(document)
    text = "\n".join(dumps(v) for v in value) if lines else dumps(value)
    return text.encode("utf-8", "surrogatepass")


@settings(max_examples=250, deadline=None)
@given(hostile_files())
def test_hostile_files_read_as_the_exact_reader_reads_them(
    tmp_path_factory: pytest.TempPathFactory, file: tuple[str, bytes]
) -> None:
    name, data = file
    assert_same(write(tmp_path_factory.mktemp("hostile"), name, data))


@pytest.mark.parametrize(
    "document",
    [
        '{"outputs": [{"id": "a", "actual_output": "x"}], "outputs": []}',
        '{"outputs": [], "outputs": [{"id": "a", "actual_output": "x"}]}',
        '{"outputs": [{"id": "a", "actual_output": "x"}], "run": "r1"}',
        '{"outputs": [{"id": "a", "actual_output": "x", "id": "b"}]}',
        '{"outputs": [{"id": "a", "actual_output": "x", "trajectory": {"tool_calls": ["s"], '
        '"tool_calls": [{"name": "t", "arguments": {"q": 1, "r": 2, "q": 3}}]}}]}',
        '{"outputs": [{"id": "a", "actual_output": "x"}, {"id": "a", "actual_output": "y"}]}',
        '{"outputs": [{"id": "a", "actual_output": "x", "contexts": [{"text": "t", "id": true}]}]}',
        '{"outputs": [{"id": "a", "actual_output": "x", "trajectory": {"steps": "3"}}]}',
        '{"outputs": [{"id": "a", "actual_output": "x", "trajectory": {"tool_calls": [" "]}}]}',
        '{"outputs": [{"id": "a", "actual_output": "x", "turns": [{"role": "\\u001c"}]}]}',
        '{"outputs": [{"id": "a", "actual_output": "x", "turns": "[]"}]}',
        '{"outputs": {"a": "x"}}',
        '{"outputs": [{"id": "a", "actual_output": "x", "trajectory": {"tool_calls": [{"name": '
        '"t", "arguments": null, "result": {"k": 1e-05}, "error": [1]}, {"name": "u", '
        '"arguments": {"m": 2}, "result": "ok", "error": null}]}}]}',
        '{"outputs": [{"id": "a", "actual_output": "x", "trajectory": {"tool_calls": [{"name": '
        '"t", "arguments": {}}, {"name": "u", "arguments": {"m": "\\u007f"}}]}}]}',
        '{"outputs": [{"id": "a", "actual_output": "x", "trajectory": {"tool_calls": [{"name": '
        '"t", "arguments": {"m": "\\u007f", "n": "\\u001fevalframe\\u001f"}}]}}]}',
        # integers past 64 bits, which orjson reads as floats
        '{"outputs": [{"id": "a", "actual_output": "x", "trajectory": {"tool_calls": [{"name": '
        '"t", "arguments": {"n": 123456789012345678901, "f": 0.5}}]}}]}',
        '{"outputs": [{"id": "a", "actual_output": "x", "trajectory": {"tool_calls": [{"name": '
        '"t", "result": [-9223372036854775809], "latency_ms": 123456789012345678901}]}}]}',
        '{"outputs": [{"id": "a", "actual_output": "x", "latency_ms": 18446744073709551616, '
        '"turns": [{"role": "user", "latency_ms": 99999999999999999999999}]}]}',
        '{"outputs": [{"id": "a", "actual_output": "x", "trajectory": {"tool_calls": [{"name": '
        '"t", "tokens": 9223372036854775808, "arguments": {"n": 18446744073709551615}}]}}]}',
        '{"outputs": [{"id": "a", "actual_output": "x", "contexts": [{"text": "t", '
        '"id": 123456789012345678901}], "trajectory": {"approvals": [123456789012345678901]}}]}',
    ],
)
def test_documents_the_exact_reader_must_judge_keep_its_reading(
    tmp_path: Path, document: str
) -> None:
    assert_same(write(tmp_path, "o.json", document))


def test_repeated_keys_below_the_top_level_keep_the_last_value_in_the_first_place(
    tmp_path: Path,
) -> None:
    document = (
        '{"outputs": [{"id": "a", "actual_output": "x", "trajectory": {"tool_calls": '
        '[{"name": "t", "arguments": {"q": 1, "r": 2, "q": 3}}]}, "actual_output": "y"}]}'
    )
    assert quick_list(document.encode(), _NUMBERS) is not None
    path = write(tmp_path, "o.json", document)
    frame = read(path, quick=True)
    assert isinstance(frame, pl.DataFrame)
    assert frame.get_column("actual_output").to_list() == ["y"]
    assert frame.get_column("trajectory").struct.field("tool_calls").to_list() == [
        [{"name": "t", "arguments": '{"q":3,"r":2}', "result": None, "error": None,
          "latency_ms": None, "tokens": None}]
    ]  # fmt: skip
    assert_same(path)


# --- the usual shapes are vouched for, not merely declined ------------------------------------


def past_64_bits(value: object) -> bool:
    """Whether ``value`` holds an integer that is neither an int64 nor a uint64."""
    if isinstance(value, dict):
        return any(past_64_bits(v) for v in value.values())
    if isinstance(value, list):
        return any(past_64_bits(v) for v in value)
    return type(value) is int and not -(2**63) <= value < 2**64


@settings(max_examples=100, deadline=None)
@given(
    st.lists(plain_entries, min_size=1, max_size=5, unique_by=lambda e: str(e["id"])),
    st.sampled_from([{}, {"ensure_ascii": False}]),
)
def test_well_formed_entries_are_vouched_for(
    tmp_path_factory: pytest.TempPathFactory, listed: list[dict[str, Any]], spelling: dict[str, Any]
) -> None:
    lines = "\n".join(json.dumps(e, **spelling) for e in listed).encode()
    document = json.dumps({"outputs": listed}, **spelling).encode()
    vouched = not past_64_bits(listed)  # orjson reads those as floats
    assert (quick_lines(lines, _NUMBERS) is not None) == vouched
    assert (quick_list(document, _NUMBERS) is not None) == vouched
    assert_same(write(tmp_path_factory.mktemp("plain"), "o.json", document))


@pytest.mark.parametrize("spelling", [{}, {"ensure_ascii": False}, {"indent": 1}])
def test_the_usual_nested_fields_are_read_quickly(tmp_path: Path, spelling: dict[str, Any]) -> None:
    listed = [
        {"id": "q1", "actual_output": "ok", "trajectory": TRAJECTORY | {"steps": 4},
         "contexts": CONTEXTS, "turns": TURNS, "latency_ms": 12, "retries": 0},
        {"sample_id": "q2", "id": None, "actual_output": "", "trajectory": None, "model": "m"},
        {"id": "q3", "actual_output": "é", "turns": [], "contexts": []},
    ]  # fmt: skip
    document = json.dumps({"outputs": listed}, **spelling)
    frame = quick_list(document.encode(), _NUMBERS)
    assert frame is not None
    path = write(tmp_path, "o.json", document)
    exact = read(path, quick=False)
    assert isinstance(exact, pl.DataFrame)
    assert frame.equals(exact)
    assert frame.columns == [
        "sample_id", "actual_output", "latency_ms", "retries", "contexts", "context_ids",
        "trajectory", "turns",
    ]  # fmt: skip
    calls = frame.get_column("trajectory")[0]["tool_calls"]
    assert [c["arguments"] for c in calls] == [
        None, '{"id":7,"when":"2024-05-01","seats":[1,2]}',
        '{"amount":12.5,"card":null,"ok":true}', "{}",
    ]  # fmt: skip
    assert calls[3]["error"] == '{"code":500,"retry":1e-05}'  # Python's spelling, not orjson's


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b" \n\r\n",
        b'{"id": "a", "actual_output": "x"}\n\x0c{"id": "b", "actual_output": "y"}',
        b'{"id": "a", "actual_output": "x"}\n\xc2\x85\n',  # a line str.strip() empties
        b'{"id": "a", "actual_output": "x", "note": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[['
        + b"[" * 70
        + b"]" * 108
        + b"}",
    ],
)
def test_jsonl_the_exact_reader_must_judge_is_declined(body: bytes) -> None:
    assert quick_lines(body, _NUMBERS) is None


# --- a list form's array in runs, and floats in pieces ----------------------------------------


@pytest.mark.parametrize(
    "array",
    [
        '[{"id": "a", "t": "}, {\\"id\\": 1"}, {"id": "b"}, {"id": "c", "x": [{"id": 1}, 2]}]',
        '[{"id": "a", "t": "[{"}, {"id": "b", "t": "}]"}, {"id": "c"}, {"id": "d"}]',
        '[ {"id": 1} ,\n {"id": 2},{"id": 3}, {"k": 4}, {"id": 5} ]',
        '[{"id": "a", "t": [{"id": "b", "t": 1}, {"id": "c", "t": 2}]}, {"id": "d", "t": 3}]',
        '[{"id": 1}, {"id": 2}, {"id": 3}, {"id": 4}',
        '[{"id": 1}, {"id": 2}, {"id": 3}, {"id": 4}]]',
        '[{"id": 1}, {"id": 2}, {"id": 3} {"id": 4}]',
        '[{"id": 1}, {"id": 2}, "x", {"id": 4}]',
        '[null, {"id": 2}, {"id": 3}, {"id": 4}]',
        "[1, 2, 3, 4, 5, 6, 7, 8, 9]",
    ],
)
@pytest.mark.parametrize("run", [1, 8, 24])
def test_an_array_in_runs_is_parsed_as_a_whole(
    monkeypatch: pytest.MonkeyPatch, array: str, run: int
) -> None:
    monkeypatch.setattr(_outputs_quick, "_RUN", run)
    data = f'{{"outputs": {array}}}'.encode()
    start, end = data.index(b"["), len(data) - 1
    try:
        expected: object = orjson.loads(data[start:end])
    except orjson.JSONDecodeError:
        expected = orjson.JSONDecodeError
    try:
        got: object = _outputs_quick._array(data, start, end)
    except orjson.JSONDecodeError:
        got = orjson.JSONDecodeError
    assert got == expected


@settings(max_examples=100, deadline=None)
@given(
    st.binary(max_size=80) | st.text("0123456789.eE ", max_size=80).map(str.encode),
    st.integers(1, 9),
)
def test_floats_are_found_across_the_pieces(data: bytes, piece: int) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_outputs_quick, "_PIECE", piece)
        assert _outputs_quick._floats(data) == (re.search(b"[0-9][.eE]", data) is not None)


def test_a_value_that_holds_the_mark_is_written_with_the_other() -> None:
    document = (
        '{"outputs": [{"id": "a", "actual_output": "x", "trajectory": {"tool_calls": [{"name": '
        '"t", "arguments": {"\\u007f": 1}}, {"name": "u", "result": ["\\u007f"]}]}}]}'
    )
    frame = quick_list(document.encode(), _NUMBERS)
    assert frame is not None
    calls = frame.get_column("trajectory").struct.field("tool_calls").to_list()[0]
    assert [(c["arguments"], c["result"]) for c in calls] == [
        ('{"\x7f":1}', None),
        (None, '["\x7f"]'),
    ]
