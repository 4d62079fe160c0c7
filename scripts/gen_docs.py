"""Rewrite the generated regions of README.md and docs/ from the code: one command.

    python scripts/gen_docs.py          # rewrite every region that drifted
    python scripts/gen_docs.py --check  # list the files that drifted, exit 1 (what the test runs)

A region is the text between ``<!-- generated: NAME -->`` and ``<!-- /generated -->`` in
README.md or a page under docs/; NAME is a key of ``REGIONS``: the metric count and table
from the metric registry, the command list from the click tree, the metrics that need a
model from their declared needs. A region on one line is filled inline (a count in a
sentence); any other is filled as a block. Everything else on a page is hand-written.
The docs site generates two whole pages at build time the same way (the metric catalogue
and the command reference, docs/_hooks/evalframe_docs.py); this module holds the facts
both use.
"""

from __future__ import annotations

import inspect
import re
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
COMMAND = "python scripts/gen_docs.py"
REGION = re.compile(r"<!-- generated: ([a-z0-9-]+) -->(.*?)<!-- /generated -->", re.DOTALL)

# The provider behind each kind of need the enrich layer fills (evalframe/enrich/_enrich.py).
NEED_KINDS = {
    "JudgeReplies": "judge",
    "JudgeNeed": "judge",
    "TextEmbeddings": "embedder",
    "TokenEmbeddings": "embedder",
    "ListEmbeddings": "embedder",
    "WebhookNeed": "webhook",
}

# Pages under docs/metrics/ that name every metric: not any one family's page.
CATALOGUES = {"catalogue.md", "harness-evals.md"}

PROVIDER = {"judge": "a judge", "embedder": "an embedder", "webhook": "a webhook"}


# --- the metric registry -----------------------------------------------------------------


def metric_defs() -> list[Any]:
    """The built-in metrics (a test or a plugin may have registered others), by family."""
    import evalframe as ef

    defs = [d for d in ef.metrics.available() if d.build.__module__.startswith("evalframe.")]
    return sorted(defs, key=lambda d: (d.family, d.name))


def families() -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for d in metric_defs():
        out.setdefault(d.family, []).append(d)
    return out


def _example_tree(folder: Path) -> str:
    path = folder / "tree.yaml"
    path.write_text("root: q\nnodes:\n  q: {question: Is it right?, edges: {yes: a, no: b}}\n"
                    "  a: {score: 1.0}\n  b: {score: 0.0}\n", encoding="utf-8")  # fmt: skip
    return str(path)


def _example_outputs(folder: Path) -> str:
    path = folder / "old.outputs.json"
    path.write_text('{"outputs": {"s1": "an answer"}}', encoding="utf-8")
    return str(path)


# A value for each required parameter that a metric's needs depend on, so that they can be
# read at its defaults; a new one without a value here fails the generator, naming it.
EXAMPLES: dict[str, Callable[[Path], Any]] = {
    "criteria": lambda _: "The answer is correct.",
    "baseline": _example_outputs,
    "rubric": lambda _: ("pass=1: correct", "fail=0: wrong"),
    "instructions": lambda _: ("Answer in English.",),
    "tree": _example_tree,
    "policy": lambda _: "Never give medical advice.",
    "role": lambda _: "a support agent",
    "metrics": lambda _: ("exact-match",),
}


def needs_of(d: Any) -> tuple[str, ...]:
    """What the metric asks a provider for at its default parameters: judge, embedder,
    webhook (none for a metric that reads only the data)."""
    if d.needs is None:
        return ()
    accepted = inspect.signature(d.needs).parameters.values()
    takes_any = any(q.kind is inspect.Parameter.VAR_KEYWORD for q in accepted)
    names = {q.name for q in accepted}
    with tempfile.TemporaryDirectory() as tmp:
        kwargs: dict[str, Any] = {}
        for p in d.params:
            if not takes_any and p.name not in names:
                continue  # what the metric needs does not depend on it
            if not p.required:
                kwargs[p.name] = p.default
            elif p.name in EXAMPLES:
                kwargs[p.name] = EXAMPLES[p.name](Path(tmp))
            else:
                raise SystemExit(
                    f"{d.name}: add an example value for its required parameter "
                    f"'{p.name}' to EXAMPLES in scripts/gen_docs.py"
                )
        needs = list(d.needs(**kwargs))
    kinds: set[str] = set()
    while needs:
        need = needs.pop()
        kind = NEED_KINDS.get(type(need).__name__)
        if kind is None:
            raise SystemExit(
                f"{d.name}: needs a {type(need).__name__}; name what it needs in NEED_KINDS "
                "in scripts/gen_docs.py"
            )
        kinds.add(kind)
        needs.extend(getattr(need, "requires", ()))
    return tuple(sorted(kinds))


