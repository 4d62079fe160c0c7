"""One process at a time resumes a checkpointed run: real processes racing, a holder killed
with SIGKILL, a lock from another host, a reused process id."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import duckdb
from test_resume import N, cli, dataset, lines

import evalframe as ef

ARGS = ("--repetitions", "2", "--concurrency", "1", "--checkpoint-every", "4")


def interrupted(tmp_path: Path) -> tuple[Path, Path, str, int]:
    """A checkpointed run killed mid-way: (dataset, store, run id, executions checkpointed)."""
    ds = dataset(tmp_path)
    db = tmp_path / "runs.duckdb"
    calls = tmp_path / "first.txt"
    proc = cli(tmp_path, *run_args(ds, db), calls=calls, slow=0.05)
    while len(lines(calls)) < 10 and proc.poll() is None:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    _, err = proc.communicate(timeout=60)
    run_id = re.search(r"resume with --resume (\w+)", err).group(1)  # type: ignore[union-attr]
    return ds, db, run_id, 4 * chunks(db, run_id)


def run_args(ds: Path, db: Path) -> list[str]:
    return ["run", str(ds), "--system", "slowsys:answer", "--store", str(db), *ARGS]


def chunks(db: Path, run_id: str) -> int:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return int(
            con.execute("SELECT count(*) FROM checkpoints WHERE run_id = ?", [run_id]).fetchall()[
                0
            ][0]
        )
    finally:
        con.close()


def lock_rows(db: Path) -> list[tuple[object, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("SELECT name, pid, host, purpose FROM locks").fetchall()
    finally:
        con.close()


def assert_saved_once(db: Path, run_id: str) -> None:
    """The run is saved with one output per execution and one score per execution."""
    with ef.Store(db) as store:
        assert store.runs().get_column("run_id").to_list() == [run_id]
        counts = store.sql(
            "SELECT (SELECT count(*) FROM outputs WHERE run_id = $r), "
            "(SELECT count(DISTINCT (sample_id, repetition)) FROM outputs WHERE run_id = $r), "
            "(SELECT count(*) FROM scores WHERE run_id = $r), "
            "(SELECT count(*) FROM checkpoints), (SELECT count(*) FROM locks)",
            {"r": run_id},
        ).row(0)
    assert counts == (2 * N, 2 * N, 2 * N, 0, 0)


def test_two_resumes_at_once_one_runs_and_the_other_is_refused_naming_it(tmp_path: Path) -> None:
    ds, db, run_id, done = interrupted(tmp_path)
    missing = 2 * N - done
    calls = tmp_path / "race.txt"
    # Slow enough that the second starts while the first still works (a resume holds the
    # run from its start until it is saved).
    racers = [
        cli(tmp_path, *run_args(ds, db), "--resume", run_id, calls=calls, slow=0.15)
        for _ in range(2)
    ]
    results = [(p, *p.communicate(timeout=300)) for p in racers]
    codes = sorted(p.returncode for p, _, _ in results)
    assert codes == [0, 2], [err for _, _, err in results]
    winner = next(p for p, _, _ in results if p.returncode == 0)
    refused = next(err for p, _, err in results if p.returncode == 2)
    named = re.search(r"is held by process (\d+) on host (\S+), since (\S+ \S+ UTC)", refused)
    assert named is not None, refused
    assert int(named.group(1)) == winner.pid
    assert named.group(2) == socket.gethostname()
    assert "Traceback" not in refused
    assert len(refused.strip().splitlines()) == 1  # one paragraph
    # The system was called once per missing execution, by the winner alone.
    assert len(lines(calls)) == missing
    assert_saved_once(db, run_id)


def test_a_holder_killed_with_sigkill_leaves_a_lock_the_next_resume_takes_over(
    tmp_path: Path,
) -> None:
    ds, db, run_id, done = interrupted(tmp_path)
    calls = tmp_path / "held.txt"
    holder = cli(tmp_path, *run_args(ds, db), "--resume", run_id, calls=calls, slow=0.05)
    while len(lines(calls)) < 6 and holder.poll() is None:
        time.sleep(0.02)
    holder.send_signal(signal.SIGKILL)
    holder.communicate(timeout=60)
    assert holder.returncode == -signal.SIGKILL
    assert lock_rows(db) == [
        (f"run:{run_id}", holder.pid, socket.gethostname(), "evalframe run --resume")
    ]
    done = 4 * chunks(db, run_id)
    again = tmp_path / "again.txt"
    proc = cli(tmp_path, *run_args(ds, db), "--resume", run_id, calls=again, slow=0)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert f"took over the lock of process {holder.pid}" in err
    assert len(lines(again)) == 2 * N - done  # nothing the killed holder checkpointed
    assert_saved_once(db, run_id)


def _hold(db: Path, run_id: str, *, pid: int, host: str, process: str) -> None:
    """A lock row as another evalframe would have written it (plain DuckDB, as a second
    machine sharing the file would)."""
    con = duckdb.connect(str(db))
    try:
        con.execute(
            "INSERT OR REPLACE INTO locks VALUES (?, ?, ?, ?, 'token', 'evalframe run --resume', "
            "TIMESTAMP '2030-01-02 03:04:05')",
            [f"run:{run_id}", pid, host, process],
        )
    finally:
        con.close()


def _stat_start(pid: int) -> str:
    boot = Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
    fields = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
    return f"{boot}:{fields[19]}"


def test_a_lock_from_another_host_is_refused_until_unlocked(tmp_path: Path) -> None:
    ds, db, run_id, done = interrupted(tmp_path)
    _hold(db, run_id, pid=4242, host="build-box-7", process="")
    calls = tmp_path / "calls.txt"
    proc = cli(tmp_path, *run_args(ds, db), "--resume", run_id, calls=calls, slow=0)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 2
    assert "held by process 4242 on host build-box-7, since 2030-01-02 03:04:05 UTC" in err
    assert f"evalframe store unlock run:{run_id}" in err
    assert lines(calls) == []
    unlock = subprocess.run(
        [sys.executable, "-m", "evalframe", "store", "unlock", f"run:{run_id}", "--store", str(db)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert unlock.returncode == 0, unlock.stderr
    assert "held by process 4242 on host build-box-7" in unlock.stdout
    proc = cli(tmp_path, *run_args(ds, db), "--resume", run_id, calls=calls, slow=0)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert len(lines(calls)) == 2 * N - done
    assert_saved_once(db, run_id)


def test_a_reused_process_id_is_not_taken_for_the_holder(tmp_path: Path) -> None:
    ds, db, run_id, _done = interrupted(tmp_path)
    me = os.getpid()  # a live process: this test's
    _hold(db, run_id, pid=me, host=socket.gethostname(), process=_stat_start(me))
    calls = tmp_path / "calls.txt"
    proc = cli(tmp_path, *run_args(ds, db), "--resume", run_id, calls=calls, slow=0)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 2, err  # the holder runs: refused
    assert f"held by process {me} on host" in err
    con = duckdb.connect(str(db))
    try:  # the same id, but another process started under it since
        con.execute("UPDATE locks SET process = 'another-boot:1'")
    finally:
        con.close()
    proc = cli(tmp_path, *run_args(ds, db), "--resume", run_id, calls=calls, slow=0)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert f"took over the lock of process {me}" in err
    assert_saved_once(db, run_id)
