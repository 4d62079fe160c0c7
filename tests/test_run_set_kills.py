"""``run-set`` killed with SIGKILL at any instant and run again records each dataset once."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from test_eval_set import dataset, write

import evalframe as ef
from evalframe.core._eval_set import check_manifest

NAMES = ["alpha", "beta", "gamma", "delta"]

# Runs the CLI, and SIGKILLs itself right after the K-th call of one of run-set's steps
# returns: the instants between a run's commit and the manifest file, and around them.
KILLER = textwrap.dedent(
    """
    import os, signal, sys

    point, k = sys.argv[1], int(sys.argv[2])
    from evalframe.engine import _eval_set as engine
    from evalframe.store import _eval_sets as store

    calls = [0]

    def after(fn):
        def wrapped(*args, **kwargs):
            out = fn(*args, **kwargs)
            calls[0] += 1
            if calls[0] == k:
                os.kill(os.getpid(), signal.SIGKILL)
            return out
        return wrapped

    if point == "run and store manifest committed":
        store.save_run = after(store.save_run)
    elif point == "running entry saved":
        store.save_manifest = after(store.save_manifest)
    elif point == "manifest file written":
        engine._write_file = after(engine._write_file)
    elif point == "run rows written, not committed":
        import evalframe.store._write as w
        w._write_rows = after(w._write_rows)
    from evalframe.cli import main
    main(sys.argv[3:])
    """
)


def eval_set(tmp_path: Path) -> Path:
    for name in NAMES:
        dataset(tmp_path, name, {f"{name}-{i}": "ok" if i else "no" for i in range(3)})
    entries = [{"path": f"{n}.yaml", "outputs": f"{n}.out.json"} for n in NAMES]
    return write(
        tmp_path / "set.yaml",
        {"schema_version": "eval-harness.eval-set.v1", "name": "nightly", "datasets": entries},
    )


def args(tmp_path: Path) -> list[str]:
    return [
        "run-set",
        str(tmp_path / "set.yaml"),
        "--store",
        str(tmp_path / "runs.duckdb"),
        "--manifest",
        str(tmp_path / "manifest.json"),
    ]


def run(tmp_path: Path, *argv: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, *argv], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip


def rerun_and_count(tmp_path: Path) -> None:
    """Run the set again to the end: every dataset is recorded exactly once, and both
    manifests say so."""
    again = run(tmp_path, "-m", "evalframe", *args(tmp_path))
    _out, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    with ef.Store(tmp_path / "runs.duckdb") as store:
        per_dataset = dict(store.sql("SELECT dataset, count(*) FROM runs GROUP BY dataset").rows())
        stored = json.loads(
            store.sql("SELECT manifest FROM eval_set_manifests WHERE eval_set = 'nightly'").item()
        )
        assert store.sql("SELECT count(*) FROM locks").item() == 0
        scored = dict(store.sql("SELECT r.dataset, count(*) FROM scores JOIN runs AS r "
                                "USING (run_id) GROUP BY ALL").rows())  # fmt: skip
    assert per_dataset == dict.fromkeys(NAMES, 1)
    assert scored == dict.fromkeys(NAMES, 3)
    doc = json.loads((tmp_path / "manifest.json").read_text(encoding="utf-8"))
    for manifest in (doc, stored):
        check_manifest(manifest, "nightly", NAMES, "manifest")
        assert [e["status"] for e in manifest["datasets"]] == ["completed"] * 4
        assert [e["total_samples"] for e in manifest["datasets"]] == [3] * 4


@pytest.mark.parametrize(
    ("point", "k"),
    [
        ("run and store manifest committed", 2),  # before the manifest file says so
        ("running entry saved", 3),
        ("manifest file written", 1),  # the first dataset marked running
        ("run rows written, not committed", 2),
    ],
)
def test_a_set_killed_at_a_step_and_run_again_records_each_dataset_once(
    tmp_path: Path, point: str, k: int
) -> None:
    eval_set(tmp_path)
    (tmp_path / "killer.py").write_text(KILLER, encoding="utf-8")
    killed = run(tmp_path, str(tmp_path / "killer.py"), point, str(k), *args(tmp_path))
    _, err = killed.communicate(timeout=300)
    assert killed.returncode == -signal.SIGKILL, err
    rerun_and_count(tmp_path)


def _statuses(path: Path) -> list[str]:
    try:
        return [e["status"] for e in json.loads(path.read_text(encoding="utf-8"))["datasets"]]
    except (OSError, ValueError):
        return []


@pytest.mark.parametrize(
    "seen",
    [
        ["running", "pending", "pending", "pending"],
        ["completed", "completed", "running", "pending"],
        ["completed", "completed", "completed", "running"],
    ],
)
def test_a_set_killed_from_outside_as_it_goes_and_run_again_records_each_dataset_once(
    tmp_path: Path, seen: list[str]
) -> None:
    """Killed by another process the moment it is seen at a stage (the kill lands wherever
    the set has got to by then)."""
    eval_set(tmp_path)
    proc = run(tmp_path, "-m", "evalframe", *args(tmp_path))
    while _statuses(tmp_path / "manifest.json") != seen and proc.poll() is None:
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=300)
    assert proc.returncode == -signal.SIGKILL
    rerun_and_count(tmp_path)
