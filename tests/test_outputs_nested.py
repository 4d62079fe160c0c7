"""Contexts, trajectories and turns read by the compiled pass, against the exact parsers
(``parse_contexts``, ``parse_trajectory``, ``parse_turns``) as oracles: every value either
reads exactly as they read it, or is declined and left to them, so frames and error messages
stay the same."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from test_outputs_compiled import assert_same_outcome, assert_same_reading, ids, texts

from evalframe.core import _outputs_nested as nested
from evalframe.core._contexts import contexts_columns, parse_contexts
from evalframe.core._errors import DatasetError
from evalframe.core._outputs import _NUMBERS
from evalframe.core._outputs_compiled import outputs_lines, outputs_list
from evalframe.core._trajectory import parse_trajectory, trajectory_series
from evalframe.core._turns import parse_turns, turns_series

# --- values: mostly well formed, with every wrong shape the exact parsers judge ----------------

big = st.integers(-(10**25), 10**25)
floats = st.floats(allow_nan=False) | st.sampled_from(
    [0.1, 1e-05, 1e16, 2.5e-300, 0.30000000000000004]
)
json_values = st.recursive(
    st.none() | st.booleans() | big | floats | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=6,
)
names = st.sampled_from(["search", "book", "a b", "ツール", " ", "", "\u00a0", "\x1c"]) | texts
counts = (
    st.none()
    | st.integers(-3, 40)
    | big
    | st.sampled_from([2.0, 1.5, 1e2, -0.0, True, " 7 ", "12", "x", "", "\u0663", "3.0"])
)
latencies = (
    st.none()
    | st.integers(-3, 10**20)
    | st.floats(allow_nan=False)
    | st.sampled_from([12.345678901234567, 1e-07, True, "3", 0.1])
)
arguments = (
    st.none()
    | st.dictionaries(texts, json_values, max_size=4)
    | st.sampled_from(['{"q": 1}', "", " ", "not json", "[1]", 5, [1]])
)
results = json_values


@st.composite
def tool_calls(draw: st.DrawFn) -> object:
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return draw(names)
    if kind == 1:
        return draw(st.none() | big | st.lists(texts, max_size=1))
    call: dict[str, object] = {}
    fields = {
        "name": names | st.none() | big,
        "tool": names | st.none(),
        "arguments": arguments,
        "args": arguments,
        "result": results,
        "error": results,
        "latency_ms": latencies,
        "tokens": counts,
        "note": json_values,
    }
    for key in draw(st.lists(st.sampled_from(list(fields)), unique=True, max_size=6)):
        call[key] = draw(fields[key])
    if kind > 3 and "name" not in call and "tool" not in call:
        call["name"] = draw(names)
    return call


trajectories = st.one_of(
    st.fixed_dictionaries(
        {},
        optional={
            "tool_calls": st.lists(tool_calls(), max_size=5) | st.none() | st.just("search"),
            "steps": counts,
            "finish_reason": st.none() | texts | st.just(3),
            "approvals": st.none()
            | st.lists(
                texts | st.integers(-5, 10**20) | st.sampled_from([1.5, True, None]), max_size=3
            ),
            "pending_approvals": counts,
            "meta": json_values,
        },
    ),
    st.sampled_from(['{"tool_calls": ["x"]}', "", "[]", 3, ["x"]]),
)
context_items = (
    texts
    | st.fixed_dictionaries(
        {"text": texts | st.none() | st.just(3)},
        optional={
            "id": st.none() | texts | st.integers(-5, 10**20) | st.sampled_from([True, 1.5]),
            "score": floats,
        },
    )
    | st.none()
    | st.just(7)
)
contexts = st.lists(context_items, max_size=4) | st.sampled_from(["a", '["a"]', {"a": 1}])
turns_values = st.lists(
    st.fixed_dictionaries(
        {"role": names | st.none()},
        optional={
            "content": st.none() | texts | st.just(3),
            "tool_calls": st.lists(tool_calls(), max_size=3) | st.none(),
            "latency_ms": latencies,
            "tokens": counts,
            "meta": json_values,
        },
    )
    | st.just("user"),
    max_size=3,
) | st.sampled_from(["hi", {"role": "user"}])


@st.composite
def entries(draw: st.DrawFn) -> dict[str, object]:
    entry: dict[str, object] = {"id": draw(ids), "actual_output": draw(texts)}
    fields = {"contexts": contexts, "trajectory": trajectories, "turns": turns_values}
    for key in draw(st.lists(st.sampled_from(list(fields)), unique=True, max_size=3)):
        entry[key] = draw(fields[key]) if draw(st.integers(0, 4)) else None
    if draw(st.booleans()):
        entry["latency_ms"] = draw(st.floats(0, 1e4))
    return dict(draw(st.permutations(list(entry.items()))))


@settings(max_examples=400, deadline=None)
@given(
    st.lists(entries(), min_size=1, max_size=6),
    st.sampled_from([{}, {"ensure_ascii": False}, {"separators": (",", ":")}]),
)
def test_jsonl_with_nested_fields_reads_as_the_exact_reader_reads_it(
    tmp_path_factory: pytest.TempPathFactory, lines: list[dict[str, Any]], spelling: dict[str, Any]
) -> None:
    path = tmp_path_factory.mktemp("jsonl") / "o.jsonl"
    path.write_text("\n".join(json.dumps(e, **spelling) for e in lines) + "\n")
    assert_same_reading(path)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(entries(), min_size=1, max_size=6),
    st.sampled_from([{}, {"indent": 2}, {"ensure_ascii": False}, {"separators": (",", ":")}]),
)
def test_the_list_form_with_nested_fields_reads_as_the_exact_reader_reads_it(
    tmp_path_factory: pytest.TempPathFactory, listed: list[dict[str, Any]], spelling: dict[str, Any]
) -> None:
    path = tmp_path_factory.mktemp("list") / "o.json"
    path.write_text(json.dumps({"outputs": listed}, **spelling))
    assert_same_reading(path)


# Flat argument maps spelled with any JSON whitespace between tokens, keys maybe repeated.
_gaps = st.text(st.sampled_from(" \t\n\r"), max_size=2)
_flat_values = st.none() | st.booleans() | big | texts | st.sampled_from([1.5, -0.0, [], {}])


@st.composite
def flat_objects(draw: st.DrawFn) -> tuple[str, bool]:
    """A flat object's text, and whether it is plain: keys unique, no float, list or map."""
    members = draw(
        st.lists(st.tuples(texts | st.sampled_from(["a", "b"]), _flat_values), max_size=4)
    )
    ascii_only = draw(st.booleans())
    parts = [
        draw(_gaps) + json.dumps(k, ensure_ascii=ascii_only) + draw(_gaps) + ":" + draw(_gaps)
        + json.dumps(v, ensure_ascii=ascii_only) + draw(_gaps)
        for k, v in members
    ]  # fmt: skip
    text = "{" + ",".join(parts) + ("" if members else draw(_gaps)) + "}"
    keys = [k for k, _ in members]
    plain = len(set(keys)) == len(keys) and not any(
        isinstance(v, float | list | dict) for _, v in members
    )
    return text, plain


