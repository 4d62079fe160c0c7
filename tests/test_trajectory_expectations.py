"""``metadata.trajectory`` decoded in one typed pass, and by the compiled pass, reads every row
exactly as the per-field path lookups do: the same names, counts, argument specs and problems,
whatever shapes the rows hold (the per-field path is the oracle)."""

from __future__ import annotations

import json
from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalframe.core._errors import DatasetError
from evalframe.core._trajectory import check_expectation_texts, check_expectations
from evalframe.metrics._expectations import Expectations

FIELDS = (
    "tools",
    "forbidden_tools",
    "order",
    "expected_tools",
    "requires_approval",
    "max_steps",
    "optimal_steps",
)
NESTED = ("tool_arguments", "skipped_arguments", "goal")

scalar = st.one_of(
    st.sampled_from(["search", "pay", "true", "null", "a b", ""]),
    st.integers(-5, 40),
    # 2**63 is past Int64 but within the 64 bits Polars' JSON path functions read exactly;
    # past that they write an integer as a float's digits (see the test below).
    st.sampled_from([1.5, 3.0, 1e2, True, False, None, 2**63]),
)
value = st.one_of(
    scalar,
    st.lists(scalar, max_size=4),
    st.lists(st.one_of(scalar, st.lists(scalar, max_size=2), st.just({"x": 1})), max_size=3),
    st.just({"name": "x"}),
    st.sampled_from(["4", "-1", " 7 "]),
)
arguments = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**20), 10**20)
    | st.sampled_from([1.5, 1e-05, 0.1, 2.50])
    | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner, max_size=2)
    ),
    max_leaves=4,
)
spec = st.fixed_dictionaries(
    {},
    optional={
        "tool": st.sampled_from(["search", " ", "", "\u00a0", "a b"]) | st.none() | st.integers(),
        "name": st.sampled_from(["pay", "\t"]) | st.none(),
        "arguments": st.dictionaries(st.text(max_size=3), arguments, max_size=3) | arguments,
        "args": st.dictionaries(st.text(max_size=3), arguments, max_size=2) | st.none(),
        "extra": arguments,
    },
)
nested = st.fixed_dictionaries(
    {},
    optional={
        "tool_arguments": st.lists(spec | scalar, max_size=3) | scalar | spec,
        "goal": spec | st.sampled_from(["book", " ", "[x]", "{y"]) | scalar,
    },
)
block = st.builds(
    lambda fields, more: {**fields, **more},
    st.dictionaries(st.sampled_from(FIELDS), value, max_size=7),
    nested,
)
metadata = st.one_of(
    st.builds(lambda b: {"trajectory": b}, block),
    st.builds(lambda b: {"trajectory": b, "tags": ["x"], "note": "null"}, block),
    st.just({}),
    st.just({"trajectory": 5}),
)


def decoded(texts: list[str | None], mode: str) -> dict[str, Any]:
    expect = Expectations(
        pl.Series("metadata", texts, dtype=pl.String),
        pl.Series("sample_id", [f"s{i}" for i in range(len(texts))]),
        compiled=mode == "compiled",
    )
    if mode == "path":
        expect._typed = lambda: None  # type: ignore[method-assign]
    fields = (*FIELDS, *NESTED)
    out: dict[str, Any] = {f: expect.get_column(f).to_list() for f in fields}
    out["problems"] = {f: expect.problem_for([f]).to_list() for f in fields}
    return out


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.none() | metadata, min_size=1, max_size=6),
    st.sampled_from([(", ", ": "), (",", ":")]),
)
def test_the_typed_and_compiled_passes_read_every_row_as_the_path_lookups(
    rows: list[Any], separators: tuple[str, str]
) -> None:
    # Rows repeat (and some have no metadata): the compiled pass decodes each distinct text
    # once and hands every row its text's decoding.
    texts = [None if r is None else json.dumps(r, separators=separators) for r in rows]
    path = decoded(texts, "path")
    assert decoded(texts, "typed") == path
    assert decoded(texts, "compiled") == path


