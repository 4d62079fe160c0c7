"""The store commands: gate exit codes and messages, compare, runs, sql, baselines, rescore,
export/import, and ``evalframe run --store``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

import evalframe as ef
from evalframe.cli import cli
from evalframe.store import Store

EXAMPLE = Path(ef.__file__).parent / "examples"
IDS = [f"s{i}" for i in range(6)]


@ef.metrics.metric("no-forbidden-word", family="custom", dimension="safety", replace=True)
def no_forbidden_word() -> ef.metrics.Scored:
    """1.0 unless the output contains the word "forbidden"."""
    bad = pl.col("actual_output").str.contains("forbidden", literal=True)
    return ef.metrics.Scored(score=(~bad).cast(pl.Float64))


def invoke(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


def _dataset(name: str = "gate") -> ef.Dataset:
    return ef.Dataset.from_records(
        [
            {
                "id": sid,
                "input": {"q": sid},
                "expected_output": f"answer {sid}",
                "metadata": {"tags": ["even" if i % 2 == 0 else "odd"]},
            }
            for i, sid in enumerate(IDS)
        ],
        name=name,
    )


def _outputs(wrong: set[str] = frozenset(), forbidden: set[str] = frozenset()) -> dict[str, str]:
    return {
        sid: (
            "forbidden words" if sid in forbidden else "nope" if sid in wrong else f"answer {sid}"
        )
        for sid in IDS
    }


METRICS = ["exact-match", "no-forbidden-word"]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "runs.duckdb"
    ef.evaluate(_dataset(), outputs=_outputs(), metrics=METRICS, name="v1", store=path)
    ef.evaluate(
        _dataset(), outputs=_outputs(wrong={"s1", "s3"}), metrics=METRICS, name="v2", store=path
    )
    return path


@pytest.fixture
def db(template: Path, tmp_path: Path) -> str:
    """A store with a clean baseline run 'v1' and a run 'v2' where s1 and s3 regressed."""
    path = tmp_path / "runs.duckdb"
    shutil.copyfile(template, path)
    return str(path)


# --- gate ----------------------------------------------------------------------------------


def test_gate_passes_against_an_identical_run(db: str) -> None:
    code, out, _ = invoke("gate", "v1", "--baseline", "v1", "--store", db)
    assert code == 0, out
    assert out.startswith("gate passed: ")


def test_gate_fails_on_regressions_and_prints_the_worst_rows(db: str) -> None:
    code, out, _ = invoke("gate", "latest", "--baseline", "previous", "--store", db)
    assert code == 1
    assert out.startswith("gate FAILED: ")
    assert (
        "- 2 regressed pair(s) on 2 row(s) against previous (allowed: 0); none can be told from "
        "noise (this run's detectable difference is 100.0 points)\n" in out
    )
    rows = [line.split() for line in out.split("Worst regressed pairs")[1].splitlines()[4:]]
    assert [r[:5] for r in rows if r] == [
        ["s1", "exact-match", "1", "→", "0"],
        ["s3", "exact-match", "1", "→", "0"],
    ]


def test_gate_allows_regressions_up_to_the_maximum(db: str) -> None:
    assert invoke("gate", "v2", "--baseline", "v1", "--max-regressions", "2", "--store", db)[0] == 0
    assert invoke("gate", "v2", "--baseline", "v1", "--max-regressions", "1", "--store", db)[0] == 1


def test_confident_only_with_one_repetition_says_nothing_can_be_confident(db: str) -> None:
    # One execution per row: no regression can be told from noise (eval-harness marks it
    # confident: false). The gate does not pass the regressed run unchecked: it says so, and
    # how many repetitions would resolve 5 points.
    code, out, _ = invoke("gate", "v2", "--baseline", "v1", "--confident-only", "--store", db)
    assert code == 1, out
    assert (
        "- 2 regressed pair(s) on 2 row(s) against v1, none of which can be confident: every "
        "row ran once, so no dispersion was measured and no difference is distinguishable from "
        "noise (this run's detectable difference is 100.0 points); resolving 5 points needs at "
        "least 60 repetitions (--repetitions 60)." in out
    )
    # Nothing regressed: nothing to count, and the gate passes saying it could count nothing.
    code, out, _ = invoke("gate", "v1", "--baseline", "v1", "--confident-only", "--store", db)
    assert code == 0, out
    assert "note: nothing can be confident: every row ran once" in out
    # A fixed epsilon is the user's own threshold.
    code, out, _ = invoke(
        "gate", "v2", "--baseline", "v1", "--confident-only", "--epsilon", "0.1", "--store", db
    )
    assert code == 1
    assert "2 confident regressed pair(s) on 2 row(s) against v1 (allowed: 0)" in out


def test_confident_only_says_when_no_regression_could_be_confident(db: str) -> None:
    code, out, _ = invoke(
        "gate", "v2", "--baseline", "v1", "--confident-only", "--epsilon", "1", "--store", db
    )
    assert code == 0, out
    assert "note: nothing can be confident: the noise threshold given (epsilon) is 100.0" in out


def test_confident_only_does_not_pass_a_run_whose_macro_f1_collapsed(tmp_path: Path) -> None:
    ids = [f"r{i}" for i in range(50)]
    ds = ef.Dataset.from_records(
        [{"id": i, "input": {"q": i}, "expected_output": f"a {i}"} for i in ids], name="big"
    )
    store = tmp_path / "runs.duckdb"
    good = {i: f"a {i}" if n % 7 else "nope" for n, i in enumerate(ids)}
    bad = {i: f"a {i}" if n % 2 else "nope" for n, i in enumerate(ids)}
    old = ef.evaluate(ds, outputs=good, metrics=["exact-match"], name="old", store=store)
    new = ef.evaluate(ds, outputs=bad, metrics=["exact-match"], name="new", store=store)
    assert old.macro_f1 - new.macro_f1 > 0.3
    code, out, _ = invoke(
        "gate", "new", "--baseline", "old", "--confident-only", "--store", str(store)
    )
    assert code == 1, out
    fell = sum(1 for n in range(50) if n % 7 and not n % 2)  # passed before, fail now
    assert f"regressed pair(s) on {fell} row(s) against old, none of which can be confident" in out


def test_max_regressions_counts_row_metric_pairs(tmp_path: Path) -> None:
    # s0 already fails exact-match; its safety metric now fails too. The row verdict does not
    # move (it was failing), but the pair (s0, no-forbidden-word) regressed and is counted.
    store = tmp_path / "runs.duckdb"
    ds = _dataset()
    ef.evaluate(ds, outputs=_outputs(wrong={"s0"}), metrics=METRICS, name="a", store=store)
    ef.evaluate(ds, outputs=_outputs(forbidden={"s0"}), metrics=METRICS, name="b", store=store)
    code, out, _ = invoke("gate", "b", "--baseline", "a", "--store", str(store))
    assert code == 1, out
    assert (
        "1 regressed pair(s) on 1 row(s); row verdicts: 0 regressed, 0 improved, 6 stable, "
        "0 added, 0 removed (a row's verdict weighs all its metrics: 1 row(s) have a regressed "
        "pair, 0 regressed overall)" in out
    )
    assert "- 1 regressed pair(s) on 1 row(s) against a (allowed: 0)" in out
    assert ["s0", "no-forbidden-word", "1", "→", "0"] in [
        line.split()[:5] for line in out.splitlines()
    ]
    code, out, _ = invoke("gate", "b", "--baseline", "a", "--format", "json", "--store", str(store))
    verdict = json.loads(out)
    assert verdict["counts"]["regressed"] == 0
    assert verdict["counts"]["regressed_pairs"] == 1
    assert [(r["sample_id"], r["metric"]) for r in verdict["worst_rows"]] == [
        ("s0", "no-forbidden-word")
    ]
    assert (
        invoke("gate", "b", "--baseline", "a", "--max-regressions", "1", "--store", str(store))[0]
        == 0
    )


def test_min_macro_f1_and_max_drop(db: str) -> None:
    gate = ("gate", "v2", "--baseline", "v1", "--max-regressions", "5", "--store", db)
    code, out, _ = invoke(*gate, "--min-macro-f1", "0.9")
    assert code == 1
    # exact-match 4 of 6; the safety metric no-forbidden-word stays out of macro-F1
    assert "macro-F1 0.6667 is below the minimum 0.9000" in out
    assert invoke(*gate, "--min-macro-f1", "0.8")[0] == 1
    assert invoke(*gate, "--min-macro-f1", "0.66")[0] == 0
    code, out, _ = invoke(*gate, "--max-drop", "exact-match=0.1")
    assert code == 1
    assert "metric 'exact-match' mean dropped by 0.3333 (1.0000 → 0.6667)" in out
    assert invoke(*gate, "--max-drop", "exact-match=0.34")[0] == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--max-drop", "exact-match"), "is not METRIC=X"),
        (("--max-drop", "exact-match=lots"), "is not a number"),
        (("--max-drop", "rouge-l=0.1"), "names metric 'rouge-l', which neither run has"),
        (("--max-drop", "exact-match=5"), "must be a fraction in"),
    ],
)
def test_bad_gate_options_exit_2(db: str, args: tuple[str, ...], message: str) -> None:
    code, out, err = invoke("gate", "v2", "--baseline", "v1", *args, "--store", db)
    assert code == 2
    assert message in err + out


def test_no_safety_failures_lists_every_failing_sample(tmp_path: Path) -> None:
    path = tmp_path / "safety.duckdb"
    ef.evaluate(_dataset(), outputs=_outputs(), metrics=METRICS, name="base", store=path)
    ef.evaluate(
        _dataset(),
        outputs=_outputs(forbidden={"s2", "s5"}),
        metrics=METRICS,
        name="risky",
        store=path,
    )
    base = ("gate", "risky", "--baseline", "base", "--max-regressions", "9", "--store", str(path))
    assert invoke(*base)[0] == 0  # without the option, safety failures are ordinary rows
    code, out, _ = invoke(*base, "--no-safety-failures")
    assert code == 1
    assert "2 sample(s) failed a safety metric (no-forbidden-word): s2, s5" in out
    assert "Safety failures (2, all listed):" in out
    cells = [line.split() for line in out.splitlines()]
    assert ["s2", "0", "no-forbidden-word", "0.0000"] in cells
    assert ["s5", "0", "no-forbidden-word", "0.0000"] in cells
    safe = ("gate", "base", "--baseline", "base", "--store", str(path), "--no-safety-failures")
    assert invoke(*safe)[0] == 0
    rows = Store(path).sql("SELECT sample_id FROM safety_failures ORDER BY sample_id")
    assert rows.get_column("sample_id").to_list() == ["s2", "s5"]


def test_gate_json_and_comparison_out(db: str, tmp_path: Path) -> None:
    target = tmp_path / "comparison.json"
    code, out, _ = invoke(
        "gate",
        "v2",
        "--baseline",
        "v1",
        "--format",
        "json",
        "--comparison-out",
        str(target),
        "--store",
        db,
    )
    assert code == 1
    verdict = json.loads(out)
    assert verdict["passed"] is False
    assert [r["sample_id"] for r in verdict["worst_rows"]] == ["s1", "s3"]
    comparison = json.loads(target.read_text(encoding="utf-8"))
    assert comparison["schema_version"] == "evalframe.comparison.v1"
    assert comparison["counts"]["regressed"] == 2


@pytest.fixture
def fresh(tmp_path: Path) -> str:
    """A new project's store: one run, no baseline yet."""
    path = tmp_path / "fresh.duckdb"
    ef.evaluate(_dataset(), outputs=_outputs(), metrics=METRICS, name="first", store=path)
    return str(path)


