"""MkDocs hooks for evalframe's docs: generated pages and a nav that tolerates missing pages.

* ``metrics/catalogue.md`` is generated from the metric registry: every registered metric
  with its family, dimension, default threshold, parameters and its docstring (definition,
  formula, codomain, when it is null). It can never drift from the code.
* ``cli.md`` is generated from the click command tree: every command's usage and help.
* The nav in ``mkdocs.yml`` may name pages other parts of the project have not written yet:
  entries whose file does not exist are dropped (with an info message, not a warning), and
  Markdown pages the nav does not list are appended: ``metrics/<family>.md`` pages to the
  Metrics section, anything else under "More". ``providers.md`` gets a stub until the
  real page exists, so links to it hold.

Everything runs offline: the hooks import evalframe and read what it registers.
"""

from __future__ import annotations

import importlib.util
import inspect
import logging
import re
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

log = logging.getLogger("mkdocs.hooks.evalframe")


def _gen_docs() -> ModuleType:
    """scripts/gen_docs.py, which holds the facts the generated regions and pages share."""
    path = Path(__file__).resolve().parents[2] / "scripts" / "gen_docs.py"
    spec = importlib.util.spec_from_file_location("gen_docs", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GENERATED = {"metrics/catalogue.md", "cli.md"}

# Pages other pages link to that another part of the project writes; until it lands, a
# stub keeps the links valid (the real page replaces it as soon as it exists).
STUBS = {
    "providers.md": (
        "# Providers\n\n"
        "Embedders and judges behind the model-backed metrics: see the "
        "[providers API reference](api/providers.md) and "
        "[Enrichment and caching](concepts/enrichment-and-caching.md).\n"
    ),
}
_SECTION = re.compile(r"^(Args|Arguments|Returns|Raises|Examples|Notes|Parameters):\s*$")


# --- the metric catalogue ----------------------------------------------------------------


def _md_inline(text: str) -> str:
    """RST double backticks to Markdown code spans."""
    return re.sub(r"``(.+?)``", r"`\1`", text)


def _doc_to_markdown(doc: str) -> str:
    """A Google-style docstring as Markdown: paragraphs, then sections as labelled lists."""
    out: list[str] = []
    lines = textwrap.dedent(doc).strip().splitlines()
    i = 0
    while i < len(lines):
        match = _SECTION.match(lines[i].strip())
        if match is None:
            out.append(_md_inline(lines[i]))
            i += 1
            continue
        out += ["", f"**{match.group(1)}**", ""]
        i += 1
        body: list[str] = []
        while i < len(lines) and (not lines[i].strip() or lines[i].startswith(" ")):
            body.append(lines[i])
            i += 1
        if match.group(1).startswith("Example"):  # doctests, shown as the session they are
            out += ["```pycon", textwrap.dedent("\n".join(body)).strip("\n"), "```", ""]
            continue
        items: list[str] = []
        for raw in textwrap.dedent("\n".join(body)).splitlines():
            if not raw.strip():
                continue
            if raw.startswith(" ") and items:
                items[-1] += " " + raw.strip()
            else:
                items.append(raw.strip())
        out += [f"- {_md_inline(item)}" for item in items]
        out.append("")
    return "\n".join(out).strip() + "\n"


def _type_name(annotation: Any) -> str:
    if annotation is inspect.Parameter.empty:
        return ""
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation).replace("typing.", "")


def _family_pages(docs_dir: Path) -> dict[str, str]:
    return {p.stem: f"{p.stem}.md" for p in (docs_dir / "metrics").glob("*.md")}


