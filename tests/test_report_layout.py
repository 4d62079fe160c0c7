"""The report's compiled layout pass (``views/_layout.py``) against ``json.dumps`` as the oracle."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import orjson
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st
from test_report_json import trees

from evalframe.views._layout import Entries, section

# How a document may be stored: compact, Python-spaced, pretty, or by orjson.
spellings = st.sampled_from(
    [
        lambda d: json.dumps(d, ensure_ascii=False, separators=(",", ":")),
        lambda d: json.dumps(d, ensure_ascii=False),
        lambda d: json.dumps(d, ensure_ascii=False, indent=3),
        json.dumps,  # \\u escapes of printable characters: flagged, then exact
        lambda d: orjson.dumps(d).decode(),
    ]
)


def laid_out(doc: Any, indent: int) -> str:
    """The oracle: the document pretty-printed by the standard library at ``indent``."""
    return json.dumps(doc, indent=2, ensure_ascii=False).replace("\n", "\n" + " " * indent)


def one_row(documents: list[str | None], indent: int) -> str:
    """``section`` of one row whose entries are ``documents``, as text."""
    n = len(documents)
    entries = Entries(
        bounds=np.array([0, n], dtype=np.int64),
        prefixes=pl.Series([f"<{i}>" for i in range(n)], dtype=pl.String),
        documents=pl.Series(documents, dtype=pl.String),
        indent=indent,
        suffix=";",
    )
    heads = pl.Series(["H"], dtype=pl.String)
    return bytes(section(heads, entries, (",", "{}", "[", "]", "!"))).decode("utf-8")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(trees, spellings), min_size=1, max_size=4), st.integers(0, 12))
def test_documents_are_laid_out_as_json_dumps_would(
    docs: list[tuple[Any, Any]], indent: int
) -> None:
    stored = [spell(doc) for doc, spell in docs]
    expected = "H[" + ",".join(f"<{i}>{laid_out(d, indent)};" for i, (d, _) in enumerate(docs))
    assert one_row(list(stored), indent) == expected + "]!"


def test_spellings_python_would_change_are_respelled() -> None:
    stored = '{"a": 1e-05, "b": [1.50, -0, 0.00001, 0.0001, 1E16, 12345678901234567890, 2.5e-7]}'
    assert one_row([stored], 2) == "H[<0>" + laid_out(json.loads(stored), 2) + ";]!"


def test_a_null_document_is_null_and_deep_documents_are_exact() -> None:
    deep: Any = [1]
    for _ in range(80):
        deep = {"k": deep}
    out = one_row([None, json.dumps(deep, separators=(",", ":"))], 4)
    assert out == "H[<0>null;,<1>" + laid_out(deep, 4) + ";]!"


def test_rows_without_entries_and_several_rows() -> None:
    entries = Entries(
        bounds=np.array([0, 0, 2, 2], dtype=np.int64),
        prefixes=pl.Series(["a=", "b="], dtype=pl.String),
    )
    heads = pl.Series(["r0 ", "r1 ", "r2 "], dtype=pl.String)
    out = bytes(section(heads, entries, (",", "{}", "{", "}", "."))).decode()
    assert out == "r0 {}.,r1 {a=,b=}.,r2 {}."