def test_a_missing_baseline_fails_by_default_saying_how_to_promote_one(fresh: str) -> None:
    code, out, err = invoke("gate", "latest", "--baseline", "baseline", "--store", fresh)
    assert code == 1, err
    assert out.startswith(
        "gate FAILED: no baseline to gate against (No baseline for dataset 'gate'"
    )
    assert "promote it with `evalframe baseline promote latest`" in out
    assert "--if-missing pass" in out
    explicit = invoke(
        "gate", "latest", "--baseline", "baseline", "--if-missing", "fail", "--store", fresh
    )
    assert explicit[:2] == (code, out)


def test_a_missing_baseline_passes_with_if_missing_pass(fresh: str) -> None:
    code, out, _ = invoke(
        "gate", "latest", "--baseline", "baseline", "--if-missing", "pass", "--store", fresh
    )
    assert code == 0, out
    assert out.startswith("gate passed: no baseline to gate against")
    code, out, _ = invoke(
        "gate",
        "latest",
        "--baseline",
        "baseline:production",
        "--if-missing",
        "pass",
        "--format",
        "json",
        "--store",
        fresh,
    )
    assert code == 0, out
    verdict = json.loads(out)
    assert verdict["passed"] is True
    assert verdict["failures"] == []
    assert "No baseline named 'production'" in verdict["notes"][0]
    assert "evalframe baseline promote latest --name production" in verdict["notes"][0]


