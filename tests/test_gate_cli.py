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
    assert "- 2 row(s) regressed against previous (allowed: 0); 0 of 2 exceed" in out
    assert "within sampling noise" in out
    assert "| sample | pass rate before → after | score delta | beyond noise |" in out
    assert "| s1 | 1.0000 → 0.0000 |" in out
    assert "| s3 | 1.0000 → 0.0000 |" in out


def test_gate_allows_regressions_up_to_the_maximum(db: str) -> None:
    assert invoke("gate", "v2", "--baseline", "v1", "--max-regressions", "2", "--store", db)[0] == 0
    assert invoke("gate", "v2", "--baseline", "v1", "--max-regressions", "1", "--store", db)[0] == 1


def test_confident_only_counts_regressions_beyond_the_noise(db: str) -> None:
    # One repetition resolves nothing (resolution 1.0): no drop is confident.
    code, out, _ = invoke("gate", "v2", "--baseline", "v1", "--confident-only", "--store", db)
    assert code == 0, out
    code, out, _ = invoke(
        "gate", "v2", "--baseline", "v1", "--confident-only", "--epsilon", "0.1", "--store", db
    )
    assert code == 1
    assert "2 confident row(s) regressed against v1 (allowed: 0)" in out


def test_min_macro_f1_and_max_drop(db: str) -> None:
    gate = ("gate", "v2", "--baseline", "v1", "--max-regressions", "5", "--store", db)
    code, out, _ = invoke(*gate, "--min-macro-f1", "0.9")
    assert code == 1
    assert "macro-F1 0.8333 is below the minimum 0.9000" in out
    assert invoke(*gate, "--min-macro-f1", "0.8")[0] == 0
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
    assert "| s2 | 0 | no-forbidden-word | 0.0000 |" in out
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


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("gate", "v2", "--baseline", "nope"), "Unknown run reference 'nope'"),
        (("gate", "ghost", "--baseline", "v1"), "Unknown run reference 'ghost'"),
        (("gate", "v2", "--baseline", "baseline"), "No baseline for dataset 'gate'"),
        (("gate", "other", "--baseline", "v1"), "is of dataset 'other' but the reference"),
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
    assert "| gate |" in out


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


def test_sql_prints_query_results(db: str) -> None:
    query = "SELECT name, macro_f1 FROM runs ORDER BY name"
    code, out, _ = invoke("sql", query, "--store", db, "--format", "csv")
    assert code == 0
    assert out == "name,macro_f1\nv1,1.0\nv2,0.8333333333333333\n"
    code, out, _ = invoke("sql", query, "--store", db, "--format", "json")
    assert json.loads(out)[0] == {"name": "v1", "macro_f1": 1.0}
    code, out, _ = invoke("sql", query, "--store", db)
    assert code == 0
    assert "v2" in out
    code, _, err = invoke("sql", "SELECT nope FROM runs", "--store", db)
    assert code == 2
    assert "statement: SELECT nope FROM runs" in err


def test_compare_markdown_and_json(db: str) -> None:
    code, out, _ = invoke("compare", "v1", "v2", "--store", db, "--bootstrap", "200")
    assert code == 0
    assert out.startswith("# Comparison — gate\n")
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