@pytest.mark.parametrize("mode", ["typed", "compiled"])
def test_integers_past_64_bits_keep_their_digits(mode: str) -> None:
    # The per-field path lookups write 2**70 as 1180591620717411300000 (a float's digits);
    # the passes every well-formed row takes keep the integer json reads.
    texts = [json.dumps({"trajectory": {"tools": [2**70, "a"], "order": [-(2**64)]}})]
    got = decoded(texts, mode)
    assert got["tools"] == [[str(2**70), "a"]]
    assert got["order"] == [[str(-(2**64))]]
    assert got["problems"]["tools"] == [None]


def test_the_compiled_pass_vouches_for_the_usual_expectations() -> None:
    usual = {
        "tools": ["search", "book"], "forbidden_tools": "delete", "order": ["search", "book"],
        "max_steps": 5, "requires_approval": ["pay"], "expected_tools": ["search"],
        "tool_arguments": [{"tool": "book", "arguments": {"id": 7, "when": "é"}}, "x"],
        "goal": {"name": "book", "args": {"id": 7.5}}, "optimal_steps": 2,
    }  # fmt: skip
    texts = [json.dumps({"trajectory": usual, "tags": ["a"]}), "{}", None]
    expect = Expectations(
        pl.Series(texts, dtype=pl.String), pl.Series(["a", "b", "c"]), compiled=True
    )
    assert decoded(texts, "compiled") == decoded(texts, "path")
    assert expect.get_column("tool_arguments").to_list()[0] == [
        {"name": "book", "arguments": '{"id":7,"when":"é"}'}
    ]
    assert expect._compiled is not None
    assert expect._compiled.get_column("exact").to_list() == [True, True, True]


def test_a_batch_decoded_in_one_table_of_small_pages_equals_its_parts_decoded_alone() -> None:
    # 3,000 texts need a table of more than 4 MB, which the decoding maps in small pages.
    from evalframe.core import _expectations_compiled as compiled

    texts = pl.Series(
        [
            json.dumps({"trajectory": {"tools": [f"t{i % 7}", "b"], "max_steps": i,
                                       "tool_arguments": [{"tool": "b", "args": {"k": i}}]}})
            for i in range(3_000)
        ]
    )  # fmt: skip
    whole = compiled._decode_texts(texts)
    parts = pl.concat([compiled._decode_texts(texts.slice(a, 300)) for a in range(0, 3_000, 300)])
    assert whole.equals(parts)
    assert whole.get_column("exact").all()


def test_wellformed_rows_take_the_typed_pass_and_odd_ones_the_path() -> None:
    good = json.dumps({"trajectory": {"tools": ["a", 2], "max_steps": 3, "order": []}})
    odd = json.dumps({"trajectory": {"tools": "a", "max_steps": 3.5}})
    expect = Expectations(pl.Series([good, odd]), pl.Series(["g", "o"]))
    typed = expect._typed()
    assert typed is not None
    assert typed.get_column("exact").to_list() == [True, False]
    assert expect.get_column("tools").to_list() == [["a", "2"], ["a"]]
    assert expect.get_column("max_steps").to_list() == [3, None]
    assert expect.problem_for(["max_steps"]).to_list() == [
        None,
        "Sample 'o' field 'metadata.trajectory.max_steps' must be an integer.",
    ]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(metadata | st.builds(lambda b: {"mcp": {"tools": b}}, scalar), min_size=1, max_size=6)
)
def test_a_dataset_s_expectations_are_checked_as_sample_by_sample(rows: list[Any]) -> None:
    ids = [f"s{i}" for i in range(len(rows))]

    def first_error(check: Any) -> str | None:
        try:
            check()
        except DatasetError as exc:
            return str(exc)
        return None

    texts = pl.Series([json.dumps(r, ensure_ascii=False, separators=(",", ":")) for r in rows])
    by_sample = first_error(lambda: check_expectations(ids, rows, DatasetError))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EVALFRAME_KERNELS", "compiled")
        by_text = first_error(lambda: check_expectation_texts(pl.Series(ids), texts, DatasetError))
    assert by_text == by_sample


