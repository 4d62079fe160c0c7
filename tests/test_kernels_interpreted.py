"""Small inputs run the kernels' own Python source instead of compiling them: the results are
the compiled kernels' exactly, on generated inputs (``EVALFRAME_KERNELS`` picks the path)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar
from unittest.mock import patch

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evalframe as ef

T = TypeVar("T")
EXAMPLES = Path(ef.__file__).parent / "examples"


@contextmanager
def kernels(mode: str) -> Iterator[None]:
    before = os.environ.get("EVALFRAME_KERNELS")
    os.environ["EVALFRAME_KERNELS"] = mode
    try:
        yield
    finally:
        if before is None:
            del os.environ["EVALFRAME_KERNELS"]
        else:
            os.environ["EVALFRAME_KERNELS"] = before


def both(fn: Callable[[], T]) -> tuple[T, T]:
    """``fn()`` with the kernels interpreted, then compiled."""
    with kernels("interpreted"):
        small = fn()
    with kernels("compiled"):
        large = fn()
    return small, large


def assert_same_frames(a: pl.DataFrame, b: pl.DataFrame) -> None:
    assert a.schema == b.schema
    assert a.equals(b, null_equal=True), (a, b)


# Texts mixing ASCII words, accents, other scripts, digits, punctuation, odd whitespace.
words = st.sampled_from(
    ["the", "The", "CAT", "sat", "on", "a", "mat", "3.14", "1,000", "x-ray", "it's", "école",
     "ÉCOLE", "İstanbul", "straße", "日本語", "😀", "e\u0301", "—", "…", "don't", "U.S.",
     "&amp;", "&quot;", "<skipped>", "-\n", "\u00a0", "\u2028", "\t", "ǅ", "ꭰ", "\U000e0041"]
)  # fmt: skip
texts = st.lists(words, max_size=90).map(" ".join) | st.text(max_size=60)
maybe_texts = st.none() | texts


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(maybe_texts, maybe_texts), min_size=1, max_size=8), st.integers(1, 80))
def test_rouge_l_in_python_is_the_kernel(pairs: list[tuple[Any, Any]], cap: int) -> None:
    from evalframe.metrics._lcs import rouge_l

    expected = pl.Series([e for e, _ in pairs], dtype=pl.String)
    actual = pl.Series([a for _, a in pairs], dtype=pl.String)
    small, large = both(lambda: rouge_l(expected, actual, beta=1.5, max_tokens=cap))
    assert_same_frames(small, large)


def test_lcs_of_matches_the_kernel_past_one_word() -> None:
    from evalframe.metrics._lcs import lcs_lengths, lcs_of

    rng = np.random.default_rng(5)
    for _ in range(50):
        a = rng.integers(0, 6, rng.integers(0, 200)).tolist()
        b = rng.integers(0, 6, rng.integers(0, 200)).tolist()
        want = lcs_lengths(a, [0, len(a)], b, [0, len(b)])[0] if a and b else 0
        assert lcs_of([str(x) for x in a], [str(x) for x in b]) == want


@settings(max_examples=100, deadline=None)
@given(st.lists(st.none() | st.lists(st.none() | words, max_size=6), min_size=0, max_size=6))
def test_intern_by_polars_is_the_kernel(rows: list[Any]) -> None:
    from evalframe.metrics._text import intern

    lists = pl.Series(rows, dtype=pl.List(pl.String))
    other = pl.Series([["cat", None], [], None], dtype=pl.List(pl.String))
    small, large = both(lambda: intern(lists, other))
    for (a_ids, a_off), (b_ids, b_off) in zip(small, large, strict=True):
        assert a_ids.dtype == b_ids.dtype == np.int32
        assert a_ids.tolist() == b_ids.tolist()
        assert a_off.tolist() == b_off.tolist()


# JSON documents, valid ones and broken ones: cut short, with garbage, NaN, comments.
scalars = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8)
)
documents = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=12,
)


def spelled(doc: Any, indent: int | None, cut: int, junk: str) -> str:
    text = json.dumps(doc, indent=indent, ensure_ascii=indent == 1)
    return (text[:cut] if cut >= 0 else text) + junk


json_texts = st.builds(
    spelled,
    documents,
    st.sampled_from([None, 1, 2]),
    st.integers(-8, 40),
    st.sampled_from(["", " ", "x", "]", ",", "NaN", "/*c*/", '"\\ud800"', "\x01"]),
) | st.sampled_from(
    ["", "  ", "NaN", "[1,]", '{"a":1,}', "'a'", '"\\u00e9\\ud83d\\ude00\\ud800"', "-0.0e-3",
     "12345678901234567890123e-30", "1.", "01", "[[[[[]]]]]", '{"\\u0027k\\\\":{}}', "tru"]
)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(st.lists(st.none() | json_texts, min_size=1, max_size=6), st.booleans())
def test_json_scanner_interpreted_is_the_kernel(rows: list[Any], leaves: bool) -> None:
    from evalframe.metrics._json_scan import json_leaves

    column = pl.Series(rows, dtype=pl.String)
    (s_status, s_leaves), (c_status, c_leaves) = both(lambda: json_leaves(column, leaves=leaves))
    assert_same_frames(s_status, c_status)
    assert_same_frames(s_leaves, c_leaves)


bleu_texts = st.lists(
    words | st.sampled_from(["5-6", "a.b", "1.5", "x,y", "(", "!", "\x0b", "\x1c", "\u3000"]),
    max_size=40,
).map(lambda w: "".join(x + (" " if i % 3 else "") for i, x in enumerate(w)))


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.none() | bleu_texts, st.none() | bleu_texts), min_size=1, max_size=6),
    st.integers(1, 6),
    st.booleans(),
)
def test_bleu_interpreted_is_the_kernel(
    pairs: list[tuple[Any, Any]], order: int, lowercase: bool
) -> None:
    from evalframe.metrics.similarity import bleu_statistics

    hyp = pl.Series([h for h, _ in pairs], dtype=pl.String)
    ref = pl.Series([r for _, r in pairs], dtype=pl.String)
    small, large = both(lambda: bleu_statistics(hyp, ref, max_order=order, lowercase=lowercase))
    assert_same_frames(small, large)


ids = st.sampled_from(["d1", "d2", "d3", "doc-4", "é", 'a\\"b', "", "x" * 14, "d1"])
entries = ids | st.builds(lambda i, t: {"id": i, "text": t}, ids, st.text(max_size=5))
retrievals = st.builds(
    lambda items, wrap, indent, junk: (
        json.dumps({"retrieved": items, "k": 1} if wrap else items, indent=indent) + junk
    ),
    st.lists(entries | st.integers(), max_size=6),
    st.booleans(),
    st.sampled_from([None, 1]),
    st.sampled_from(["", " ", "]", "x"]),
) | st.sampled_from(["", "null", "{}", "[1", '{"retrieved": "x"}', '["\\ud800"]'])
gain_maps = st.dictionaries(
    st.sampled_from(["d1", "d2", "d3", "doc-4", "é"]),
    st.integers(0, 3) | st.floats(0, 3) | st.sampled_from([1e400, 2.5e-3]),
    max_size=4,
).map(json.dumps) | st.lists(st.sampled_from(["d1", "d2", "d3"]), max_size=3).map(json.dumps)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.none() | retrievals, gain_maps), min_size=1, max_size=6))
def test_retrieval_parsing_and_ranking_interpreted_are_the_kernels(
    rows: list[tuple[Any, str]],
) -> None:
    from evalframe.metrics._ranking import rank_matches
    from evalframe.metrics._retrieval_input import parse_relevance, parse_retrieval

    actual = pl.Series([a for a, _ in rows], dtype=pl.String)
    expected = pl.Series([e for _, e in rows], dtype=pl.String)
    kind = pl.Series(["map" if e.startswith("{") else "list" for _, e in rows])

    def go() -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
        got = parse_retrieval(actual)
        want = parse_relevance(expected, kind)
        ranked = rank_matches(
            got["ids"].fill_null([]), want["ids"].fill_null([]), want["gains"].fill_null([])
        )
        return got, want, ranked

    for small, large in zip(*both(go), strict=True):
        assert_same_frames(small, large)


def test_a_small_run_compiles_nothing(tmp_path: Path) -> None:
    """The bundled examples scored and reported as JSON, in a fresh interpreter: numba is
    never imported (so nothing compiles), and the report is the one from frames."""
    script = f"""
