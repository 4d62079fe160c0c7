"""Report JSON: byte-identical to ``json.dumps(indent=2, ensure_ascii=False)``, and fast."""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evalframe as ef
from evalframe.views._pending import Pending
from evalframe.views._report import Report

# Every JSON value a report can hold: finite floats of any magnitude, any text.
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
trees = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=30,
)


def reference(doc: Any) -> str:
    """What ``Report.to_json`` wrote before it used orjson: the oracle."""
    return json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.text(), trees, max_size=6))
def test_to_json_is_byte_identical_to_json_dumps(doc: dict[str, Any]) -> None:
    assert Report(doc).to_json() == reference(doc)


def test_small_and_large_floats_keep_pythons_spelling() -> None:
    values = [3e-05, -2.5e-07, 1e-4, 9.99e-05, 5e-324, 1e16, 1.2345678901234568e16, 1e300, -0.0]
    doc = {
        "v": values,
        "x": {"y": 1e-05},
        "text": "looks like 0.00003,\nor e-7 and 1e-05",
        "nested": [[1e-8], {"z": 4e-06}],
    }
    text = Report(doc).to_json()
    assert text == reference(doc)
    assert '"y": 1e-05' in text
    assert "0.00003" not in text.replace("0.00003,\\n", "")


def test_control_characters_and_unicode_are_escaped_like_json() -> None:
    doc = {"s": "".join(chr(c) for c in range(0x20)) + '\x7f\u2028\u2029/é😀"\\', "k\n": 1}
    assert Report(doc).to_json() == reference(doc)


def test_other_indents_still_work() -> None:
    doc = {"a": [1, 2.5, "x"], "b": {}}
    assert Report(doc).to_json(indent=None) == json.dumps(doc, ensure_ascii=False) + "\n"
    assert Report(doc).to_json(indent=4) == json.dumps(doc, indent=4, ensure_ascii=False) + "\n"


# --- a run's report JSON written from its frames (evalframe.views._report_json) ---------------


