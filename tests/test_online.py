"""Production capture end to end: capture from threads, score later with a judge over
loopback HTTP, drift status and trend, and promotion into a dataset."""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
import yaml
from click.testing import CliRunner
from conftest import STUB_API_KEY
from judge_script import actual_of
from openai_stub import StubOpenAI

import evalframe as ef
from evalframe.cli import cli


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    monkeypatch.delenv("EVALFRAME_ONLINE_STORE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    yield
    ef.online.close()


@pytest.fixture
def judge_env(openai_stub: StubOpenAI, monkeypatch: pytest.MonkeyPatch) -> StubOpenAI:
    def verdict(prompt: str) -> str:
        actual = actual_of(prompt)
        return json.dumps({"score": 0.2 if "wrong" in actual.lower() else 0.9, "reason": "ok"})

    openai_stub.verdict = verdict
    monkeypatch.setenv("EVALFRAME_JUDGE_BASE_URL", openai_stub.url)
    monkeypatch.setenv("EVALFRAME_JUDGE_MODEL", "stub-judge")
    monkeypatch.setenv("EVALFRAME_JUDGE_API_KEY", STUB_API_KEY)
    return openai_stub


def upper(text: str) -> str:
    return text.upper()


def rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_capture_is_off_until_configured_and_never_raises(tmp_path: Path) -> None:
    assert ef.online.capture("faq", "r1", {"q": "x"}, "y") is False
    ef.online.configure(store=tmp_path / "s.duckdb", sampling_rate=1.0)
    assert ef.online.capture("faq", "r1", {"q": object()}, "y") is True  # bad input: later
    assert ef.online.flush()
    assert ef.online.stats()["invalid"] == 1
    with pytest.raises(ef.EvalframeError, match="bind a redactor"):
        ef.online.configure(store=tmp_path / "s.duckdb", retention=True)


def test_a_bad_capture_is_counted_and_its_batch_is_written(tmp_path: Path) -> None:
    # Half a UTF-16 pair fits a Python string but no UTF-8 column: that capture is invalid,
    # and the others queued beside it (same batch) are written all the same.
    db = tmp_path / "s.duckdb"
    ef.online.configure(store=db, sampling_rate=1.0, flush_seconds=0.5)
    offered = [
        ("r0", {"q": "fine"}, "answer"),
        ("r1", {"q": "x\ud800"}, "answer"),
        ("r2", {"q": "fine"}, "half a pair \udc00"),
        ("r3\udbff", {"q": "fine"}, "answer"),
        ("r4", {"q": "nul\x00"}, "a\x00b"),
    ]
    assert all(ef.online.capture("faq", *capture) for capture in offered)
    assert ef.online.flush()
    stats = ef.online.stats()
    assert (stats["invalid"], stats["written"], stats["write_failed"]) == (3, 2, 0)
    written = rows(db, "SELECT sample_id, actual_output FROM online_captures ORDER BY 1")
    assert written == [("r0", "answer"), ("r4", "a\x00b")]


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no text for you")


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"k": value}
    return value


def test_each_bad_capture_is_dropped_alone(tmp_path: Path) -> None:
    # Captures nested past the dataset reader's limits (an input a sample could not hold, one
    # deep enough to overflow the recursion), and ids or outputs whose __str__ raises, sit in
    # one batch with good ones: each bad one is counted invalid, every good one is written.
    db = tmp_path / "s.duckdb"
    ef.online.configure(store=db, sampling_rate=1.0, flush_seconds=0.5)
    offered = [
        ("ok-0", {"q": "fine"}, "answer", None),
        ("deep", {"q": nested(150)}, "answer", None),
        (Unprintable(), {"q": "fine"}, "answer", None),
        ("ok-1", {"q": nested(96)}, "answer", None),  # nests 97 levels: a sample holds it
        ("bad-out", {"q": "fine"}, Unprintable(), None),
        ("very-deep", {"q": nested(5000)}, "answer", None),
        ("deep-expected", {"q": "fine"}, "answer", nested(120)),
        ("ok-2", {"q": "fine"}, "answer", {"a": [1, 2]}),
    ]
    assert all(ef.online.capture("faq", sid, i, a, e) for sid, i, a, e in offered)
    assert ef.online.flush()
    stats = ef.online.stats()
    assert (stats["invalid"], stats["written"], stats["write_failed"]) == (5, 3, 0)
    assert rows(db, "SELECT sample_id FROM online_captures ORDER BY 1") == [
        ("ok-0",),
        ("ok-1",),
        ("ok-2",),
    ]


