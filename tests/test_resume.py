"""Checkpointed runs: killed for real mid-run, resumed, and reported as if never stopped."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import duckdb
import pytest
import yaml

import evalframe as ef

N = 24

SYSTEM = textwrap.dedent(
    """
    import os, time

    def answer(inp):
        # one line per call, so the test counts calls across processes
        with open(os.environ["CALLS_FILE"], "a", encoding="utf-8") as f:
            f.write(inp["question"] + "\\n")
        time.sleep(float(os.environ.get("SLOW", "0")))
        n = int(inp["question"][1:])
        return "yes" if n % 3 else "no"
    """
)


def dataset(tmp_path: Path) -> Path:
    path = tmp_path / "d.yaml"
    doc = {
        "schema_version": "eval-harness.dataset.v1",
        "name": "resume",
        "metrics": ["exact-match"],
        "samples": [
            {"id": f"s{i:02d}", "input": {"question": f"q{i}"}, "expected_output": "yes"}
            for i in range(N)
        ],
    }
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    (tmp_path / "slowsys.py").write_text(SYSTEM, encoding="utf-8")
    return path


def cli(tmp_path: Path, *args: str, calls: Path, slow: float) -> subprocess.Popen[str]:
    path = os.pathsep.join(p for p in (str(tmp_path), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "CALLS_FILE": str(calls), "SLOW": str(slow), "PYTHONPATH": path}
    code = "from evalframe.cli import main; main()"
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split() if path.exists() else []


def comparable(report: dict) -> list[tuple[str, int, str, dict]]:
    return [(s["id"], s["repetition"], s["actual_output"], s["scores"]) for s in report["samples"]]


def test_a_killed_run_resumes_calling_only_what_is_missing(tmp_path: Path) -> None:
    ds = dataset(tmp_path)
    db = tmp_path / "runs.duckdb"
    first_calls = tmp_path / "calls1.txt"
    args = ["run", str(ds), "--system", "slowsys:answer", "--store", str(db),
            "--repetitions", "2", "--concurrency", "1", "--checkpoint-every", "4"]  # fmt: skip
    proc = cli(tmp_path, *args, calls=first_calls, slow=0.05)
    while len(lines(first_calls)) < 14 and proc.poll() is None:  # until mid-run
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL, err
    run_id = re.search(r"resume with --resume (\w+)", err).group(1)  # type: ignore[union-attr]
    made = len(lines(first_calls))
    assert 14 <= made < 2 * N

    con = duckdb.connect(str(db), read_only=True)
    try:
        saved_chunks = con.execute(
            "SELECT count(*) FROM checkpoints WHERE run_id = ?", [run_id]
        ).fetchone()[0]
        assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == 0
    finally:
        con.close()
    checkpointed = 4 * saved_chunks
    assert checkpointed >= 12  # chunks of 4 written before the kill

    second_calls = tmp_path / "calls2.txt"
    out = tmp_path / "resumed.json"
    resumed = cli(tmp_path, *args, "--resume", run_id, "--format", "json", "--out", str(out),
                  calls=second_calls, slow=0)  # fmt: skip
    _, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err
    assert len(lines(second_calls)) == 2 * N - checkpointed  # only the missing executions
    with ef.Store(db) as store:
        assert store.runs().get_column("run_id").to_list() == [run_id]
        assert store.sql("SELECT count(*) FROM checkpoints").item() == 0  # cleaned up

    whole = tmp_path / "whole.json"
    straight = cli(
        tmp_path,
        *("run", str(ds), "--system", "slowsys:answer", "--repetitions", "2"),
        *("--format", "json", "--out", str(whole)),
        calls=tmp_path / "c3.txt",
        slow=0,
    )
    straight.communicate(timeout=300)
    a = json.loads(out.read_text(encoding="utf-8"))
    b = json.loads(whole.read_text(encoding="utf-8"))
    assert a["run_id"] == run_id
    assert comparable(a) == comparable(b)
    for key in ("metrics", "sample_aggregates", "macro_f1", "pass_rate", "total_executions"):
        assert a[key] == b[key], key


def test_resume_refuses_what_it_cannot_resume(tmp_path: Path) -> None:
    ds = dataset(tmp_path)
    db = tmp_path / "runs.duckdb"
    os.environ["CALLS_FILE"] = str(tmp_path / "calls.txt")
    sys.path.insert(0, str(tmp_path))
    try:
        import slowsys  # type: ignore[import-not-found]

        with pytest.raises(ef.StoreError, match="no checkpoint of run nope"):
            ef.evaluate(ds, system=slowsys.answer, store=db, resume="nope")
        run = ef.evaluate(ds, system=slowsys.answer, store=db, checkpoint_every=5)
        with pytest.raises(ef.StoreError, match="already saved"):
            ef.evaluate(ds, system=slowsys.answer, store=db, resume=run.run_id)
        with pytest.raises(ValueError, match="need system= and store="):
            ef.evaluate(ds, outputs={"s00": "yes"}, checkpoint_every=5)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("slowsys", None)
        os.environ.pop("CALLS_FILE", None)