@settings(max_examples=300, deadline=None)
@given(flat_objects())
@example(('{ "id" : 12 , "mode" : "a" }', True))
@example(('{"k": 1, "k" :2}', False))
@example(('{"k": -0}', False))
@example(('{"k": 01}', False))
@example(('{"k": nulls}', False))
@example(('{"k": 1 ,}', False))
def test_flat_arguments_are_written_as_pythons_compact_encoder_writes_them(
    case: tuple[str, bool],
) -> None:
    text, plain = case
    data = np.frombuffer(text.encode(), np.uint8)
    out = np.zeros(data.size + 8, np.uint8)
    end, stop = nested.flat_object(data, 0, data.size, out, 3, np.empty(64, np.int64))
    try:
        want = json.dumps(json.loads(text), ensure_ascii=False, separators=(",", ":"))
    except json.JSONDecodeError:
        want = None
    if end < 0:  # declined: the exact re-encoding takes it
        assert want is None or not plain or "\\" in text
        return
    assert want is not None
    assert (end, bytes(out[3:stop]).decode()) == (data.size, want)


# --- the usual shapes are vouched for, not merely declined ------------------------------------

plain_names = st.text(st.characters(codec="utf-8"), max_size=8).map(lambda s: "t" + s)
plain_values = st.recursive(
    st.none() | st.booleans() | big | st.floats(-1e9, 1e9).map(lambda x: round(x, 6)) | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=6,
)
plain_calls = plain_names | st.fixed_dictionaries(
    {"name": plain_names},
    optional={
        "arguments": st.dictionaries(texts, plain_values, max_size=4),
        "result": plain_values,
        "error": plain_values | st.none(),
        "latency_ms": st.floats(0, 1e6) | st.integers(0, 10**6),
        "tokens": st.integers(0, 10**6) | st.none(),
    },
)
plain_trajectories = st.fixed_dictionaries(
    {"tool_calls": st.lists(plain_calls, max_size=6)},
    optional={
        "steps": st.integers(0, 50),
        "finish_reason": texts,
        "approvals": st.lists(texts | st.integers(0, 10**6), max_size=3),
        "pending_approvals": st.integers(0, 3),
    },
)
plain_turns = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "assistant", "tool"]), "content": texts | st.none()},
        optional={"tool_calls": st.lists(plain_calls, max_size=2), "tokens": st.integers(0, 99)},
    ),
    max_size=4,
)
plain_contexts = st.lists(
    texts | st.fixed_dictionaries({"text": texts}, optional={"id": texts | st.integers(0, 99)}),
    max_size=4,
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.fixed_dictionaries(
            {"id": ids, "actual_output": texts},
            optional={
                "trajectory": plain_trajectories,
                "contexts": plain_contexts,
                "turns": plain_turns,
            },
        ),
        min_size=1,
        max_size=5,
        unique_by=lambda e: e["id"],
    ),
    st.sampled_from([{}, {"ensure_ascii": False}, {"indent": 1}]),
)
def test_well_formed_nested_fields_are_vouched_for(
    tmp_path_factory: pytest.TempPathFactory, listed: list[dict[str, Any]], spelling: dict[str, Any]
) -> None:
    document = json.dumps({"outputs": listed}, **spelling)
    assert outputs_list(document.encode(), _NUMBERS) is not None
    path = tmp_path_factory.mktemp("list") / "o.json"
    path.write_text(document)
    assert_same_reading(path)