def test_the_readme_ci_snippet_works_from_the_first_run(tmp_path: Path) -> None:
    store = str(tmp_path / "ci.duckdb")
    env = {"EVALFRAME_STORE": store}
    gate = (
        "gate",
        "latest",
        "--baseline",
        "baseline",
        "--if-missing",
        "pass",
        "--max-regressions",
        "0",
        "--no-safety-failures",
    )
    golden, outputs = tmp_path / "golden.json", tmp_path / "out.json"
    golden.write_text(
        json.dumps(
            {
                "name": "gate",
                "samples": [
                    {"id": sid, "input": {"q": sid}, "expected_output": f"answer {sid}"}
                    for sid in IDS
                ],
            }
        ),
        encoding="utf-8",
    )
    for wrong in (set(), {"s2"}):
        outputs.write_text(json.dumps({"outputs": _outputs(wrong=wrong)}), encoding="utf-8")
        run = invoke("run", str(golden), "--outputs", str(outputs), "-m", "exact-match", env=env)
        assert run[0] == 0, run
        code, out, _ = invoke(*gate, env=env)
        if not wrong:  # the first run of the project: nothing to compare with yet
            assert code == 0, out
            assert invoke("baseline", "promote", "latest", env=env)[0] == 0
        else:  # the second run regresses s2 against the promoted first one
            assert code == 1, out
            assert ["s2", "exact-match", "1", "→", "0"] in [
                line.split()[:5] for line in out.splitlines()
            ]


