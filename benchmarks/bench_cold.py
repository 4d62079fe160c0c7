"""Cold start: the first run of each documented command and metric family, against the second.

Run: ``.venv/bin/python benchmarks/bench_cold.py [--only NAME,...] [--venv] [--rows N]``

Every case runs in a fresh environment three times: the first run finds no compiled-kernel
cache, no provider cache and no store (as in a new virtual environment after ``pip install
.``), the second finds what the first left, and the third finds the compiled kernels but an
empty provider cache (so it embeds and asks the judge again, as the first did: what the same
work costs once compiled). A case is a list of steps (``evalframe`` commands, or a Python
snippet for a metric family), each timed on its own in a new process (wall time, CPU time
and the process's peak resident set), so a command that needs a stored run (``compare``,
``gate``, ``report``) is timed after the ``run`` that stored it, as a user would run them.
CPU time moves less than wall time when other jobs share the machine.

Environments: by default a fresh ``NUMBA_CACHE_DIR`` and ``XDG_CACHE_HOME`` per case in this
virtual environment (Numba then writes and reads its cache there instead of beside the
installed sources). ``--venv`` runs every case in one new virtual environment made with
``pip install .`` (so only the project's own dependencies are installed, as for a user), a
fresh cache directory per case; ``--venv-per-case`` makes a new virtual environment for each
case (a minute or two each; pip's download cache is used) and leaves Numba to cache beside
the installed package, exactly as a user's first run does. Running a few cases both ways
shows that an empty cache directory stands for a new environment.

The target: a first run takes at most twice its second run plus 2 s. The table printed at the
end goes to benchmarks/README.md ("Cold start").
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "evalframe" / "examples"
sys.path.insert(0, str(ROOT / "tests"))


@dataclass(frozen=True)
class Step:
    label: str
    argv: list[str]  # an evalframe command line, or ["--family", NAME] for a Python snippet
    timed: bool = True


@dataclass
class Case:
    name: str
    steps: list[Step]
    results: list[Result] = field(default_factory=list)


@dataclass(frozen=True)
class Timing:
    wall: float  # seconds
    cpu: float  # user + system seconds of the process
    rss: int  # peak resident set, KiB
    code: int
    notice: bool  # said "compiling ..., once per environment"


@dataclass(frozen=True)
class Result:
    label: str
    first: Timing  # no compiled-kernel cache, no provider cache
    second: Timing  # both caches as the first run left them
    fresh: Timing  # the compiled-kernel cache kept, an empty provider cache

    @property
    def met(self) -> bool:
        return self.first.wall <= 2 * self.second.wall + 2


def _ex(name: str) -> str:
    return str(EXAMPLES / name)


SUPPORT = ["run", _ex("support.yaml"), "--outputs", _ex("support.outputs.json")]
RETRIEVAL = ["run", _ex("retrieval.yaml"), "--outputs", _ex("retrieval.bm25.outputs.json")]
AGENT = ["run", _ex("agent.yaml"), "--outputs", _ex("agent.v1.outputs.json")]


def command_cases() -> list[Case]:
    store = ["--store", "runs.duckdb"]
    return [
        Case("run (Markdown)", [Step("run support.yaml", SUPPORT)]),
        Case(
            "run --format json",
            [Step("run support.yaml --format json", [*SUPPORT, "--format", "json"])],
        ),
        Case(
            "run -m json-valid",
            [Step("run support.yaml -m json-valid", [*SUPPORT, "-m", "json-valid"])],
        ),
        Case(
            "run --format json -m json-valid",
            [
                Step(
                    "run support.yaml --format json -m json-valid",
                    [*SUPPORT, "--format", "json", "-m", "json-valid"],
                )
            ],
        ),
        Case(
            "report html",
            [
                Step(
                    "run support.yaml --format json --out report.json",
                    [*SUPPORT, "--format", "json", "--out", "report.json"],
                ),
                Step(
                    "report report.json --format html",
                    ["report", "report.json", "--format", "html", "--out", "report.html"],
                ),
            ],
        ),
        Case(
            "retrieval example",
            [
                Step("run retrieval.yaml (bm25)", RETRIEVAL),
                Step("run retrieval.yaml --format json", [*RETRIEVAL, "--format", "json"]),
            ],
        ),
        Case(
            "agent example",
            [
                Step("run agent.yaml (v1)", AGENT),
                Step("run agent.yaml --format json", [*AGENT, "--format", "json"]),
            ],
        ),
        Case("metrics", [Step("metrics", ["metrics"])]),
        Case(
            "store walkthrough",
            [
                Step("run --store --name v1", [*SUPPORT, *store, "--name", "v1"]),
                Step(
                    "run --store --name v2",
                    [
                        "run",
                        _ex("support.yaml"),
                        "--outputs",
                        "v2.outputs.json",
                        *store,
                        "--name",
                        "v2",
                    ],
                ),
                Step("compare v1 v2", ["compare", "v1", "v2", *store]),
                Step("gate v2 --baseline v1", ["gate", "v2", "--baseline", "v1", *store]),
                Step(
                    "report v2 --format markdown", ["report", "v2", *store, "--format", "markdown"]
                ),
                Step(
                    "report v2 --format html",
                    ["report", "v2", *store, "--format", "html", "--out", "v2.html"],
                ),
                Step("runs", ["runs", *store]),
                Step(
                    "sql", ["sql", "SELECT metric, avg(score) FROM scores GROUP BY metric", *store]
                ),
                Step("baseline promote v1", ["baseline", "promote", "v1", *store]),
                Step("brief v2", ["brief", "v2", *store]),
                Step(
                    "rescore -m rouge-l(beta=2.0) -m levenshtein",
                    [
                        "rescore",
                        *store,
                        "--runs",
                        "latest",
                        "-m",
                        "rouge-l(beta=2.0)",
                        "-m",
                        "levenshtein",
                    ],
                ),
                Step("export v2", ["export", "v2", *store, "--to", "export"]),
                Step("import export", ["import", "export", "--store", "other.duckdb"]),
            ],
        ),
    ]


# One step per family: the family's metrics that apply to the bundled data.
FAMILIES: dict[str, list[str]] = {
    "lexical": ["exact-match", "contains", "regex", "rouge-l"],
    "similarity": ["levenshtein", "bleu"],
    "semantic": ["cosine-embedding", "bertscore-like"],
    "structural": ["json-valid", "json-diff"],
    "deterministic": ["numeric-diff", "list-contains"],
    "ordinal": ["ordinal-distance(scale=[low,medium,high])"],
    "operational": ["latency", "token-cost", "cost", "retry-count"],
    "citation": ["citation-groundedness"],
    "safety": ["pii-leak", "prompt-injection", "response-disclosure", "ascii-smuggling"],
    "retrieval": [
        "retrieval-hit-at-k(k=3)",
        "retrieval-recall-at-k(k=3)",
        "retrieval-mrr",
        "retrieval-ndcg-at-k(k=3)",
    ],
    "trajectory": [
        "tool-called",
        "tool-not-called",
        "tool-called-with",
        "tool-call-order",
        "steps-below",
    ],
    "agent": [
        "tool-correctness",
        "argument-correctness",
        "step-efficiency",
        "tool-error-rate",
        "goal-accuracy",
        "trajectory-match",
    ],
    "mcp": ["mcp-tool-selection", "mcp-arguments-valid"],
    "reliability": ["outcome-consistency", "score-consistency", "output-consistency"],
    "judge": ["llm-as-judge"],
    "toolbox": [
        'g-eval(criteria="The answer is correct.")',
        'rubric(rubric=["good=1: correct", "bad=0: wrong"])',
    ],
    "conversation": ["turn-latency", "knowledge-retention"],
    "rag": ["faithfulness", "answer-relevancy", "context-recall"],
}


def family_cases() -> list[Case]:
    return [
        Case(f"family {name}", [Step(f"first use: {name}", ["--family", name])])
        for name in FAMILIES
    ]


def mixed_frame(rows: int):  # type: ignore[no-untyped-def]
    """The tests' mixed frame of every input shape, repeated to ``rows`` rows."""
    import polars as pl

    base = [
        ("Paris", "Paris", {"tags": ["geo"]}),
        ("30 days", "Returns are accepted within 30 days [1].", {"citations": ["[1]"]}),
        (["d1", "d3"], json.dumps(["d1", "d2", "d3"]), {"k": 2}),
        (
            {"d1": 2, "d2": 1},
            json.dumps([{"id": "d2", "text": "x"}, {"id": "d1", "text": "y"}]),
            {},
        ),
        ("medium", "high", {"refusal_expected": True}),
        ('{"a": 1, "b": [1, 2]}', '{"a": 1, "b": [1, 3]}', {}),
        ("42", "The answer is 42.", {}),
        ("", "", {}),
        (None, "anything", {}),
        ("/o+k/i", "OOK", {}),
        ("É", "é", {"tags": ["unicode"]}),
        (3.5, "3.5", {}),
    ]
    kinds = {
        str: "string",
        int: "int",
        float: "float",
        list: "list",
        dict: "map",
        type(None): "null",
    }
    picked = [base[i % len(base)] for i in range(rows)]
    return pl.DataFrame(
        {
            "sample_id": [f"s{i:06d}" for i in range(rows)],
            "input": ['{"question":"What is the answer?"}'] * rows,
            "expected_output": [
                e if isinstance(e, str) else json.dumps(e, separators=(",", ":"))
                for e, _, _ in picked
            ],
            "expected_type": [kinds[type(e)] for e, _, _ in picked],
            "metadata": [json.dumps(m) for _, _, m in picked],
            "tags": [m.get("tags", []) for _, _, m in picked],
            "row_hash": [f"h{i}" for i in range(rows)],
            "actual_output": [a for _, a, _ in picked],
            "latency_ms": [float(100 * i) if i % 3 else None for i in range(rows)],
            "prompt_tokens": [10 * i for i in range(rows)],
            "completion_tokens": [5 * i for i in range(rows)],
            "cost_usd": [0.001 * i for i in range(rows)],
            "retries": [i % 4 for i in range(rows)],
        },
        schema_overrides={"tags": pl.List(pl.String)},
    )