TRAJECTORY = {
    "tool_calls": [
        "search",
        {"name": "book", "arguments": {"id": 7, "when": "2024-05-01", "seats": [1, 2]}},
        {"tool": "pay", "args": {"amount": 12.5, "card": None, "ok": True}, "result": "paid",
         "latency_ms": 12.345678901234567, "tokens": 30},
        {"name": "mail", "arguments": {}, "error": {"code": 500, "retry": 1e-05}, "latency_ms": 3},
    ],
    "steps": "4",
    "finish_reason": "stop",
    "approvals": ["pay", 7],
    "pending_approvals": None,
    "trace_id": {"x": [1, {"y": None}]},
}  # fmt: skip
CONTEXTS = ["Returns within 30 days.", {"id": 7, "text": "Refunds take 5 days."}, {"text": "é"}]
TURNS = [
    {"role": "user", "content": "Book it"},
    {"role": "assistant", "content": None, "tool_calls": ["book"], "latency_ms": 3.5, "tokens": 9},
]


@pytest.mark.parametrize("spelling", [{}, {"ensure_ascii": False}, {"indent": 1}])
def test_the_usual_nested_fields_are_read_by_the_compiled_pass(spelling: dict[str, Any]) -> None:
    entries_ = [
        {"id": "a", "actual_output": "ok", "contexts": CONTEXTS, "trajectory": TRAJECTORY,
         "turns": TURNS},
        {"id": "b", "actual_output": "ok", "trajectory": {"tool_calls": []}},
        {"id": "c", "actual_output": "ok", "contexts": None, "turns": []},
    ]  # fmt: skip
    document = json.dumps({"outputs": entries_}, **spelling).encode()
    frame = outputs_list(document, _NUMBERS)
    assert frame is not None
    rows = [{k: v for k, v in e.items() if k not in ("id", "actual_output")} for e in entries_]
    assert frame.get_column("trajectory").equals(
        trajectory_series([parse_trajectory(r.get("trajectory"), "x") for r in rows])
    )
    assert frame.get_column("turns").equals(
        turns_series([parse_turns(r.get("turns"), "x") for r in rows])
    )
    want = contexts_columns([parse_contexts(r.get("contexts")) for r in rows])
    assert frame.select("contexts", "context_ids").equals(pl.DataFrame(want))
    lines = b"\n".join(json.dumps(e).encode() for e in entries_)
    from_lines = outputs_lines(lines, _NUMBERS)
    assert from_lines is not None
    assert from_lines.equals(frame)


@pytest.mark.parametrize(
    "value",
    [
        '{"tool_calls": [{"name": "a", "arguments": "[1]"}]}',  # text of no map
        '{"tool_calls": [{"name": "a", "arguments": {"k": 1, "k": 2}}]}',  # a repeated key
        '{"tool_calls": [{"name": " "}]}',
        '{"tool_calls": [{"name": "a", "latency_ms": -1}]}',
        '{"tool_calls": [{"name": "a", "arguments": {"x": 0.10000000000000001}}]}',  # not repr
        '{"steps": -1}',
        '{"steps": "\\u0663"}',
        '{"approvals": [1.5]}',
        '{"tool_calls": ["a"], "tool_calls": []}',
    ],
)
def test_what_the_exact_parser_judges_is_declined(value: str) -> None:
    line = f'{{"id": "a", "actual_output": "x", "trajectory": {value}}}\n'
    assert outputs_lines(line.encode(), _NUMBERS) is None


def test_arguments_given_as_json_text_are_read_as_the_exact_parser_reads_them() -> None:
    calls = [
        {"name": "a", "arguments": '{"q": 1, "r": [1.5, "\u00e9"]}'},
        {"name": "b", "arguments": "  ", "args": {"x": 1}},  # blank text: no arguments
        {"name": "c", "args": '{"y": null}'},
    ]
    line = json.dumps({"id": "a", "actual_output": "x", "trajectory": {"tool_calls": calls}})
    frame = outputs_lines(line.encode(), _NUMBERS)
    assert frame is not None
    want = trajectory_series([parse_trajectory({"tool_calls": calls}, "x")])
    assert frame.get_column("trajectory").equals(want)
    assert [c["arguments"] for c in want[0]["tool_calls"]] == [
        '{"q":1,"r":[1.5,"é"]}',
        None,
        '{"y":null}',
    ]