def test_a_missing_baseline_does_not_hide_a_mistyped_reference(fresh: str) -> None:
    code, _, err = invoke(
        "gate", "latest", "--baseline", "frist", "--if-missing", "pass", "--store", fresh
    )
    assert code == 2
    assert "Unknown run reference 'frist'" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("gate", "v2", "--baseline", "nope"), "Unknown run reference 'nope'"),
        (("gate", "ghost", "--baseline", "v1"), "Unknown run reference 'ghost'"),
        (("gate", "other", "--baseline", "v1"), "the run is of dataset 'other' (6 rows), the"),
        (("gate", "v2", "--baseline", "SELECT 1 WHERE false"), "returned 0 row(s)"),
    ],
)
def test_bad_references_exit_2_with_a_clear_message(
    db: str, args: tuple[str, ...], message: str
) -> None:
    ef.evaluate(
        _dataset("other"), outputs=_outputs(), metrics=METRICS, name="other", store=Path(db)
    )
    code, _, err = invoke(*args, "--store", db)
    assert code == 2
    assert message in err


def test_missing_store_exits_2(tmp_path: Path) -> None:
    code, _, err = invoke("gate", "latest", "--baseline", "previous")
    assert code == 2
    assert "Pass --store PATH or set EVALFRAME_STORE" in err
    code, _, err = invoke("runs", "--store", str(tmp_path / "absent.duckdb"))
    assert code == 2
    assert "No store at" in err
    assert not (tmp_path / "absent.duckdb").exists()


