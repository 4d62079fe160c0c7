"""The docs describe the product as it is: generated regions match the code, install lines
work from a clone, every command and option a page names exists, every module a page names
exists, and counts come from the code (the commands a page shows run in test_docs_shell.py).
"""

from __future__ import annotations

import importlib.util
import re
import shlex
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import click
import duckdb
import pytest
from click.testing import CliRunner

from evalframe.cli import cli

ROOT = Path(__file__).resolve().parents[1]


def _load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "scripts" / "gen_docs.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_docs", module)
    spec.loader.exec_module(module)
    return module


gen = _load_generator()
PAGES = gen.pages()


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


# --- generated regions ---------------------------------------------------------------------


def test_generated_regions_match_the_code() -> None:
    stale = [_rel(p) for p in gen.drifted()]
    assert stale == [], f"generated regions out of date in {stale}: run {gen.COMMAND}"


def test_the_regions_are_where_the_docs_need_them() -> None:
    found = {
        (_rel(p), name)
        for p in PAGES
        for name, _ in gen.REGION.findall(p.read_text(encoding="utf-8"))
    }
    assert {
        ("README.md", "metric-count"),
        ("README.md", "family-count"),
        ("README.md", "metrics-table"),
        ("README.md", "commands"),
        ("docs/providers.md", "model-metrics"),
        ("docs/index.md", "metric-count"),
        ("docs/concepts/dependencies.md", "extras"),
    } <= found
    assert {name for _, name in found} == set(gen.REGIONS)  # every generator has a region


def test_a_stale_region_is_rewritten_and_an_unknown_one_refused() -> None:
    """Control: the drift check above compares something."""
    count = gen.metric_count()
    assert int(count) == len(gen.metric_defs()) >= 90
    stale = "We ship <!-- generated: metric-count -->15<!-- /generated --> metrics."
    assert gen.render(stale, "x.md", {}) == stale.replace(">15<", f">{count}<")
    block = "<!-- generated: commands -->\nSTALE\n<!-- /generated -->"
    fresh = gen.render(block, "x.md", {})
    assert "| `evalframe run DATASET` |" in fresh
    assert "STALE" not in fresh
    assert gen.render(fresh, "x.md", {}) == fresh
    with pytest.raises(SystemExit, match="no generated region 'nope'"):
        gen.render("<!-- generated: nope -->x<!-- /generated -->", "x.md", {})


def test_the_command_table_lists_every_command() -> None:
    table = gen.command_table()
    leaves = [path for path, command, _ in gen.commands() if not isinstance(command, click.Group)]
    assert len(leaves) >= 20
    assert [p for p in leaves if f"| `{p}" not in table] == []
    for expected in ("calibrate", "estimate", "brief", "online score", "run-set", "view"):
        assert f"`evalframe {expected}" in table


def test_the_metric_table_lists_every_metric_and_what_it_needs() -> None:
    table = gen.metrics_table()
    defs = gen.metric_defs()
    assert [d.name for d in defs if f"`{d.name}`" not in table] == []
    needs = {d.name: gen.needs_of(d) for d in defs}
    assert needs["llm-as-judge"] == ("judge",)
    assert needs["cosine-embedding"] == ("embedder",)
    assert needs["webhook"] == ("webhook",)
    assert needs["rouge-l"] == ()
    assert needs["g-eval"] == ("judge",)
    assert "| [rag](docs/metrics/rag.md) |" in table


def test_the_extras_table_has_every_extra_with_its_packages() -> None:
    table = gen.extras_table()
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    rows = [line for line in table.splitlines()[2:] if line.startswith("| `")]
    assert sorted(row.split("`")[1] for row in rows) == sorted(extras)
    assert "| `pdf` | `pypdf` |" in table
    assert "| `dev` | the extra `test` |" in table


def test_every_metric_is_described_on_its_familys_page() -> None:
    pages = gen.family_pages()
    missing = []
    for family, defs in gen.families().items():
        assert family in pages, f"no page under docs/metrics/ names the {family} metrics"
        text = (ROOT / "docs" / pages[family]).read_text(encoding="utf-8")
        named = set(gen.mentioned(text, defs))
        missing += [f"{d.name} ({pages[family]})" for d in defs if d.name not in named]
    assert missing == [], "describe these metrics on their family's page"