# Names long enough to be kept out of place in Arrow's views (over 12 bytes), non-ASCII, with
# characters JSON escapes, blank in either sense.
hostile_name = st.sampled_from(
    ["search", "a_tool_name_past_twelve", "naïve", "x\"y", "tab\tand_more_text", "\u00a0",
     "\U0001f600 an astral tool", " ", "", "[x]", "{y", "\\z"]
) | st.text(max_size=14)  # fmt: skip
hostile_scalar = st.one_of(
    hostile_name, st.integers(-(10**20), 10**20), st.sampled_from([1.5, 0.1, True, None])
)
hostile_args = st.recursive(
    hostile_scalar,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(hostile_name, inner, max_size=3),
    max_leaves=5,
)
hostile_spec = st.fixed_dictionaries(
    {},
    optional={
        "tool": hostile_name | hostile_scalar,
        "name": hostile_name | st.none(),
        "arguments": st.dictionaries(hostile_name, hostile_args, max_size=3) | hostile_args,
        "args": st.dictionaries(hostile_name, hostile_args, max_size=2) | st.none(),
    },
)
hostile_block = st.dictionaries(
    st.sampled_from([*FIELDS, "tool_arguments", "goal", "other"]),
    st.lists(hostile_name, max_size=5)
    | hostile_scalar
    | hostile_spec
    | st.lists(hostile_spec | hostile_scalar, max_size=3),
    max_size=8,
)


def spelled(value: Any, rnd: Any, escape_names: bool) -> str:
    """``value`` as JSON the way no encoder writes it: any whitespace, characters escaped or
    not (member names too, if ``escape_names``), now and then an object's member written
    twice."""

    def space() -> str:
        return rnd.choice(["", "", " ", "\n", " \t\r\n "])

    def string(text: str, escape: bool = True) -> str:
        if escape and text and rnd.random() < 0.15:
            escaped = (f"\\u{ord(ch):04x}" if ord(ch) < 0xD800 else ch for ch in text)
            return '"' + "".join(escaped) + '"'
        return json.dumps(text, ensure_ascii=rnd.random() < 0.5)

    if isinstance(value, dict):
        members = list(value.items())
        if members and rnd.random() < 0.05:
            members.append(rnd.choice(members))
        inner = ",".join(
            f"{space()}{string(k, escape_names)}{space()}:{space()}{spelled(v, rnd, escape_names)}"
            f"{space()}"
            for k, v in members
        )
        return "{" + (inner or space()) + "}"
    if isinstance(value, list):
        inner = ",".join(space() + spelled(v, rnd, escape_names) + space() for v in value)
        return "[" + (inner or space()) + "]"
    return string(value) if isinstance(value, str) else json.dumps(value)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.builds(lambda b: {"trajectory": b}, hostile_block)
        | st.builds(lambda b: {"x": [1, {"trajectory": 2}], "trajectory": b}, hostile_block)
        | st.just({"trajectory": None}),
        min_size=1,
        max_size=5,
    ),
    st.randoms(use_true_random=False),
    st.booleans(),
)
def test_the_compiled_pass_reads_hostile_spellings_as_the_other_passes(
    rows: list[Any], rnd: Any, escape_names: bool
) -> None:
    # Escaped and raw non-ASCII names, names too long for a view to hold in place, stray
    # whitespace, repeated members, integers past 64 bits; member names spelled with escapes,
    # which the path lookups do not decode (the typed pass does).
    from evalframe.core._expectations_compiled import decode_expectations

    texts = [spelled(r, rnd, escape_names) for r in rows]
    got = decoded(texts, "compiled")
    assert got == decoded(texts, "typed")
    if not escape_names:
        assert got == decoded(texts, "path")
    frame = decode_expectations(pl.Series(texts, dtype=pl.String))
    inexact = frame.filter(~pl.col("exact")).drop("exact")
    assert inexact.null_count().row(0) == (inexact.height,) * inexact.width


def test_the_compiled_pass_grows_its_arrays_for_texts_larger_than_the_first() -> None:
    # Sized by the first text, the arrays are grown (and the decoding goes on where it
    # stopped) for more items and more decoded bytes than it predicted.
    from evalframe.core import _expectations_compiled as compiled

    def text(i: int) -> str:
        names = [f"t{j}" for j in range(i % 40)] + ["a_name_past_twelve_bytes\\u00e9"] * (i % 3)
        spec = {"tool": f"tool_{i}", "arguments": {"long": "x" * (i % 50), "n": i}}
        block = {"tools": names, "tool_arguments": [spec] * (i % 5), "goal": spec}
        return json.dumps({"trajectory": block}).replace("\\\\u00e9", "\\u00e9")

    texts = pl.Series([text(i) for i in range(400)])
    whole = compiled._decode_texts(texts)
    grown: list[int] = []
    grow = compiled._grown
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(compiled, "_SAMPLE", 1)
        patch.setattr(compiled, "_SPARE", 0)
        patch.setattr(compiled, "_grown", lambda *a: grown.append(1) or grow(*a))
        stepwise = compiled._decode_texts(texts)
    assert len(grown) > 2
    assert stepwise.equals(whole)
    assert whole.get_column("exact").all()
    assert whole.get_column("tools").to_list()[-2] == [
        *(f"t{j}" for j in range(38)),
        *["a_name_past_twelve_bytesé"] * 2,
    ]
    assert whole.get_column("goal").to_list()[5] == {
        "name": "tool_5", "arguments": '{"long":"xxxxx","n":5}'
    }  # fmt: skip


