"""The byte-level JSON primitives (``core/_json/``), and the readers and writers built on them,
against ``json`` and ``orjson`` reading and writing the same generated documents: strings
with every escape, surrogate pairs and lone surrogates, control characters, non-ASCII and
astral text; integers past 64 bits; floats with exponents; nested lists and objects."""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import orjson
import polars as pl
import pytest
from borrowed import borrowing_kernels
from hypothesis import given, settings
from hypothesis import strategies as st

from evalframe.core._json._numbers import (
    exact_double,
    exact_integer,
    floats_at,
    number_end,
    number_ends,
    written_as_repr,
)
from evalframe.core._json._strings import (
    encode_string,
    hex4,
    json_string,
    put_utf8,
    skip_string,
    unicode_escape,
    write_string,
)
from evalframe.core._json._text import (
    JSON_WS,
    WORD_SLACK,
    ascii_space,
    copy_words,
    skip_space,
    skip_ws,
    surely_not_blank,
    valid_utf8,
    word_at,
)
from evalframe.core._json._values import (
    compact_value,
    member_key,
    name_index,
    name_table,
    next_member,
    skip_value,
)
from evalframe.core._outputs_compiled import outputs_map
from evalframe.metrics._json_scan import json_leaves
from evalframe.views._records import Template, records


def _bytes(text: str) -> np.ndarray:  # type: ignore[type-arg]
    return np.frombuffer(text.encode(), np.uint8)


spellings = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.floats(-1e6, 1e6).map(lambda x: f"{x:.6f}"),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda x: f"{x:.12e}"),
    st.integers(-(10**20), 10**20).map(str),
    st.decimals(allow_nan=False, allow_infinity=False, places=4).map(str),
).filter(lambda text: text.lstrip("-")[:1].isdigit())


@settings(max_examples=500, deadline=None)
@given(spellings)
def test_exact_double_reads_as_python_does_or_declines(text: str) -> None:
    end, value = exact_double(_bytes(text), 0, len(text))
    if end < 0:
        return  # declined: the caller's exact reader takes it
    assert end == len(text)
    want = json.loads(text)
    assert value == float(want)
    assert math.copysign(1.0, value) == math.copysign(1.0, float(want))


long_numbers = st.builds(
    lambda sign, whole, fraction, exponent: f"{sign}{whole}{fraction}{exponent}",
    st.sampled_from(["", "-"]),
    st.just("0") | st.from_regex(r"[1-9][0-9]{0,40}", fullmatch=True),
    st.just("") | st.from_regex(r"\.[0-9]{1,40}", fullmatch=True),
    st.just("") | st.integers(-400, 400).map(lambda e: f"e{e:+d}") | st.just("E5"),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(spellings | long_numbers, min_size=1, max_size=6))
def test_numbers_left_as_text_are_read_as_pythons_float_reads_them(texts: list[str]) -> None:
    document = "[" + ", ".join(texts) + "]"
    lengths = np.array([len(t) for t in texts], np.int64)
    starts = 1 + np.concatenate([[0], np.cumsum(lengths + 2)[:-1]])  # after "[" and ", "
    data = _bytes(document)
    ends = number_ends(data, starts)
    assert (ends - starts).tolist() == [len(t) for t in texts]
    got = floats_at(data, starts, ends)
    want = [float(t) for t in texts]  # what json.loads makes of a float's text
    assert [(v, math.copysign(1.0, v)) for v in got] == [(w, math.copysign(1.0, w)) for w in want]


@pytest.mark.parametrize(
    ("text", "value"),
    [("0", 0.0), ("-0", -0.0), ("-0.0", -0.0), ("12.5", 12.5), ("1e2", 100.0), ("0.1", 0.1),
     ("123456789.125", 123456789.125), ("2.5E-3", 0.0025), ("0.000001", 1e-06)],
)  # fmt: skip
def test_exact_double_vouches_for_plain_numbers(text: str, value: float) -> None:
    end, got = exact_double(_bytes(text), 0, len(text))
    assert (end, got) == (len(text), value)
    assert math.copysign(1.0, got) == math.copysign(1.0, value)


