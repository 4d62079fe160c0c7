"""``evalframe run``: score a dataset's saved outputs and print the report."""

from __future__ import annotations

from pathlib import Path

import click

import evalframe as ef
from evalframe.cli._options import emit, format_option, out_option, store_option


@click.command()
@click.argument("dataset", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--outputs",
    "outputs",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Saved outputs (JSON/YAML/JSONL/CSV/Parquet).",
)
@click.option(
    "-m",
    "--metric",
    "metrics",
    multiple=True,
    metavar="SPEC",
    help="A metric spec, e.g. -m exact-match -m 'rouge-l(beta=2.0)'. Repeatable; "
    "defaults to the dataset's metrics: list.",
)
@click.option(
    "--repetitions", type=click.IntRange(min=1), default=None, help="Score each row N times."
)
@format_option("fmt", "markdown", "json")
@out_option()
@store_option(help="Save the run to this DuckDB run store (default: $EVALFRAME_STORE).")
@click.option(
    "--embeddings-base-url",
    metavar="URL",
    help="OpenAI-compatible embeddings endpoint (default: $EVALFRAME_EMBEDDINGS_BASE_URL; "
    "with none, the embedded offline model). Keys come only from the environment.",
)
@click.option(
    "--embeddings-model",
    metavar="NAME",
    help="Embedding model at that endpoint, or 'onnx'/'hashing' for a local one "
    "(default: $EVALFRAME_EMBEDDINGS_MODEL).",
)
@click.option(
    "--judge-base-url",
    metavar="URL",
    help="OpenAI-compatible chat endpoint of the judge (default: $EVALFRAME_JUDGE_BASE_URL, "
    "then $OPENAI_BASE_URL).",
)
@click.option(
    "--judge-model", metavar="NAME", help="Judge model (default: $EVALFRAME_JUDGE_MODEL)."
)
@click.option(
    "--cache",
    "cache_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Provider response cache file (default: ~/.cache/evalframe/cache.duckdb).",
)
@click.option("--no-cache", is_flag=True, help="Neither read nor write the provider cache.")
@click.option(
    "--budget-usd",
    type=click.FloatRange(min=0.0, min_open=True),
    help="Stop calling providers once this much (USD) is spent; the scores so far are kept "
    "and the run exits 1.",
)
def run(
    dataset: Path,
    outputs: Path | None,
    metrics: tuple[str, ...],
    repetitions: int | None,
    fmt: str,
    out: Path | None,
    store_path: Path | None,
    embeddings_base_url: str | None,
    embeddings_model: str | None,
    judge_base_url: str | None,
    judge_model: str | None,
    cache_path: Path | None,
    no_cache: bool,
    budget_usd: float | None,
) -> None:
    """Score DATASET and print the report. Exit 1 when any sample failed a metric."""
    if outputs is None:
        raise click.UsageError(
            "Pass --outputs FILE with the system's saved outputs (a system under test is "
            "scored from Python with ef.evaluate(dataset, system=fn))."
        )
    if no_cache and cache_path is not None:
        raise click.UsageError("Pass --cache PATH or --no-cache, not both.")
    providers = None
    provider_options = (embeddings_base_url, embeddings_model, judge_base_url, judge_model)
    if any(provider_options) or cache_path or no_cache or budget_usd is not None:
        from evalframe.providers import Providers

        providers = Providers.from_env(
            embeddings_base_url=embeddings_base_url,
            embeddings_model=embeddings_model,
            judge_base_url=judge_base_url,
            judge_model=judge_model,
            cache=False if no_cache else (cache_path or True),
            budget_usd=budget_usd,
        )
    result = ef.evaluate(
        dataset,
        outputs=outputs,
        metrics=list(metrics) or None,
        repetitions=repetitions,
        store=store_path,
        providers=providers,
    )
    report = result.report()
    text = report.to_json() if fmt == "json" else report.to_markdown()
    emit(text, out, note=f" (run {result.run_id})")
    if store_path is not None:
        click.echo(f"saved run {result.run_id} to {store_path}", err=True)
    budget = report.get("budget")
    if budget and budget.get("halted"):
        click.echo(f"budget exhausted: {budget['reason']}", err=True)
        raise SystemExit(1)
    failures = report["total_failures"]
    if failures:
        click.echo(f"{failures} (sample, metric) failure(s); see the report's failures.", err=True)
        raise SystemExit(1)
