"""Every shell block in README.md and docs/ runs, as written, on the bundled examples.

The convention, for whoever writes a page:

* A fenced ```` ```bash ```` block is a command a reader can paste, and this test runs it
  (per page, blocks in order, in one folder), so a documented command that breaks fails the
  suite. A command passes when it exits as the page says, without a traceback, and shows a
  result (text on stdout, or the file its ``--out``-like option names). One expected to exit
  non-zero says so in a comment on its line: ``evalframe gate v2 --baseline v1  # exits 1``.
* A block that cannot run here (a server until Ctrl-C, a cluster, the test suite itself)
  has ``<!-- not-run: the reason -->`` on the line before its fence.
* A synopsis (``[--option]``, placeholders in capitals) or a command's output is a
  ```` ```text ```` block, never a shell one. Output shown right after a block (nothing but
  blank lines between) is what its last command prints: its first line must appear, ids and
  numbers aside.

Each page's folder is a copy of one ``template``, made once: what the pages assume a reader
has. The bundled examples under ``evalframe/examples/`` (commands run from a clone's root),
the files the pages name as their own (``golden.yaml``, ``outputs.json``, ``my_app/rag.py``,
...: copies of, or small systems over, the bundled support example; see ``sandbox``), and,
except on the pages that start from nothing (``FRESH``), a store ``runs.duckdb`` holding
what the how-to pages start from (a baseline, a judged run with human labels, production
captures). The judge is the loopback stub (tests/openai_stub.py, answering as
``docs_judge``) through the ``EVALFRAME_JUDGE_*`` variables, and stands at ``JUDGE_URLS``
where a page writes an endpoint out; a loopback OTLP collector stands at ``OTLP_URL``.
``evalframe`` runs in this process (the click command the console script calls), ``pip
install`` is not run (the extras are installed; tests/test_docs_truth.py checks each install
line), and ``pytest`` runs in a subprocess.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

import evalframe as ef
from evalframe.cli import cli

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = Path(ef.__file__).parent / "examples"
SHELL = {"bash", "sh", "shell", "console"}
NOT_RUN = re.compile(r"<!-- not-run: (.+?) -->")
EXITS = re.compile(r"#\s*exits (\d+)")


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    text: str
    not_run: str | None  # the reason, for a block marked not-run
    shown: str | None = None  # the first line of the output the page shows right after it


def _pages() -> list[Path]:
    docs = [p for p in sorted((ROOT / "docs").rglob("*.md")) if "_hooks" not in p.parts]
    return [ROOT / "README.md", *docs]


def _fences(path: Path) -> Iterator[tuple[int, str, str, str]]:
    """(line, language, body, the line before the fence) of each fenced block; the line
    before is empty when only blank lines separate the block from the one before it."""
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        opened = re.match(r"^\s*```(\S*)", lines[i])
        if opened is None:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
        before = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        before = "" if before.strip() == "```" else before
        yield i + 1, opened.group(1), "\n".join(lines[i + 1 : end]), before
        i = end + 1


def blocks() -> list[Block]:
    out: list[Block] = []
    for path in _pages():
        page = str(path.relative_to(ROOT))
        last: Block | None = None
        for line, lang, body, before in _fences(path):
            if lang == "text" and before == "" and last is not None and last.not_run is None:
                out[-1] = Block(last.page, last.line, last.text, None, body.splitlines()[0])
            last = None
            if lang in SHELL:
                marked = NOT_RUN.search(before)
                last = Block(page, line, body, marked.group(1) if marked else None)
                out.append(last)
    return out


def shown_pattern(line: str) -> re.Pattern[str]:
    """A pattern for a line of output as a page shows it: the same words, any ids and
    numbers (a run id, a count, a score) in their places."""
    parts = re.split(r"([0-9a-f]{8,}|\d+(?:\.\d+)?)", line.strip())
    return re.compile(r"\S+".join(re.escape(part) for part in parts[::2]))


BLOCKS = blocks()
RUNNABLE_PAGES = sorted({b.page for b in BLOCKS if b.not_run is None})


# --- the convention holds ----------------------------------------------------------------------


def test_every_shell_block_runs_or_says_why_not() -> None:
    assert len(BLOCKS) >= 40
    assert len([b for b in BLOCKS if b.not_run is None]) >= 30
    vague = [f"{b.page}:{b.line}" for b in BLOCKS if b.not_run is not None and len(b.not_run) < 8]
    assert vague == [], "say why the block cannot run"


def test_commands_are_in_shell_blocks_and_synopses_in_text_blocks() -> None:
    """A block without a language that starts with a command should say ``bash``; a shell
    block with a synopsis's brackets or capitals cannot be pasted: ``text``."""
    problems = []
    for path in _pages():
        for line, lang, body, _ in _fences(path):
            first = body.lstrip().split(" ", 1)[0]
            where = f"{path.relative_to(ROOT)}:{line}"
            if lang == "" and first in ("evalframe", "pip", "python", "pytest", "$"):
                problems.append(f"{where}: a command in a block with no language")
            if lang in SHELL and re.search(r" \[--|\b(RUN|DATASET|FILE)\b", body):
                problems.append(f"{where}: a synopsis in a shell block")
    assert problems == []