HOLDER = """
import sys, duckdb
con = duckdb.connect(sys.argv[1])  # a second process holding the store read-write
print("holding", flush=True)
sys.stdin.readline()
con.close()
"""


def release(holder: subprocess.Popen[str]) -> None:
    assert holder.stdin is not None
    holder.stdin.write("\n")
    holder.stdin.flush()
    holder.wait()


def hold(db: Path) -> subprocess.Popen[str]:
    """A second process holding the store until ``release``."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert holder.stdout is not None
    assert holder.stdout.readline() == "holding\n"
    return holder


def test_capture_never_waits_for_a_store_another_process_holds(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    ef.online.configure(store=db, sampling_rate=1.0)  # creates the store
    ef.online.close()
    with hold(db) as holder:
        try:
            # Configuring and capturing return while the store is held (they would wait for
            # the holder forever otherwise): captures wait in memory, up to queue_size, the
            # batch being written included; the rest are dropped and counted.
            ef.online.configure(store=db, sampling_rate=1.0, queue_size=300, flush_seconds=0.01)
            queued = [ef.online.capture("faq", f"r{i}", {"q": i}, "a") for i in range(1000)]
            assert not ef.online.flush(timeout=0.2)  # nothing can be written yet
            stats = ef.online.stats()
            assert (stats["captured"], stats["dropped"], stats["written"]) == (300, 700, 0)
            assert queued.count(True) == 300
            assert holder.poll() is None  # still holding
        finally:
            release(holder)
    assert ef.online.flush()
    stats = ef.online.stats()
    assert (stats["written"], stats["write_failed"]) == (300, 0)
    assert rows(db, "SELECT count(*) FROM online_captures")[0][0] == 300


EXITING = """
import sys, evalframe as ef
ef.online.configure(store=sys.argv[1], sampling_rate=1.0, flush_seconds=5)
for i in range(int(sys.argv[2])):
    ef.online.capture("faq", f"r{i}", {"q": i}, "a")
if sys.argv[3] == "give-up":
    print(f"write_failed={ef.online.close(timeout=0.3)['write_failed']}", flush=True)