def parameters_of(d: Any) -> str:
    """``name=default`` for each parameter (``name`` alone when required), then threshold."""
    from evalframe.metrics._spec import format_value

    parts = [p.name if p.required else f"{p.name}={format_value(p.default)}" for p in d.params]
    return ", ".join(parts)


def family_pages() -> dict[str, str]:
    """Each family's hand-written page under docs/metrics/: the one naming most of its
    metrics (in backticks), the pages that list every metric aside."""
    pages = {
        p.name: p.read_text(encoding="utf-8")
        for p in sorted((ROOT / "docs" / "metrics").glob("*.md"))
        if p.name not in CATALOGUES
    }
    out = {}
    for family, defs in families().items():
        counts = {name: len(mentioned(text, defs)) for name, text in pages.items()}
        best = max(counts, key=lambda name: counts[name])
        if counts[best]:
            out[family] = f"metrics/{best}"
    return out


def mentioned(text: str, defs: Sequence[Any]) -> list[str]:
    """The metrics of ``defs`` that ``text`` names as code (`` `name` `` or `` `name(` ``)."""
    return [d.name for d in defs if re.search(rf"`{re.escape(d.name)}[`(]", text)]


def _needs_cell(defs: Sequence[Any]) -> str:
    """Which of a family's metrics need which provider: "judge" when all need the same."""
    by_kind: dict[str, list[str]] = {}
    for d in defs:
        for kind in needs_of(d):
            by_kind.setdefault(kind, []).append(d.name)
    if not by_kind:
        return "—"
    cells = []
    for kind, names in sorted(by_kind.items()):
        every = len(names) == len(defs)
        listed = "" if every else ": " + ", ".join(f"`{n}`" for n in names)
        cells.append(PROVIDER[kind] + listed)
    return "; ".join(cells)


def metric_count() -> str:
    return str(len(metric_defs()))


def family_count() -> str:
    return str(len(families()))


def metrics_table() -> str:
    """README's table: one row per family, its metrics and what they need."""
    import evalframe as ef

    pages = family_pages()
    out = ["| family | metrics | needs a provider |", "|---|---|---|"]
    for family, defs in families().items():
        name = f"[{family}](docs/{pages[family]})" if family in pages else family
        names = ", ".join(f"`{d.name}`" for d in defs)
        out.append(f"| {name} | {names} | {_needs_cell(defs)} |")
    builtin = [a for a in ef.metrics.aliases() if a.target.split("(")[0] in _names()]
    if builtin:
        listed = ", ".join(f"`{a.name}` → `{a.target}`" for a in builtin)
        out += ["", f"Aliases (other tools' names for a spec): {listed}."]
    return "\n".join(out)


def _names() -> set[str]:
    return {d.name for d in metric_defs()}


def model_metrics() -> str:
    """docs/providers.md: the built-in metrics that need a provider, by provider."""
    by_kind: dict[str, list[str]] = {}
    for d in metric_defs():
        for kind in needs_of(d):
            by_kind.setdefault(kind, []).append(d.name)
    out = ["| provider | metrics |", "|---|---|"]
    for kind, names in sorted(by_kind.items()):
        listed = ", ".join(f"`{n}`" for n in sorted(names))
        out.append(f"| {PROVIDER[kind]} ({len(names)} of {len(metric_defs())}) | {listed} |")
    return "\n".join(out)


# --- the command line --------------------------------------------------------------------


def first_sentence(text: str, limit: int = 110) -> str:
    """The first sentence of ``text``'s first paragraph, cut at a colon or semicolon when
    longer than ``limit``."""
    paragraph = " ".join(inspect.cleandoc(text).split("\n\n", 1)[0].split())
    match = re.match(r"(.+?[.!?])(?=\s+[A-Z`(]|\s*$)", paragraph)
    sentence = match.group(1) if match else paragraph
    if len(sentence) > limit:
        cut = re.search(r"[:;]\s", sentence)
        if cut is not None:
            sentence = sentence[: cut.start()] + "."
    return sentence


def commands() -> Iterator[tuple[str, Any, Any]]:
    """(``evalframe NAME [SUB]``, command, context) for every visible command, in order."""
    import click

    from evalframe.cli import cli

    def walk(group: Any, ctx: Any, prefix: str) -> Iterator[tuple[str, Any, Any]]:
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            if command is None or command.hidden:
                continue
            sub = click.Context(command, info_name=f"{prefix} {name}", parent=ctx)
            yield f"{prefix} {name}", command, sub
            if isinstance(command, click.Group):
                yield from walk(command, sub, f"{prefix} {name}")

    root = click.Context(cli, info_name="evalframe")
    yield from walk(cli, root, "evalframe")