# --- running a page's blocks -------------------------------------------------------------------

# Endpoints pages write out for a judge: the loopback stub answers there.
JUDGE_URLS = ("http://127.0.0.1:8000/v1", "http://localhost:8000/v1")
# The OTLP collector a page exports to: a loopback receiver stands there.
OTLP_URL = "http://localhost:4318"

CHANGED = {  # getting-started's v2: three answers broken, two fixed
    "shipping-cost": "Shipping costs depend on your cart.",
    "support-email": "Email our support team.",
    "gift-cards": "Yes, gift cards can be refunded.",
    "warranty": "2 years.",
    "account-delete": "Settings > Privacy > Delete account.",
}
UNSURE = "I do not know."  # an answer the docs' judge fails
REFUSAL = "I can't help with that request."

RAG_SYSTEM = '''"""The system under test the docs call my_app.rag:answer: the saved answers."""
import json
from pathlib import Path

import yaml

_HERE = Path(__file__).resolve().parent.parent
_SAVED = json.loads((_HERE / "outputs.json").read_text(encoding="utf-8"))["outputs"]
_BY_QUESTION = {
    s["input"]["question"]: _SAVED[s["id"]]
    for s in yaml.safe_load((_HERE / "golden.yaml").read_text(encoding="utf-8"))["samples"]
}


def answer(inp):
    return _BY_QUESTION.get(inp.get("question"), "I do not know.")
'''

CHAT_SYSTEM = f'''"""The chat system the red-teaming page attacks: it refuses everything."""


def answer(inp):
    return {REFUSAL!r}
'''

NIGHTLY = """schema_version: eval-harness.eval-set.v1
name: nightly
datasets:
  - golden.yaml
  - {path: retrieval.yaml, outputs: retrieval.outputs.json}
"""


def docs_judge(prompt: str) -> str:
    """The judge behind every documented command: a reply in the shape each prompt asks for
    (the RAG prompts by tests/rag_script.py's rules), passing every answer but ``UNSURE``."""
    from judge_script import actual_of
    from rag_script import VERDICT

    if '{"steps": [' in prompt:  # g-eval's evaluation steps
        return json.dumps({"steps": ["Read the question.", "Check the answer's facts."]})
    if '"winner"' in prompt:  # pairwise
        return json.dumps({"winner": "tie", "reason": "Both say the same."})
    if "<1-5>" in prompt:  # g-eval's rating
        return json.dumps({"score": 4, "reason": "Mostly meets the criteria."})
    if '"refusal"' in prompt:  # refusal-quality
        refused = actual_of(prompt) == REFUSAL
        verdict = "appropriate" if refused else "unsafe_compliance"
        return json.dumps({"score": 1.0 if refused else 0.1, "refusal": verdict, "reason": "."})
    try:
        return str(VERDICT(prompt))
    except AssertionError:  # not a RAG prompt: llm-as-judge's score and reason
        score = 0.2 if UNSURE in prompt else 0.9
        return json.dumps({"score": score, "reason": "Judged by the stub."})


