"""``evalframe synthesize``: a golden set of questions, reference answers and contexts,
generated from documents by the judge model."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import click

from evalframe.cli._options import ProviderSettings, provider_options
from evalframe.core._chunking import DEFAULT_CHUNK_CHARS
from evalframe.engine._synthesize import (
    ATTEMPTS_PER_QUESTION,
    DEFAULT_METRICS,
    EVOLUTIONS,
    MAX_QUESTIONS,
)

EXIT_CODES: Final = (
    "Exit codes: 0 when -n questions were kept and written; 1 when fewer were (the budget or "
    "deadline ran out, the judge failed, or the critique and deduplication left fewer than "
    "the documents could give): the file then holds those kept, and the same command "
    "continues where it stopped; 2 on usage or input errors (a document that cannot be "
    "read, an empty one, a pattern matching nothing, -n out of range; a one-paragraph "
    "message, no traceback)."
)


@click.command(epilog=EXIT_CODES)
@click.argument("docs", nargs=-1, required=True, metavar="DOCS...")
@click.option(
    "--out",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The golden set to write: .yaml/.yml, .json or .jsonl, written whole at the end "
    "(never one of DOCS).",
)
@click.option(
    "-n",
    "n",
    type=click.IntRange(1, MAX_QUESTIONS),
    default=10,
    show_default=True,
    help=f"Questions to keep (at most {MAX_QUESTIONS:,}; at most "
    f"{ATTEMPTS_PER_QUESTION} candidates are generated per question).",
)
@click.option(
    "--evolutions",
    default=",".join(EVOLUTIONS),
    show_default=True,
    metavar="LIST",
    help="Kinds of question, shared evenly: simple (asked directly), reasoning (needs a step "
    "of inference), multi-context (needs two related chunks), conditional (adds a condition "
    "that changes the answer).",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Which chunks are asked about, in which order: the same seed, documents and cached "
    "replies give the same set.",
)
@click.option("--name", default=None, help="The dataset's name (default: --out's stem).")
@click.option(
    "-m",
    "--metric",
    "metrics",
    multiple=True,
    metavar="SPEC",
    help="The metrics: list written with the set (repeatable; default: "
    f"{', '.join(DEFAULT_METRICS)}).",
)
@click.option(
    "--chunk-size",
    type=click.IntRange(200, 20_000),
    default=DEFAULT_CHUNK_CHARS,
    show_default=True,
    metavar="CHARS",
    help="A chunk's greatest length in characters.",
)
@click.option(
    "--dedup-threshold",
    type=click.FloatRange(0.0, 1.0, min_open=True),
    default=0.9,
    show_default=True,
    help="A question whose embedding cosine with one already kept is at least this is a duplicate.",
)
@provider_options
def synthesize(
    docs: tuple[str, ...],
    out: Path,
    n: int,
    evolutions: str,
    seed: int,
    name: str | None,
    metrics: tuple[str, ...],
    chunk_size: int,
    dedup_threshold: float,
    provider_settings: ProviderSettings,
) -> None:
    """Generate a golden set from DOCS: questions, reference answers and their contexts.

    DOCS are Markdown, text, PDF (pip install ".[pdf]" in a clone of evalframe) or passages
    files (.jsonl or .parquet with a 'text' field), folders of them or glob patterns. They are
    cut into chunks; the judge model writes a question and its answer from one chunk (or two
    related ones, by the embedder), evolved as --evolutions asks; a critique call keeps only those
    answerable from their contexts, grounded, standalone and not trivial, and near-duplicate
    questions are dropped. Progress shows on a terminal (stderr).

    \b
    Example:
      export EVALFRAME_JUDGE_BASE_URL=http://localhost:8000/v1 EVALFRAME_JUDGE_MODEL=llama3
      evalframe synthesize docs/ --out golden.yaml -n 50 --budget-usd 2
      evalframe run golden.yaml --system my_app.rag:answer
    """
    from evalframe.engine._synthesize import synthesize as run_synthesis

    providers = provider_settings.build()
    result = run_synthesis(
        docs,
        out=out,
        n=n,
        evolutions=evolutions,
        seed=seed,
        name=name,
        metrics=metrics or DEFAULT_METRICS,
        providers=providers,
        chunk_size=chunk_size,
        dedup_threshold=dedup_threshold,
    )
    stats = result.synthesis
    for note in stats.notes:
        click.echo(f"note: {note}", err=True)
    dropped = ", ".join(f"{count} {reason}" for reason, count in stats.dropped.items())
    click.echo(
        f"synthesize: {stats.documents} document(s), {stats.chunks} chunk(s); "
        f"{stats.candidates} candidate(s), {stats.calls} judge call(s)"
        + (f" ({stats.reused} replies reused)" if stats.reused else "")
        + f"; kept {stats.kept} of {stats.requested}"
        + (f" (dropped: {dropped})" if dropped else ""),
        err=True,
    )
    if stats.path is not None:
        click.echo(f"wrote {stats.path} ({stats.kept} question(s))", err=True)
    if stats.stopped is not None:
        where = "nothing was written" if stats.path is None else "the file holds those kept"
        again = (
            f"; run the same command again to continue (answered prompts are kept in "
            f"{stats.journal})"
            if stats.journal is not None
            else ""
        )
        click.echo(f"incomplete: {stats.stopped}; {where}{again}.", err=True)
        raise SystemExit(1)