def test_a_number_with_more_digits_than_the_exact_conversion_is_read_from_its_text() -> None:
    values = [12.345678901234567, 0.30000000000000004, 1e300, 123456789012345678901, 5e-324]
    calls = [{"name": "t", "latency_ms": v} for v in values]
    line = json.dumps({"id": "a", "actual_output": "x", "trajectory": {"tool_calls": calls}})
    frame = outputs_lines(line.encode(), _NUMBERS)
    assert frame is not None
    got = [c["latency_ms"] for c in frame.get_column("trajectory")[0]["tool_calls"]]
    assert got == [float(v) for v in values]


def test_computed_floats_in_arguments_and_results_are_copied_as_python_wrote_them(
    tmp_path: Path,
) -> None:
    call = {"name": "rank", "arguments": {"w": 0.8444218515250481, "k": [1e-320, 2.5]},
            "result": {"score": 0.30000000000000004}}  # fmt: skip
    line = json.dumps({"id": "a", "actual_output": "x", "trajectory": {"tool_calls": [call]}})
    frame = outputs_lines(line.encode() + b"\n", _NUMBERS)
    assert frame is not None
    read = frame.get_column("trajectory")[0]["tool_calls"][0]
    assert read["arguments"] == '{"w":0.8444218515250481,"k":[1e-320,2.5]}'
    assert read["result"] == '{"score":0.30000000000000004}'
    # the same value written otherwise is re-encoded by the exact parser
    other = line.replace("0.30000000000000004", "0.300000000000000044")
    assert outputs_lines(other.encode() + b"\n", _NUMBERS) is None
    path = tmp_path / "o.jsonl"
    path.write_text(line + "\n" + other.replace('"a"', '"b"', 1) + "\n")
    assert_same_reading(path)


def test_a_number_past_the_double_range_is_left_to_the_exact_parser() -> None:
    call = '{"name": "t", "latency_ms": 1e400}'
    line = f'{{"id": "a", "actual_output": "x", "trajectory": {{"tool_calls": [{call}]}}}}'
    assert outputs_lines(line.encode(), _NUMBERS) is None


# --- columns of JSON text (CSV, Parquet, frames) ---------------------------------------------


def cells(field: int, values: list[str | None]) -> dict[str, pl.Series] | None:
    """The columns read from JSON texts, None if any row was left to the exact parser."""
    encoded = [(v or "").encode() for v in values]
    offsets = np.cumsum([0, *(len(e) for e in encoded)]).astype(np.int64)
    data = np.frombuffer(b"".join(encoded) + b" ", np.uint8)[: offsets[-1]]
    valid = np.array([v is not None for v in values])
    columns, failed = nested.read_cells(field, data, offsets, valid)
    return None if failed.any() else columns


def exact_cells(parse: Any, values: list[str | None]) -> list[Any] | str:
    try:
        return [None if v is None else parse(v, "x") for v in values]
    except DatasetError as exc:
        return str(exc)


@settings(max_examples=300, deadline=None)
@given(st.lists(trajectories | st.none(), min_size=1, max_size=5), st.sampled_from(["", " ", "\n"]))
def test_trajectory_cells_read_as_the_exact_parser_reads_them(values: list[Any], pad: str) -> None:
    texts_ = [None if v is None else pad + json.dumps(v) + pad for v in values]
    got = cells(nested.TRAJECTORY_FIELD, texts_)
    want = exact_cells(parse_trajectory, texts_)
    if got is None:
        return  # declined: the exact parser takes it
    assert not isinstance(want, str), want
    if all(w is None for w in want):
        assert got == {}
    else:
        assert got["trajectory"].equals(trajectory_series(want))


@settings(max_examples=300, deadline=None)
@given(st.lists(turns_values | st.none(), min_size=1, max_size=5))
def test_turns_cells_read_as_the_exact_parser_reads_them(values: list[Any]) -> None:
    texts_ = [None if v is None else json.dumps(v) for v in values]
    got = cells(nested.TURNS_FIELD, texts_)
    want = exact_cells(parse_turns, texts_)
    if got is None:
        return
    assert not isinstance(want, str), want
    if all(w is None for w in want):
        assert got == {}
    else:
        assert got["turns"].equals(turns_series(want))


def test_blank_and_null_cells_are_no_value() -> None:
    got = cells(nested.TRAJECTORY_FIELD, [None, "", "  ", "null", '{"tool_calls": ["a"]}'])
    assert got is not None
    assert got["trajectory"].to_list()[:4] == [None] * 4
    assert cells(nested.CONTEXTS_FIELD, ["null"]) is None  # an error for contexts
    assert cells(nested.TRAJECTORY_FIELD, ["\u00a0"]) is None  # blank only to Python: left