def sandbox(root: Path) -> None:
    """The files the pages assume: the bundled examples, and their own names for them."""
    shutil.copytree(EXAMPLES, root / "evalframe" / "examples")
    dataset = (EXAMPLES / "support.yaml").read_text(encoding="utf-8")
    outputs = json.loads((EXAMPLES / "support.outputs.json").read_text(encoding="utf-8"))
    changed = {"outputs": {**outputs["outputs"], **CHANGED}}
    files = {
        "golden.yaml": dataset,
        "eval/golden.yaml": dataset,
        "data.yaml": dataset,
        "outputs.json": json.dumps(outputs),
        "out.json": json.dumps(outputs),
        "eval/outputs.json": json.dumps(outputs),
        "old.outputs.json": json.dumps(outputs),
        "new.outputs.json": json.dumps(changed),
        "v2.outputs.json": json.dumps(changed),
        "my_app/__init__.py": "",
        "my_app/rag.py": RAG_SYSTEM,
        "my_app/chat.py": CHAT_SYSTEM,
        "nightly.yaml": NIGHTLY,
        "retrieval.yaml": (EXAMPLES / "retrieval.yaml").read_text(encoding="utf-8"),
        "retrieval.outputs.json": (EXAMPLES / "retrieval.bm25.outputs.json").read_text(
            encoding="utf-8"
        ),
        "ragas.jsonl": (ROOT / "tests/data/peers/ragas/single_turn.jsonl").read_text(
            encoding="utf-8"
        ),
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")


def _invoke(args: list[str], env: dict[str, str]) -> Result:
    result = CliRunner().invoke(cli, args, env=env)
    assert result.exit_code == 0, f"evalframe {' '.join(args)}: {result.output}"
    return result


def _labels_and_cases(root: Path) -> None:
    """A reader's human labels of the judged run (in labels.csv, and in the store as the
    viewer saves them) and calibration cases (cases.yaml) for the judge-calibration page:
    people fail answers the judge passes, and the reverse."""
    outputs = json.loads((root / "outputs.json").read_text(encoding="utf-8"))["outputs"]
    failed = {"gift-cards", "international"}
    labels = {sid: "fail" if sid in failed else "pass" for sid in outputs}
    rows = [f"{sid},{label}" for sid, label in labels.items()]
    (root / "labels.csv").write_text("sample_id,label\n" + "\n".join(rows) + "\n", "utf-8")
    with ef.Store(root / STORE) as store:
        run_id = store.runs(limit=1).get_column("run_id")[0]
        store.save_labels(
            [
                {"run_id": run_id, "sample_id": sid, "metric": "llm-as-judge", "label": label}
                for sid, label in labels.items()
            ]
        )
    samples = yaml.safe_load((root / "golden.yaml").read_text(encoding="utf-8"))["samples"]
    cases = [
        {
            "id": s["id"],
            "input": s["input"],
            "expected": s["expected_output"],
            "actual": outputs[s["id"]] if i % 4 else UNSURE,
            "human_verdict": "pass" if i % 4 else "fail",
            "tags": s.get("metadata", {}).get("tags", []),
        }
        for i, s in enumerate(samples)
    ]
    doc = {"schema_version": "eval-harness.calibration.v1", "name": "support-judge"}
    (root / "cases.yaml").write_text(yaml.safe_dump({**doc, "cases": cases}), "utf-8")


def _captures(root: Path, store: Path) -> None:
    """Production traffic for the monitoring page: the support questions, every fourth
    answered ``UNSURE``, captured with retention into ``store``."""
    outputs = json.loads((root / "outputs.json").read_text(encoding="utf-8"))["outputs"]
    samples = yaml.safe_load((root / "golden.yaml").read_text(encoding="utf-8"))["samples"]
    ef.online.configure(store=store, sampling_rate=1.0, retention=True, redactor=str.strip)
    try:
        for i, s in enumerate(samples):
            actual = UNSURE if i % 4 == 0 else outputs[s["id"]]
            assert ef.online.capture("support.faq", f"req-{i}", s["input"], actual)
    finally:
        ef.online.close()


class _Collector(BaseHTTPRequestHandler):
    """An OTLP/HTTP collector that keeps what it receives, by path."""

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.server.received.setdefault(self.path, []).append(body)  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def collector() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    server.received = {}  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.fixture(scope="module")
def judge() -> Iterator[str]:
    from openai_stub import StubOpenAI

    with StubOpenAI(verdict=docs_judge) as stub:
        yield stub.url


def _env(judge_url: str, root: Path) -> dict[str, str]:
    return {
        "COLUMNS": "120",
        "XDG_CACHE_HOME": str(root / ".cache"),
        "EVALFRAME_JUDGE_BASE_URL": judge_url,
        "EVALFRAME_JUDGE_MODEL": "stub-judge",
        "EVALFRAME_JUDGE_API_KEY": "sk-docs",
    }


STORE = "store/runs.duckdb"
# Pages that make their own store from nothing (their commands name their runs).
FRESH = {"docs/getting-started.md", "README.md"}


@pytest.fixture(scope="module")
def template(judge: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Made once, copied for each page: the sandbox, and the store most pages start from
    (``STORE``): a run named v1, promoted as the dataset's baseline and as ``production``,
    then a run the judge scored too (``latest``), and production captures; report files
    (``old.json``, ``new.json``, ``report.json`` and ``reports/eval-harness-main.json``,
    evalframe's report standing in for eval-harness's, which test_import_reports.py reads)."""
    root = tmp_path_factory.mktemp("docs")
    sandbox(root)
    env = _env(judge, root)
    store = str(root / STORE)
    (root / STORE).parent.mkdir()
    data, saved = str(root / "golden.yaml"), str(root / "outputs.json")
    old, new = root / "old.json", root / "new.json"
    _invoke(["run", data, "--outputs", saved, "--store", store, "--name", "v1",
             "--format", "json", "--out", str(old)], env)  # fmt: skip
    _invoke(["baseline", "promote", "v1", "--store", store], env)
    _invoke(["baseline", "promote", "v1", "--name", "production", "--store", store], env)
    _invoke(["run", data, "--outputs", str(root / "new.outputs.json"), "--format", "json",
             "--out", str(new)], env)  # fmt: skip
    _invoke(["run", data, "--outputs", saved, "--store", store, "--name", "judged",
             "-m", "contains", "-m", "rouge-l", "-m", "llm-as-judge"], env)  # fmt: skip
    shutil.copy(old, root / "report.json")
    (root / "reports").mkdir()
    shutil.copy(old, root / "reports" / "eval-harness-main.json")
    _labels_and_cases(root)
    _captures(root, root / STORE)
    return root


@dataclass
class Command:
    words: list[str]
    exits: int
    source: str


def commands(text: str) -> Iterator[Command]:
    """The block's commands: continuation lines joined, ``&&`` and ``;`` split, comments
    dropped (an ``# exits N`` comment is about the line's last command)."""
    for line in re.sub(r"\\\n\s*", " ", text).splitlines():
        expected = EXITS.search(line)
        found: list[list[str]] = [[]]
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&")
        lexer.whitespace_split = True
        for word in lexer:
            if word in ("&&", ";"):
                found.append([])
            else:
                found[-1].append(word)
        found = [words for words in found if words]
        for i, words in enumerate(found):
            last = i == len(found) - 1
            yield Command(words, int(expected.group(1)) if expected and last else 0, line)


OUT_OPTIONS = ("--out", "--to", "--chart", "--manifest", "--merge", "--tracking-uri")


def _wrote(words: list[str], cwd: Path) -> bool:
    """Whether the command wrote the (non-empty) file or folder an output option names."""
    for option, value in itertools.pairwise(words):
        if option in OUT_OPTIONS:
            target = cwd / value.removeprefix("sqlite:///")
            if target.is_file() and target.stat().st_size > 0:
                return True
            if target.is_dir() and any(target.iterdir()):
                return True
    return False


def _run(
    command: Command,
    env: dict[str, str],
    loopback: dict[str, str],
    cwd: Path,
    shown: str | None = None,
    received: dict[str, list[bytes]] | None = None,
) -> str | None:
    """Run one command; the reason it failed, or None. A command passes when it exits as
    the page says, without a traceback, and shows a result: text on stdout, or the file an
    output option names; with ``--otel``, the spans the collector received (``received``).
    ``loopback`` maps the endpoints a page writes out to the servers standing there."""
    words = [loopback.get(w, w) for w in command.words]
    head = words[0]
    if head == "export":
        for assignment in words[1:]:
            key, _, value = assignment.partition("=")
            env[key] = loopback.get(value, value)
        return None
    if head == "pip" or words[:3] == ["python", "-m", "pip"]:
        return None  # installed already; each install line is checked by test_docs_truth
    if head == "evalframe":
        if received is not None:
            received.clear()
        result = CliRunner().invoke(cli, words[1:], env=env)
        said = result.output[-3000:]
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            return f"raised {result.exception!r}\n{said}"
        if result.exit_code != command.exits:
            return f"exit {result.exit_code}, expected {command.exits}\n{said}"
        if "Traceback" in result.output:
            return f"a traceback\n{said}"
        if "--otel" in words and "/v1/traces" not in (received or {}):
            return f"--otel: the collector received no spans\n{said}"
        if shown is not None and not shown_pattern(shown).search(result.output):
            return f"the page shows {shown!r} as its output\n{said}"
        result_shown = result.stdout.strip() or _wrote(words, cwd)
        result_shown = result_shown or (command.exits != 0 and result.output.strip())  # why
        return None if result_shown else f"no output and no file written\n{said}"
    if head == "pytest":
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly",
             *words[1:]],
            cwd=cwd, env={**os.environ, **env}, capture_output=True, text=True, check=False,
        )  # fmt: skip
        if done.returncode == command.exits and " passed" in done.stdout:
            return None
        return f"exit {done.returncode}\n{done.stdout[-3000:]}{done.stderr[-2000:]}"
    return f"'{head}' is not a command this test runs: mark the block <!-- not-run: why -->"


@pytest.mark.parametrize("page", RUNNABLE_PAGES)
def test_the_shell_blocks_of_a_page_run(
    page: str,
    judge: str,
    collector: ThreadingHTTPServer,
    template: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = tmp_path / "clone"
    shutil.copytree(template, root, ignore=shutil.ignore_patterns(".cache"))
    if page not in FRESH:
        shutil.copy(root / STORE, root / "runs.duckdb")
    for name in ("EVALFRAME_STORE", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(root)
    monkeypatch.syspath_prepend(str(root))
    for name in [m for m in sys.modules if m.split(".")[0] == "my_app"]:
        monkeypatch.delitem(sys.modules, name)  # another page's copy: import this one's
    env = _env(judge, template)  # the template's embedder cache: one for every page
    host, port = collector.server_address[:2]
    loopback = {**dict.fromkeys(JUDGE_URLS, judge), OTLP_URL: f"http://{host!s}:{port}"}
    received: dict[str, list[bytes]] = collector.received  # type: ignore[attr-defined]
    ran = 0
    for block in BLOCKS:
        if block.page != page or block.not_run is not None:
            continue
        found = list(commands(block.text))
        for i, command in enumerate(found):
            shown = block.shown if i == len(found) - 1 else None
            failure = _run(command, env, loopback, root, shown, received)
            ran += 1
            assert failure is None, f"{page}:{block.line}: {command.source}\n{failure}"
    assert ran > 0


def test_a_command_that_breaks_or_writes_nothing_fails(tmp_path: Path) -> None:
    """Control: the runner above tells a documented command that works from one that does
    not."""
    env = {"COLUMNS": "120"}

    def run(line: str) -> str | None:
        (command,) = commands(line)
        return _run(command, env, {}, tmp_path)

    assert run("evalframe metrics") is None
    assert "exit 2, expected 0" in str(run("evalframe run nope.yaml --outputs nope.json"))
    assert run("evalframe run nope.yaml --outputs nope.json  # exits 2: no such file") is None
    assert "exit 0, expected 1" in str(run("evalframe metrics  # exits 1"))
    assert "not a command this test runs" in str(run("curl http://127.0.0.1:8765/"))
    (metrics,) = commands("evalframe metrics")
    assert _run(metrics, env, {}, tmp_path, shown="exact-match") is None
    wrong = _run(metrics, env, {}, tmp_path, shown="gate FAILED: run 1f2e3d4c5b6a7980 against v1")
    assert "the page shows 'gate FAILED" in str(wrong)
    written = ["evalframe", "report", "latest", "--out", "r.html"]
    assert not _wrote(written, tmp_path)  # no file
    (tmp_path / "r.html").write_text("", encoding="utf-8")
    assert not _wrote(written, tmp_path)  # an empty file
    (tmp_path / "r.html").write_text("<html>", encoding="utf-8")
    assert _wrote(written, tmp_path)


def test_commands_are_read_as_a_shell_reads_them() -> None:
    text = (
        "export A=1\n"
        "evalframe run x.yaml \\\n    --outputs o.json  # the first\n"
        "python -m pip install . && evalframe gate v2 --baseline v1  # exits 1: worse\n"
    )
    got = [(c.words, c.exits) for c in commands(text)]
    assert got == [
        (["export", "A=1"], 0),
        (["evalframe", "run", "x.yaml", "--outputs", "o.json"], 0),
        (["python", "-m", "pip", "install", "."], 0),
        (["evalframe", "gate", "v2", "--baseline", "v1"], 1),
    ]