@pytest.mark.parametrize(
    "text", ["01", "1.", ".5", "-", "+1", "1e", "1e+", "-.5", "x", "1e400", "1" * 19]
)
def test_exact_double_refuses_what_it_cannot_vouch_for(text: str) -> None:
    end, _ = exact_double(_bytes(text), 0, len(text))
    assert end < len(text)  # declined, or stopped before text that is not its number


@settings(deadline=None)  # the first example compiles the kernel
@given(st.integers(-(10**18) + 1, 10**18 - 1))
def test_exact_integer_reads_every_integer_of_up_to_18_digits(value: int) -> None:
    text = str(value)
    assert exact_integer(_bytes(text), 0, len(text)) == (len(text), value)


@pytest.mark.parametrize("text", ["1.0", "1e2", "01", "-", "", "1" * 19, "true"])
def test_exact_integer_declines_anything_else(text: str) -> None:
    assert exact_integer(_bytes(text), 0, len(text))[0] == -1


# --- values skipped and re-encoded ------------------------------------------------------------

_texts = st.text(
    st.characters(codec="utf-8") | st.sampled_from('"\\/\b\f\n\r\t\x00\x1f\x7f\u2028é😀')
)
_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**30), 10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([0.0, -0.0, 1e16, 1e15, 0.0001, 1e-05, 123.456, 1e22, 1.5e300])
    | _texts,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_texts, inner, max_size=4),
    max_leaves=12,
)
_spellings = st.sampled_from(
    [{}, {"ensure_ascii": False}, {"indent": 2}, {"separators": (" ,\n", " :\t")}]
)


def _compact(text: str, long_floats: bool = False) -> str | None:
    """``compact_value`` of ``text``; ``long_floats``: floats whose repr it cannot tell
    copied as written, and the result kept only if ``written_as_repr`` holds for them."""
    data = _bytes(text)
    out = np.empty(data.size + 8, np.uint8)
    stack, keys = np.empty(128, np.int64), np.empty(1024, np.int64)
    if long_floats:
        long = np.zeros(2 * data.size + 1, np.int64)
        end, stop = compact_value(data, 0, data.size, out, 0, stack, keys, long)
        if end >= 0 and not written_as_repr(out, long):
            return None
    else:
        end, stop = compact_value(data, 0, data.size, out, 0, stack, keys)
    if end < 0:
        return None
    assert end == data.size
    return bytes(out[:stop]).decode()


@settings(max_examples=300, deadline=None)
@given(_values_for_long := st.recursive(
    st.none() | st.integers(-10, 10) | st.floats(allow_nan=False) | st.sampled_from(
        [0.30000000000000004, 1e-320, 1.7976931348623157e308, 2.5e-300, 0.8444218515250481]
    ),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner,
                                                                 max_size=4),
    max_leaves=10,
), st.sampled_from(["repr", "17g", "E"]))  # fmt: skip
def test_floats_copied_as_written_are_kept_only_when_written_as_repr(
    value: object, spelling: str
) -> None:
    """Python's own spelling of any float is vouched for (infinity aside); another spelling
    of the same value (``%.17g``, a capital E) is declined, for the exact reader."""
    text = json.dumps(value)
    if spelling != "repr":
        text = re.sub(
            r"-?\d+\.\d+(?:e[-+]\d+)?|-?\d+e[-+]\d+",
            lambda m: f"{float(m.group()):.17g}" if spelling == "17g" else m.group().upper(),
            text,
        )
    got = _compact(text, long_floats=True)
    want = json.dumps(json.loads(text), ensure_ascii=False, separators=(",", ":"))
    if spelling == "repr" and "Infinity" not in text:
        assert got == want
    else:
        assert got is None or got == want


@settings(max_examples=500, deadline=None)
@given(_values, _spellings)
def test_compact_value_writes_what_pythons_encoder_writes_or_declines(
    value: object, spelling: dict[str, object]
) -> None:
    text = json.dumps(value, **spelling)  # type: ignore[arg-type]
    got = _compact(text)
    want = json.dumps(json.loads(text), ensure_ascii=False, separators=(",", ":"))
    assert got is None or got == want
    assert skip_value(_bytes(text), 0, len(text.encode()), np.empty(64, np.int64)) == len(
        text.encode()
    )


