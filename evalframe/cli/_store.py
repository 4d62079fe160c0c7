"""Store commands: sql, runs, compare, gate, baseline, rescore, import and store (verify,
unlock); export is in _export.

Every command takes ``--store PATH`` (default: the ``EVALFRAME_STORE`` environment variable).
Exit codes: 0 on success, 1 when ``gate`` fails or a metric ``rescore`` computed failed on a
row, 2 on usage, reference or store errors (one paragraph on stderr, no traceback).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
import polars as pl

from evalframe.cli._options import (
    EXIT_CODES,
    ProviderSettings,
    dask_option,
    emit,
    format_option,
    memory_limit_option,
    open_store,
    out_option,
    provider_options,
    store_option,
    table_format_option,
)
from evalframe.cli._table import render, terminal_width, write_frame
from evalframe.core._errors import StoreError
from evalframe.views._compare_render import comparison_text, fmt, gate_text

F = TypeVar("F", bound=Callable[..., Any])

__all__ = [
    "baseline",
    "compare_cmd",
    "gate_cmd",
    "import_cmd",
    "rescore",
    "runs",
    "sql",
    "store_group",
]


class _SqlCommand(click.Command):
    """``sql``, whose help names the store's tables and views as its schema defines them."""

    def format_help_text(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        from evalframe.store._adversarial import TABLE as ADVERSARIAL
        from evalframe.store._files import IN_PLACE
        from evalframe.store._schema import TABLES, VIEWS

        tables = ", ".join([*TABLES, ADVERSARIAL])
        views = ", ".join([*IN_PLACE, *VIEWS])
        original = self.help or ""
        self.help = original.replace("{tables}", tables).replace("{views}", views)
        try:
            super().format_help_text(ctx, formatter)
        finally:
            self.help = original


@click.command(cls=_SqlCommand)
@click.argument("query")
@store_option()
@table_format_option
@click.option("--max-rows", type=click.IntRange(min=1), default=100, show_default=True)
def sql(query: str, store_path: Path | None, output: str, out: Path | None, max_rows: int) -> None:
    """Run a SQL QUERY on the store (read-only) and print the result.

    QUERY is one SELECT (WITH, FROM-first, VALUES, DESCRIBE, SUMMARIZE and SHOW included);
    other statements, several statements, and reading or writing any file, URL or setting
    are refused with one line and exit code 2.

    Tables: {tables}. Views: {views}.

    \b
    Their columns: docs/store-schema.md.

    --format table fits the terminal width (cut cells end in an ellipsis) and shows at most
    --max-rows rows; csv, json and parquet (which needs --out) carry every row.
    """
    frame = open_store(store_path).sql(query)
    write_frame(frame, output, out, max_rows if output == "table" else None)


@click.command()
@store_option()
@table_format_option
@click.option("--dataset", help="Only runs of this dataset.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="At most N runs.")
def runs(
    store_path: Path | None, output: str, out: Path | None, dataset: str | None, limit: int | None
) -> None:
    """List stored runs, newest first: id, name, labels, dataset, created_at, macro_f1, n
    samples and, for a rescored run, its lineage: the run it was rescored from (and that one's
    source, ...). csv, json and parquet carry every column of the run list."""
    store = open_store(store_path)
    frame = store.runs(dataset=dataset, limit=limit)
    if output != "table":
        if output != "parquet":
            frame = frame.with_columns(pl.col("created_at").dt.strftime("%Y-%m-%dT%H:%M:%S%.6fZ"))
        if output == "csv":  # a list has no CSV cell: the ids, nearest source first
            frame = frame.with_columns(pl.col("lineage").list.join(" "))
        write_frame(frame, output, out, None)
        return
    if frame.height == 0:
        emit("(no runs)\n", out)
        return
    names = _run_names(store, frame)
    body: list[tuple[Any, ...]] = [
        (
            r["run_id"],
            r["name"],
            _labels_text(r["labels"]),
            r["dataset"],
            r["created_at"].strftime("%Y-%m-%d %H:%M:%S"),
            fmt(r["macro_f1"]),
            r["n_samples"],
            " ← ".join(f"{a} ({names.get(a, '?')})" for a in r["lineage"]),
        )
        for r in frame.iter_rows(named=True)
    ]
    headers: tuple[str, ...] = (
        "id",
        "name",
        "labels",
        "dataset",
        "created_at (UTC)",
        "macro_f1",
        "samples",
        "rescored from",
    )
    agreement = frame.get_column("judge_agreement")
    if agreement.null_count() < frame.height:  # a calibration vouches for some run's judge
        headers = (*headers, "judge agreement")
        body = [
            (*row, fmt(a) if a is not None else "") for row, a in zip(body, agreement, strict=True)
        ]
    emit(render(headers, body) + "\n", out)


def _run_names(store: Any, frame: pl.DataFrame) -> dict[str, str]:
    """The names of the runs the listed runs were rescored from."""
    ids = sorted({a for lineage in frame.get_column("lineage").to_list() for a in lineage})
    if not ids:
        return {}
    found = store.sql("SELECT run_id, name FROM runs WHERE list_contains(?, run_id)", [ids])
    return dict(found.iter_rows())


def _labels_text(raw: str | None) -> str:
    """``k=v, k2=v2`` from the stored JSON labels."""
    labels = json.loads(raw) if raw else {}
    return ", ".join(f"{k}={v}" for k, v in labels.items())


def _stats_options(f: F) -> F:
    for option in reversed(
        [
            click.option(
                "--epsilon",
                type=click.FloatRange(0.0, 1.0),
                default=None,
                help="A fixed noise threshold for row verdicts (default: the run's resolution).",
            ),
            click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed."),
            click.option(
                "--bootstrap",
                "n_bootstrap",
                type=click.IntRange(min=0),
                default=2000,
                show_default=True,
                help="Bootstrap resamples (0 skips the intervals).",
            ),
        ]
    ):
        f = option(f)
    return f


@click.command("compare", epilog=EXIT_CODES)
@click.argument("before")
@click.argument("after")
@store_option()
@_stats_options
@format_option("output", "text", "markdown", "json")
@out_option("Write it here.")
@click.option(
    "--max-rows",
    type=click.IntRange(min=0),
    default=20,
    show_default=True,
    help="Regressed and improved (row, metric) pairs listed, each, worst or best first.",
)
def compare_cmd(
    before: str,
    after: str,
    store_path: Path | None,
    epsilon: float | None,
    seed: int,
    n_bootstrap: int,
    output: str,
    out: Path | None,
    max_rows: int,
) -> None:
    """Compare run AFTER with the reference BEFORE (deltas are AFTER - BEFORE).

    Each may be a run id, a run name, latest, previous, baseline[:NAME] or a SQL query
    returning one run id; BEFORE is resolved relative to AFTER (previous = the run of the
    same dataset before it). Either may also be a report JSON file (evalframe's or
    eval-harness's, written with its samples). The text output fits the terminal; markdown
    is the same content as a Markdown document; json is evalframe.comparison.v1.
    """
    from evalframe.cli._report import comparison_of, is_report_file

    stats = {"epsilon": epsilon, "seed": seed, "n_bootstrap": n_bootstrap}
    if is_report_file(before) or is_report_file(after):
        comparison = comparison_of(after, before, store_path, **stats)
    else:
        comparison = open_store(store_path).compare(before, after, **stats)
    if output == "json":
        text = comparison.to_json()
    elif output == "markdown":
        text = comparison.to_markdown(max_rows=max_rows)
    else:
        text = comparison_text(comparison, max_rows=max_rows, width=terminal_width())
    emit(text, out)


def _drops(values: tuple[str, ...], option: str = "--max-drop") -> dict[str, float]:
    out: dict[str, float] = {}
    for value in values:
        metric, sep, amount = value.rpartition("=")
        if not sep or not metric:
            raise click.BadParameter(
                f"{value!r} is not METRIC=X (e.g. rouge-l=0.05)", param_hint=option
            )
        try:
            out[metric.strip()] = float(amount)
        except ValueError:
            raise click.BadParameter(
                f"{amount!r} in {value!r} is not a number", param_hint=option
            ) from None
    return out


@click.command("gate", epilog=EXIT_CODES)
@click.argument("run_ref", metavar="RUN")
@click.option(
    "--baseline",
    "reference",
    required=True,
    metavar="REF",
    help="The reference: a run id or name, latest, previous, baseline[:NAME], SQL, or a "
    "report JSON file (an eval-harness report included).",
)
@store_option()
@click.option("--max-regressions", type=click.IntRange(min=0), default=0, show_default=True)
@click.option(
    "--confident-only",
    is_flag=True,
    help="Count only regressions beyond the run's detectable difference. With one execution "
    "per row none can be confident: regressed pairs then fail the gate, with the repetitions "
    "that would tell them from noise.",
)
@click.option(
    "--if-missing",
    type=click.Choice(["pass", "fail"]),
    default="fail",
    show_default=True,
    help="What a missing baseline means (a new project's first run): pass, or fail with how "
    "to promote one. Applies when REF is baseline or baseline:NAME.",
)
@click.option("--min-macro-f1", type=click.FloatRange(0.0, 1.0), default=None)
@click.option(
    "--max-drop",
    "max_drop",
    multiple=True,
    metavar="METRIC=X",
    help="Fail when METRIC's mean falls by more than X (a fraction: 0.05 = 5 points); "
    "METRIC:p50, METRIC:p95 or METRIC:pass_rate checks that statistic. Repeatable.",
)
@click.option(
    "--min-pass-rate",
    "min_pass_rate",
    multiple=True,
    metavar="METRIC=X",
    help="Fail when METRIC's pass rate in the run is below X. Repeatable.",
)
@click.option(
    "--no-safety-failures",
    is_flag=True,
    help="Fail when any sample fails a safety-dimension metric (all are listed).",
)
@_stats_options
@format_option("output", "text", "json")
@click.option(
    "--comparison-out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write the comparison JSON (evalframe.comparison.v1) here.",
)
def gate_cmd(
    run_ref: str,
    reference: str,
    store_path: Path | None,
    max_regressions: int,
    confident_only: bool,
    if_missing: str,
    min_macro_f1: float | None,
    max_drop: tuple[str, ...],
    min_pass_rate: tuple[str, ...],
    no_safety_failures: bool,
    epsilon: float | None,
    seed: int,
    n_bootstrap: int,
    output: str,
    comparison_out: Path | None,
) -> None:
    """Gate RUN against a reference; exit 1 when it fails, printing the worst regressions.

    --max-regressions counts regressed (row, metric) pairs: a metric that fell from pass to
    fail on a row already failing another metric counts. With no baseline yet, the gate
    passes or fails as --if-missing says. RUN and the baseline may also be report JSON files
    (evalframe's or eval-harness's, written with their samples), so an eval-harness baseline
    gates an evalframe run.
    """
    from evalframe.cli._report import comparison_of, is_report_file
    from evalframe.core._gate import gate

    drops = _drops(max_drop)
    floors = _drops(min_pass_rate, "--min-pass-rate")
    stats = {"epsilon": epsilon, "seed": seed, "n_bootstrap": n_bootstrap, "label": reference}
    if is_report_file(reference) or is_report_file(run_ref):
        comparison = comparison_of(run_ref, reference, store_path, **stats)
    else:
        store = open_store(store_path)
        missing = _missing_baseline(store, reference, run_ref)
        if missing is not None:
            _no_baseline(missing, run_ref, reference, if_missing, output)
            return
        comparison = store.compare(reference, run_ref, **stats)
    result = gate(
        comparison,
        max_regressions=max_regressions,
        confident_only=confident_only,
        min_macro_f1=min_macro_f1,
        max_drop=drops,
        no_safety_failures=no_safety_failures,
        min_pass_rate=floors,
    )
    if comparison_out is not None:
        comparison_out.write_text(comparison.to_json(), encoding="utf-8")
    if output == "json":
        click.echo(json.dumps(result.to_dict(), ensure_ascii=False, indent=2, default=str))
    else:
        click.echo(gate_text(result, width=terminal_width()), nl=False)
    if not result.passed:
        raise SystemExit(1)


def _missing_baseline(store: Any, reference: str, run_ref: str) -> str | None:
    """Why ``reference`` names a baseline that does not exist yet, or None when it resolves.

    Only ``baseline`` and ``baseline:NAME`` can be missing in this sense; any other
    reference that fails to resolve (a mistyped run name included) stays an error.
    """
    low = reference.strip().lower()
    if not (low == "baseline" or low.startswith("baseline:")):
        return None
    run_id = store.resolve(run_ref)
    try:
        store.resolve(reference, relative_to=run_id)
    except StoreError as exc:
        return str(exc)
    return None


def _no_baseline(why: str, run_ref: str, reference: str, if_missing: str, output: str) -> None:
    passed = if_missing == "pass"
    name = reference.split(":", 1)[1] if ":" in reference else None
    promote = f"evalframe baseline promote {run_ref}" + (f" --name {name}" if name else "")
    message = (
        f"no baseline to gate against ({why.rstrip('.')}). Once this run is accepted, "
        f"promote it with `{promote}`"
        + ("" if passed else ", or pass --if-missing pass to let a first run through")
        + "."
    )
    if output == "json":
        verdict = {"passed": passed, "run": run_ref, "reference": None}
        key = "notes" if passed else "failures"
        other = "failures" if passed else "notes"
        click.echo(json.dumps({**verdict, key: [message], other: []}, indent=2))
    else:
        click.echo(f"gate {'passed' if passed else 'FAILED'}: {message}")
    if not passed:
        raise SystemExit(1)


@click.group()
def baseline() -> None:
    """Named baselines: pointers to runs (reference them as baseline or baseline:NAME)."""


@baseline.command("promote", epilog=EXIT_CODES)
@click.argument("run_ref", metavar="RUN")
@click.option("--name", default=None, help="The baseline's name (default: the dataset name).")
@click.option(
    "--force",
    is_flag=True,
    help="Promote a run with errored executions, or one of another dataset than the "
    "baseline's, which are refused otherwise (exit 2).",
)
@store_option()
def promote(run_ref: str, name: str | None, force: bool, store_path: Path | None) -> None:
    """Point a baseline at RUN: a clean run (no errored execution) of the baseline's dataset."""
    store = open_store(store_path)
    label = store.promote_baseline(run_ref, name=name, force=force)
    run_id = store.resolve(f"baseline:{label}")
    click.echo(f"baseline '{label}' -> run {run_id}")


@baseline.command("clear", epilog=EXIT_CODES)
@click.argument("name", metavar="NAME")
@store_option()
def clear(name: str, store_path: Path | None) -> None:
    """Remove the baseline NAME (the run it pointed at stays in the store)."""
    run_id = open_store(store_path).clear_baseline(name)
    click.echo(f"baseline '{name}' cleared (it pointed at run {run_id})")


@baseline.command("list")
@store_option()
def list_baselines(store_path: Path | None) -> None:
    """List the named baselines."""
    frame = open_store(store_path).baselines()
    if frame.height == 0:
        click.echo("(no baselines)")
        return
    body = [
        (r["name"], r["run_id"], r["dataset"], r["promoted_at"].strftime("%Y-%m-%d %H:%M:%S"))
        for r in frame.iter_rows(named=True)
    ]
    click.echo(render(("name", "run", "dataset", "promoted_at (UTC)"), body))


@click.command(epilog=EXIT_CODES)
@store_option()
@click.option(
    "--runs",
    "runs_ref",
    default=None,
    metavar="QUERY",
    help="Source runs: a reference, or SQL returning a run_id column (default: latest).",
)
@click.option(
    "-m", "--metric", "metrics", multiple=True, required=True, metavar="SPEC", help="Repeatable."
)
@click.option("--keep", is_flag=True, help="Also carry over the source's other metrics.")
@click.option("--force", is_flag=True, help="Recompute metrics the source already scored.")
@click.option(
    "--name",
    default=None,
    help="The new runs' name (default: '<source name> (rescored)', so a name never starts to "
    "mean another run).",
)
@click.option("--batch-size", type=click.IntRange(min=1), default=100_000, show_default=True)
@memory_limit_option("DuckDB's memory limit while rescoring.")
@provider_options
@dask_option("Rescore on a Dask cluster: its workers score parts of about --batch-size rows.")
@click.option(
    "--otel",
    is_flag=True,
    envvar="EVALFRAME_OTEL",
    help="Send each new run's spans and evaluation events over OpenTelemetry (as run --otel).",
)
def rescore(
    store_path: Path | None,
    runs_ref: str | None,
    metrics: tuple[str, ...],
    keep: bool,
    force: bool,
    name: str | None,
    batch_size: int,
    memory_limit: str,
    provider_settings: ProviderSettings,
    dask: str | None,
    otel: bool,
) -> None:
    """Score stored outputs with new or changed metrics; one new run per source run.

    Model-backed metrics reach their providers as in ``run`` (the same options and
    variables), with one set of providers for the whole command: one cache, one loaded
    embedder, and usage recorded per new run. Exit 1 when a metric this rescore computed
    failed on any row (as ``run`` does); failures copied from the source run were reported
    when it ran.
    """
    store = open_store(store_path)
    providers = provider_settings.build()
    new_ids = store.rescore(
        list(metrics),
        runs=runs_ref,
        keep=keep,
        force=force,
        name=name,
        batch_size=batch_size,
        memory_limit=memory_limit,
        providers=providers,
        dask=dask,
    )
    if otel:
        from evalframe.integrations._otel import export_run

        for run_id in new_ids:
            export_run(store.load(run_id))
    # The errors of the metrics this rescore computed (those copied were reported when
    # their source ran), counted in the report's units: executions, then their pairs.
    frame = store.sql(
        "WITH new AS (SELECT f.run_id, f.sample_id, f.repetition FROM failures AS f "
        "JOIN runs AS r ON r.run_id = f.run_id WHERE list_contains(?::VARCHAR[], f.run_id) "
        "AND list_contains(from_json(r.extra->'$.rescore.computed', '[\"VARCHAR\"]'), f.metric)) "
        "SELECT r.run_id, r.source_run_id, r.macro_f1, r.n_executions, "
        "r.extra->>'$.rescore.computed' AS computed, "
        "(SELECT count(DISTINCT (n.sample_id, n.repetition)) FROM new AS n "
        "WHERE n.run_id = r.run_id) AS errored, "
        "(SELECT count(*) FROM new AS n WHERE n.run_id = r.run_id) AS pairs "
        "FROM runs AS r WHERE list_contains(?::VARCHAR[], r.run_id) ORDER BY r.seq",
        [new_ids, new_ids],
    )
    for r in frame.iter_rows(named=True):  # one line per new run
        click.echo(
            f"run {r['run_id']} from {r['source_run_id']}: macro-F1 {fmt(r['macro_f1'])}, "
            f"computed {r['computed']}: {r['errored']} of {r['n_executions']} executions "
            "errored in them"
        )
    failed = frame.filter(pl.col("pairs") > 0)
    for r in failed.iter_rows(named=True):  # the runs whose new metrics errored
        click.echo(
            f"INCOMPLETE: {r['errored']} of {r['n_executions']} executions errored in the "
            f"metrics this rescore computed (run {r['run_id']}); {r['pairs']} (execution, "
            "metric) pair(s) could not be scored (the failures view: evalframe sql "
            f"\"SELECT * FROM failures WHERE run_id = '{r['run_id']}'\").",
            err=True,
        )
    if failed.height:
        raise SystemExit(1)


@click.command("import")
@click.argument("source", type=click.Path(exists=True, path_type=Path))
@store_option()
def import_cmd(source: Path, store_path: Path | None) -> None:
    """Import the runs of an export directory, or a report JSON file as a run.

    A report file may be evalframe's or eval-harness's (eval-harness.report.v1, written with
    its samples): its executions, scores, details and failures become a stored run that
    `evalframe gate` and `compare` can use as a baseline. Runs already stored are skipped
    (an eval-harness report's run id is derived from the file's bytes).
    """
    store = open_store(store_path, create=True)
    if source.is_dir():
        added = store.import_runs(source)
        present = "every run of the export is in the store already"
    else:
        from evalframe.cli._report import run_of_report_file

        run = run_of_report_file(source)
        stored = store.sql("SELECT run_id FROM runs WHERE run_id = ?", [run.run_id])
        added = [] if stored.height else [store.save(run)]
        present = f"run {run.run_id} is in the store already"
    click.echo(f"imported {len(added)} run(s): " + (", ".join(added) if added else present))


@click.group("store")
def store_group() -> None:
    """Look after the store itself: verify its files, remove a lock."""


@store_group.command("verify")
@store_option()
@format_option("output", "text", "json")
def verify(store_path: Path | None, output: str) -> None:
    """Check the whole store and report every problem at once.

    Every part file a cluster wrote beside the store (its .runs folder) is read in full and
    checked against the row count, size and SHA-256 recorded when it was registered; each
    run's files against its registration; the file's SQL (macros, types, views in a table's
    place, views that are not the schema's). Nothing is changed. Reading commands check
    only what they read, cheaply (existence and size; footer row counts for a whole run).

    Exit 0 when the store is sound, 1 when anything is wrong, 2 when there is no store.
    """
    from evalframe.store._integrity import verify_store

    if store_path is None:
        raise click.UsageError("Pass --store PATH or set EVALFRAME_STORE.")
    if not store_path.exists():
        raise StoreError(f"No store at {store_path}.")
    found = verify_store(str(store_path))
    if output == "json":
        click.echo(json.dumps(found.to_dict(), indent=2, default=str))
    else:
        click.echo(_verification_text(found))
    if not found.ok:
        raise SystemExit(1)


def _verification_text(found: Any) -> str:
    mib = found.bytes / 2**20
    lines = [
        f"store {found.store} (schema version {found.schema_version}): {found.runs} run(s), "
        f"{found.runs_with_files} with part files; {found.files} part file(s), {mib:,.1f} MiB "
        f"hashed in {found.seconds:.2f} s"
    ]
    lines += [
        f"problem: {p.detail}" + (f" (run {p.run_id})" if p.run_id else "") for p in found.problems
    ]
    lines += [f"note: {n.detail}" for n in found.notes]
    lines.append(
        "sound: no problem found" if found.ok else f"{len(found.problems)} problem(s) found"
    )
    return "\n".join(lines)


@store_group.command("unlock")
@click.argument("name")
@store_option()
def unlock(name: str, store_path: Path | None) -> None:
    """Remove the lock NAME (run:RUN_ID or eval_set:NAME) whoever holds it.

    A lock whose process died on this host is taken over by the next resume by itself; use
    this for one held from another host once you know that process is gone.
    """
    from evalframe.store._locks import unlock as remove

    held = remove(open_store(store_path), name)
    if held is None:
        click.echo(f"no lock named {name}")
        return
    click.echo(
        f"removed {name}, held by process {held['pid']} on host {held['host']} since "
        f"{held['since']} ({held['purpose']})"
    )


def register(group: click.Group) -> None:
    """Add the store commands to the ``evalframe`` group."""
    for command in (sql, runs, compare_cmd, gate_cmd, baseline, rescore, import_cmd, store_group):
        group.add_command(command)