import sys
from pathlib import Path
import evalframe as ef
from evalframe.views._report_json import report_json
run = ef.evaluate(
    "{(EXAMPLES / "support.yaml").as_posix()}",
    outputs="{(EXAMPLES / "support.outputs.json").as_posix()}",
    metrics=["exact-match", "contains", "rouge-l", "bleu", "json-valid", "json-diff",
             "cosine-embedding", "bertscore-like"],
)  # fmt: skip
Path(sys.argv[1]).write_bytes(report_json(run))
for name, outputs in (("agent", "agent.v1"), ("retrieval", "retrieval.bm25")):
    other = ef.evaluate(
        "{EXAMPLES.as_posix()}/" + name + ".yaml",
        outputs="{EXAMPLES.as_posix()}/" + outputs + ".outputs.json",
    )
    assert other.scores.height > 0
    report_json(other)
assert "numba" not in sys.modules, "numba was imported"
"""
    out = tmp_path / "report.json"
    env = {k: v for k, v in os.environ.items() if k != "EVALFRAME_KERNELS"}
    done = subprocess.run(
        [sys.executable, "-c", script, str(out)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "compiling" not in done.stderr
    doc = json.loads(out.read_bytes())
    assert len(doc["samples"]) == 12
    assert doc["metric_ids"] == ["exact-match", "contains", "rouge-l", "bleu", "json-valid",
                                 "json-diff", "cosine-embedding", "bertscore-like"]  # fmt: skip


def test_a_first_compile_says_so_once(tmp_path: Path) -> None:
    """A kernel family compiling (an empty cache) says so once on stderr; a later process,
    finding the cache, says nothing."""
    script = """