NUMBER = (
    r"\b(\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|"
    r"fourteen|fifteen|sixteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)"
)
# Claims about the whole product; "the four ranking metrics" on a family page names a subset.
COUNT_CLAIM = re.compile(
    NUMBER + r"\s+(built-in\s+metrics|metrics\s+in\s+\w+\s+families|(evalframe\s+)?commands"
    r"|tables\s+and\s+views)\b|\b(all|evalframe's)\s+" + NUMBER[2:] + r"\s+metrics\b",
    re.IGNORECASE,
)


def test_counts_of_metrics_and_commands_are_generated_or_absent() -> None:
    found = [
        f"{_rel(path)}: {match.group(0)}"
        for path in PAGES
        for match in COUNT_CLAIM.finditer(gen.REGION.sub("", path.read_text(encoding="utf-8")))
    ]
    assert found == [], "a count in prose drifts: use a generated region or drop it"


def test_the_count_check_catches_a_stale_count() -> None:
    text = (
        "score with fifteen built-in metrics, 20 commands and all 85 metrics; "
        "the four ranking metrics"
    )
    claims = [m.group(0) for m in COUNT_CLAIM.finditer(text)]
    assert claims == ["fifteen built-in metrics", "20 commands", "all 85 metrics"]


# --- the test suite's stated duration ---------------------------------------------------------