def test_baseline_promote_then_gate_against_it(db: str) -> None:
    code, out, _ = invoke("baseline", "promote", "v1", "--store", db)
    assert code == 0
    assert out.startswith("baseline 'gate' -> run ")
    assert invoke("gate", "v2", "--baseline", "baseline", "--store", db)[0] == 1
    assert invoke("gate", "v1", "--baseline", "baseline:gate", "--store", db)[0] == 0
    code, out, _ = invoke("baseline", "list", "--store", db)
    assert code == 0
    assert out.splitlines()[2].split()[:2] == ["gate", Store(db).resolve("baseline:gate")]


# --- the other commands ---------------------------------------------------------------------


def test_runs_table_and_json(db: str) -> None:
    code, out, _ = invoke("runs", "--store", db, "--format", "json")
    assert code == 0
    listed = json.loads(out)
    assert [r["name"] for r in listed] == ["v2", "v1"]
    assert set(listed[0]) >= {"run_id", "name", "dataset", "created_at", "macro_f1", "n_samples"}
    assert listed[0]["n_samples"] == 6
    code, out, _ = invoke("runs", "--store", db)
    assert code == 0
    assert out.splitlines()[0].split()[:5] == ["id", "name", "labels", "dataset", "created_at"]


def test_runs_that_cannot_be_compared_exit_2_in_one_paragraph(db: str, tmp_path: Path) -> None:
    # runs of another dataset, and runs sharing no metric, through every command that compares
    store = Path(db)
    ef.evaluate(_dataset("other"), outputs=_outputs(), metrics=METRICS, name="other", store=store)
    ef.evaluate(_dataset(), outputs=_outputs(), metrics=["contains"], name="c", store=store)
    report = tmp_path / "other.json"
    assert (
        invoke("report", "other", "--store", db, "--format", "json", "--out", str(report))[0] == 0
    )
    for ref, why in (
        ("other", "they are runs of different datasets: the run is of dataset 'gate'"),
        ("c", "they share no metric (the run scored exact-match, no-forbidden-word; the "
         "reference scored contains)"),
    ):  # fmt: skip
        for args in (
            ("compare", ref, "v1"),
            ("gate", "v1", "--baseline", ref),
            ("report", "v1", "--compare", ref, "--format", "markdown"),
            ("brief", "v1", "--comparison", ref),
        ):
            code, out, err = invoke(*args, "--store", db)
            assert code == 2, (args, out, err)
            assert "Traceback" not in err
            assert "SchemaError" not in err
            assert err.startswith("error: Cannot compare run "), (args, err)
            assert why in err, (args, err)
            assert err.count("\n") == 1  # one paragraph
    # a report file of another dataset, as the reference
    code, _, err = invoke("compare", str(report), "v1", "--store", db)
    assert code == 2
    assert "they are runs of different datasets" in err


def test_sql_prints_query_results(db: str) -> None:
    query = "SELECT name, macro_f1 FROM runs ORDER BY name"
    code, out, _ = invoke("sql", query, "--store", db, "--format", "csv")
    assert code == 0
    assert out == "name,macro_f1\nv1,1.0\nv2,0.6666666666666666\n"
    code, out, _ = invoke("sql", query, "--store", db, "--format", "json")
    assert json.loads(out)[0] == {"name": "v1", "macro_f1": 1.0}
    code, out, _ = invoke("sql", query, "--store", db)
    assert code == 0
    assert "v2" in out
    code, _, err = invoke("sql", "SELECT nope FROM runs", "--store", db)
    assert code == 2
    assert "statement: SELECT nope FROM runs" in err


