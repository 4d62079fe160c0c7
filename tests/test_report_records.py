"""The compiled record writer of the report's aggregates against ``json.dumps``, and how
the report's pieces reach a file."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

from evalframe.views._records import Template, records


def _rows(template: Template, n: int) -> list[str]:
    buf, off = records(template, n)
    data = bytes(buf)
    return [data[off[i] : off[i + 1]].decode("utf-8") for i in range(n)]


def _rounded_values(seed: int, n: int) -> list[float | None]:
    rng = random.Random(seed)
    values: list[float | None] = []
    for _ in range(n):
        scale = rng.choice([1.0, 1e-3, 1e-4, 1e-5, 1e-6, 10.0, 12345.0, 1e8])
        values.append(round(rng.uniform(-1.0, 1.0) * scale, 6))
    values += [0.0, -0.0, 1.0, -1.0, 0.5, 5e-05, 1.2e-05, 1e-06, -9.9e-05, 0.0001, None]
    values += [999_999_999.999999, 1e9, 2.5e16, 0.1234567, float("nan"), float("inf")]
    return values


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_numbers_are_spelled_as_json_dumps_spells_them(seed: int) -> None:
    values = _rounded_values(seed, 3000)
    got = _rows(Template().number("", pl.Series(values, dtype=pl.Float64)).end(""), len(values))
    want = ["null" if v is None else json.dumps(v) for v in values]
    assert got == want


def test_every_kind_of_field_and_null() -> None:
    ids = ["a", 'say "hi"', "é\n", None]
    counts = [0, -12, 1234567890123, None]
    flags = [True, False, None, True]
    rates = [0.25, None, 1.0, 3e-05]
    template = (
        Template()
        .text(
            '{\n  "id": ',
            pl.Series([None if i is None else json.dumps(i, ensure_ascii=False) for i in ids]),
        )
        .integer(',\n  "n": ', pl.Series(counts))
        .boolean(',\n  "ok": ', pl.Series(flags))
        .number(',\n  "rate": ', pl.Series(rates))
        .end("\n}")
    )
    got = _rows(template, 4)
    for row, i, c, f, r in zip(got, ids, counts, flags, rates, strict=True):
        doc = {"id": i, "n": c, "ok": f, "rate": r}
        assert row == json.dumps(doc, indent=2, ensure_ascii=False)
        assert json.loads(row) == doc


def test_no_rows_and_no_fields() -> None:
    assert _rows(Template().number("x", pl.Series([], dtype=pl.Float64)).end("y"), 0) == []
    assert _rows(Template().end("{}"), 2) == ["{}", "{}"]
    assert math.isclose(float(_rows(Template().number("", pl.Series([0.1])).end(""), 1)[0]), 0.1)


def test_strings_are_escaped_as_json_dumps_escapes_them() -> None:
    rng = random.Random(5)
    alphabet = [chr(c) for c in range(0x20)] + list('"\\/ aZ~\x7f') + ["é", "\u2028", "😀"]
    values = ["".join(rng.choice(alphabet) for _ in range(rng.randrange(12))) for _ in range(500)]
    values += ["", None]
    got = _rows(Template().string("", pl.Series(values, dtype=pl.String)).end(""), len(values))
    assert got == [json.dumps(v, ensure_ascii=False) for v in values]


def test_a_report_that_fails_midway_leaves_no_file(tmp_path: Path) -> None:
    from evalframe.cli._options import emit

    out = tmp_path / "report.json"
    out.write_text("the previous report")

    def pieces() -> Iterator[memoryview]:
        yield memoryview(b'{"a": ')
        raise RuntimeError("laying out the samples failed")

    with pytest.raises(RuntimeError, match="samples failed"):
        emit(pieces(), out)
    assert out.read_text() == "the previous report"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]
    emit(iter([memoryview(b'{"a": '), memoryview(b"1}")]), out)
    assert json.loads(out.read_text()) == {"a": 1}
