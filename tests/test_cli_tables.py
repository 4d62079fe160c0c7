"""`evalframe runs` and `evalframe sql`: names, labels, one table style fitted to COLUMNS, and
every --format carrying the same rows as the store itself (read with DuckDB directly)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import duckdb
import polars as pl
import pytest
from click.testing import CliRunner

import evalframe as ef
from evalframe.cli import cli

EXAMPLE = Path(ef.__file__).parent / "examples"
DATASET = str(EXAMPLE / "support.yaml")
OUTPUTS = str(EXAMPLE / "support.outputs.json")


def invoke(*args: str, columns: int = 100) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), env={"COLUMNS": str(columns)})
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("s") / "runs.duckdb"
    for name, model in (("nightly", "gpt-4o"), ("candidate", "claude")):
        code, _, err = invoke(
            "run", DATASET, "--outputs", OUTPUTS, "--store", str(path),
            "--name", name, "--label", f"model={model}", "--label", "team=search",
        )  # fmt: skip
        assert code == 0, err
    return path


def _oracle(path: Path, query: str) -> list[tuple[object, ...]]:
    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute(query).fetchall()


def test_name_and_labels_are_stored_and_listed(store: Path) -> None:
    stored = _oracle(store, "SELECT name, labels FROM runs ORDER BY created_at")
    assert [(n, json.loads(lab)) for n, lab in stored] == [
        ("nightly", {"model": "gpt-4o", "team": "search"}),
        ("candidate", {"model": "claude", "team": "search"}),
    ]
    code, out, _ = invoke("runs", "--store", str(store), columns=160)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["id", "name", "labels"]
    assert "candidate" in lines[2]
    assert "model=claude, team=search" in lines[2]
    assert "nightly" in lines[3]
    assert "model=gpt-4o, team=search" in lines[3]
    code, out, _ = invoke("runs", "--store", str(store), columns=60)
    assert code == 0
    assert max(map(len, out.splitlines())) <= 60
    assert "…" in out


@pytest.mark.parametrize("value", ["model", "=x", ""])
def test_a_bad_label_is_a_usage_error_naming_the_option(value: str) -> None:
    code, _, err = invoke("run", DATASET, "--outputs", OUTPUTS, "--label", value)
    assert code == 2
    assert "--label" in err
    assert "KEY=VALUE" in err
    assert "Traceback" not in err


QUERY = "SELECT run_id, name, dataset, n_samples, macro_f1 FROM runs ORDER BY run_id"


def test_every_sql_format_carries_the_stores_rows(store: Path, tmp_path: Path) -> None:
    expected = [tuple(r) for r in _oracle(store, QUERY)]
    code, out, _ = invoke("sql", QUERY, "--store", str(store), "--format", "csv")
    assert code == 0
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0] == ["run_id", "name", "dataset", "n_samples", "macro_f1"]
    assert [(a, b, c, int(d), float(e)) for a, b, c, d, e in rows[1:]] == expected
    code, out, _ = invoke("sql", QUERY, "--store", str(store), "--format", "json")
    assert code == 0
    assert [tuple(r.values()) for r in json.loads(out)] == expected
    target = tmp_path / "q.parquet"
    code, _, err = invoke("sql", QUERY, "--store", str(store), "--format", "parquet")
    assert code == 2
    assert "--out" in err
    code, _, _ = invoke(
        "sql", QUERY, "--store", str(store), "--format", "parquet", "--out", str(target)
    )
    assert code == 0
    assert pl.read_parquet(target).rows() == expected
    code, out, _ = invoke("sql", QUERY, "--store", str(store))
    assert code == 0
    body = out.splitlines()[2:]
    assert [line.split()[0] for line in body] == [r[0] for r in expected]


def test_runs_formats_carry_the_store_rows(store: Path, tmp_path: Path) -> None:
    expected = _oracle(store, "SELECT run_id, name, labels FROM runs ORDER BY created_at DESC")
    code, out, _ = invoke("runs", "--store", str(store), "--format", "json")
    assert code == 0
    assert [(r["run_id"], r["name"], r["labels"]) for r in json.loads(out)] == expected
    code, out, _ = invoke("runs", "--store", str(store), "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [(r["run_id"], r["name"], r["labels"]) for r in rows] == expected
    target = tmp_path / "r.parquet"
    code, _, _ = invoke("runs", "--store", str(store), "--format", "parquet", "--out", str(target))
    assert code == 0
    assert pl.read_parquet(target).select("run_id", "name", "labels").rows() == expected


def test_a_wide_select_star_fits_the_terminal(store: Path) -> None:
    code, out, _ = invoke("sql", "SELECT * FROM runs", "--store", str(store), columns=100)
    assert code == 0
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 100
    columns = [r[0] for r in _oracle(store, "DESCRIBE runs")]
    # Too many columns to sit side by side readably: one block per run, a line per column.
    assert len(lines) == 2 * (1 + len(columns))
    assert [line.split()[0] for line in lines[1 : 1 + len(columns)]] == columns
    run_ids = {r[0] for r in _oracle(store, "SELECT run_id FROM runs")}
    assert {line.split()[1] for line in lines if line.startswith("run_id ")} == run_ids
    assert "…" in out  # long cells are cut with an ellipsis


def test_a_narrow_select_cuts_cells_with_an_ellipsis(store: Path) -> None:
    query = "SELECT run_id, name, labels, dataset, git_commit FROM runs"
    code, out, _ = invoke("sql", query, "--store", str(store), columns=50)
    assert code == 0
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 50
    names = ["run_id", "name", "labels", "dataset", "git_commit"]
    shown = lines[0].split()
    assert len(shown) == len(names)
    assert all(n.startswith(h.rstrip("…")) for h, n in zip(shown, names, strict=True))
    assert len(lines) == 4
    assert "…" in out
