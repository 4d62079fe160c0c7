"""``evalframe run --store``: a store that refuses the run after scoring never loses it.

The report is written (or printed) first; when saving fails, the run is exported next to
the report (or into the current directory) in ``evalframe export``'s format, the message
names that directory and the command that imports it, and the command exits 2.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

import evalframe as ef
from evalframe.cli import cli
from evalframe.store import Store

EXAMPLE = Path(ef.__file__).parent / "examples"
DATASET = str(EXAMPLE / "support.yaml")
OUTPUTS = str(EXAMPLE / "support.outputs.json")
# exact-match fails on no sample here and contains on none: a clean run exits 0 when saved.
METRICS = ("-m", "exact-match", "-m", "contains", "-m", "rouge-l")


def run_cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["run", DATASET, "--outputs", OUTPUTS, *METRICS, *args])
    return result.exit_code, result.stdout, result.stderr


def report_scores(report: dict[str, object]) -> dict[tuple[str, int, str], float]:
    """(sample, repetition, metric) -> score, read from the report JSON (the oracle)."""
    samples = report["samples"]
    assert isinstance(samples, list)
    return {
        (s["id"], s["repetition"], m): v["score"] for s in samples for m, v in s["scores"].items()
    }


def store_scores(db: Path) -> dict[tuple[str, int, str], float]:
    with Store(db) as store:
        frame = store.sql(
            "SELECT sample_id, repetition, metric, score FROM scores WHERE error IS NULL"
        )
    return {(r[0], r[1], r[2]): r[3] for r in frame.iter_rows()}


def check_recovery(report_path: Path, err: str, home: Path, tmp_path: Path) -> None:
    """The report exists, the message names the recovery and its import command, and the
    recovery imports into a fresh store with the report's scores."""
    report = json.loads(report_path.read_text(encoding="utf-8"))
    run_id = report["run_id"]
    folder = home / f"evalframe-recovery-{run_id}"
    assert (folder / "manifest.json").is_file()
    assert f"The run is kept in {folder}" in err
    assert f"evalframe import {folder} --store " in err
    assert "Traceback" not in err
    fresh = tmp_path / "fresh.duckdb"
    result = CliRunner().invoke(cli, ["import", str(folder), "--store", str(fresh)])
    assert result.exit_code == 0, result.output
    assert run_id in result.stdout
    expected = report_scores(report)
    assert len(expected) == 36  # 12 samples x 3 metrics
    assert store_scores(fresh) == expected