def test_a_large_file_with_trajectories_reads_as_a_small_one(tmp_path: Path) -> None:
    entries_ = [
        {"id": f"q{i}", "actual_output": "ok", "trajectory": TRAJECTORY, "contexts": CONTEXTS}
        for i in range(8000)
    ]
    path = tmp_path / "o.json"
    path.write_text(json.dumps({"outputs": entries_}))
    assert path.stat().st_size >= 4 << 20
    assert outputs_list(path.read_bytes(), _NUMBERS) is not None  # the compiled pass took it
    assert_same_reading(path)


# --- columns from Python values (systems under test, frames) ---------------------------------


def column_both_ways(field: str, values: list[Any]) -> list[tuple[Any, dict[int, str]]]:
    """``agent_column`` by the exact parser alone, through the compiled pass and through
    orjson's reader."""
    from evalframe.core import _turns

    results: list[tuple[Any, dict[int, str]]] = []
    for compiled, cold in ((10**9, 10**9), (0, 0), (0, 10**9)):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(_turns, "_COMPILED_FROM", compiled)
            patch.setattr(_turns, "_COLD_FROM", cold)
            if cold:  # not the compiled pass: taken to be unloaded
                patch.setattr(_turns, "_compiled", lambda rows: False)
            try:
                column, errors = _turns.agent_column(field, values, lambda i: f"row {i}")
            except pl.exceptions.ComputeError as exc:  # a count past Int64: Polars refuses it
                results.append((f"{type(exc).__name__}: {exc}", {}))
                continue
        shown = {i: f"{type(e).__name__}: {e}" for i, e in errors.items()}
        results.append((None if column is None else column.to_list(), shown))
    return results


class _Colour(enum.Enum):
    RED = 1


class _Level(enum.IntEnum):
    HIGH = 2


class _Named(enum.StrEnum):
    SEARCH = "search"


class _Text(str):
    pass


class _Map(dict):  # type: ignore[type-arg]
    pass


@dataclasses.dataclass
class _Point:
    x: int = 1


def _deep(levels: int) -> object:
    value: object = "bottom"
    for _ in range(levels):
        value = [value]
    return value


def _circular() -> object:
    loop: list[object] = []
    loop.append(loop)
    return loop


# What a system may return that orjson writes and Python's encoder refuses or writes
# otherwise (or the other way round): NaN and infinities, integers past 64 bits, keys that
# are not strings, bytes, sets, enums, subclasses, dates, UUIDs, dataclasses, NumPy scalars,
# nesting past the limits of the pass (64), orjson (255) and marshal, lone surrogates.
hostile = st.sampled_from(
    [float("nan"), float("inf"), -float("inf"), 2**63, 2**64 - 1, 2**64, -(2**63) - 1, 10**30,
     -0.0, 1e16, 5e-324, b"bytes", bytearray(b"x"), {1, 2}, frozenset(), 1j, _Colour.RED,
     _Level.HIGH, _Named.SEARCH, _Text("t"), _Map(a=1), uuid.UUID(int=1),
     datetime.date(2026, 1, 1), _Point(), np.float64(1.5), np.float64("nan"), np.int64(3),
     (1, "a"), "a\ud800", "\x00\x1f\u2028\"\\\x7f", {1: "one"}, {None: 1}, {(1, 2): 3},
     {"k": float("nan")}]
) | st.builds(_deep, st.sampled_from([70, 260, 3000])) | st.builds(_circular)  # fmt: skip
anything = st.recursive(
    json_values | hostile,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(texts | st.sampled_from([1, 2.5, True, None]), inner, max_size=3)
    ),
    max_leaves=5,
)


@st.composite
def hostile_calls(draw: st.DrawFn) -> object:
    """A tool call with a hostile value in one of its fields, or in its arguments."""
    call: dict[object, object] = {"name": draw(names | hostile)}
    field = draw(
        st.sampled_from(["arguments", "args", "result", "error", "latency_ms", "tokens", "note"])
    )
    value = draw(anything)
    call[field] = {"q": value} if field in ("arguments", "args") and draw(st.booleans()) else value
    return call


hostile_trajectories = st.fixed_dictionaries(
    {"tool_calls": st.lists(hostile_calls() | tool_calls(), max_size=3).map(tuple) | anything},
    optional={
        "steps": counts | hostile,
        "finish_reason": texts | hostile,
        "approvals": st.lists(texts | hostile, max_size=2),
        "pending_approvals": counts | hostile,
        "meta": anything,
        1: anything,
    },
)
python_values = (
    trajectories
    | hostile_trajectories
    | st.none()
    | st.just({"tool_calls": [{"name": "a", "latency_ms": float("nan")}]})
    | st.just({"tool_calls": [{"name": "a\ud800"}]})  # a lone surrogate
    | st.just({"tool_calls": [{"name": "a", "arguments": {"when": object()}}]})
    | st.just({"tool_calls": ({"name": "t", "arguments": {1: "one"}},), "approvals": ("x",)})
)
hostile_turns = st.lists(
    st.fixed_dictionaries(
        {"role": names | hostile},
        optional={
            "content": texts | hostile,
            "tool_calls": st.lists(hostile_calls(), max_size=2),
            "latency_ms": latencies | hostile,
            "tokens": counts | hostile,
            "meta": anything,
        },
    ),
    min_size=1,
    max_size=2,
).map(tuple)