import polars as pl
from evalframe.metrics.similarity import bleu_statistics
h, r = pl.Series(["the cat sat on the mat"] * 3), pl.Series(["the cat sat"] * 3)
assert bleu_statistics(h, r).equals(bleu_statistics(h, r))
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env |= {"NUMBA_CACHE_DIR": str(tmp_path / "cache"), "EVALFRAME_KERNELS": "compiled"}
    notice = "evalframe: compiling BLEU, once per environment..."
    for count in (1, 0):
        done = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, done.stderr
        assert done.stderr.count(notice) == count, done.stderr


def test_the_notice_is_quiet_with_quiet(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from evalframe.core import _njit, _progress

    monkeypatch.setattr(_njit.Kernel, "cached", lambda self: False)
    monkeypatch.setattr(_njit, "_ANNOUNCED", set())
    kernel = _njit.njit(lambda x: x)
    _progress.set_quiet(True)
    try:
        _njit.compiling("a family", kernel)
    finally:
        _progress.set_quiet(False)
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(_njit, "_ANNOUNCED", set())
    _njit.compiling("a family", kernel)
    _njit.compiling("a family", kernel)
    assert capsys.readouterr().err == "evalframe: compiling a family, once per environment...\n"


# Vector rows: sizes around multiples of eight (the kernels' lanes), zero vectors, empty rows
# and size mismatches, values over several magnitudes.
vector_rows = st.lists(
    st.tuples(st.integers(0, 21), st.integers(0, 21), st.integers(0, 2**32 - 1), st.booleans()),
    min_size=1,
    max_size=8,
)


def _vectors(size: int, seed: int, zero: bool) -> list[float]:
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(size) * 10.0 ** rng.integers(-3, 4, size)
    return [0.0] * size if zero else values.astype(np.float32).tolist()


@settings(max_examples=150, deadline=None)
@given(vector_rows)
def test_cosine_with_numpy_is_the_kernel(rows: list[tuple[int, int, int, bool]]) -> None:
    from evalframe.metrics.semantic import cosine_rows

    same = [(m, m if seed % 3 else n, seed, zero) for m, n, seed, zero in rows]
    e = pl.Series([_vectors(m, seed, zero) for m, _, seed, zero in same], dtype=pl.List(pl.Float32))
    a = pl.Series(
        [_vectors(n, seed + 1, False) for _, n, seed, _ in same], dtype=pl.List(pl.Float32)
    )
    small, large = both(lambda: cosine_rows(e, a))
    assert_same_frames(small, large)
    with patch("evalframe.metrics.semantic._NUMPY_SLICE", 3):  # rows gathered 3 at a time
        sliced, _ = both(lambda: cosine_rows(e, a))
    assert_same_frames(sliced, large)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), min_size=1, max_size=6),
       st.sampled_from([1, 7, 8, 13, 24]), st.integers(0, 2**32 - 1))  # fmt: skip
def test_token_matching_with_numpy_is_the_kernel(
    rows: list[tuple[int, int]], d: int, seed: int
) -> None:
    from evalframe.metrics.semantic import greedy_match

    rng = np.random.default_rng(seed)
    e_off = np.concatenate([[0], np.cumsum([m for m, _ in rows])]).astype(np.int64)
    a_off = np.concatenate([[0], np.cumsum([n for _, n in rows])]).astype(np.int64)
    e = rng.standard_normal((int(e_off[-1]), d)).astype(np.float32)
    a = rng.standard_normal((int(a_off[-1]), d)).astype(np.float32)
    if len(e) > 1:
        e[1] = 0.0  # a zero vector matches nothing
    if len(a) and len(e):
        a[0] = e[0]  # an identical token scores exactly 1
    small, large = both(lambda: greedy_match(e, e_off, a, a_off))
    # the compiled kernel may reassociate its float32 sums: equal to float32 rounding
    for got, want in zip(small, large, strict=True):
        assert np.array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)
    if len(a) and len(e) and rows[0] == (1, 1):
        assert small[0][0] == large[0][0] == 1.0  # an identical token scores exactly 1