@pytest.fixture
def locked_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A real store held open read-write by a second process for the whole test."""
    db = tmp_path / "runs.duckdb"
    Store(db).close()
    script = (
        "import duckdb, sys; con = duckdb.connect(sys.argv[1]); "
        "con.execute('CREATE TABLE held (x INT)'); print('held', flush=True); sys.stdin.read()"
    )
    with subprocess.Popen(
        [sys.executable, "-c", script, str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as holder:
        assert holder.stdout is not None
        assert holder.stdin is not None
        assert holder.stdout.readline().strip() == "held"
        # Waiting the default 30 s for the lock proves nothing more than waiting 1 s.
        monkeypatch.setitem(Store.__init__.__kwdefaults__, "timeout", 1.0)
        try:
            yield db
        finally:
            holder.stdin.close()
            holder.wait(timeout=60)


def test_a_store_locked_by_another_process_keeps_the_run(
    locked_store: Path, tmp_path: Path
) -> None:
    report = tmp_path / "out" / "report.json"
    report.parent.mkdir()
    code, stdout, err = run_cli("--format", "json", "--out", str(report), "--store",
                                str(locked_store))  # fmt: skip
    assert code == 2
    assert stdout == ""
    assert "locked by another process" in err
    check_recovery(report, err, report.parent, tmp_path)


def test_a_path_whose_directory_cannot_be_written_keeps_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A regular file as the store's parent directory: unwritable even for root.
    (tmp_path / "not-a-dir").write_text("x", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code, stdout, err = run_cli("--format", "json", "--store", "not-a-dir/runs.duckdb")
    assert code == 2
    printed = tmp_path / "printed.json"
    printed.write_text(stdout, encoding="utf-8")  # the report went to stdout
    assert "Not a directory" in err
    check_recovery(printed, err, tmp_path, tmp_path)


def test_a_file_that_is_not_a_duckdb_database_keeps_the_run(tmp_path: Path) -> None:
    store = tmp_path / "runs.duckdb"
    store.write_text("these are notes, not a database\n", encoding="utf-8")
    report = tmp_path / "report.json"
    code, _, err = run_cli("--format", "json", "--out", str(report), "--store", str(store))
    assert code == 2
    assert "not a valid DuckDB database file" in err
    check_recovery(report, err, tmp_path, tmp_path)
    assert store.read_text(encoding="utf-8") == "these are notes, not a database\n"


def test_a_truncated_store_keeps_the_run(tmp_path: Path) -> None:
    store = tmp_path / "runs.duckdb"
    first = tmp_path / "first.json"
    code, _, err = run_cli("--format", "json", "--out", str(first), "--store", str(store))
    assert code == 0, err
    size = store.stat().st_size
    with store.open("r+b") as fh:
        fh.truncate(size // 3)
    report = tmp_path / "report.json"
    code, _, err = run_cli("--format", "json", "--out", str(report), "--store", str(store))
    assert code == 2
    check_recovery(report, err, tmp_path, tmp_path)


def test_markdown_report_is_written_before_a_failing_save(tmp_path: Path) -> None:
    store = tmp_path / "runs.duckdb"
    store.write_bytes(b"\x00" * 4096)
    report = tmp_path / "report.md"
    code, _, err = run_cli("--out", str(report), "--store", str(store))
    assert code == 2
    assert report.read_text(encoding="utf-8").startswith("# Eval report — support.faq")
    assert err.index("wrote ") < err.index("could not save run")
    recovered = list(tmp_path.glob("evalframe-recovery-*"))
    assert len(recovered) == 1
    with Store(tmp_path / "fresh.duckdb") as fresh:
        assert fresh.import_runs(recovered[0]) == [recovered[0].name.removeprefix(
            "evalframe-recovery-")]  # fmt: skip


def test_a_saved_run_exits_zero_and_leaves_no_recovery(tmp_path: Path) -> None:
    store = tmp_path / "runs.duckdb"
    report = tmp_path / "report.json"
    code, _, err = run_cli("--format", "json", "--out", str(report), "--store", str(store))
    assert code == 0, err
    assert "saved run" in err
    assert not list(tmp_path.glob("evalframe-recovery-*"))
    assert store_scores(store) == report_scores(json.loads(report.read_text(encoding="utf-8")))


def test_an_out_path_in_a_missing_folder_is_refused_before_scoring(tmp_path: Path) -> None:
    store = tmp_path / "runs.duckdb"
    out = tmp_path / "no" / "such" / "report.json"
    code, _, err = run_cli("--out", str(out), "--store", str(store))
    assert code == 2
    assert f"Invalid value for '--out': the folder '{out.parent}' does not exist." in err
    assert not store.exists()  # refused before any scoring or saving


def test_a_report_that_cannot_be_written_still_saves_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalframe.cli import _options

    def disk_full(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_options.os, "replace", disk_full)
    store = tmp_path / "runs.duckdb"
    report = tmp_path / "report.json"
    code, _, err = run_cli("--format", "json", "--out", str(report), "--store", str(store))
    assert code == 1
    assert f"Error: could not write {report}: No space left on device" in err
    assert "saved run" in err
    assert [p.name for p in tmp_path.iterdir()] == ["runs.duckdb"]  # no report, no temporary
    monkeypatch.undo()
    code, printed, _ = run_cli("--format", "json")
    assert code == 0
    assert store_scores(store) == report_scores(json.loads(printed))  # nothing lost