@settings(max_examples=400, deadline=None)
@given(st.lists(python_values, min_size=1, max_size=6))
def test_a_trajectory_column_from_python_values_reads_as_row_by_row(values: list[Any]) -> None:
    exact, compiled, quick = column_both_ways("trajectory", values)
    assert compiled == exact
    assert quick == exact


@settings(max_examples=300, deadline=None)
@given(st.lists(turns_values | hostile_turns | st.none(), min_size=1, max_size=6))
def test_a_turns_column_from_python_values_reads_as_row_by_row(values: list[Any]) -> None:
    exact, compiled, quick = column_both_ways("turns", values)
    assert compiled == exact
    assert quick == exact


def test_values_orjson_would_write_differently_are_left_to_the_exact_parser() -> None:
    from evalframe.core import _turns

    good = {"tool_calls": [{"name": "a", "arguments": {"x": 1.5}, "latency_ms": 2.0}]}
    assert _turns._json_array([good, None, (good,)]) is not None
    for bad in (float("nan"), -float("inf"), _Colour.RED, uuid.UUID(int=1), _Text("t"),
                np.float64(1.5), {1: 2}, 2**64, b"x", _deep(300)):  # fmt: skip
        value = {"tool_calls": [{"name": "a", "arguments": {"x": bad}}]}
        assert _turns._json_array([good, value]) is None, bad
    # A NaN among many values: the one row goes to the exact parser, the others to the pass
    values = [good] * 1500 + [{"tool_calls": [{"name": "a", "result": float("nan")}]}]
    column, errors = _turns.agent_column("trajectory", values, lambda i: f"row {i}")
    assert list(errors) == [1500]
    assert "holds NaN or an infinity" in str(errors[1500])
    assert column is not None
    assert column.to_list()[:1500] == [parse_trajectory(good, "x")] * 1500


def test_a_few_thousand_usual_values_are_read_by_orjson() -> None:
    from evalframe.core import _turns

    recorded = {  # what ef.trajectory.record keeps: arguments as compact JSON text
        "tool_calls": [{"name": "book", "arguments": '{"id":7}', "result": "ok", "error": None,
                        "latency_ms": 3.5, "tokens": 9}],
        "steps": None, "finish_reason": "stop", "approvals": [], "pending_approvals": None,
    }  # fmt: skip
    values = [TRAJECTORY | {"steps": 4}, None, recorded] * 400
    assert _turns._quick_column("trajectory", values) is not None
    assert _turns._quick_column("turns", [TURNS, None] * 600) is not None
    for field, rows in (("trajectory", values), ("turns", [TURNS, None] * 600)):
        exact, compiled, quick = column_both_ways(field, rows)
        assert quick == compiled == exact


def test_one_value_the_pass_declines_leaves_the_others_to_it() -> None:
    from evalframe.core import _turns

    values = [TRAJECTORY, {"tool_calls": [{"name": " "}]}, None, TRAJECTORY] * 300
    column, errors = _turns.agent_column("trajectory", values, lambda i: f"row {i}")
    assert column is not None
    assert sorted(errors) == list(range(1, 1200, 4))
    want = [parse_trajectory(v, "x") if i % 4 in (0, 3) else None for i, v in enumerate(values)]
    assert column.to_list() == want


# --- Parquet: a column at a time -----------------------------------------------------------


def read_parquet_both(path: Path, kernels: str = "compiled") -> tuple[object, object]:
    """What the exact reader and the column-at-a-time reader make of a Parquet file, its JSON
    texts read by the compiled pass (``kernels``: ``compiled``) or by orjson's reader
    (``interpreted``: a small table in a process that has not loaded the pass)."""
    from evalframe.core import _outputs_table
    from evalframe.core._outputs import read_outputs

    results = []
    for columns in (lambda *_: None, _outputs_table.outputs_columns):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(_outputs_table, "outputs_columns", columns)
            patch.setenv("EVALFRAME_KERNELS", kernels)
            try:
                results.append(read_outputs(path))
            except Exception as exc:
                results.append(f"{type(exc).__name__}: {exc}")
    return results[0], results[1]


