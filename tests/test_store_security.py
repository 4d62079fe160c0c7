"""SQL from users reads the store and nothing else: no file, database or setting beyond it.

Every attack runs against a real store file, beside a second DuckDB file and a plain file,
through ``Store.sql``, the CLI in this process and the CLI as a real subprocess; the files'
SHA-256 and the directory listing are compared before and after.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

import evalframe as ef
from evalframe.cli import cli
from evalframe.core._errors import StoreError
from evalframe.store import Store
from evalframe.store import _schema as schema_ddl

SECRET = "s3cr3t-value-9f2c"


class Scene:
    """A store with two runs, another DuckDB file and a plain CSV file, all in one folder."""

    def __init__(self, folder: Path, run_id: str) -> None:
        self.folder = folder
        self.store_path = folder / "store.duckdb"
        self.other = folder / "other.duckdb"
        self.secret = folder / "secret.csv"
        self.store = Store(self.store_path)
        self.run_id = run_id

    @classmethod
    def build(cls, folder: Path) -> Scene:
        folder.mkdir()
        ds = ef.Dataset.from_records(
            [
                {"id": f"s{i}", "input": {"q": f"q{i}"}, "expected_output": f"a{i}", "tags": ["t"]}
                for i in range(6)
            ],
            name="sec",
        )
        outputs = {f"s{i}": f"a{i}" if i % 2 else "wrong" for i in range(6)}
        store = Store(folder / "store.duckdb")
        run = ef.evaluate(ds, outputs=outputs, metrics=["exact-match"], store=store)
        ef.evaluate(ds, outputs=outputs, metrics=["contains"], repetitions=2, store=store)
        con = duckdb.connect(str(folder / "other.duckdb"))
        con.execute("CREATE TABLE t AS SELECT 1 AS a")
        con.close()
        (folder / "secret.csv").write_text(f"name,value\nkey,{SECRET}\n", encoding="utf-8")
        return cls(folder, run.run_id)

    def state(self) -> dict[str, str]:
        """Every file in the folder (recursively) and its SHA-256."""
        return {
            str(p.relative_to(self.folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(self.folder.rglob("*"))
            if p.is_file()
        }

    def fill(self, text: str) -> str:
        return text.format(
            store=self.store_path, other=self.other, secret=self.secret, dir=self.folder
        )


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Scene:
    return Scene.build(tmp_path_factory.mktemp("template") / "scene")


@pytest.fixture
def scene(template: Scene, tmp_path: Path) -> Scene:
    folder = tmp_path / "scene"
    shutil.copytree(template.folder, folder)
    return Scene(folder, template.run_id)


ATTACKS = [
    "COPY (SELECT 1 AS x) TO '{store}'",
    "COPY (SELECT 1 AS x) TO '{store}' (FORMAT parquet)",
    "COPY runs TO '{dir}/leak.csv'",
    "ATTACH '{other}' AS o (READ_ONLY false); DELETE FROM o.t",
    "ATTACH '{other}' AS o",
    "ATTACH ':memory:' AS scratch",
    "EXPORT DATABASE '{dir}/dump'",
    "SELECT * FROM read_csv('{secret}')",
    "SELECT * FROM read_csv('/etc/passwd')",
    "FROM '{secret}'",
    "SELECT * FROM read_text('{secret}')",
    "SELECT * FROM glob('{dir}/*')",
    "SELECT * FROM query('SELECT * FROM read_csv(''{secret}'')')",
    "INSTALL httpfs",
    "LOAD json",
    "SET enable_external_access = true",
    "RESET lock_configuration",
    "PRAGMA enable_external_access",
    "CALL pragma_version()",
    "SELECT 1; SELECT 2",
    "SELECT 1; COPY (SELECT 1) TO '{store}'",
    "DELETE FROM runs",
    "CREATE TABLE x AS SELECT 1",
    "CHECKPOINT",
    "",
]


@pytest.mark.parametrize("attack", ATTACKS)
def test_store_sql_refuses_what_reaches_beyond_the_store(scene: Scene, attack: str) -> None:
    before = scene.state()
    text = scene.fill(attack)
    with pytest.raises(StoreError) as info:
        scene.store.sql(text)
    message = str(info.value)
    assert message.startswith("Refused: "), message
    assert "\n" not in message
    assert SECRET not in message
    assert scene.state() == before


@pytest.mark.parametrize("attack", ATTACKS)
def test_evalframe_sql_refuses_with_exit_2_and_one_line(scene: Scene, attack: str) -> None:
    before = scene.state()
    result = CliRunner().invoke(cli, ["sql", scene.fill(attack), "--store", str(scene.store_path)])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: Refused: ")
    assert result.stderr.count("\n") == 1
    assert "Traceback" not in result.stderr
    assert SECRET not in result.stdout + result.stderr
    assert scene.state() == before


@pytest.mark.parametrize(
    "attack",
    ["COPY (SELECT 1 AS x) TO '{store}'", "SELECT * FROM read_csv('{secret}')"],
)
def test_evalframe_sql_in_a_real_process_leaves_every_file_as_it_was(
    scene: Scene, attack: str
) -> None:
    before = scene.state()
    proc = subprocess.run(
        [sys.executable, "-m", "evalframe", "sql", scene.fill(attack)],
        capture_output=True,
        text=True,
        check=False,
        env={**_env(), "EVALFRAME_STORE": str(scene.store_path)},
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("error: Refused: ")
    assert "Traceback" not in proc.stderr
    assert SECRET not in proc.stdout + proc.stderr
    assert scene.state() == before
    assert Store(scene.store_path).runs().height == 2  # and the store still opens


def _env() -> dict[str, str]:
    import os

    return {**os.environ, "POLARS_MAX_THREADS": "1"}


def test_a_parse_error_is_one_line_without_a_caret(scene: Scene) -> None:
    with pytest.raises(StoreError, match=r"^The query does not parse: ") as info:
        scene.store.sql("SELEC * FROM runs")
    assert "\n" not in str(info.value)


def test_sql_references_are_checked_wherever_a_run_is_named(scene: Scene) -> None:
    before = scene.state()
    attack = "SELECT run_id FROM runs LIMIT 1; DELETE FROM scores"
    with pytest.raises(StoreError, match=r"^Refused: .* 2 statements"):
        scene.store.resolve(attack)
    with pytest.raises(StoreError, match=r"^Refused: "):
        scene.store.promote_baseline(attack)  # resolved before the write transaction
    with pytest.raises(StoreError, match=r"^Refused: .*Cannot access file"):
        scene.store.rescore(["contains"], runs=scene.fill("SELECT * FROM read_csv('{secret}')"))
    with pytest.raises(StoreError, match=r"^Refused: .*Cannot access file"):
        scene.store.compare(scene.fill("SELECT value FROM read_csv('{secret}')"), "latest")
    assert scene.state() == before
    # A legitimate reference query still works everywhere.
    query = "SELECT run_id FROM runs ORDER BY seq LIMIT 1"
    assert scene.store.resolve(query) == scene.run_id
    assert scene.store.promote_baseline(query, name="first") == "first"


def test_an_in_memory_store_refuses_every_statement_but_select(tmp_path: Path) -> None:
    target = tmp_path / "x.csv"
    with Store(":memory:") as mem:
        for attack in (
            f"COPY (SELECT 1) TO '{target}'",
            "ATTACH ':memory:' AS m",
            "SELECT 1; SELECT 2",
        ):
            with pytest.raises(StoreError, match=r"^Refused: "):
                mem.sql(attack)
        assert mem.sql("SELECT 41 + 1 AS x").item() == 42
    assert not target.exists()


# --- what keeps working ------------------------------------------------------------------------

ALLOWED = {
    "cte": (
        "WITH per AS (SELECT run_id, count(*) AS n FROM scores GROUP BY run_id) "
        "SELECT sum(n) AS total FROM per"
    ),
    "window": (
        "SELECT count(*) AS n FROM (SELECT score, row_number() OVER "
        "(PARTITION BY run_id ORDER BY sample_id, repetition) AS rn FROM scores) WHERE rn = 1"
    ),
    "scalar": (
        "SELECT upper(left(name, 2)) || '-' || lpad(CAST(n_samples AS VARCHAR), 3, '0') AS tag, "
        "round(macro_f1, 3) AS f1, json_extract_string(extra, '$.nope') AS nothing, "
        "list_sort(['b', 'a'])[1] AS first, regexp_replace(run_id, '[0-9]', '#', 'g') IS NOT NULL "
        "AS masked FROM runs ORDER BY seq"
    ),
    "quantile": "SELECT quantile_cont(score, 0.95) AS p95 FROM scores",
    "from-first": "FROM runs SELECT count(*) AS n",
    "values": "VALUES (1, 'a'), (2, 'b')",
    "describe": "DESCRIBE runs",
    "summarize": "SUMMARIZE scores",
    "show": "SHOW TABLES",
    "catalog": "SELECT count(*) AS n FROM duckdb_views() WHERE NOT internal",
    "trailing semicolon": "SELECT count(*) AS n FROM runs;",
}


def _oracle(scene: Scene, text: str) -> list[tuple[object, ...]]:
    """The same query on a plain read-only DuckDB connection, outside evalframe."""
    con = duckdb.connect(str(scene.store_path), read_only=True)
    try:
        return con.execute(text).fetchall()
    finally:
        con.close()


@pytest.mark.parametrize("name", list(ALLOWED))
def test_selects_keep_working_through_the_store_and_the_cli(scene: Scene, name: str) -> None:
    text = ALLOWED[name]
    want = _oracle(scene, text)
    # evalframe's connections read the scores and sample_stats views they build themselves
    # (temporary views, which the catalog lists beside the file's own).
    if name == "show":
        want = sorted([*want, ("sample_stats",), ("scores",)])
    if name == "catalog":
        want = [(want[0][0] + 2,)]
    got = scene.store.sql(text)
    assert got.rows() == want
    result = CliRunner().invoke(
        cli, ["sql", text, "--store", str(scene.store_path), "--format", "csv"]
    )
    assert result.exit_code == 0, result.stderr
    assert len(result.stdout.strip().splitlines()) == len(want) + 1  # header + rows


@pytest.mark.parametrize("relation", [*schema_ddl.TABLES, *schema_ddl.VIEWS])
def test_every_table_and_view_is_readable(scene: Scene, relation: str) -> None:
    text = f"SELECT count(*) AS n FROM {relation}"
    (want,) = _oracle(scene, text)[0]
    assert scene.store.sql(text).item() == want
    result = CliRunner().invoke(
        cli, ["sql", text, "--store", str(scene.store_path), "--format", "json"]
    )
    assert result.exit_code == 0, result.stderr
    assert result.stdout.count(f'"n": {want}') == 1


def test_parameters_still_bind(scene: Scene) -> None:
    got = scene.store.sql("SELECT name FROM runs WHERE run_id = $id", {"id": scene.run_id})
    assert got.item() == "sec"
    assert scene.store.sql("SELECT ? + ? AS s", [40, 2]).item() == 42


def test_a_connection_of_your_own_keeps_reads_working_and_sql_says_why_it_cannot(
    scene: Scene,
) -> None:
    mine = duckdb.connect(str(scene.store_path), read_only=True)
    try:
        store = Store(scene.store_path, timeout=60)
        assert store.runs().height == 2  # plain reads share the caller's connection settings
        assert store.load(scene.run_id).run_id == scene.run_id
        with pytest.raises(StoreError, match="a connection evalframe did not make") as info:
            store.sql("SELECT count(*) FROM runs")  # refused at once, not after the timeout
        assert "Close that connection" in str(info.value)
        with pytest.raises(StoreError, match="a connection evalframe did not make"):
            store.resolve("SELECT run_id FROM runs LIMIT 1")
    finally:
        mine.close()
    assert store.sql("SELECT count(*) FROM runs").item() == 2