def test_argument_maps_in_every_spelling_read_as_the_path_lookups() -> None:
    # Plain maps are copied less their whitespace; the rest (escapes, floats, nesting,
    # repeated names, invalid JSON) go to the general compact encoder or to the exact path.
    maps = [
        "{}", "{ }", '{"a":1}', '{"a": 1}', '{"a" : 1 }', '{"a":  1}', '{"a":-1}',
        '{"a":0}', '{"a":01}', '{"a":1.5}', '{"a":1e5}', '{"a":"x"}', '{"a":"\\u0041"}',
        '{"\\u0061":1}', '{"a":1,"a":2}', '{"ab":1,"a":2}', '{"a":1,}', '{"a":true}',
        '{"a":null}', '{"a":[1]}', '{"a":{"b":1}}', '{"a":"é\u2028\x7f"}', '{"a":"\\"q"}',
        '{"a":12345678901234567890}', '{"a":"12345678901234567890"}', '{"a":-}', '{"a":1x}',
        '{"a":"tab\there"}', '{"a":1 ,"b":"c" }', '{"a\\"":1}', '{"a":' + "9" * 30 + "}",
    ]  # fmt: skip
    texts = [
        f'{{"trajectory": {{"tool_arguments": [{{"tool": "t", "arguments": {m}}}], '
        f'"goal": {{"name": "g", "args": {m}}}}}}}'
        for m in [*maps, '{"a":-0}']
    ]
    assert decoded(texts[:-1], "compiled") == decoded(texts[:-1], "path")
    got = decoded(texts, "compiled")["goal"]
    assert got[:3] == [
        {"name": "g", "arguments": "{}"}, {"name": "g", "arguments": "{}"},
        {"name": "g", "arguments": '{"a":1}'},
    ]  # fmt: skip
    # -0 is the integer 0 to Python's reader (the path lookups make it -0.0)
    compact = json.dumps(json.loads('{"a":-0}'), separators=(",", ":"))
    assert got[-1] == {"name": "g", "arguments": compact}


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.one_of(st.none(), st.integers(0, 6)), min_size=1, max_size=40),
    st.integers(0, 2),
)
def test_rows_take_their_texts_decoding_in_row_order(
    texts: list[int | None], few_from: int
) -> None:
    """``in_row_order`` gives each row its text's decoded row (a null text a null row), as
    a join on the texts does, whether it slices around a few repeats or gathers many; from a
    decoding in two chunks, as the decoder's halves give it."""
    from evalframe.metrics import _expectations

    column = pl.Series("t", [None if t is None else f"text {t}" for t in texts], pl.String)
    distinct, held = _expectations.distinct_texts(column)
    assert distinct.to_list() == list(dict.fromkeys(t for t in column.to_list() if t))
    half = distinct.len() // 2
    whole = pl.DataFrame({"t": distinct, "n": pl.Series(range(distinct.len()))})
    whole = whole.with_columns(l=pl.col("t").str.split(" "))
    decoded = pl.concat([whole.slice(0, half), whole.slice(half)], rechunk=False)
    want = pl.DataFrame({"t": column}).join(whole, on="t", how="left", maintain_order="left")
    before = _expectations._FEW_OTHERS
    _expectations._FEW_OTHERS = [0, 3, 1000][few_from]
    try:
        got = _expectations.in_row_order(decoded, column.len(), held)
    finally:
        _expectations._FEW_OTHERS = before
    assert got.n_chunks() == 1
    assert got.drop("t").equals(want.drop("t"))
    assert got.get_column("t").to_list() == column.to_list()