"""


def test_queued_captures_are_written_at_exit(tmp_path: Path) -> None:
    # The process exits right after capturing (the writer waits up to 5 s to fill a batch):
    # the queue drains at exit, before DuckDB's own exit hook would refuse the writes.
    db = tmp_path / "s.duckdb"
    done = subprocess.run(
        [sys.executable, "-c", EXITING, str(db), "2000", "exit"],
        check=False,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert rows(db, "SELECT count(*) FROM online_captures")[0][0] == 2000


def test_a_store_held_past_close_ends_cleanly(tmp_path: Path) -> None:
    # close() gives up waiting for a held store: the process still exits normally (a writer
    # thread stopped inside DuckDB at shutdown would abort it), and nothing is half written.
    db = tmp_path / "s.duckdb"
    ef.online.configure(store=db, sampling_rate=1.0)
    ef.online.close()
    with hold(db) as holder:
        try:
            done = subprocess.run(
                [sys.executable, "-c", EXITING, str(db), "50", "give-up"],
                check=False,
                capture_output=True,
                text=True,
            )
        finally:
            release(holder)
    assert done.returncode == 0, done.stderr
    assert "write_failed=50" in done.stdout
    assert rows(db, "SELECT count(*) FROM online_captures")[0][0] == 0


def test_threads_capture_and_every_sampled_row_is_written(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    ef.online.configure(store=db, sampling_rate=0.5, flush_seconds=0.05)
    queued = []

    def worker(k: int) -> None:
        queued.append(sum(ef.online.capture("faq", f"{k}-{i}", {"q": i}, "a") for i in range(500)))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert ef.online.flush()
    stats = ef.online.stats()
    assert stats["captured"] == sum(queued) == stats["written"]
    assert stats["captured"] + stats["sampled_out"] == 2000
    assert 800 < stats["captured"] < 1200  # a 0.5 sampling rate
    assert rows(db, "SELECT count(*) FROM online_captures")[0][0] == stats["written"]


def test_a_full_queue_drops_and_counts(tmp_path: Path) -> None:
    ef.online.configure(store=tmp_path / "s.duckdb", sampling_rate=1.0, queue_size=1,
                        flush_seconds=5)  # fmt: skip
    results = [ef.online.capture("faq", f"r{i}", {"q": i}, "a") for i in range(50)]
    assert results.count(False) == ef.online.stats()["dropped"] > 0


def test_redaction_reaches_every_string_and_a_failing_redactor_drops(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"

    def redact(text: str) -> str:
        if "boom" in text:
            raise ValueError("cannot redact")
        return text.replace("alice@example.com", "[email]")

    ef.online.configure(store=db, sampling_rate=1.0, retention=True, redactor=redact)
    ef.online.capture(
        "faq", "r1", {"alice@example.com": ["mail alice@example.com"]}, "hi alice@example.com"
    )
    ef.online.capture("faq", "r2", {"q": "boom"}, "x")
    assert ef.online.flush()
    assert ef.online.stats()["redaction_failed"] == 1
    ((inp, actual, redactor),) = rows(
        db, "SELECT input, actual_output, redactor FROM online_captures"
    )
    assert json.loads(inp) == {"[email]": ["mail [email]"]}
    assert actual == "hi [email]"
    assert redactor == "redact"


def test_score_status_trend_and_promotion(tmp_path: Path, judge_env: StubOpenAI) -> None:
    db = tmp_path / "s.duckdb"
    ef.online.configure(store=db, sampling_rate=1.0, retention=True, redactor=upper)
    for i in range(30):
        answer = "wrong answer" if i % 3 == 0 else "right answer"
        ef.online.capture("faq", f"req-{i}", {"question": f"q{i % 15}"}, answer, expected="ok")
    assert ef.online.flush()
    runner = CliRunner()
    scored = runner.invoke(cli, ["online", "score", "--store", str(db)])
    assert scored.exit_code == 0, scored.output
    assert "scored 30 captures: 20 passed, 0 could not be scored" in scored.output
    again = runner.invoke(cli, ["online", "score", "--store", str(db)])
    assert "scored 0 captures" in again.output  # each capture is scored once
    status = ef.online.status(db, "faq")
    assert (status.sample_count, round(status.pass_rate, 4), status.dropped) == (30, 0.6667, True)
    cli_status = runner.invoke(
        cli, ["online", "status", "faq", "--store", str(db), "--chart", str(tmp_path / "t.svg")]
    )
    assert cli_status.exit_code == 1
    assert "DROPPED: pass rate 0.6667 < 0.8 over the latest 30 scores" in cli_status.output
    assert (tmp_path / "t.svg").read_text(encoding="utf-8").startswith("<svg")
    assert (
        runner.invoke(
            cli, ["online", "status", "faq", "--store", str(db), "--min-samples", "31"]
        ).exit_code
        == 0
    )  # too few samples to alert
    trend = ef.online.trend(db, "faq")
    assert trend.select("total", "passed").rows() == [(30, 20)]
    assert trend["date"][0] == dt.datetime.now(dt.UTC).date()

    merge = tmp_path / "golden.yaml"
    existing = {"name": "faq", "metrics": ["llm-as-judge"], "samples": [
        {"id": "kept", "input": {"QUESTION": "Q0"}, "expected_output": "OK"},
    ]}  # fmt: skip
    merge.write_text(yaml.safe_dump(existing, sort_keys=False), encoding="utf-8")
    promoted = runner.invoke(
        cli, ["promote-online", "faq", "--store", str(db), "--merge", str(merge)]
    )
    assert promoted.exit_code == 0, promoted.output
    doc = yaml.safe_load(merge.read_text(encoding="utf-8"))
    assert doc["samples"][0] == existing["samples"][0]  # existing rows first, unchanged
    new = doc["samples"][1:]
    # ten failing captures over five distinct questions; Q0 is already in the target
    questions = sorted(s["input"]["QUESTION"] for s in new)  # keys are redacted too
    assert questions == ["Q12", "Q3", "Q6", "Q9"]
    first = new[0]
    assert re.fullmatch(r"online-[0-9a-f]{12}", first["id"])
    assert first["metadata"]["tags"] == ["promoted-from-production"]
    assert first["metadata"]["online_score"] == 0.2
    assert first["metadata"]["online_metric"] == "llm-as-judge"
    assert first["metadata"]["judge_model"] == "stub-judge"
    assert first["metadata"]["redactor"] == "upper"
    assert ef.read_dataset(merge).height == 5  # it reloads as a dataset


def test_text_is_dropped_after_scoring_without_retention(
    tmp_path: Path, judge_env: StubOpenAI
) -> None:
    db = tmp_path / "s.duckdb"
    ef.online.configure(store=db, sampling_rate=1.0)
    ef.online.capture("faq", "r1", {"question": "secret question"}, "wrong answer")
    assert ef.online.flush()
    assert rows(db, "SELECT actual_output FROM online_captures")[0][0] == "wrong answer"
    ef.online.score(db)
    assert rows(db, "SELECT input, actual_output, scored FROM online_captures") == [
        (None, None, True)
    ]
    document, counts = ef.online.promote(db, "faq")
    assert document["samples"] == []
    assert counts == {"promoted": 0, "not_retained": 1, "unredacted": 0, "duplicate": 0}


def test_judge_model_is_recorded_only_when_a_judge_scored_the_capture(
    tmp_path: Path, judge_env: StubOpenAI
) -> None:
    # A judge is configured, but exact-match asks none: no capture names a judge model.
    db = tmp_path / "j.duckdb"
    ef.online.configure(
        store=db, sampling_rate=1.0, retention=True, redactor=upper, flush_seconds=0.5
    )
    ef.online.capture("faq", "a", {"question": "q1"}, "wrong answer", expected="right answer")
    ef.online.capture("faq", "b", {"question": "q2"}, "right answer", expected="right answer")
    assert ef.online.flush()
    runner = CliRunner()
    scored = runner.invoke(cli, ["online", "score", "--store", str(db), "--metric", "exact-match"])
    assert scored.exit_code == 0, scored.output
    assert rows(db, "SELECT DISTINCT judge_model FROM online_scores") == [(None,)]
    out = tmp_path / "promoted.yaml"
    promoted = runner.invoke(
        cli,
        ["promote-online", "faq", "--store", str(db), "--out", str(out), "--allow-unredacted"],
    )
    assert promoted.exit_code == 0, promoted.output
    sample = yaml.safe_load(out.read_text(encoding="utf-8"))["samples"][0]
    assert sample["metadata"]["online_metric"] == "exact-match"
    assert "judge_model" not in sample["metadata"]
    # a judged metric records the judge on the captures it scored
    ef.online.capture("faq", "c", {"question": "q3"}, "wrong answer", expected="right answer")
    assert ef.online.flush()
    judged = runner.invoke(cli, ["online", "score", "--store", str(db), "--metric", "llm-as-judge"])
    assert judged.exit_code == 0, judged.output
    assert rows(db, "SELECT judge_model FROM online_scores WHERE metric = 'llm-as-judge'") == [
        ("stub-judge",)
    ]