@settings(max_examples=300, deadline=None)
@given(
    st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | _texts
        | st.floats(-1e9, 1e9).map(lambda x: round(x, 4)),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_texts, inner, max_size=4),
        max_leaves=12,
    )
)
def test_compact_value_vouches_for_short_floats_and_everything_else(value: object) -> None:
    text = json.dumps(value)
    assert _compact(text) == json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1, "a": 2}',  # Python keeps the last value, at the first key's place
        '{"a": {"b": 1, "b": 1}}',
        "[NaN]",
        "Infinity",
        '"\\ud800"',  # a lone surrogate
        "0.30000000000000004",  # more significant digits than it can tell the repr of
        "1e-7",  # Python's "1e-07" is longer than the text: the output has no room for it
        "1E5",  # "100000.0", longer still
        "[" * 70 + "]" * 70,  # deeper than its scratch space
        "[1,]",
        '{"a" 1}',
    ],
)
def test_compact_value_declines_what_it_cannot_vouch_for(text: str) -> None:
    assert _compact(text) is None


@pytest.mark.parametrize(
    ("text", "written"),
    [("-0", "0"), ("-0.0", "-0.0"), ('"\\u00e9\\/\\u0001"', '"é/\\u0001"'), ("1e-05", "1e-05"),
     ("100.0", "100.0"), ("1e+16", "1e+16"), ("  [ 1 , { } ]  ", "[1,{}]"), ("1.50", "1.5"),
     ("1.0E+16", "1e+16"), ("0.0000125", "1.25e-05")],
)  # fmt: skip
def test_compact_value_at_the_edges(text: str, written: str) -> None:
    data = _bytes(text)
    out = np.empty(data.size + 8, np.uint8)
    end, stop = compact_value(
        data, 0, data.size, out, 0, np.empty(128, np.int64), np.empty(64, np.int64)
    )
    assert end == len(text.rstrip())  # the value's end, before any space after it
    assert bytes(out[:stop]).decode() == written
    assert written == json.dumps(json.loads(text), ensure_ascii=False, separators=(",", ":"))


# --- the oracles ------------------------------------------------------------------------------


def _python(text: bytes) -> tuple[bool, object]:
    """Whether ``json`` reads ``text``, and what it reads."""
    try:
        return True, json.loads(text)
    except ValueError:
        return False, None


def _orjson(text: bytes) -> tuple[bool, object]:
    try:
        return True, orjson.loads(text)
    except orjson.JSONDecodeError:
        return False, None


def _utf8(value: str) -> bytes | None:
    """``value`` as UTF-8, or None where it holds a lone surrogate (no UTF-8 text can)."""
    try:
        return value.encode()
    except UnicodeEncodeError:
        return None


# --- strings: every way JSON may spell a character, and what must be refused --------------------

_SHORT = {
    '"': '\\"',
    "\\": "\\\\",
    "/": "\\/",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}


@st.composite
def _spelled_char(draw: st.DrawFn) -> str:
    """One character as a JSON string may spell it: raw, a short escape, ``\\u`` in either
    case, a surrogate pair; or something a reader must refuse or keep apart (a lone
    surrogate, a bad escape, a raw control character, a bad hex digit)."""
    c = draw(
        st.characters(codec="utf-8")
        | st.sampled_from('"\\/\b\f\n\r\t\x00\x1f\x7f\u2028\u00a0é€😀\U0010ffff')
    )
    ways = []
    if c not in '"\\' and ord(c) >= 0x20:
        ways.append(c)
    if c in _SHORT:
        ways.append(_SHORT[c])
    if ord(c) < 0x10000:
        ways += [f"\\u{ord(c):04x}", f"\\u{ord(c):04X}"]
    else:
        hi, lo = divmod(ord(c) - 0x10000, 0x400)
        ways.append(f"\\u{0xD800 + hi:04x}\\u{0xDC00 + lo:04X}")
    spelled = draw(st.sampled_from(ways))
    hostile = st.sampled_from(
        ["\\ud800", "\\udfff", "\\ud83d", "\\ude00x", "\\ud83d\\u0041", "\\x41", "\\u12g4",
         "\\u12", "\\U0041", "\x01", "\n", "\\", '" '],  # a quote: the string ends early
    )  # fmt: skip
    return draw(st.just(spelled) | hostile) if draw(st.integers(0, 9)) == 0 else spelled


_literals = st.lists(_spelled_char(), max_size=24).map(lambda chars: '"' + "".join(chars) + '"')


