"""`evalframe view`'s server time on large stores, over real HTTP on loopback.

Run: ``.venv/bin/python benchmarks/bench_view.py [--rounds R] [--executions N] [--only PART]``
(``--only runs``, ``explorer`` or ``compare``, repeatable: the parts to time; all by default).

Three stores are built once under ``benchmarks/.data/view/`` (delete it to rebuild):

* 10,000 runs (3 metrics each, labels, 20 datasets), written by copying one real run's
  records and scores in SQL (360,000 scores, which each page's run status reads): the runs
  page (``/`` and ``GET /api/v1/runs``), first page and a filtered one;
* one run of N executions (default 1,000,000; 3 metrics) beside one of 100: a page of the
  execution explorer (``/runs/RUN`` and ``/api/v1/runs/RUN/executions``) unfiltered, deep
  (the last page), and filtered by status, cohort and text;
* 5 runs of one 10,000-row dataset: ``GET /api/v1/compare`` of all five (paired statistics
  of four runs against the first, and a page of the matrix), computed afresh each round,
  then served from the viewer's cache (the next page); the Compare page computed afresh
  (without the bootstrap) and its intervals (with it).

Each URL is requested once after the viewer starts (cold: the store opened, first queries)
and then R times (the median is reported): the time from sending the request to the whole
response, on 127.0.0.1. Beside them, what a user would otherwise run for the same answer:
``Store.runs()`` (the ``evalframe runs`` listing), ``Store.load`` of the run (what any tool
that reads a whole run into memory pays before showing a row) and ``Store.compare`` four
times (``evalframe compare``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import duckdb
import httpx
from _common import machine

import evalframe as ef
from evalframe.views._web import Viewer

DATA = Path(__file__).parent / ".data" / "view"
EXAMPLES = Path(ef.__file__).parent / "examples"
METRICS = ["exact-match", "contains", "rouge-l"]


def _runs_store(n: int) -> Path:
    path = DATA / f"runs-{n}-scored.duckdb"
    if path.exists():
        return path
    DATA.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.unlink(missing_ok=True)
    saved = json.loads((EXAMPLES / "support.outputs.json").read_text("utf-8"))["outputs"]
    base = ef.evaluate(
        EXAMPLES / "support.yaml", outputs=saved, metrics=METRICS, store=tmp, progress=False
    ).run_id
    con = duckdb.connect(str(tmp))
    con.execute("BEGIN")
    # Every row keyed by run id, copied n - 1 times under new ids, times, names and labels.
    copies = "FROM {t} AS x CROSS JOIN range(1, $n) AS g(i) WHERE x.run_id = $base"
    con.execute(
        "INSERT INTO runs BY NAME SELECT x.* REPLACE (printf('r%08d', i) AS run_id, "
        "seq + i AS seq, created_at + to_seconds(i) AS created_at, "
        "printf('model v%d', i % 50) AS name, "
        "printf('dataset-%02d', i % 20) AS dataset, "
        "json_object('attempt', i::VARCHAR, 'team', CASE WHEN i % 2 = 0 THEN 'search' "
        "ELSE 'ads' END) AS labels, printf('r%08d', i) AS outputs_run_id) "
        + copies.format(t="runs"),
        {"n": n, "base": base},
    )
    for table in ("run_metrics", "run_metric_stats", "run_cohort_stats", "stored_scores"):
        con.execute(
            f"INSERT INTO {table} BY NAME SELECT x.* REPLACE (printf('r%08d', i) AS run_id) "
            + copies.format(t=table),
            {"n": n, "base": base},
        )
    con.execute("COMMIT")
    con.close()
    tmp.rename(path)
    return path


def _explorer_store(n: int) -> tuple[Path, str, str]:
    path = DATA / f"explorer-{n}.duckdb"
    ids_file = path.with_suffix(".json")
    if path.exists() and ids_file.exists():
        big, small = json.loads(ids_file.read_text("utf-8"))
        return path, big, small
    DATA.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    runs = []
    for size in (n, 100):
        records = [
            {"id": f"s{i:07d}", "input": {"q": f"question {i}"},
             "expected_output": f"answer {i % 100}", "metadata": {"tags": [f"t{i % 5}"]}}
            for i in range(size)
        ]  # fmt: skip
        outputs = {f"s{i:07d}": f"answer {i % 100}" if i % 3 else f"wrong {i}" for i in range(size)}
        run = ef.evaluate(
            ef.Dataset.from_records(records, name=f"explorer-{size}"),
            outputs=outputs,
            metrics=METRICS,
            store=path,
            progress=False,
        )
        runs.append(run.run_id)
    ids_file.write_text(json.dumps(runs), "utf-8")
    return path, runs[0], runs[1]


def _compare_store(rows: int, k: int) -> tuple[Path, list[str]]:
    path = DATA / f"compare-{k}x{rows}.duckdb"
    ids_file = path.with_suffix(".json")
    if path.exists() and ids_file.exists():
        return path, json.loads(ids_file.read_text("utf-8"))
    DATA.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    ds = ef.Dataset.from_records(
        [{"id": f"s{i:05d}", "input": {"q": i}, "expected_output": f"answer {i % 97}",
          "metadata": {"tags": [f"t{i % 4}"]}} for i in range(rows)],
        name="compare",
    )  # fmt: skip
    ids = []
    for j in range(k):
        outputs = {
            f"s{i:05d}": f"answer {i % 97}" if (i + j) % (3 + j) else "no" for i in range(rows)
        }
        ids.append(
            ef.evaluate(ds, outputs=outputs, metrics=METRICS, store=path, progress=False).run_id
        )
    ids_file.write_text(json.dumps(ids), "utf-8")
    return path, ids


def _timed(
    client: httpx.Client, url: str, rounds: int, *, before: object = None
) -> tuple[float, float]:
    """(cold seconds, median warm seconds) of a GET; ``before`` is called before each one."""
    times = []
    for _ in range(rounds + 1):
        if callable(before):
            before()
        start = time.perf_counter()
        response = client.get(url)
        elapsed = time.perf_counter() - start
        if response.status_code != 200:
            raise SystemExit(f"{url}: {response.status_code} {response.text[:300]}")
        times.append(elapsed)
    return times[0], statistics.median(times[1:])


def _best(fn: object, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return min(times)


def _row(label: str, cold: float, warm: float) -> str:
    return f"| {label} | {cold * 1000:,.0f} | {warm * 1000:,.0f} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--executions", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument(
        "--only", choices=("runs", "explorer", "compare"), action="append", help="repeatable"
    )
    args = parser.parse_args()
    print(machine())
    lines = ["| request | cold ms | median ms |", "| --- | ---: | ---: |"]
    only = set(args.only or ("runs", "explorer", "compare"))
    if "runs" in only:
        _runs(args, lines)
    if "explorer" in only:
        _explorer(args, lines)
    if "compare" in only:
        _compared(args, lines)
    print("\n".join(lines))


def _runs(args: argparse.Namespace, lines: list[str]) -> None:
    runs_db = _runs_store(args.runs)
    with Viewer(runs_db) as v, httpx.Client(base_url=v.url, timeout=600) as c:
        lines.append(_row(f"runs page `/`, {args.runs:,} runs", *_timed(c, "/", args.rounds)))
        lines.append(_row("runs page, page 100", *_timed(c, "/?offset=4950", args.rounds)))
        lines.append(
            _row(
                "runs page, label team=search, dataset-07",
                *_timed(c, "/?label=team%3Dsearch&dataset=dataset-07", args.rounds),
            )
        )
        lines.append(_row("`GET /api/v1/runs`", *_timed(c, "/api/v1/runs", args.rounds)))
    with ef.Store(runs_db) as store:
        listing = _best(store.runs, args.rounds)
    lines.append(_row(f"(beside it) `Store.runs()`, every run ({args.runs:,})", listing, listing))


def _explorer(args: argparse.Namespace, lines: list[str]) -> None:
    db, big, small = _explorer_store(args.executions)
    with Viewer(db) as v, httpx.Client(base_url=v.url, timeout=600) as c:
        for run, size in ((small, 100), (big, args.executions)):
            lines.append(
                _row(
                    f"run page `/runs/RUN`, {size:,} executions",
                    *_timed(c, f"/runs/{run}", args.rounds),
                )
            )
            lines.append(
                _row(
                    f"its histograms and charts `/runs/RUN/charts`, {size:,}",
                    *_timed(c, f"/runs/{run}/charts", args.rounds),
                )
            )
            lines.append(
                _row(
                    f"explorer page (API), {size:,}",
                    *_timed(c, f"/api/v1/runs/{run}/executions", args.rounds),
                )
            )
            last = max(0, size - 50)
            lines.append(
                _row(
                    f"explorer, last page, {size:,}",
                    *_timed(c, f"/api/v1/runs/{run}/executions?offset={last}", args.rounds),
                )
            )
            for query in ("status=fail", "metric=rouge-l&status=pass", "cohort=t3", "q=wrong+77"):
                lines.append(
                    _row(
                        f"explorer, {query}, {size:,}",
                        *_timed(c, f"/api/v1/runs/{run}/executions?{query}", args.rounds),
                    )
                )
    with ef.Store(db) as store:
        loading = _best(lambda: store.load(big), 1)
    lines.append(
        _row(f"(beside it) `Store.load` of the {args.executions:,}-execution run", loading, loading)
    )


def _compared(args: argparse.Namespace, lines: list[str]) -> None:
    cdb, ids = _compare_store(10_000, 5)
    from evalframe.views._web import _compare

    with Viewer(cdb) as v, httpx.Client(base_url=v.url, timeout=600) as c:
        url = "/api/v1/compare?runs=" + ",".join(ids)
        lines.append(
            _row(
                "compare 5 runs x 10,000 rows, computed",
                *_timed(c, url, args.rounds, before=_compare._cache.clear),
            )
        )
        page = "/compare?runs=" + ",".join(ids)
        lines.append(
            _row(
                "compare page `/compare`, computed (its intervals follow)",
                *_timed(c, page, args.rounds, before=_compare._cache.clear),
            )
        )
        lines.append(
            _row(
                "its intervals `/compare/intervals`, computed",
                *_timed(
                    c,
                    page.replace("/compare?", "/compare/intervals?"),
                    args.rounds,
                    before=_compare._cache.clear,
                ),
            )
        )
        lines.append(
            _row(
                "compare, the next page of the matrix (kept)",
                *_timed(c, url + "&offset=50", args.rounds),
            )
        )
        lines.append(
            _row(
                "compare page `/compare`, regressed only (kept)",
                *_timed(c, "/compare?rows=regressed&runs=" + ",".join(ids), args.rounds),
            )
        )
    with ef.Store(cdb) as store:
        pairs = _best(lambda: [store.compare(ids[0], other) for other in ids[1:]], 1)
    lines.append(_row("(beside it) `Store.compare` of the four pairs", pairs, pairs))


if __name__ == "__main__":
    main()