@st.composite
def table_rows(draw: st.DrawFn) -> dict[str, object]:
    row: dict[str, object] = {"id": draw(ids | st.none()), "actual_output": draw(texts | st.none())}
    if draw(st.booleans()):
        row["sample_id"] = draw(ids)
    row["latency_ms"] = draw(st.none() | st.floats(0, 1e4) | st.just(float("nan")))
    row["prompt_tokens"] = draw(st.none() | st.integers(0, 10**6))
    row["contexts"] = draw(st.none() | st.lists(texts, max_size=3))
    row["trajectory"] = draw(st.none() | trajectories.map(json.dumps) | st.just("  "))
    row["turns"] = draw(st.none() | turns_values.map(json.dumps))
    return row


@settings(max_examples=200, deadline=None)
@given(
    st.lists(table_rows(), min_size=1, max_size=6),
    st.sampled_from(["text", "struct"]),
    st.sampled_from(["compiled", "interpreted"]),
)
def test_parquet_outputs_read_a_column_at_a_time_as_row_by_row(
    tmp_path_factory: pytest.TempPathFactory,
    rows: list[dict[str, object]],
    layout: str,
    kernels: str,
) -> None:
    frame = pl.DataFrame(rows, infer_schema_length=None)
    if layout == "struct":  # the trajectory column evalframe writes: parsed, as a struct
        parsed = []
        for value in frame.get_column("trajectory").to_list():
            try:
                parsed.append(parse_trajectory(value, "x"))
            except DatasetError:
                parsed.append(None)
        frame = frame.with_columns(trajectory_series(parsed))
    path = tmp_path_factory.mktemp("parquet") / "o.parquet"
    frame.write_parquet(path)
    assert_same_outcome(*read_parquet_both(path, kernels))


def read_a_column_at_a_time(path: Path, kernels: str = "compiled") -> pl.DataFrame:
    """The column-at-a-time reading of the Parquet file ``path``, checked to vouch for it and
    to be the exact reader's frame."""
    import pyarrow.parquet as pq

    from evalframe.core._outputs_table import outputs_columns

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EVALFRAME_KERNELS", kernels)
        assert outputs_columns(pq.read_table(path), _NUMBERS) is not None
    exact, columns = read_parquet_both(path, kernels)
    assert_same_outcome(exact, columns)
    assert isinstance(columns, pl.DataFrame)
    return columns


def test_a_usual_parquet_file_is_read_a_column_at_a_time(tmp_path: Path) -> None:
    frame = pl.DataFrame(
        {
            "id": [f"q{i}" for i in range(3)],
            "actual_output": ["a", "b", "c"],
            "latency_ms": [1.5, None, 3],
            "contexts": [["x"], None, []],
            "trajectory": [json.dumps(TRAJECTORY), None, json.dumps({"tool_calls": []})],
        }
    )
    path = tmp_path / "o.parquet"
    frame.write_parquet(path)
    read_a_column_at_a_time(path)


def test_a_small_parquet_file_is_read_by_orjson(tmp_path: Path) -> None:
    """A few rows in a process without the compiled pass: orjson's reader, not the exact one."""
    trajectory = json.dumps(TRAJECTORY | {"steps": 4})  # a count as text is the exact reader's
    frame = pl.DataFrame(
        {
            "id": ["q0", "q1", "q2"],
            "actual_output": ["a", "b", "c"],
            "trajectory": [trajectory, None, " "],
            "turns": [json.dumps(TURNS), "[]", None],
        }
    )
    path = tmp_path / "o.parquet"
    frame.write_parquet(path)
    read_a_column_at_a_time(path, "interpreted")


flat_values = st.one_of(
    texts, st.integers(-(10**30), 10**30), st.booleans(), st.none(), floats,
    st.sampled_from([[], {}, [1], {"a": 1}]),
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(["a", "b", "é"]) | texts, flat_values), max_size=5),
    st.sampled_from(["orjson", "compact", "spaced", "-0", "01"]),
)
@example([("a", 1), ("b", "x"), ("a", True)], "compact")  # a repeated key
@example([("a", 1), ("b", "x\ny")], "compact")  # an escape
def test_a_flat_object_copied_as_it_is_is_what_the_re_encoding_writes(
    members: list[tuple[str, object]], spelling: str
) -> None:
    """The copy of an object already written compactly is compact_value's output, and any
    other object (repeated keys, escapes, floats, nesting, spaces) is left to it."""
    import orjson

    if spelling == "orjson":
        try:
            text = orjson.dumps(dict(members))
        except TypeError:  # an integer past 64 bits
            return
    else:
        body = ",".join(f"{json.dumps(k)}:{json.dumps(v)}" for k, v in members)
        text = ("{" + body + "}").encode()
        if spelling == "spaced":
            text = text.replace(b":", b": ", 1)
        elif spelling != "compact":
            text = text.replace(b"}", b',"n":' + spelling.encode() + b"}")
    data = text + b" "  # interpreted kernels read bytes (items are Python ints)
    end = len(text)
    out = np.zeros(2 * end + 16, np.uint8)
    keys = np.zeros(64, np.int64)
    p, stop = nested.flat_object.interpreted(data, 0, end, out, 0, keys)
    want = np.zeros(2 * end + 16, np.uint8)
    q, to = nested.compact_value.interpreted(data, 0, end, want, 0, np.zeros(128, np.int64), keys)
    if p >= 0:
        assert (p, bytes(out[:stop])) == (q, bytes(want[:to]))
        assert json.loads(bytes(out[:stop])) == json.loads(text)