def command_table() -> str:
    """README's command list: each command with its arguments and its first sentence."""
    import click

    out = ["| command | what it does |", "|---|---|"]
    for path, command, ctx in commands():
        if isinstance(command, click.Group):
            continue
        args = " ".join(p for p in command.collect_usage_pieces(ctx) if p != "[OPTIONS]")
        usage = f"{path} {args}".strip()
        out.append(f"| `{usage}` | {first_sentence(command.help or '')} |")
    return "\n".join(out)


# --- the optional extras ------------------------------------------------------------------

# What each extra of pyproject.toml is for; its packages come from pyproject.toml itself.
EXTRA_PURPOSE = {
    "viz": "charts (`run.plot`, `store.plot`, `comparison.plot`), PNG/SVG export, the charts "
    "of the HTML report",
    "jupyter": "JupyterLab and a kernel to run the notebooks, with charts",
    "dask": "scoring and rescoring on a Dask cluster (`--dask`, `dask=`); Parquet inputs "
    "named by URL (through `fsspec`)",
    "mlflow": "`run.to_mlflow()` and `evalframe export --to mlflow`, into any MLflow store",
    "otel": "`--otel`: a run's spans and evaluation events over OTLP/HTTP",
    "view": "`evalframe view`: the web viewer over the store and its JSON API",
    "pdf": "`evalframe synthesize` reading the text of PDF documents",
    "presidio": "`pii-leak(engine=presidio)`: Microsoft Presidio's recognizers",
    "docs": "this site",
    "test": "the test suite, with the reference libraries it compares against, the peers' "
    "readers, the browser tests' driver, ruff and mypy",
    "dev": "the same as `test`, under the name contributors reach for",
    "bench": "the libraries the benchmarks compare with",
}


def extras_table() -> str:
    """docs/concepts/dependencies.md: each optional extra, its packages and what for."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras: dict[str, list[str]] = project["optional-dependencies"]
    missing = sorted(set(extras) - set(EXTRA_PURPOSE))
    if missing:
        raise SystemExit(f"say what the extras {missing} are for in EXTRA_PURPOSE ({COMMAND})")
    out = ["| extra | packages | what for |", "|---|---|---|"]
    for extra, purpose in EXTRA_PURPOSE.items():
        if extra not in extras:
            continue
        names, included = [], []
        for requirement in extras[extra]:
            name = re.split(r"[<>=!~;\s]", requirement, maxsplit=1)[0]
            if name.startswith(project["name"] + "["):
                included += name[len(project["name"]) + 1 : -1].split(",")
            else:
                names.append(f"`{name}`")
        cell = ", ".join(names)
        if included:
            plus = "the extras " if len(included) > 1 else "the extra "
            cell += ("; " if cell else "") + plus + ", ".join(f"`{e}`" for e in included)
        out.append(f"| `{extra}` | {cell} | {purpose} |")
    return "\n".join(out)


# --- regions -----------------------------------------------------------------------------

REGIONS: dict[str, Callable[[], str]] = {
    "metric-count": metric_count,
    "family-count": family_count,
    "metrics-table": metrics_table,
    "model-metrics": model_metrics,
    "commands": command_table,
    "extras": extras_table,
}


def pages() -> list[Path]:
    """README.md and every page under docs/ (the hooks' folder aside)."""
    docs = [p for p in sorted((ROOT / "docs").rglob("*.md")) if "_hooks" not in p.parts]
    return [ROOT / "README.md", *docs]


def render(text: str, where: str, cache: dict[str, str]) -> str:
    """``text`` with every region filled; an unknown region name is an error."""

    def fill(match: re.Match[str]) -> str:
        name, body = match.group(1), match.group(2)
        if name not in REGIONS:
            known = ", ".join(REGIONS)
            raise SystemExit(f"{where}: no generated region '{name}' (known: {known})")
        if name not in cache:
            cache[name] = REGIONS[name]()
        value = cache[name]
        if "\n" in body or "\n" in value:
            value = f"\n\n{value}\n\n"
        return f"<!-- generated: {name} -->{value}<!-- /generated -->"

    return REGION.sub(fill, text)


def drifted() -> dict[Path, str]:
    """Each page whose regions are not what the code generates, with its regenerated text."""
    cache: dict[str, str] = {}
    out = {}
    for path in pages():
        text = path.read_text(encoding="utf-8")
        fresh = render(text, str(path.relative_to(ROOT)), cache)
        if fresh != text:
            out[path] = fresh
    return out


def main(argv: Sequence[str]) -> int:
    stale = drifted()
    names = [str(path.relative_to(ROOT)) for path in stale]
    if "--check" in argv:
        if names:
            print(f"generated regions out of date in: {', '.join(names)}; run {COMMAND}")
            return 1
        return 0
    for path, text in stale.items():
        path.write_text(text, encoding="utf-8")
    print("rewrote " + (", ".join(names) if names else "nothing: every region is current"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