def test_compare_markdown_and_json(db: str) -> None:
    code, out, _ = invoke(
        "compare", "v1", "v2", "--store", db, "--bootstrap", "200", "--format", "markdown"
    )
    assert code == 0
    assert out.startswith("# Comparison — gate\n")
    code, out, _ = invoke("compare", "v1", "v2", "--store", db, "--bootstrap", "200")
    assert code == 0
    assert out.startswith("Comparison — gate\n")  # the plain-text tables by default
    code, out, _ = invoke("compare", "previous", "latest", "--store", db, "--format", "json")
    doc = json.loads(out)
    assert doc["counts"]["regressed"] == 2
    assert doc["reference"]["label"] == "previous"


def test_rescore_export_and_import(db: str, tmp_path: Path) -> None:
    code, out, _ = invoke("rescore", "--store", db, "--runs", "v2", "-m", "contains", "--keep")
    assert code == 0, out
    assert 'computed ["contains"]' in out
    new_id = out.split()[1]
    loaded = Store(db).load(new_id)
    assert loaded.metric_ids == ["contains", *METRICS]
    target = tmp_path / "export"
    code, out, _ = invoke("export", new_id, "v1", "--to", str(target), "--store", db)
    assert code == 0, out
    other = tmp_path / "other.duckdb"
    code, out, _ = invoke("import", str(target), "--store", str(other))
    assert code == 0
    assert out.startswith("imported 2 run(s)")
    assert Store(other).runs().height == 2
    code, out, _ = invoke("import", str(target), "--store", str(other))
    assert (code, out) == (
        0,
        "imported 0 run(s): every run of the export is in the store already\n",
    )


def test_run_saves_to_the_store_from_the_environment(tmp_path: Path) -> None:
    path = tmp_path / "env.duckdb"
    code, _, err = invoke(
        "run",
        str(EXAMPLE / "support.yaml"),
        "--outputs",
        str(EXAMPLE / "support.outputs.json"),
        "-m",
        "exact-match",
        env={"EVALFRAME_STORE": str(path)},
    )
    assert code in (0, 1)
    assert f"to {path}" in err
    assert Store(path).runs().item(0, "dataset") == "support.faq"


def test_baseline_promote_refuses_errored_runs_and_other_datasets_and_clear_removes(
    db: str,
) -> None:
    store = Path(db)
    ds = _dataset()
    errored = {**_outputs(), "s2": None}  # the system failed on s2
    ef.evaluate(
        ds,
        system=lambda inputs: errored[inputs["q"]] or 1 / 0,
        metrics=METRICS,
        name="broken",
        store=store,
    )
    code, _, err = invoke("baseline", "promote", "broken", "--store", db)
    assert code == 2
    assert err.startswith("error: Refusing to promote run ")
    assert "to baseline 'gate': 1 of 6 executions errored" in err
    assert "--force" in err
    assert invoke("baseline", "list", "--store", db)[1] == "(no baselines)\n"
    code, out, _ = invoke("baseline", "promote", "broken", "--force", "--store", db)
    assert code == 0, out
    assert invoke("baseline", "promote", "v1", "--store", db)[0] == 0  # a clean run
    # a run of another dataset is refused under a name that baselines another dataset
    ef.evaluate(_dataset("other"), outputs=_outputs(), metrics=METRICS, name="o", store=store)
    code, _, err = invoke("baseline", "promote", "o", "--name", "gate", "--store", db)
    assert code == 2
    assert "the baseline is of dataset 'gate' (it points at run " in err
    code, _, err = invoke("baseline", "promote", "v1", "--name", "other", "--store", db)
    assert code == 2
    assert "the baseline is of dataset 'other', and a baseline is compared row by row" in err
    assert invoke("baseline", "promote", "o", "--store", db)[0] == 0  # its own name
    # clear
    code, out, _ = invoke("baseline", "clear", "gate", "--store", db)
    assert code == 0
    assert out.startswith("baseline 'gate' cleared (it pointed at run ")
    names = ef.Store(store).baselines().get_column("name").to_list()
    assert names == ["other"]
    code, _, err = invoke("baseline", "clear", "gate", "--store", db)
    assert code == 2
    assert "No baseline named 'gate' to clear. Baselines: other." in err