def _decoded(text: bytes) -> tuple[int, bytes]:
    data = np.frombuffer(text, np.uint8)
    out = np.zeros(len(text), np.uint8)
    end, stop = json_string(data, 0, data.size, out, 0)
    return end, bytes(out[:stop]) if end >= 0 else b""


@settings(max_examples=800, deadline=None)
@given(_literals)
def test_strings_decode_as_json_and_orjson_read_them_or_are_declined(literal: str) -> None:
    text = literal.encode("utf-8", "surrogatepass")
    end, got = _decoded(text)
    ok, value = _python(text)
    want = _utf8(value) if isinstance(value, str) else None
    # Every string json reads to UTF-8-able text is read whole, to the same bytes; anything
    # else is declined or stops where the string closes (a raw quote inside, then more text).
    if ok and want is not None:
        assert (end, got) == (len(text), want)
    elif end == len(text):
        raise AssertionError(f"vouched for {literal!r}, which json reads as {value!r}")
    elif end >= 0:
        assert _python(text[:end]) == (True, got.decode())
    # orjson, which refuses lone surrogates, reads exactly the strings the decoder reads whole.
    assert _orjson(text)[0] == (end == len(text))
    if end == len(text):
        assert _orjson(text)[1] == got.decode()
    # Skipping a string agrees with decoding it; re-encoding it writes json's own spelling.
    data = np.frombuffer(text, np.uint8)
    assert skip_string(data, 0, data.size) == end
    out = np.zeros(len(text) + 2, np.uint8)
    q, stop = encode_string(data, 0, data.size, out, 0)
    assert q == end
    if q == len(text):
        assert bytes(out[:stop]) == json.dumps(value, ensure_ascii=False).encode()


@settings(max_examples=300, deadline=None)
@given(_literals)
def test_strings_decode_the_same_interpreted(literal: str) -> None:
    text = literal.encode("utf-8", "surrogatepass")
    out = bytearray(len(text))
    end, stop = json_string.interpreted(text, 0, len(text), out, 0)
    assert (end, bytes(out[:stop]) if end >= 0 else b"") == _decoded(text)


@settings(max_examples=500, deadline=None)
@given(st.text(st.characters(codec="utf-8") | st.sampled_from('"\\/\b\f\n\r\t\x00\x1f\x7f\u2028')))
def test_strings_are_written_as_json_and_orjson_write_them(value: str) -> None:
    src = np.frombuffer(value.encode(), np.uint8)
    size = write_string(src, 0, src.size, np.empty(0, np.uint8), 0, False)
    out = np.zeros(size, np.uint8)
    assert write_string(src, 0, src.size, out, 0, True) == size
    assert bytes(out) == json.dumps(value, ensure_ascii=False).encode() == orjson.dumps(value)


@given(st.integers(0, 0x10FFFF).filter(lambda cp: not 0xD800 <= cp <= 0xDFFF))
def test_code_points_are_written_as_utf8(cp: int) -> None:
    out = np.zeros(4, np.uint8)
    n = put_utf8(out, 0, cp)
    assert bytes(out[:n]) == chr(cp).encode()


@given(st.text("0123456789abcdefABCDEFgG/:@`", min_size=0, max_size=5))
def test_hex_digits_are_read_as_json_reads_a_unicode_escape(digits: str) -> None:
    text = f'"\\u{digits}"'.encode()
    data = np.frombuffer(text, np.uint8)
    value = hex4(data, 3, data.size - 1)
    ok, decoded = _python(text)  # json reads four hex digits, then the rest as characters
    assert value == (ord(decoded[0]) if ok else -1)  # type: ignore[index]
    end, cp = unicode_escape(data, 3, data.size - 1)
    lone = ok and 0xD800 <= value <= 0xDFFF
    assert (end, cp) == ((-1, -1) if not ok or lone else (7, value))


# --- whitespace, words, blank text, member names ------------------------------------------------


def test_json_whitespace_is_what_json_and_orjson_skip() -> None:
    for b in range(256):
        text = b"[" + bytes([b]) + b'"x"]'
        skipped = _python(text) == (True, ["x"])
        assert bool(JSON_WS[b]) == skipped == _orjson(text)[0], b
        data = np.frombuffer(bytes([b]) * 3 + b"1", np.uint8)
        assert skip_ws(data, 0, data.size) == (3 if skipped else 0)
        assert skip_space(data, 0, data.size, True) == (3 if skipped else 0)
        # within a JSONL line the newline ends the line, as splitting the file's lines does
        in_line = skipped and b"\n" not in bytes([b])
        assert skip_space(data, 0, data.size, False) == (3 if in_line else 0)


