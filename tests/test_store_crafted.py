"""A store edited with plain DuckDB to read a file outside it never hands that file over.

Each craft takes a real store and redefines what DuckDB lets anyone redefine in it (every
view, macros named like built-in functions, a table swapped for a view, extra views,
registered part files pointing out of the store). Every reading command and ``ef.Store``
read then either answers exactly as on the untouched store (evalframe reads its own view
definitions) or refuses with one paragraph; the secret file's text appears in no output and
no file written.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

import evalframe as ef
from evalframe.cli import cli
from evalframe.store import Store
from evalframe.store._schema import VIEWS

SECRET = f"TOPSECRET-{uuid.uuid4().hex}"


def _store(folder: Path) -> tuple[str, str]:
    """A store of two runs of a tagged dataset (cohorts, failures, a baseline)."""
    ds = ef.Dataset.from_records(
        [
            {"id": f"s{i}", "input": {"q": f"q{i}"}, "expected_output": f"a{i}",
             "metadata": {"tags": ["red" if i % 2 else "blue"]}}
            for i in range(8)
        ],
        name="crafted",
    )  # fmt: skip
    store = Store(folder / "runs.duckdb")
    first = ef.evaluate(
        ds, outputs={f"s{i}": f"a{i}" if i % 3 else "no" for i in range(8)},
        metrics=["exact-match", "contains", "json-valid"], store=store,
    )  # fmt: skip
    second = ef.evaluate(
        ds, outputs={f"s{i}": f"a{i}" for i in range(8)},
        metrics=["exact-match", "contains", "json-valid"], store=store,
    )  # fmt: skip
    store.promote_baseline(first.run_id)
    return first.run_id, second.run_id


def _edit(db: Path, *statements: str) -> None:
    con = duckdb.connect(str(db))
    try:
        for statement in statements:
            con.execute(statement)
    finally:
        con.close()


def _read_secret(secret: Path) -> str:
    return f"(SELECT content FROM read_text('{secret}'))"


def every_view_reads_the_secret(db: Path, secret: Path) -> None:
    """Every view of the store, redefined to put the secret in each of its text columns."""
    con = duckdb.connect(str(db))
    try:
        views = con.execute(
            "SELECT view_name, sql FROM duckdb_views() WHERE NOT internal"
        ).fetchall()
        for name, sql in views:
            body = sql.split(" AS ", 1)[1].rstrip().rstrip(";")
            columns = con.execute(
                "SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = ?", [name]
            ).fetchall()
            cast = ", ".join(
                f"{_read_secret(secret)} AS {c}" if kind == "VARCHAR" else c for c, kind in columns
            )
            con.execute(f"CREATE OR REPLACE VIEW {name} AS SELECT {cast} FROM ({body})")
    finally:
        con.close()


def scores_view_reads_the_secret(db: Path, secret: Path) -> None:
    _edit(
        db,
        "CREATE OR REPLACE VIEW scores AS SELECT run_id, sample_id, repetition, "
        f"{_read_secret(secret)} AS metric, score, passed, error, "
        f"{_read_secret(secret)} AS details FROM stored_scores",
        "CREATE OR REPLACE VIEW run_outputs AS SELECT r.run_id, o.* EXCLUDE (run_id, "
        f"actual_output), {_read_secret(secret)} AS actual_output FROM runs AS r "
        "JOIN outputs AS o ON o.run_id = r.outputs_run_id",
    )


def builtins_redefined_as_macros(db: Path, secret: Path) -> None:
    _edit(
        db,
        f"CREATE MACRO avg(x) AS length({_read_secret(secret)})",
        "CREATE MACRO error(x) AS NULL",
        f"CREATE MACRO duckdb_tables() AS TABLE SELECT {_read_secret(secret)} AS table_name",
    )


def a_table_is_a_view(db: Path, secret: Path) -> None:
    _edit(
        db,
        "ALTER TABLE runs RENAME TO runs_kept",
        f"CREATE VIEW runs AS SELECT * REPLACE ({_read_secret(secret)} AS name) FROM runs_kept",
    )


def extra_tables_and_views(db: Path, secret: Path) -> None:
    _edit(
        db,
        f"CREATE VIEW leak AS SELECT content FROM read_text('{secret}')",
        "CREATE TABLE notes AS SELECT 'kept by hand' AS note",
        "CREATE SCHEMA mine",
        f"CREATE VIEW mine.scores AS SELECT content AS metric FROM read_text('{secret}')",
    )


def a_type_is_defined(db: Path, secret: Path) -> None:
    _edit(db, "CREATE TYPE json AS VARCHAR")


CRAFTS: dict[str, Callable[[Path, Path], None]] = {
    "every view reads the secret": every_view_reads_the_secret,
    "scores and outputs views read the secret": scores_view_reads_the_secret,
    "built-in functions redefined as macros": builtins_redefined_as_macros,
    "a table replaced by a view": a_table_is_a_view,
    "extra tables and views": extra_tables_and_views,
    "a type defined": a_type_is_defined,
}
REFUSED = {
    "built-in functions redefined as macros": "defines SQL macros",
    "a table replaced by a view": "its runs should be a table and is a view",
    "a type defined": "defines SQL types",
}


def commands(first: str, second: str, out: Path) -> dict[str, list[str]]:
    return {
        "runs": ["runs", "--format", "json"],
        "sql": ["sql", "SELECT metric, count(*), avg(score) FROM scores GROUP BY ALL ORDER BY 1"],
        "sql on a view": ["sql", "SELECT * FROM metric_summary ORDER BY ALL", "--format", "csv"],
        "report json": ["report", second, "--format", "json"],
        "report markdown": ["report", first, "--format", "markdown"],
        "compare": ["compare", first, second],
        "gate": ["gate", second, "--baseline", "baseline"],
        "brief": ["brief", second],
        "baseline list": ["baseline", "list"],
        "export": ["export", second, "--to", str(out)],
    }


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    folder = tmp_path_factory.mktemp("pristine")
    first, second = _store(folder)
    return folder, first, second


def _invoke(folder: Path, argv: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(cli, [*argv, "--store", str(folder / "runs.duckdb")])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def _files_text(folder: Path) -> str:
    return "".join(
        p.read_bytes().decode("utf-8", "replace") for p in sorted(folder.rglob("*")) if p.is_file()
    )


def _copies(source: Path, tmp_path: Path, craft: str) -> tuple[Path, Path, Path]:
    """An untouched copy of the store, a crafted one, and the secret file it reads (what
    plain DuckDB does with the crafted file: it hands the secret over)."""
    clean = tmp_path / "clean"
    shutil.copytree(source, clean)
    crafted = tmp_path / "crafted"
    shutil.copytree(source, crafted)
    secret = tmp_path / "x" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text(SECRET, encoding="utf-8")
    CRAFTS[craft](crafted / "runs.duckdb", secret)
    return clean, crafted, secret


@pytest.mark.parametrize("craft", list(CRAFTS))
def test_a_crafted_store_never_hands_over_a_file_outside_it(
    craft: str, pristine: tuple[Path, str, str], tmp_path: Path
) -> None:
    _, first, second = pristine
    clean, crafted, _ = _copies(pristine[0], tmp_path, craft)
    for name, argv in commands(first, second, tmp_path / "export").items():
        code, text = _invoke(crafted, argv)
        assert SECRET not in text, (craft, name)
        if craft in REFUSED:
            assert code == 2, (name, text)
            assert REFUSED[craft] in text, (name, text)
            assert "Nothing was read" in text, (name, text)
            assert len(text.strip().splitlines()) == 1, text
            continue
        if name == "export":  # once per store: a second export to one folder is refused
            argv[-1] = str(tmp_path / "export-clean")
        want_code, want = _invoke(clean, argv)
        assert code == want_code == 0, (name, text)
        assert text == want.replace("export-clean", "export"), name
    exported = tmp_path / "export"
    assert exported.exists() == (craft not in REFUSED)
    assert SECRET not in _files_text(exported) + _files_text(crafted)
    verify = CliRunner().invoke(cli, ["store", "verify", "--store", str(crafted / "runs.duckdb")])
    assert SECRET not in verify.output
    if craft == "extra tables and views":  # users may add views of their own: a note, not a problem
        assert verify.exit_code == 0
        assert "note: the view leak is not the schema's" in verify.output
    else:
        assert verify.exit_code == 1, verify.output


@pytest.mark.parametrize("craft", list(CRAFTS))
def test_store_reads_from_python_never_hand_over_a_file_outside_it(
    craft: str, pristine: tuple[Path, str, str], tmp_path: Path
) -> None:
    _, first, second = pristine
    clean, crafted, secret = _copies(pristine[0], tmp_path, craft)

    def reads(store: Store) -> list[object]:
        return [
            store.runs().drop("created_at"),
            store.sql("SELECT * FROM metric_summary ORDER BY ALL"),
            *(store.sql(f"SELECT * FROM {view} ORDER BY ALL") for view in VIEWS),
            store.load(second).report().to_json(),
            store.outputs_of(first),
            store.compare(first, second).to_dict(),
            store.baselines().drop("promoted_at"),
            store.calibrations(),
            store.resolve("SELECT run_id FROM runs ORDER BY seq LIMIT 1"),
        ]

    if craft in REFUSED:
        with pytest.raises(ef.StoreError, match=REFUSED[craft]) as caught:
            reads(Store(crafted / "runs.duckdb"))
        assert SECRET not in str(caught.value)
        return
    got = reads(Store(crafted / "runs.duckdb"))
    assert SECRET not in repr(got)
    want = reads(Store(clean / "runs.duckdb"))
    assert repr(got) == repr(want)
    for text in (f"SELECT * FROM read_text('{secret}')", "SELECT * FROM leak"):
        if text.endswith("leak") and craft != "extra tables and views":
            continue
        with pytest.raises(ef.StoreError, match="cannot read or write files") as caught:
            Store(crafted / "runs.duckdb").sql(text)
        assert SECRET not in str(caught.value)


def parts_point_outside(db: Path, secret: Path) -> None:
    """A run registering 'part files': one named out of the store's folder, one a symbolic
    link to the secret."""
    run_id = "feedfacefeedface"
    folder = Path(f"{db}.runs") / "scores" / f"run_id={run_id}"
    folder.mkdir(parents=True)
    os.symlink(secret, folder / "part-000000.parquet")
    size = secret.stat().st_size
    con = duckdb.connect(str(db))
    try:
        source = con.execute("SELECT run_id FROM runs ORDER BY seq LIMIT 1").fetchall()[0][0]
        con.execute(
            "INSERT INTO runs SELECT * REPLACE (? AS run_id, seq + 100 AS seq) FROM runs "
            "WHERE run_id = ?",
            [run_id, source],
        )
        con.execute(
            "INSERT INTO run_metrics SELECT * REPLACE (? AS run_id) FROM run_metrics "
            "WHERE run_id = ?",
            [run_id, source],
        )
        con.execute("INSERT INTO run_files VALUES (?, 'scores', 2, 2)", [run_id])
        con.execute(
            "INSERT INTO run_parts VALUES (?, 'scores', 'part-000000.parquet', 1, ?, 'x'), "
            "(?, 'scores', '../../../../secret.txt', 1, ?, 'x')",
            [run_id, size, run_id, size],
        )
    finally:
        con.close()


def test_part_files_registered_outside_the_store_are_never_read(
    pristine: tuple[Path, str, str], tmp_path: Path
) -> None:
    source, first, second = pristine
    crafted = tmp_path / "crafted"
    shutil.copytree(source, crafted)
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET, encoding="utf-8")
    parts_point_outside(crafted / "runs.duckdb", secret)
    code, text = _invoke(crafted, ["report", "feedfacefeedface", "--format", "json"])
    assert code == 2
    assert SECRET not in text
    assert text.startswith("error: Damaged store")
    assert "run feedfacefeedface" in text
    assert "secret.txt has a name that is not a part file's name" in text  # the first
    for argv in (
        ["report", second, "--format", "json"],
        ["sql", f"SELECT count(*) FROM scores WHERE run_id = '{second}'"],
        ["compare", first, second],
    ):
        code, text = _invoke(crafted, argv)
        want_code, want = _invoke(source, argv)
        assert (code, text) == (want_code, want), argv
    code, text = _invoke(crafted, ["sql", "SELECT count(*) FROM scores"])
    assert code == 2
    assert "run feedfacefeedface cannot be read" in text
    assert SECRET not in text
    verify = CliRunner().invoke(cli, ["store", "verify", "--store", str(crafted / "runs.duckdb")])
    assert verify.exit_code == 1
    assert SECRET not in verify.output
    assert "part-000000.parquet is not a regular file" in verify.output
    assert "secret.txt has a name that is not a part file's name" in verify.output
    store = Store(crafted / "runs.duckdb")
    link = (
        crafted / "runs.duckdb.runs" / "scores" / "run_id=feedfacefeedface" / "part-000000.parquet"
    )
    for text in (
        f"SELECT content FROM read_text('{link}')",
        f"SELECT * FROM read_parquet('{link}')",
    ):
        with pytest.raises(ef.StoreError, match="cannot read or write files") as caught:
            store.sql(text)  # the sandbox follows the link out of the store's folder, and refuses
        assert SECRET not in str(caught.value)