DURATION = re.compile(r"suite takes about (\w+) minutes on two cores", re.IGNORECASE)
WORDS = {"five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "twelve": 12}


def test_the_suite_duration_is_stated_once_and_as_measured() -> None:
    """README states it, once: about ten minutes on two cores with pytest-xdist (the team's
    measure of the default run; its budget is 15 minutes). Nothing else states another."""
    stated = [
        (_rel(p), m.group(1).lower())
        for p in PAGES
        for m in DURATION.finditer(p.read_text(encoding="utf-8"))
    ]
    assert stated == [("README.md", "ten")]
    assert WORDS[stated[0][1]] <= 15
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    test_extra = " ".join(extra["project"]["optional-dependencies"]["test"])
    assert "pytest-xdist" in readme
    assert "pytest-xdist" in test_extra  # what spreads the suite over the cores


# --- sql --help names every table and view ------------------------------------------------------


def _store_tables_and_views() -> list[str]:
    """The tables and views of a new store, as DuckDB lists them."""
    from evalframe.store import _adversarial, _schema

    con = duckdb.connect()
    try:
        _schema.create(con)
        con.execute(_adversarial._DDL)  # created when the adversarial lane first records
        query = "SELECT table_name FROM information_schema.tables"
        return sorted(row[0] for row in con.execute(query).fetchall())
    finally:
        con.close()


def test_the_store_schema_page_has_a_section_for_each_table_and_view() -> None:
    text = (ROOT / "docs" / "store-schema.md").read_text(encoding="utf-8")
    sections = sorted(re.findall(r"^### `(\w+)`$", text, flags=re.MULTILINE))
    assert sections == _store_tables_and_views()


def test_sql_help_names_every_table_and_view_of_a_store() -> None:
    names = _store_tables_and_views()
    assert len(names) >= 35
    result = CliRunner().invoke(cli, ["sql", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    words = set(re.findall(r"\w+", result.output))
    assert [n for n in names if n not in words] == []
    assert "docs/store-schema.md" in result.output


# --- install lines work from a clone --------------------------------------------------------

PIP = re.compile(r"pip install ([^`\n#]*)")
EXTRAS = set(
    tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
)


def _install_targets(text: str) -> Iterator[tuple[int, str]]:
    for match in PIP.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        try:
            words = shlex.split(match.group(1).split("&&")[0])
        except ValueError:
            words = match.group(1).split()
        for word in words:
            if not word.startswith("-"):
                yield line, word


def _install_problem(target: str) -> str | None:
    """Why ``target`` does not install from a clone (None when it does)."""
    name, _, extras = target.partition("[")
    if name.lower() == "evalframe":
        return f'not on a package index: from a clone write pip install ".[{extras[:-1]}]"'
    if name in (".", "./") and extras:
        unknown = set(extras.rstrip("]").split(",")) - EXTRAS
        return f"no extra {sorted(unknown)} in pyproject.toml" if unknown else None
    return None


def test_every_install_line_works_from_a_clone() -> None:
    problems = []
    seen = 0
    for path in PAGES:
        for line, target in _install_targets(path.read_text(encoding="utf-8")):
            seen += 1
            why = _install_problem(target)
            if why:
                problems.append(f"{_rel(path)}:{line}: pip install {target}: {why}")
    assert seen >= 10
    assert problems == []


def test_every_install_hint_the_package_prints_works_from_a_clone() -> None:
    """Error messages and --help name an extra the way the docs do."""
    problems = []
    seen = 0
    hint = re.compile(r"pip install ['\"]?([\w.]*(\[[\w,]+\])?)")
    for path in sorted((ROOT / "evalframe").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        for match in hint.finditer(text):
            line, target = text.count("\n", 0, match.start()) + 1, match.group(1)
            seen += 1
            why = _install_problem(target)
            if why:
                problems.append(f"{_rel(path)}:{line}: pip install {target}: {why}")
    assert seen >= 8
    assert problems == []


def test_the_install_check_refuses_the_index_form_and_unknown_extras() -> None:
    assert _install_problem("evalframe[jupyter]") is not None
    assert _install_problem("evalframe") is not None
    assert _install_problem(".[jupyter]") is None
    assert _install_problem(".[viz,nope]") == "no extra ['nope'] in pyproject.toml"
    assert _install_problem("mlflow") is None  # another project's package
    text = 'run `pip install "evalframe[viz]"` or\n  python -m pip install -e ".[test]"'
    assert list(_install_targets(text)) == [(1, "evalframe[viz]"), (2, ".[test]")]


# --- every command and option a page names exists -----------------------------------------------


SHELL = {"bash", "sh", "shell", "console"}


def _code(text: str) -> Iterator[tuple[int, str, str]]:
    """(line, text, language) of each code block line, continuations joined, and of each
    inline code span (language ``inline``)."""
    lang: str | None = None
    pending = ""
    for n, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("```"):
            lang = None if lang is not None else stripped[3:].split(" ")[0]
            continue
        if lang is not None:
            if stripped.endswith("\\"):
                pending += stripped[:-1] + " "
                continue
            yield n, pending + stripped, lang
            pending = ""
        else:
            for span in re.findall(r"`([^`]+)`", line):
                yield n, span, "inline"


def _params(command: click.Command) -> set[str]:
    return {o for p in command.params for o in (*p.opts, *p.secondary_opts)} | {"--help", "-h"}


def _resolve(words: list[str]) -> tuple[click.Command | None, str]:
    """The command ``words`` (after ``evalframe``) names, and its name; (None, name) when
    there is no such command."""
    command: click.Command = cli
    name = "evalframe"
    ctx = click.Context(cli)
    for word in words:
        if not isinstance(command, click.Group) or word.startswith("-"):
            break
        sub = command.get_command(ctx, word)
        if sub is None:
            if word.isupper() or not re.fullmatch(r"[a-z][a-z-]*", word):
                break  # a placeholder such as COMMAND
            return None, f"{name} {word}"
        command, name = sub, f"{name} {word}"
    return command, name


def documented_commands() -> Iterator[tuple[str, int, str]]:
    """(page, line, the text after ``evalframe``) of every evalframe command the docs show:
    in shell blocks, synopsis lines of text blocks, and inline code."""
    for path in PAGES:
        for line, code, lang in _code(path.read_text(encoding="utf-8")):
            if lang in SHELL:
                found = re.split(r"(?:^|&&|;|\$)\s*evalframe\s+(?=[a-z-])", code)[1:]
            elif lang in ("text", "", "inline") and code.startswith("evalframe "):
                found = code.removeprefix("evalframe ").split(" / evalframe ")
            else:
                continue
            for rest in found:
                yield _rel(path), line, rest.split(" # ")[0].split("&&")[0]


def test_every_documented_command_and_option_exists() -> None:
    problems = []
    checked = 0
    for page, line, rest in documented_commands():
        words = rest.replace("[", " ").replace("]", " ").replace("|", " ").split()
        command, name = _resolve(words)
        if command is None:
            problems.append(f"{page}:{line}: no command '{name}'")
            continue
        checked += 1
        known = _params(command)
        for option in re.findall(r"(?<![\w-])(--?[a-z][a-z0-9-]*)", " ".join(words)):
            if option not in known and not (option.startswith("-") and len(option) == 2 and
                                            option[1].isupper()):  # fmt: skip
                problems.append(f"{page}:{line}: {name} has no option {option}")
    assert checked >= 100
    assert problems == []


def test_the_option_check_sees_a_stale_option() -> None:
    command, name = _resolve(["baseline", "promote", "latest"])
    assert name == "evalframe baseline promote"
    assert command is not None
    assert "--name" in _params(command)
    assert "--nope" not in _params(command)
    assert _resolve(["nosuch", "x"]) == (None, "evalframe nosuch")


# --- every module a page names exists ----------------------------------------------------------

TOP = {p.name for p in ROOT.iterdir()} | {p.name for p in (ROOT / "evalframe").iterdir()}


def _exists(span: str, base: Path) -> bool:
    path = span.rstrip("/").split("(")[0]
    for root in (base, ROOT / "evalframe", ROOT):
        candidate = root / path
        if candidate.exists() or candidate.with_suffix(".py").exists():
            return True
        if "*" in path and any(root.glob(path)):  # metrics/prompts/synthesize.*
            return True
        module, _, _attr = path.rpartition(".")  # core/aggregate.macro_f1_of
        if module and "/" in module and (root / f"{module}.py").exists():
            return True
    return False


def _named_paths(text: str) -> Iterator[tuple[int, str]]:
    for line, span, _ in _code(text):
        if re.fullmatch(r"[\w.-]+(/[\w.-]+)+/?(\.\w+)?", span) and span.split("/")[0] in TOP:
            yield line, span


def test_every_file_and_module_a_page_names_exists() -> None:
    missing = []
    checked = 0
    for path in PAGES:
        for line, span in _named_paths(path.read_text(encoding="utf-8")):
            checked += 1
            if not _exists(span, ROOT / "evalframe"):
                missing.append(f"{_rel(path)}:{line}: {span}")
    assert checked >= 100
    assert missing == []


LINK = re.compile(r"\]\(([^)#\s]+)(#[^)]*)?\)")


def test_every_relative_link_of_the_readme_leads_to_a_file() -> None:
    """The docs site checks its own links (mkdocs build --strict); README.md is read on the
    forge, where a page the site generates (docs/cli.md) does not exist."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    links = [m.group(1) for m in LINK.finditer(text) if "://" not in m.group(1)]
    assert len(links) >= 20
    assert [link for link in links if not (ROOT / link).exists()] == []


def test_the_notebooks_page_lists_every_notebook() -> None:
    text = (ROOT / "docs" / "notebooks.md").read_text(encoding="utf-8")
    linked = sorted(set(re.findall(r"\]\(notebooks/(\w+\.ipynb)\)", text)))
    assert linked == sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
    assert len(linked) >= 9


def _architecture_rows() -> list[tuple[str, str]]:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = text.split("| concern | module |", 1)[1].split("\n\n", 1)[0]
    rows = [line.split(" | ") for line in table.splitlines()[2:] if line.startswith("| ")]
    return [(row[0].removeprefix("| "), row[-1].removesuffix(" |")) for row in rows]


def test_the_architecture_table_names_modules_that_exist() -> None:
    """Each module cell: paths from evalframe/, and bare ``_name`` modules in the folder of the
    path named before them in the same cell."""
    rows = _architecture_rows()
    assert len(rows) >= 30
    missing = []
    checked = 0
    for concern, cell in rows:
        base = ROOT / "evalframe"
        for span in re.findall(r"`([^`]+)`", cell):
            if "<" in span or span == "...":
                continue
            if "/" in span:
                path = span.split(".")[0] if not span.endswith(".py") else span
                target = ROOT / "evalframe" / path
                base = target if span.endswith("/") else target.parent
            elif not re.fullmatch(r"_?\w+(\.py)?", span) or not (
                span.startswith("_") or span.endswith(".py")
            ):
                continue  # an API name such as `Store`
            checked += 1
            if not _exists(span, base):
                missing.append(f"{concern[:40]}: {span}")
    assert checked >= 80
    assert missing == []


def test_the_module_check_sees_a_missing_module() -> None:
    assert _exists("core/_dataset.py", ROOT)
    assert _exists("_connect", ROOT / "evalframe" / "store")
    assert _exists("core/aggregate.macro_f1_of", ROOT)
    assert not _exists("core/_no_such_module.py", ROOT)
    assert not _exists("_no_such", ROOT / "evalframe" / "store")