@given(
    st.binary(max_size=12)
    | st.text(max_size=6).map(str.encode)
    | st.lists(st.sampled_from([b"\xed\xa0\x80", b"\xc0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82",
                                b"\xf0\x9f\x98\x80", b"a"]), max_size=4).map(b"".join)
)  # fmt: skip
def test_utf8_is_judged_as_python_decodes_it(data: bytes) -> None:
    try:
        data.decode()
        decodes = True
    except UnicodeDecodeError:
        decodes = False
    assert valid_utf8(data) == decodes
    assert valid_utf8(np.frombuffer(data, np.uint8)) == decodes


@given(st.text(st.sampled_from(" \t\n\r\x0b\x0c\x1c\x1f\x85\xa0\u2028\u3000ax_")))
def test_blank_text_is_what_str_strip_empties(text: str) -> None:
    data = np.frombuffer(text.encode(), np.uint8)
    sure = surely_not_blank(data, 0, data.size)
    assert not sure or text.strip() != ""  # never wrong when it says not blank
    if text.isascii():  # and sure of every ASCII text
        assert sure == (text.strip() != "")
    for c in range(128):
        assert ascii_space(c) == (chr(c).strip() == "")


@given(st.binary(max_size=40), st.integers(0, 40), st.integers(0, 40), st.integers(0, 9))
def test_word_copies_copy_the_bytes_and_nothing_before_them(
    data: bytes, a: int, b: int, o: int
) -> None:
    lo, hi = sorted((min(a, len(data)), min(b, len(data))))
    source = np.frombuffer(data + bytes(WORD_SLACK), np.uint8)
    for copy in (copy_words, copy_words.interpreted):
        out = np.full(o + hi - lo + WORD_SLACK, 7, np.uint8)
        assert copy(source, lo, hi, out, o) == o + hi - lo
        assert bytes(out[: o + hi - lo]) == bytes([7] * o) + data[lo:hi]


@given(st.sampled_from(["true", "false", "null"]), st.text("truefalsn ", max_size=6))
def test_words_match_the_literal_they_spell(word: str, text: str) -> None:
    data = np.frombuffer(text.encode(), np.uint8)
    w = np.frombuffer(word.encode(), np.uint8)
    assert word_at(data, 0, data.size, w) == (len(word) if text.startswith(word) else -1)


@given(st.lists(st.text(max_size=6), min_size=1, max_size=8, unique=True), st.text(max_size=6))
def test_member_names_are_found_where_the_list_has_them(words: list[str], key: str) -> None:
    names, offsets = name_table(words)
    scratch = np.frombuffer(key.encode() + b"\0", np.uint8)
    k = len(key.encode())
    want = words.index(key) if key in words else -1
    assert name_index(scratch, k, names, offsets, 0, len(words)) == want
    half = len(words) // 2
    assert name_index(scratch, k, names, offsets, half, len(words)) == (
        want if want >= half else -1
    )


# --- numbers --------------------------------------------------------------------------------

_number_texts = st.from_regex(
    r"-?(0|[1-9][0-9]{0,24})(\.[0-9]{1,20})?([eE][+-]?[0-9]{1,3})?", fullmatch=True
) | st.text("0123456789-+.eE", min_size=1, max_size=12)


@settings(max_examples=800, deadline=None)
@given(_number_texts)
def test_numbers_are_read_as_json_and_orjson_read_them_or_are_declined(text: str) -> None:
    data = np.frombuffer(text.encode(), np.uint8)
    ok, value = _python(text.encode())
    assert (number_end(data, 0, data.size) == len(text)) == ok  # the grammar, at any length
    end, number = exact_double(data, 0, data.size)
    if end == len(text):
        assert ok
        assert number == float(value)  # type: ignore[arg-type]
        if isinstance(value, float):  # (an integer has no signed zero)
            assert math.copysign(1.0, number) == math.copysign(1.0, float(value))  # type: ignore[arg-type]
        loaded = _orjson(text.encode())
        assert loaded[0]
        assert float(loaded[1]) == number  # type: ignore[arg-type]
    end, whole = exact_integer(data, 0, data.size)
    if end == len(text):
        assert isinstance(value, int)
        assert whole == value == _orjson(text.encode())[1]
    elif ok and isinstance(value, int) and len(text.lstrip("-")) <= 18:
        raise AssertionError(f"declined the integer {text}")