# --- Parquet with nested columns as Arrow writes dicts: structs and lists of structs -----------

arrow_numbers = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(
    [0.30000000000000004, 1e16, 1e-07, -0.0, float("nan"), float("inf")]
)
arrow_calls = st.fixed_dictionaries(
    {"name": names},
    optional={
        "arguments": st.none()
        | st.fixed_dictionaries(
            {},
            optional={
                "q": texts | st.none(),
                "k": st.integers(-(10**18), 10**18) | st.none(),
                "w": arrow_numbers | st.none(),
                "on": st.booleans(),
                "tags": st.lists(texts, max_size=2),
            },
        ),
        "result": texts | st.none(),
        "error": texts | st.none(),
        "latency_ms": arrow_numbers | st.none(),
        "tokens": st.integers(-3, 10**6) | st.none(),
    },
)
arrow_rows = st.fixed_dictionaries(
    {"id": ids, "actual_output": texts},
    optional={
        "trajectory": st.none()
        | st.fixed_dictionaries(
            {"tool_calls": st.lists(arrow_calls, max_size=4)},
            optional={
                "steps": st.integers(-2, 50) | st.none(),
                "finish_reason": texts | st.none(),
                "approvals": st.lists(texts, max_size=2) | st.none(),
            },
        ),
        "turns": st.none()
        | st.lists(
            st.fixed_dictionaries(
                {"role": names},
                optional={
                    "content": texts | st.none(),
                    "latency_ms": arrow_numbers | st.none(),
                    "tool_calls": st.lists(arrow_calls, max_size=2) | st.none(),
                },
            ),
            max_size=3,
        ),
        "contexts": st.none()
        | st.lists(
            st.fixed_dictionaries(
                {"text": texts | st.none()},
                optional={"id": texts | st.none() | st.integers(-5, 10**12), "score": floats},
            ),
            max_size=3,
        ),
    },
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(arrow_rows, min_size=1, max_size=6),
    st.sampled_from(["compiled", "interpreted"]),
    st.booleans(),
)
def test_parquet_structs_as_arrow_writes_dicts_read_as_row_by_row(
    tmp_path_factory: pytest.TempPathFactory,
    rows: list[dict[str, object]],
    kernels: str,
    float32: bool,
) -> None:
    """Dicts written to Parquet as they are: structs whose members absent in a row are null,
    lists of structs; floats that JSON cannot carry (NaN, a float32) are the exact reader's."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pa.Table.from_pylist(rows)
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # rows Arrow cannot type alike
        return
    if float32:
        table = pa.Table.from_pylist(rows, schema=_floats_as(table.schema, pa.float32()))
    path = tmp_path_factory.mktemp("parquet") / "o.parquet"
    try:
        pq.write_table(table, path)
    except pa.ArrowNotImplementedError:  # a struct without members: Parquet has none
        return
    assert_same_outcome(*read_parquet_both(path, kernels))


def _floats_as(schema: Any, kind: Any) -> Any:
    import pyarrow as pa

    def retype(t: Any) -> Any:
        if pa.types.is_float64(t):
            return kind
        if pa.types.is_struct(t):
            return pa.struct([pa.field(f.name, retype(f.type)) for f in t])
        if pa.types.is_list(t):
            return pa.list_(retype(t.value_type))
        return t

    return pa.schema([pa.field(f.name, retype(f.type)) for f in schema])


def test_a_parquet_file_of_dicts_is_read_a_column_at_a_time(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    call = {"name": "search", "arguments": {"q": "é", "k": 3}, "latency_ms": 12.345678901234567}
    rows = [
        {"id": "q0", "actual_output": "a", "trajectory": {"tool_calls": [call]},
         "turns": [{"role": "user", "content": "hi"}], "contexts": [{"id": "d1", "text": "x"}]},
        {"id": "q1", "actual_output": "b", "trajectory": None, "turns": None, "contexts": None},
        {"id": "q2", "actual_output": "c", "trajectory": {"tool_calls": [{"name": "book"}]},
         "turns": [], "contexts": [{"id": None, "text": "y"}]},
    ]  # fmt: skip
    path = tmp_path / "o.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    columns = read_a_column_at_a_time(path)
    arguments = columns.get_column("trajectory")[0]["tool_calls"][0]["arguments"]
    assert arguments == '{"q":"é","k":3}'
    assert columns.get_column("trajectory")[2]["tool_calls"][0]["arguments"] is None