def run_family(name: str, rows: int, judge_url: str | None) -> None:
    """Score the family's metrics as a user's first script would (in this process)."""
    import polars as pl

    import evalframe as ef

    judge = (
        ef.OpenAIJudge("stub-judge", base_url=judge_url, api_key="sk-stub") if judge_url else None
    )
    providers = ef.Providers(judge=judge, cache=True)
    metrics = FAMILIES[name]
    if name == "retrieval":
        ds = ef.read_dataset(_ex("retrieval.yaml"))
        run = ef.evaluate(
            ds, outputs=_ex("retrieval.bm25.outputs.json"), metrics=metrics, providers=providers
        )
    elif name in ("trajectory", "agent", "mcp"):
        ds = ef.read_dataset(_ex("agent.yaml"))
        run = ef.evaluate(
            ds, outputs=_ex("agent.v1.outputs.json"), metrics=metrics, providers=providers
        )
    else:
        frame = mixed_frame(rows)
        if name == "reliability":
            frame = pl.concat(
                [frame.with_columns(repetition=pl.lit(r, pl.Int64)) for r in range(2)]
            )
        scores = ef.score(frame, metrics, context=providers)
        print(scores.height)
        return
    print(run.scores.height)


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[Timing, str]:
    """Wall and CPU seconds, peak RSS, exit code and stderr of one process."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode("utf-8", "replace") if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    notice = "once per environment" in err
    cpu = usage.ru_utime + usage.ru_stime
    return Timing(wall, cpu, usage.ru_maxrss, proc.returncode, notice), err


def _venv(root: Path) -> Path:
    """A new virtual environment with evalframe installed from this checkout."""
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", str(ROOT)], check=True)
    return venv


def _v2_outputs(work: Path) -> None:
    outputs = json.loads((EXAMPLES / "support.outputs.json").read_text())
    changed = outputs.get("outputs", outputs)
    for key in list(changed)[:5]:
        changed[key] = changed[key] + " (changed)"
    (work / "v2.outputs.json").write_text(json.dumps(outputs))


def run_case(
    case: Case, *, venv: Path | None, per_case_venv: bool, rows: int, judge_url: str | None
) -> None:
    """Run ``case`` three times in a fresh environment: ``venv`` (or this one) with empty
    caches, or with ``per_case_venv`` a new virtual environment whose numba caches beside the
    installed package, as a user's does. The first run finds no cache, the second both caches
    the first left (compiled kernels, and the provider cache of embeddings and judge answers),
    the third the compiled kernels only: the same work as the first, compiled."""
    with tempfile.TemporaryDirectory(prefix="bench_cold_") as tmp:
        root = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "EVALFRAME_"))}
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        if per_case_venv:
            bin_dir = _venv(root) / "bin"
        else:
            env["NUMBA_CACHE_DIR"] = str(root / "numba")
            bin_dir = (venv / "bin") if venv is not None else Path(sys.executable).parent
        env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
        times: dict[str, list[Timing]] = {}
        for attempt, cache in enumerate(("xdg", "xdg", "xdg-fresh")):
            env["XDG_CACHE_HOME"] = str(root / cache)
            work = root / f"work{attempt}"
            work.mkdir()
            _v2_outputs(work)
            for step in case.steps:
                if step.argv[0] == "--family":
                    argv = [
                        str(bin_dir / "python"),
                        __file__,
                        "--family",
                        step.argv[1],
                        "--rows",
                        str(rows),
                    ]
                    if judge_url:
                        argv += ["--judge-url", judge_url]
                else:
                    argv = [str(bin_dir / "evalframe"), *step.argv]
                timing, err = _run(argv, env, work)
                if timing.code not in (0, 1):
                    print(
                        f"  ! {step.label}: exit {timing.code}: {err.strip()[-400:]}",
                        file=sys.stderr,
                    )
                times.setdefault(step.label, []).append(timing)
        for label, (first, second, fresh) in times.items():
            result = Result(label, first, second, fresh)
            case.results.append(result)
            print(
                f"{case.name:34} {label:48} first {first.wall:6.2f} s ({first.cpu:5.2f} cpu)  "
                f"second {second.wall:6.2f} s ({second.cpu:5.2f} cpu)  "
                f"no provider cache {fresh.wall:6.2f} s  "
                f"{first.wall / second.wall:5.1f}x  {'ok ' if result.met else 'NO '}  "
                f"peak {first.rss / 1024:5.0f}/{second.rss / 1024:5.0f} MB"
                f"{'  (notice)' if first.notice else ''}  exit {first.code}",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="", help="comma-separated case names (substrings)")
    parser.add_argument(
        "--venv", action="store_true", help="one new virtual environment (pip install .)"
    )
    parser.add_argument(
        "--venv-per-case", action="store_true", help="a new virtual environment per case"
    )
    parser.add_argument("--rows", type=int, default=12, help="rows of the families' frame")
    parser.add_argument("--family", help=argparse.SUPPRESS)
    parser.add_argument("--judge-url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.family:
        run_family(args.family, args.rows, args.judge_url)
        return
    from openai_stub import StubOpenAI

    cases = command_cases() + family_cases()
    if args.only:
        wanted = args.only.split(",")
        cases = [c for c in cases if any(w in c.name for w in wanted)]
    load = os.getloadavg()
    cpu = platform.processor() or platform.machine()
    print(f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, load {load[0]:.1f}")
    with StubOpenAI() as stub, tempfile.TemporaryDirectory(prefix="bench_cold_venv_") as tmp:
        venv = _venv(Path(tmp)) if args.venv else None
        for case in cases:
            run_case(
                case,
                venv=venv,
                per_case_venv=args.venv_per_case,
                rows=args.rows,
                judge_url=stub.url,
            )
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    print()
    print(
        "| case | first run s (CPU s) | second run s (CPU s) | first / second | first / (2 x "
        "second + 2 s), target <= 1 | no provider cache s | peak RSS first / second |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for case in cases:
        for r in case.results:
            ratio = r.first.wall / (2 * r.second.wall + 2)
            ok = f"{ratio:.2f} (met)" if r.met else f"**{ratio:.2f} (not met)**"
            note = " (notice)" if r.first.notice else ""
            print(
                f"| `{r.label}` | {r.first.wall:.2f} ({r.first.cpu:.2f}){note} "
                f"| {r.second.wall:.2f} ({r.second.cpu:.2f}) | {r.first.wall / r.second.wall:.1f}x "
                f"| {ok} | {r.fresh.wall:.2f} "
                f"| {r.first.rss / 1024:.0f} / {r.second.rss / 1024:.0f} MB |"
            )


if __name__ == "__main__":
    main()