# --- members, whole documents ---------------------------------------------------------------

_keys = _literals.filter(lambda lit: _python(lit.encode("utf-8", "surrogatepass"))[0])


@settings(max_examples=300, deadline=None)
@given(st.lists(_keys, max_size=5), st.sampled_from(["", " ", "\n\t "]))
def test_object_members_are_walked_as_json_reads_them(keys: list[str], space: str) -> None:
    members = [f"{key}{space}:{space}{i}" for i, key in enumerate(keys)]
    text = ("{" + space + f",{space}".join(members) + space + "}").encode("utf-8", "surrogatepass")
    data = np.frombuffer(text, np.uint8)
    scratch = np.zeros(data.size, np.uint8)
    p, done = skip_ws(data, 1, data.size), not keys
    if done:
        assert data[p] == ord("}")
        assert json.loads(text) == {}
        return
    got = []
    while not done:
        p, k = member_key(data, p, data.size, scratch)
        if p < 0:  # a key the decoder declines: json reads it to a lone surrogate
            assert any(
                _utf8(json.loads(key.encode("utf-8", "surrogatepass"))) is None for key in keys
            )
            return
        got.append(bytes(scratch[:k]).decode())
        p, done = next_member(data, number_end(data, p, data.size), data.size, ord("}"))
        assert p >= 0
    assert p == data.size
    assert got == [json.loads(key) for key in keys]
    assert dict(zip(got, range(len(got)), strict=True)) == json.loads(text)


_documents = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(codec="utf-8") | st.sampled_from('"\\\x00\x1f\u2028😀')),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=16,
)


def _writers(value: object) -> list[bytes]:
    """``value`` as ``json`` and ``orjson`` write it, in their different spellings."""
    spelled = [
        json.dumps(value).encode(),
        json.dumps(value, ensure_ascii=False, indent=2).encode(),
        json.dumps(value, separators=(",", ":")).encode(),
    ]
    with contextlib.suppress(TypeError):  # orjson refuses integers past 64 bits
        spelled.append(orjson.dumps(value))
    return spelled


@settings(max_examples=300, deadline=None)
@given(_documents)
def test_documents_are_skipped_and_compacted_as_json_reads_them(value: object) -> None:
    want = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    for text in _writers(value):
        data = np.frombuffer(text + b"  ", np.uint8)
        assert skip_value(data, 0, data.size, np.empty(64, np.int64)) == len(text)
        out = np.zeros(data.size + 8, np.uint8)
        stack, keys = np.empty(128, np.int64), np.empty(1024, np.int64)
        end, stop = compact_value(data, 0, data.size, out, 0, stack, keys)
        if end >= 0:
            assert end == len(text)
            assert bytes(out[:stop]).decode() == want
            assert orjson.loads(bytes(out[:stop])) == orjson.loads(text) or _has_big_int(value)


def _has_big_int(value: object) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return abs(value) >= 2**63
    if isinstance(value, list):
        return any(_has_big_int(v) for v in value)
    if isinstance(value, dict):
        return any(_has_big_int(v) for v in value.values())
    return False


# --- readers and writers built on the primitives -----------------------------------------------


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        _keys.filter(lambda k: str(json.loads(k)).strip() != ""), _keys, max_size=8
    ).map(lambda d: d)
)
def test_the_outputs_reader_reads_hand_spelled_documents_as_json_does(
    entries: dict[str, str],
) -> None:
    text = "{" + '"outputs": {' + ", ".join(f"{k}: {v}" for k, v in entries.items()) + "}}"
    document = text.encode("utf-8", "surrogatepass")
    frame = outputs_map(document)
    ok, value = _python(document)
    assert ok
    outputs = value["outputs"]  # type: ignore[index]
    readable = all(_utf8(k) is not None and _utf8(v) is not None for k, v in outputs.items())
    if frame is None:  # declined: a lone surrogate, a repeated id (json keeps the last)
        assert not readable or len(outputs) < len(entries)
    else:
        assert readable
        assert frame.rows() == list(outputs.items())
        assert dict(frame.rows()) == orjson.loads(document)["outputs"]


