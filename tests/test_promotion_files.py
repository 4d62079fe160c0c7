"""Promotion files (``run --promote-failures``, ``adversarial run --promote-failures``,
``promote-online``): they never overwrite a file evalframe did not write for promotions, keep
what they hold, are written atomically under a lock, and always load."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest
import yaml
from click.testing import CliRunner, Result
from conftest import STUB_API_KEY
from openai_stub import StubOpenAI

import evalframe as ef
from evalframe.cli import cli
from evalframe.core._yaml import MAX_DEPTH

GOLDEN = """\
# The support team's golden set: keep these comments.
name: golden
samples:
  - id: a   # the easy one
    input: {question: "Refund window?"}
    expected_output: "30 days"
  - id: b
    input: {question: "Hours?"}
    expected_output: "9-5"
    metadata: {tags: [hours]}
  - id: c
    input: {question: "Phone?"}
    expected_output: "555"
"""


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def outputs(tmp_path: Path, replies: dict[str, str], name: str = "out.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"outputs": replies}), encoding="utf-8")
    return path


@pytest.fixture
def golden(tmp_path: Path) -> Path:
    path = tmp_path / "golden.yaml"
    path.write_text(GOLDEN, encoding="utf-8")
    return path


def run_args(dataset: Path, replies: Path, *extra: str) -> list[str]:
    return ["run", str(dataset), "--outputs", str(replies), "-m", "exact-match", *extra]


FAILING_B = {"a": "30 days", "b": "wrong", "c": "555"}


# --- nothing destroyed -------------------------------------------------------------------------


def test_the_dataset_being_evaluated_is_never_a_promotion_target(
    tmp_path: Path, golden: Path
) -> None:
    replies = outputs(tmp_path, FAILING_B)
    (tmp_path / "link.yaml").symlink_to(golden)
    os.link(golden, tmp_path / "hard.yaml")
    for target in (golden, tmp_path / "link.yaml", tmp_path / "hard.yaml", replies):
        for force in ((), ("--force",)):
            result = invoke(*run_args(golden, replies, "--promote-failures", str(target), *force))
            assert result.exit_code == 2, result.output
            assert f"{target}" in result.stderr
            assert "Traceback" not in result.output
            assert golden.read_text(encoding="utf-8") == GOLDEN
    assert (tmp_path / "link.yaml").is_symlink()
    assert ef.read_dataset(golden).height == 3
    # A dataset read through a symbolic link is the same file too.
    result = invoke(*run_args(tmp_path / "link.yaml", replies, "--promote-failures", str(golden)))
    assert result.exit_code == 2
    assert golden.read_text(encoding="utf-8") == GOLDEN


def test_an_existing_file_evalframe_did_not_write_is_refused_before_any_work(
    tmp_path: Path, golden: Path
) -> None:
    store = tmp_path / "runs.duckdb"
    notes = tmp_path / "notes.txt"
    other = tmp_path / "other.yaml"
    notes.write_text("my notes\n", encoding="utf-8")
    other.write_text(GOLDEN.replace("golden", "other"), encoding="utf-8")
    for replies in (FAILING_B, {"a": "30 days", "b": "9-5", "c": "555"}):  # failing or not
        path = outputs(tmp_path, replies)
        for target in (notes, other):
            result = invoke(
                *run_args(golden, path, "--store", str(store), "--promote-failures", str(target))
            )
            assert result.exit_code == 2, result.output
            assert "is not a promotion file evalframe wrote" in result.stderr
            assert "--force" in result.stderr
            assert len(result.stderr.strip().splitlines()) == 1  # one paragraph
    assert notes.read_text(encoding="utf-8") == "my notes\n"
    assert other.read_text(encoding="utf-8") == GOLDEN.replace("golden", "other")
    assert not store.exists()  # refused before scoring: nothing was run or saved
    # The store itself, and a file that is not a dataset YAML, are refused too.
    path = outputs(tmp_path, FAILING_B)
    invoke(*run_args(golden, path, "--store", str(store)))
    size = store.stat().st_size
    result = invoke(
        *run_args(golden, path, "--store", str(store), "--promote-failures", str(store))
    )
    assert result.exit_code == 2
    assert store.stat().st_size == size
    # --force replaces a YAML file evalframe did not write; a .txt never becomes a dataset.
    forced = invoke(*run_args(golden, path, "--promote-failures", str(other), "--force"))
    assert forced.exit_code == 0, forced.output
    assert ef.read_dataset(other)["sample_id"].to_list() == ["b"]
    refused = invoke(*run_args(golden, path, "--promote-failures", str(notes), "--force"))
    assert refused.exit_code == 2
    assert "Name it *.yaml" in refused.stderr
    assert notes.read_text(encoding="utf-8") == "my notes\n"


def test_a_promotion_file_keeps_its_samples_across_runs(tmp_path: Path, golden: Path) -> None:
    promoted = tmp_path / "failures.yaml"
    first = invoke(*run_args(golden, outputs(tmp_path, FAILING_B), "--promote-failures",
                             str(promoted)))  # fmt: skip
    assert first.exit_code == 0
    assert "promoted 1 failing row(s)" in first.stderr
    text = promoted.read_text(encoding="utf-8")
    assert yaml.safe_load(text)["evalframe_promotion"] == "failures"
    # A later run failing b and c adds c after b; b is already there and stays as written.
    both = outputs(tmp_path, {"a": "30 days", "b": "no", "c": "no"}, "both.json")
    second = invoke(*run_args(golden, both, "--promote-failures", str(promoted)))
    assert second.exit_code == 0
    assert "after the 1 sample(s) it held" in second.stderr
    assert "b (its id is already in the file)" in second.stderr
    assert promoted.read_text(encoding="utf-8").startswith(text)
    assert ef.read_dataset(promoted)["sample_id"].to_list() == ["b", "c"]
    # Nothing failing: the file is kept as it is; --force replaces (here: deletes) it.
    fixed = outputs(tmp_path, {"a": "30 days", "b": "9-5", "c": "555"}, "fixed.json")
    kept = invoke(*run_args(golden, fixed, "--promote-failures", str(promoted)))
    assert kept.exit_code == 0
    assert ef.read_dataset(promoted).height == 2
    replaced = invoke(*run_args(golden, both, "--promote-failures", str(promoted), "--force"))
    assert ef.read_dataset(promoted)["sample_id"].to_list() == ["b", "c"]
    assert replaced.exit_code == 0
    invoke(*run_args(golden, fixed, "--promote-failures", str(promoted), "--force"))
    assert not promoted.exists()
    assert not [p.name for p in tmp_path.iterdir() if ".partial" in p.name]


def test_racing_promotions_into_one_file_all_land(tmp_path: Path, golden: Path) -> None:
    # Four processes promote a different failing row each into one new file, at once.
    promoted = tmp_path / "shared.yaml"
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    procs = []
    for i, sample in enumerate(("a", "b", "c", "a")):
        replies = {"a": "30 days", "b": "9-5", "c": "555", sample: f"wrong {i}"}
        path = outputs(tmp_path, replies, f"out{i}.json")
        args = run_args(golden, path, "--promote-failures", str(promoted))
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "evalframe", *args],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    errors = [p.communicate()[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0], errors
    assert sorted(ef.read_dataset(promoted)["sample_id"].to_list()) == ["a", "b", "c"]


# --- what is written loads ---------------------------------------------------------------------


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


def test_promoted_rows_round_trip_and_those_that_would_not_load_are_named(
    tmp_path: Path,
) -> None:
    # A JSONL dataset may nest deeper than a YAML one (its samples sit two levels higher),
    # and holds strings YAML 1.1 writers leave unquoted although YAML 1.2 reads them as
    # numbers, and line breaks a single-quoted YAML string folds.
    tricky = ["0o17", "1e3", "a\x85b", "x\u2028y", "tab\there", "yes", "~", "- item", "#"]
    records = [
        {"id": f"s{i}", "input": {"q": text}, "expected_output": text,
         "metadata": {"tags": [text]}}
        for i, text in enumerate(tricky)
    ]  # fmt: skip
    records.append({"id": "deep", "input": {"q": nested(MAX_DEPTH - 3)}, "expected_output": "x"})
    records.append({"id": "fits", "input": {"q": nested(MAX_DEPTH - 5)}, "expected_output": "x"})
    dataset = tmp_path / "set.jsonl"
    dataset.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    assert ef.read_dataset(dataset).height == len(records)  # it loads as JSONL
    replies = outputs(tmp_path, {r["id"]: "no" for r in records})
    promoted = tmp_path / "failures.yaml"
    result = invoke(*run_args(dataset, replies, "--promote-failures", str(promoted)))
    assert result.exit_code == 0, result.output
    assert f"promoted {len(records) - 1} failing row(s)" in result.stderr
    assert "skipped 1: deep (would not load: it nests 99 levels" in result.stderr
    back = ef.read_dataset(promoted)
    expected = [r for r in records if r["id"] != "deep"]
    assert back["sample_id"].to_list() == [r["id"] for r in expected]
    assert [json.loads(i) for i in back["input"]] == [r["input"] for r in expected]
    assert back["expected_output"].to_list()[: len(tricky)] == tricky
    assert back["expected_type"].to_list()[: len(tricky)] == ["string"] * len(tricky)
    assert back["tags"].to_list()[: len(tricky)] == [[t.strip()] for t in tricky]


# --- promote-online ----------------------------------------------------------------------------


@pytest.fixture
def captured(tmp_path: Path, openai_stub: StubOpenAI, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A store with scored, retained captures: two failing ones that load as samples, one
    nested 150 levels deep, and a passing one."""
    monkeypatch.delenv("EVALFRAME_ONLINE_STORE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))

    def verdict(prompt: str) -> str:
        actual = prompt.rsplit("ACTUAL: ", 1)[1].split("\n", 1)[0]
        return json.dumps({"score": 0.1 if "wrong" in actual else 0.9, "reason": "ok"})

    openai_stub.verdict = verdict
    monkeypatch.setenv("EVALFRAME_JUDGE_BASE_URL", openai_stub.url)
    monkeypatch.setenv("EVALFRAME_JUDGE_MODEL", "stub-judge")
    monkeypatch.setenv("EVALFRAME_JUDGE_API_KEY", STUB_API_KEY)
    db = tmp_path / "online.duckdb"
    ef.online.configure(store=db, sampling_rate=1.0, retention=True, redactor=str.strip)
    ef.online.capture("faq", "req-1", {"question": "Refund?"}, "wrong: 10 days", expected="0o17")
    ef.online.capture(
        "faq", "req-3", {"question": "Hours on Sunday?"}, "wrong: never", expected="9-5"
    )
    ef.online.capture("faq", "req-4", {"question": "Phone?"}, "555", expected="555")
    assert ef.online.flush()
    ef.online.close()
    # A capture nested 150 levels deep, as a store written before capture refused them
    # holds it: it scores, but no dataset file can hold it as a sample.
    con = duckdb.connect(str(db))
    try:
        con.execute(
            "INSERT INTO online_captures SELECT 'deep0000', dataset, 'req-2', 'deep-hash', "
            "captured_at, ?, expected_output, 'wrong', retained, redactor, false "
            "FROM online_captures LIMIT 1",
            [json.dumps({"question": nested(150)})],
        )
    finally:
        con.close()
    assert invoke("online", "score", "--store", str(db)).exit_code == 0
    return db


def test_promote_online_merges_into_a_golden_set_keeping_every_byte(
    tmp_path: Path, golden: Path, captured: Path
) -> None:
    result = invoke("promote-online", "faq", "--store", str(captured), "--merge", str(golden))
    assert result.exit_code == 0, result.output
    assert "promoted 2 captures" in result.stderr
    assert "1 unloadable" in result.stderr
    assert "(capture req-2): it would not load: it nests 152 levels" in result.stderr
    text = golden.read_text(encoding="utf-8")
    assert text.startswith(GOLDEN)  # comments, flow maps and quoting as the user wrote them
    merged = ef.read_dataset(golden)
    assert merged.height == 5
    assert merged.name == "golden"
    assert sorted(merged["expected_output"].to_list()[3:]) == ["0o17", "9-5"]  # 0o17: not 15
    # Again: everything is in the file already; nothing is written.
    again = invoke("promote-online", "faq", "--store", str(captured), "--merge", str(golden))
    assert again.exit_code == 0
    assert "nothing to add" in again.stderr
    assert golden.read_text(encoding="utf-8") == text
    # A JSONL dataset gains lines.
    lines = tmp_path / "golden.jsonl"
    lines.write_text('{"id": "a", "input": {"q": "x"}, "expected_output": "y"}\n', "utf-8")
    jsonl = invoke("promote-online", "faq", "--store", str(captured), "--merge", str(lines))
    assert jsonl.exit_code == 0, jsonl.output
    assert ef.read_dataset(lines).height == 3


def test_promote_online_never_rewrites_what_it_cannot_append_to(
    tmp_path: Path, captured: Path
) -> None:
    flow = tmp_path / "flow.yaml"
    original = 'name: flow\nsamples: [{id: a, input: {q: x}, expected_output: "y"}]  # mine\n'
    flow.write_text(original, encoding="utf-8")
    refused = invoke("promote-online", "faq", "--store", str(captured), "--merge", str(flow))
    assert refused.exit_code == 2, refused.output
    assert "without rewriting it" in refused.stderr
    assert flow.read_text(encoding="utf-8") == original
    forced = invoke(
        "promote-online", "faq", "--store", str(captured), "--merge", str(flow), "--force"
    )
    assert forced.exit_code == 0, forced.output
    assert ef.read_dataset(flow)["sample_id"].to_list()[0] == "a"
    assert ef.read_dataset(flow).height == 3
    # --out: a new file, or a promotion file; never a foreign file or the store.
    notes = tmp_path / "notes.yaml"
    notes.write_text("name: notes\n", encoding="utf-8")
    for target in (notes, captured):
        result = invoke("promote-online", "faq", "--store", str(captured), "--out", str(target))
        assert result.exit_code == 2, result.output
    assert notes.read_text(encoding="utf-8") == "name: notes\n"
    out = tmp_path / "promoted.yaml"
    assert (
        invoke("promote-online", "faq", "--store", str(captured), "--out", str(out)).exit_code == 0
    )
    assert ef.read_dataset(out).height == 2
    assert yaml.safe_load(out.read_text(encoding="utf-8"))["evalframe_promotion"] == "online"
    assert (
        invoke("promote-online", "faq", "--store", str(captured), "--out", str(out)).exit_code == 0
    )
    assert ef.read_dataset(out).height == 2  # kept, nothing repeated


def test_out_never_overwrites_a_file_the_command_reads(tmp_path: Path, golden: Path) -> None:
    replies = outputs(tmp_path, FAILING_B)
    for target in (golden, replies):
        result = invoke(*run_args(golden, replies, "--out", str(target)))
        assert result.exit_code == 2, result.output
        assert "writing it would destroy that file" in result.stderr
    assert golden.read_text(encoding="utf-8") == GOLDEN
    report = tmp_path / "r.json"
    assert (
        invoke(*run_args(golden, replies, "--format", "json", "--out", str(report))).exit_code == 0
    )
    before = report.read_bytes()
    result = invoke("report", str(report), "--format", "markdown", "--out", str(report))
    assert result.exit_code == 2
    assert report.read_bytes() == before