tool = st.sampled_from(["search", "get", "Get", "book", "é"])
names = st.lists(st.none() | st.lists(tool, max_size=6), min_size=1, max_size=6)


@settings(max_examples=100, deadline=None)
@given(names, names)
def test_tool_name_passes_interpreted_are_the_kernels(
    expected: list[Any], called: list[Any]
) -> None:
    from evalframe.metrics.trajectory import count_present, is_subsequence, multiset_common

    rows = min(len(expected), len(called))
    e = pl.Series(expected[:rows], dtype=pl.List(pl.String))
    c = pl.Series(called[:rows], dtype=pl.List(pl.String))

    def go() -> list[pl.DataFrame]:
        return [
            count_present(e, c, found=True),
            pl.DataFrame({"subsequence": is_subsequence(e, c)}),
            pl.DataFrame({"common": multiset_common(e, c)}),
        ]

    for small, large in zip(*both(go), strict=True):
        assert_same_frames(small, large)


@settings(max_examples=150, deadline=None)
@given(st.lists(maybe_texts, max_size=40), st.integers(0, 3))
def test_string_views_by_numpy_are_the_kernel(rows: list[str | None], lead: int) -> None:
    from evalframe.core._arrow_text import string_array

    encoded = [b"" if row is None else row.encode("utf-8", "surrogatepass") for row in rows]
    body = np.frombuffer(b"\xff" * lead + b"".join(encoded) + b"\xfe", np.uint8)
    offsets = np.cumsum([lead, *map(len, encoded)]).astype(np.int64)
    small, large = both(lambda: pl.Series(string_array(offsets, body)))
    assert_same_frames(small.to_frame(), large.to_frame())
    assert small.to_list() == [b.decode("utf-8", "surrogatepass") for b in encoded]


@settings(max_examples=100, deadline=None)
@given(st.lists(maybe_texts, max_size=40), st.integers(0, 3))
def test_string_views_into_a_kernel_s_output_are_its_copies(
    rows: list[str | None], lead: int
) -> None:
    from evalframe.core._arrow_text import strings_array

    encoded = [b"" if row is None else row.encode("utf-8", "surrogatepass") for row in rows]
    data = np.frombuffer(b"\xff" * lead + b"".join(encoded) + b"\xfe", np.uint8)
    lo = np.cumsum([lead, *map(len, encoded)])[:-1].astype(np.int64)[::-1].copy()
    length = np.array([-1 if r is None else len(e) for r, e in zip(rows, encoded, strict=True)])
    length = length.astype(np.int64)[::-1].copy()  # out of order, as a kernel's fields lie
    copied = pl.Series(strings_array(lo, length, data))
    small, large = both(lambda: pl.Series(strings_array(lo, length, data, copy=False)))
    pairs = zip(rows, encoded, strict=True)
    want = [None if r is None else e.decode("utf-8", "surrogatepass") for r, e in pairs]
    assert small.to_list() == large.to_list() == copied.to_list() == want[::-1]


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.none() | st.integers(0, 99), st.none() | st.integers(0, 99)),
             min_size=1, max_size=10),
    st.sampled_from([1, 7, 8, 13, 24]), st.integers(0, 2**32 - 1),
)  # fmt: skip
def test_cosine_through_a_vector_table_is_the_gathered_cosine(
    rows: list[tuple[int | None, int | None]], d: int, seed: int
) -> None:
    """The runner's form (each row's index into one table of distinct vectors) gives the
    cosine of the gathered vector columns bit for bit, on both paths."""
    from evalframe.metrics.semantic import _cosine_batch, cosine_rows, vector_table

    rng = np.random.default_rng(seed)
    distinct = 2 * len(rows)  # the most a table of len(rows) rows holds
    matrix = rng.standard_normal((distinct, d)) * 10.0 ** rng.integers(-3, 4, (distinct, d))
    matrix = matrix.astype(np.float32)
    matrix[rng.integers(0, distinct)] = 0.0  # a zero vector
    e_idx = [None if i is None else i % distinct for i, _ in rows]
    a_idx = [None if j is None else j % distinct for _, j in rows]

    def gathered(idx: list[int | None]) -> pl.Series:
        return pl.Series([None if i is None else matrix[i].tolist() for i in idx],
                         dtype=pl.List(pl.Float32))  # fmt: skip

    indexed = pl.DataFrame(
        {
            "e": pl.Series(e_idx, dtype=pl.Int32),
            "a": pl.Series(a_idx, dtype=pl.Int32),
            "t": vector_table(matrix, len(rows)),
        }
    )
    small, large = both(lambda: _cosine_batch(indexed))
    assert_same_frames(small, large)
    expected = cosine_rows(gathered(e_idx), gathered(a_idx))
    assert_same_frames(large, expected)