@settings(max_examples=200, deadline=None)
@given(st.lists(_documents, min_size=1, max_size=6))
def test_the_strict_scanner_reads_every_string_json_reads(values: list[object]) -> None:
    texts = [json.dumps(v) for v in values]
    status, leaves = json_leaves(pl.Series(texts))
    assert status.get_column("valid").to_list() == [True] * len(texts)
    strings = leaves.filter(pl.col("kind") == "string")
    want = [s for v in values for s in _strings_in(v)]
    assert sorted(strings.get_column("value").to_list()) == sorted(want)


def _strings_in(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for v in value for s in _strings_in(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings_in(v)]
    return []


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.text(st.characters(codec="utf-8") | st.sampled_from('"\\\x00\x1f\u2028')),
        min_size=1,
        max_size=8,
    )
)
def test_the_record_writer_writes_strings_as_json_and_orjson_do(values: list[str]) -> None:
    buf, off = records(Template().string("", pl.Series(values)).end(""), len(values))
    data = bytes(buf)
    rows = [data[off[i] : off[i + 1]] for i in range(len(values))]
    assert rows == [json.dumps(v, ensure_ascii=False).encode() for v in values]
    assert rows == [orjson.dumps(v) for v in values]


# --- moved kernels still cache -----------------------------------------------------------------

_CACHE_SCRIPT = """
import json, sys
from evalframe.core._json import _numbers, _strings, _text, _values
from evalframe.core._njit import Kernel
from evalframe.core._outputs_compiled import outputs_map
kernels = {f"{m.__name__}.{n}": k for m in (_numbers, _strings, _text, _values)
           for n, k in vars(m).items() if isinstance(k, Kernel)}
if sys.argv[1] == "compile":
    doc = json.dumps({"outputs": {f"q{i}": f"a\\u00e9 {i}" for i in range(50)}}).encode()
    assert outputs_map(doc) is not None
    print(json.dumps(sorted(n for n, k in kernels.items()
                             if k.dispatcher is not None and k.dispatcher.signatures)))
else:
    print(json.dumps(sorted(n for n, k in kernels.items() if k.cached())))
"""


def test_the_moved_kernels_compile_once_and_load_from_the_cache(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env |= {"NUMBA_CACHE_DIR": str(tmp_path / "cache"), "EVALFRAME_KERNELS": "compiled"}

    def run(step: str) -> list[str]:
        done = subprocess.run(
            [sys.executable, "-c", _CACHE_SCRIPT, step],
            env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)  # type: ignore[no-any-return]

    compiled = run("compile")
    assert {"evalframe.core._json._strings.json_string", "evalframe.core._json._text.skip_ws",
            "evalframe.core._json._values.member_key"} <= set(compiled)  # fmt: skip
    assert set(compiled) <= set(run("check"))


def test_kernels_compiled_without_reference_counts_hand_back_no_array() -> None:
    """A kernel that borrows its arrays (``njit(borrows=True)``) is compiled without
    reference counting: an array it returned would be freed under its caller. Each one a
    trajectory read reaches is run as Python here, and what it returns is looked at."""
    from evalframe.core._outputs import _NUMBERS
    from evalframe.core._outputs_compiled import outputs_list

    entry = {
        "id": "a",
        "actual_output": "x",
        "trajectory": {
            "tool_calls": ["s", {"name": "t", "arguments": {"k": [1, 2.5]}, "result": {"r": 1},
                                 "latency_ms": 1.5, "tokens": 3}],
            "approvals": ["p", 7],
        },
        "contexts": ["c", {"id": 1, "text": "d", "x": [None]}],
        "turns": [{"role": "user", "content": "hi", "tool_calls": [{"name": "u"}]}],
    }  # fmt: skip
    with borrowing_kernels() as seen:
        assert outputs_list(json.dumps({"outputs": [entry]}).encode(), _NUMBERS) is not None
    assert {"json_string", "member_key", "compact_value", "flat_object", "_trajectory",
            "_call", "_contexts", "_turn", "skip_value"} <= seen  # fmt: skip
