"""One table style fitted to COLUMNS across `runs`, `sql`, `metrics`, `compare` and `gate`:
names and labels, every --format carrying the same rows as the store itself (read with DuckDB
directly), and snapshots of the metrics, compare and gate tables at two widths."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import duckdb
import polars as pl
import pytest
from click.testing import CliRunner
from snapshot import check_snapshot

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
    assert out.startswith("-[ row 1 ]")  # eight columns cannot sit side by side in 60
    assert "model=claude, team=search" in out


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


# --- metrics, compare and gate: the same table style, fitted to COLUMNS ---------------------

# Five answers changed: three passing ones broken, two failing ones fixed.
CHANGED = {
    "shipping-cost": "Shipping costs depend on your cart.",
    "support-email": "Email our support team.",
    "gift-cards": "Yes, gift cards can be refunded.",
    "warranty": "2 years.",
    "account-delete": "Settings > Privacy > Delete account.",
}
WIDTHS = (100, 60)


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A store with v1 (the bundled outputs) and v2 (five answers changed), scored with the
    two lexical metrics of the example (no embedding model: the snapshots stay exact)."""
    root = tmp_path_factory.mktemp("pair")
    doc = json.loads(Path(OUTPUTS).read_text(encoding="utf-8"))
    doc["outputs"].update(CHANGED)
    changed = root / "v2.outputs.json"
    changed.write_text(json.dumps(doc), encoding="utf-8")
    path = root / "runs.duckdb"
    for name, outputs in (("v1", OUTPUTS), ("v2", str(changed))):
        code, _, err = invoke(
            "run", DATASET, "--outputs", outputs, "--store", str(path), "--name", name,
            "-m", "contains", "-m", "rouge-l",
        )  # fmt: skip
        assert code == 0, err
    ids = dict(_oracle(path, "SELECT name, run_id FROM runs"))
    return path, ids


def _stable(text: str, ids: dict[str, str]) -> str:
    """Run ids (random) replaced by placeholders of the same length, so widths are unchanged."""
    for name, run_id in ids.items():
        text = text.replace(run_id, f"<run {name}>".ljust(len(run_id), "_"))
    return text


def _fits(text: str, width: int) -> None:
    assert text.endswith("\n")
    assert max(len(line) for line in text.splitlines()) <= width


@pytest.mark.parametrize("columns", WIDTHS)
def test_metrics_table_fits_and_wraps_the_summary(columns: int) -> None:
    code, out, _ = invoke("metrics", "--family", "lexical", columns=columns)
    assert code == 0
    _fits(out, columns)
    if columns == 100:
        check_snapshot("cli_metrics_lexical_100.txt", out)
    else:
        check_snapshot("cli_metrics_lexical_60.txt", out)
    code, doc, _ = invoke("metrics", "--family", "lexical", "--format", "json")
    expected = [d for d in ef.metrics.available() if d.family == "lexical"]
    aliases = [a.name for a in ef.metrics.aliases() if a.definition.family == "lexical"]
    assert [r["name"] for r in json.loads(doc)] == [d.name for d in expected] + aliases
    assert aliases == ["rouge"]
    # Every summary is there in full: wrapped, never cut (joined back, words in order).
    flat = " ".join(out.split())
    for d in expected:
        assert d.name in out
        assert " ".join(d.summary.replace("``", "`").split()) in flat or columns < 100


def _table_rows(text: str, title: str) -> list[list[str]]:
    """The body rows of the plain table under ``title`` (split on the two-space gap)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    rule = next(i for i in range(start, len(lines)) if lines[i].startswith("---"))
    body = []
    for line in lines[rule + 1 :]:
        if not line.strip():
            break
        body.append([c.strip() for c in line.split("  ") if c.strip()])
    return body


@pytest.mark.parametrize("columns", WIDTHS)
def test_compare_text_fits_and_names_every_changed_pair(
    pair: tuple[Path, dict[str, str]], columns: int
) -> None:
    path, ids = pair
    code, out, _ = invoke("compare", "v1", "v2", "--store", str(path), columns=columns)
    assert code == 0
    _fits(out, columns)
    if columns == 100:
        check_snapshot("cli_compare_100.txt", _stable(out, ids))
    else:
        check_snapshot("cli_compare_60.txt", _stable(out, ids))
    comparison = ef.Store(path).compare("v1", "v2")
    pm = comparison.row_metrics
    if columns == 100:  # wide enough for whole cells: the oracle is the comparison itself
        for title, status in (("Regressed (row, metric)", "regressed"),
                              ("Improved (row, metric)", "improved")):  # fmt: skip
            want = pm.filter(pl.col("status") == status).select("sample_id", "metric").rows()
            got = [(r[0], r[1]) for r in _table_rows(out, title)]
            assert sorted(got) == sorted(want)
            assert {s for s, _ in got} <= set(CHANGED)


def test_compare_markdown_keeps_its_tables_and_json_its_document(
    pair: tuple[Path, dict[str, str]],
) -> None:
    path, _ = pair
    code, md, _ = invoke("compare", "v1", "v2", "--store", str(path), "--format", "markdown")
    assert code == 0
    assert md.startswith("# Comparison — support.faq\n")
    assert "| sample | metric | pass rate before → after |" in md
    assert "## Improved (row, metric) pairs (" in md
    code, doc, _ = invoke("compare", "v1", "v2", "--store", str(path), "--format", "json")
    assert json.loads(doc) == json.loads(ef.Store(path).compare("v1", "v2").to_json())


@pytest.mark.parametrize("columns", WIDTHS)
def test_gate_text_fits_and_lists_the_counted_pairs(
    pair: tuple[Path, dict[str, str]], columns: int
) -> None:
    path, ids = pair
    code, out, _ = invoke("gate", "v2", "--baseline", "v1", "--store", str(path), columns=columns)
    assert code == 1
    # The verdict, failures and notes are one line apiece (CI logs grep them); tables fit.
    verdict, tables = out.split("\n\n", 1)
    assert verdict.startswith("gate FAILED: ")
    assert [line[:2] for line in verdict.splitlines()[1:]] == ["- "]
    _fits(tables, columns)
    if columns == 100:
        check_snapshot("cli_gate_100.txt", _stable(out, ids))
    else:
        check_snapshot("cli_gate_60.txt", _stable(out, ids))
    if columns == 100:
        regressed = ef.Store(path).compare("v1", "v2").regressions()
        got = [(r[0], r[1]) for r in _table_rows(out, "Worst regressed pairs")]
        assert got == regressed.select("sample_id", "metric").rows()


def test_fit_table_cuts_wraps_or_stacks() -> None:
    from evalframe.views._format import fit_table

    rows = [("a", 1.5, "word " * 12), ("bb", 22, "short")]
    wide = fit_table(("key", "n", "text"), rows, None)
    assert wide[0].split() == ["key", "n", "text"]
    assert wide[2].startswith("a    1.5  word")  # numbers right-aligned under their header
    cut = fit_table(("key", "n", "text"), rows, 30)
    assert max(map(len, cut)) <= 30
    assert cut[2].endswith("…")
    assert len(cut) == 4
    wrapped = fit_table(("key", "n", "text"), rows, 30, wrap=("text",))
    assert max(map(len, wrapped)) <= 30
    assert len(wrapped) > 4
    assert " ".join(" ".join(wrapped).split()).count("word") == 12
    stacked = fit_table([f"column{i}" for i in range(12)], [tuple(range(12))], 40)
    assert stacked[0].startswith("-[ row 1 ]")
    assert stacked[1].split() == ["column0", "0"]