def metric_catalogue(docs_dir: Path) -> str:
    """The catalogue page: one section per family, one entry per registered metric."""
    import evalframe as ef

    gen = _gen_docs()
    defs = gen.metric_defs()
    families: dict[str, list[Any]] = {}
    for d in defs:
        families.setdefault(d.family, []).append(d)
    pages = _family_pages(docs_dir)
    out = [
        "# Metric catalogue",
        "",
        "Generated from the metric registry (`ef.metrics.available()`) when the docs are "
        "built, so it lists exactly the metrics this evalframe registers, with the "
        "definition each one documents. Use a metric by its id: `-m 'rouge-l(beta=2.0)'` on "
        'the command line, `metrics=["rouge-l(beta=2.0)"]` or `ef.metrics.rouge_l(beta=2.0)` '
        "in Python. A sample passes a metric when its score is at least the metric's "
        "threshold (override it with `threshold=`, e.g. `rouge-l(threshold=0.7)`).",
        "",
        f"{len(defs)} metrics in {len(families)} families.",
        "",
        "| metric | family | what it measures | parameters | needs |",
        "|---|---|---|---|---|",
    ]
    for d in defs:
        summary = _md_inline(gen.first_sentence(d.doc or d.summary)).replace("|", "\\|")
        params = f"`{gen.parameters_of(d)}`".replace("|", "\\|") if d.params else "—"
        needs = ", ".join(gen.needs_of(d)) or "—"
        out.append(f"| [`{d.name}`](#{d.name}) | {d.family} | {summary} | {params} | {needs} |")
    for family, members in families.items():
        out += ["", f"## {family}", ""]
        if family in pages:
            out += [f"More on this family: [{family} metrics]({pages[family]}).", ""]
        for d in members:
            out += [f"### {d.name} {{#{d.name}}}", ""]
            facts = [f"family `{d.family}`", f"dimension `{d.dimension}`"]
            facts.append(f"threshold `{d.threshold:g}`")
            facts += [f"needs {gen.PROVIDER[kind]}" for kind in gen.needs_of(d)]
            out += ["_" + " · ".join(facts) + "_", ""]
            if d.params:
                out += ["| parameter | type | default |", "|---|---|---|"]
                for p in d.params:
                    default = "required" if p.required else f"`{p.default!r}`"
                    out.append(f"| `{p.name}` | `{_type_name(p.annotation)}` | {default} |")
                out.append("")
            out += [_doc_to_markdown(d.doc or d.summary), ""]
    found = ef.metrics.aliases()
    if found:
        out += [
            "",
            "## Aliases",
            "",
            "Other tools' names for a metric spec: the alias resolves to the spec (parameters "
            "given with it are added), and the run records the spec's canonical id.",
            "",
            "| alias | stands for | origin |",
            "|---|---|---|",
        ]
        for a in found:
            target = a.resolve({})[0]
            out.append(
                f'| <a id="{a.name}"></a>`{a.name}` | [`{a.target}`](#{target}) | '
                f"{_md_inline(a.note)} |"
            )
    return "\n".join(out).rstrip() + "\n"


# --- the CLI reference -------------------------------------------------------------------


def cli_reference() -> str:
    """Every ``evalframe`` command's usage and help text, from the click tree."""
    import click

    from evalframe.cli import cli

    out = [
        "# Command line",
        "",
        "Generated from the command definitions when the docs are built. Exit codes: 0 "
        "on success, 1 when a run has failures or a gate fails, 2 on usage or input errors.",
        "",
    ]
    root = click.Context(cli, info_name="evalframe")
    out += ["```text", cli.get_help(root), "```", ""]
    for name in sorted(cli.list_commands(root)):
        command = cli.get_command(root, name)
        if command is None or command.hidden:
            continue
        ctx = click.Context(command, info_name=f"evalframe {name}", parent=root)
        out += [f"## evalframe {name}", "", "```text", command.get_help(ctx), "```", ""]
        if isinstance(command, click.Group):  # a group's subcommands each get a section
            for sub in sorted(command.list_commands(ctx)):
                child = command.get_command(ctx, sub)
                if child is None or child.hidden:
                    continue
                sub_ctx = click.Context(child, info_name=f"evalframe {name} {sub}", parent=ctx)
                out += [f"## evalframe {name} {sub}", "", "```text", child.get_help(sub_ctx)]
                out += ["```", ""]
    return "\n".join(out).rstrip() + "\n"


# --- hooks -------------------------------------------------------------------------------


def _prune(nav: list[Any], docs_dir: Path, listed: set[str]) -> list[Any]:
    kept: list[Any] = []
    for item in nav:
        if isinstance(item, str):
            entry: Any = item
            target = item
        else:
            ((title, target),) = item.items()
            if isinstance(target, list):
                children = _prune(target, docs_dir, listed)
                if children:
                    kept.append({title: children})
                continue
            entry = item
        known = target in GENERATED or target in STUBS or (docs_dir / target).is_file()
        if "://" in target or known:
            listed.add(target)
            kept.append(entry)
        else:
            log.info("nav: %s is not written yet; left out", target)
    return kept


def on_config(config: Any) -> Any:
    docs_dir = Path(config["docs_dir"])
    listed: set[str] = set()
    nav = _prune(list(config["nav"] or []), docs_dir, listed)
    extra = sorted(
        str(p.relative_to(docs_dir)).replace("\\", "/")
        for p in docs_dir.rglob("*.md")
        if not any(part.startswith("_") for part in p.relative_to(docs_dir).parts)
    )
    more = [page for page in extra if page not in listed]
    families = [page for page in more if page.startswith("metrics/")]
    section = next(
        (
            item
            for item in nav
            if isinstance(item, dict)
            and isinstance(next(iter(item.values())), list)
            and "metrics/catalogue.md" in str(item)
        ),
        None,
    )
    if section is not None and families:
        # Family pages written after the nav: listed with the catalogue, by file name.
        next(iter(section.values())).extend(families)
        more = [page for page in more if page not in families]
    if more:
        nav.append({"More": more})
    config["nav"] = nav
    return config


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    docs_dir = Path(config["docs_dir"])
    for uri, content in (
        ("metrics/catalogue.md", metric_catalogue(docs_dir)),
        ("cli.md", cli_reference()),
    ):
        existing = files.get_file_from_path(uri)
        if existing is not None:
            files.remove(existing)
        files.append(File.generated(config, uri, content=content))
    for uri, content in STUBS.items():
        if files.get_file_from_path(uri) is None:
            files.append(File.generated(config, uri, content=content))
    return files