@pytest.fixture
def frames(monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer from frames (compiled passes), which a small run would otherwise skip."""
    monkeypatch.setenv("EVALFRAME_KERNELS", "compiled")


def canonical(data: bytes) -> bytes:
    """Parse and re-write with the standard library: the spelling the report promises."""
    doc = json.loads(data)
    return (json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n").encode()


def odd_run() -> ef.Run:
    """Tiny and odd floats, escapes and Unicode in every text field, failures, tags."""
    import polars as pl

    @ef.metrics.metric("tiny", family="custom")
    def tiny() -> ef.metrics.Scored:
        n = pl.col("actual_output").str.len_chars().cast(pl.Float64)
        return ef.metrics.Scored(
            score=(n * 1e-7).clip(0.0, 1.0),
            details=pl.struct(n.alias("chars"), (n * 3e-9).alias("scaled")),
        )

    ds = ef.Dataset.from_records(
        [
            {"id": 'q"1\\', "input": {"q": "x"}, "expected_output": "é😀",
             "metadata": {"tags": ["a\nb", 'x","y', "\u2028"]}},
            {"id": "q2\x01", "input": {"q": "y"}, "expected_output": "same"},
            {"id": "q3", "input": {"q": "z"}, "expected_output": ["not", "a", "string"],
             "metadata": {"tags": []}},
        ],
        name="odd \u00e9",
    )  # fmt: skip
    return ef.evaluate(
        ds,
        outputs={'q"1\\': "é😀 tab\there", "q2\x01": "same", "q3": "x" * 7},
        metrics=["exact-match", "tiny", "rouge-l"],
        repetitions=2,
        run_id="odd",
    )


def test_report_json_from_frames_is_the_report_byte_for_byte(frames: None) -> None:
    from snapshot import SNAPSHOTS
    from test_report import fixed_run

    from evalframe.views._report_json import report_json

    run = fixed_run()
    data = report_json(run)
    assert data == run.report().to_json_bytes()
    assert data == (SNAPSHOTS / "report.json").read_bytes()


def test_report_json_from_frames_spells_odd_values_like_json(frames: None) -> None:
    from evalframe.views._report_json import report_json

    run = odd_run()
    data = report_json(run)
    assert data == canonical(data)
    assert data == run.report().to_json_bytes()
    doc = json.loads(data)
    assert doc["samples"][0]["tags"] == ["a\nb", 'x","y', "\u2028"]
    assert any("e-0" in json.dumps(s["scores"]) for s in doc["samples"])  # 1e-07 and kin


def test_report_json_follows_the_scores_order_whatever_it_is(frames: None) -> None:
    from evalframe.views._report_json import report_json

    run = odd_run()
    shuffled = dataclasses.replace(
        run, scores=run.scores.sample(fraction=1.0, shuffle=True, seed=3)
    )
    data = report_json(shuffled)
    assert data == shuffled.report().to_json_bytes()
    assert data == canonical(data)


@pytest.mark.parametrize("slice_rows", [1, 2, 5])
def test_report_json_streamed_in_slices_is_the_same_bytes(
    frames: None, monkeypatch: pytest.MonkeyPatch, slice_rows: int
) -> None:
    """The per-row sections laid out a few rows at a time, as a large report streams to its
    file: the pieces join to the bytes of the report written whole."""
    from test_report import fixed_run

    from evalframe.views import _report_json
    from evalframe.views._report_json import report_json_parts

    monkeypatch.setattr(_report_json, "_SLICE_ROWS", slice_rows)
    for run in (odd_run(), fixed_run()):
        pieces = [bytes(p) for p in report_json_parts(run)]
        assert len(pieces) > 6  # streamed: several slices per section
        assert b"".join(pieces) == run.report().to_json_bytes()


def test_run_json_output_is_canonical_json(tmp_path: Path, frames: None) -> None:
    from click.testing import CliRunner

    from evalframe.cli import cli

    example = Path(ef.__file__).parent / "examples"
    out = tmp_path / "r.json"
    result = CliRunner().invoke(
        cli,
        ["run", str(example / "support.yaml"), "--outputs", str(example / "support.outputs.json"),
         "--format", "json", "--out", str(out), "--repetitions", "2"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = out.read_bytes()
    assert data == canonical(data)
    doc = json.loads(data)
    assert len(doc["samples"]) == doc["total_executions"] == 24
    assert len(doc["sample_aggregates"]) == doc["total_samples"] == 12


def test_report_json_from_frames_when_every_row_errored_is_the_report(
    tmp_path: Path, frames: None
) -> None:
    """No metric scored any row: the per-row statistics have no metric entries at all."""
    from evalframe.views._report_json import report_json

    ds = ef.Dataset.from_records(
        [{"id": f"s{i}", "input": {"q": "x"}, "expected_output": "4"} for i in range(3)],
        name="all-errors",
    )
    run = ef.evaluate(ds, outputs={"s0": "4", "s1": "4", "s2": "4"}, metrics=["regex"])
    assert run.failures.height == 3
    assert report_json(run) == run.report().to_json().encode()


# --- run.report(): its per-row sections built when first read -----------------------------


def _eager(run: ef.Run) -> dict[str, Any]:
    """The report with every section built, as a plain dict (the oracle)."""
    report = run.report()
    report.settle()
    return json.loads(json.dumps(dict(report.items())))


def test_a_reports_sections_are_built_when_first_read() -> None:
    run = odd_run()
    want = _eager(run)
    report = run.report()
    assert report.pending() == ["sample_aggregates", "samples"]
    assert report["samples"] == want["samples"]
    assert report.pending() == ["sample_aggregates"]
    assert report.get("sample_aggregates") == want["sample_aggregates"]
    assert report.pending() == []
    for read in (
        dict,
        lambda r: {**r},
        lambda r: dict(r.items()),
        lambda r: dict(zip(r.keys(), r.values(), strict=True)),
        lambda r: r.copy(),
        copy.deepcopy,
        lambda r: pickle.loads(pickle.dumps(r)),
        lambda r: json.loads(json.dumps(r)),
        lambda r: r | {},
    ):
        got = read(run.report())
        assert got == want
        assert not isinstance(got.get("samples"), Pending)
    assert run.report() == want
    assert want == run.report()
    assert run.report().pop("samples") == want["samples"]


@pytest.mark.parametrize("mode", ["compiled", "interpreted"])
def test_to_json_writes_pending_sections_from_the_frames_and_edits_as_edited(
    monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """``interpreted``: a small run's report written from its objects; ``compiled``: the
    pending sections laid out from the frames as the CLI does: the same bytes either way."""
    from test_report import fixed_run

    monkeypatch.setenv("EVALFRAME_KERNELS", mode)
    for run in (odd_run(), fixed_run()):
        want = (json.dumps(_eager(run), indent=2, ensure_ascii=False) + "\n").encode()
        report = run.report()
        assert report.to_json_bytes() == want
        assert report.to_json() == want.decode()
        assert report.pending() == ["sample_aggregates", "samples"]  # still not built
        report["run_name"] = "renamed"
        report["samples"] = report["samples"][:1]
        doc = json.loads(report.to_json())
        assert doc["run_name"] == "renamed"
        assert len(doc["samples"]) == 1
        assert doc["sample_aggregates"] == _eager(run)["sample_aggregates"]


# --- run.report().to_json(): the text written in place against the streamed bytes -----------


@ef.metrics.metric("gappy", family="custom")
def _gappy() -> ef.metrics.Scored:
    """Scores of every kind a report meets: NaN, null, tiny, ordinary, and details with text."""
    import polars as pl

    n = pl.col("actual_output").str.len_chars()
    score = (
        pl.when(n % 4 == 0)
        .then(float("nan"))
        .when(n % 4 == 1)
        .then(None)
        .otherwise(n.cast(pl.Float64) * 1e-6)
    )
    return ef.metrics.Scored(score=score, details=pl.struct(pl.col("actual_output").alias("seen")))


def _hostile_text(ascii: bool) -> st.SearchStrategy[str]:
    """Text with quotes, backslashes and control characters; beyond ASCII unless ``ascii``."""
    alphabet = st.characters(max_codepoint=127 if ascii else 0x10FFFF, exclude_categories=["Cs"])
    return st.text(alphabet, max_size=8) | st.sampled_from(['"', "\\", "\x00\x1f\x7f", "</"])


@st.composite
def _hostile_runs(draw: st.DrawFn, ascii: bool) -> ef.Run:
    text = _hostile_text(ascii)
    records, outputs = [], {}
    for i in range(draw(st.integers(1, 4))):
        sid = f"{i}{draw(text)}"
        metadata: dict[str, Any] = {"tags": draw(st.lists(text, max_size=3))}
        if draw(st.booleans()):
            metadata["adversarial"] = {"category": draw(text), "severity": "critical"}
        records.append({
            "id": sid, "input": {"q": draw(text)}, "metadata": metadata,
            # a list where a string is expected: exact-match errors on the row
            "expected_output": draw(text | st.just(["not", "a string"])),
        })  # fmt: skip
        outputs[sid] = draw(text)
    return ef.evaluate(
        ef.Dataset.from_records(records, name=f"d{draw(text)}"),
        outputs=outputs,
        metrics=["exact-match", "gappy", "rouge-l"],
        repetitions=draw(st.integers(1, 2)),
    )


@pytest.mark.parametrize("ascii", [True, False])
def test_to_json_text_written_in_place_is_the_streamed_bytes(ascii: bool) -> None:
    """A large run's ``to_json()`` sizes every section and writes it straight into the
    string (ASCII) or one buffer (else): the text of the streamed pieces and of the
    report's objects, whatever the strings, scores, errors, tags and adversarial blocks."""
    from evalframe.views._report_json import report_json_parts

    @settings(max_examples=12, deadline=None)
    @given(_hostile_runs(ascii))
    def check(run: ef.Run) -> None:
        text = run.report().to_json()
        assert text.isascii() or not ascii
        assert text == b"".join(report_json_parts(run)).decode("utf-8")
        settled = run.report()
        settled.settle()
        assert text == reference(dict(settled.items()))

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EVALFRAME_KERNELS", "compiled")  # the layout passes, not the objects
        check()
