"""Scoring and rescoring on a real Dask cluster (LocalCluster, worker processes on 127.0.0.1):
the same rows as the in-process engine, a worker killed mid-run, a scheduler lost mid-run,
``--dask local:2`` from the command line, and no Dask import without it."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from hashlib import sha256
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from click.testing import CliRunner
from openai_stub import StubOpenAI
from polars.testing import assert_frame_equal

import evalframe as ef
from evalframe.cli import cli
from evalframe.providers import ENV, Providers
from evalframe.store import Store

N = 240
METRICS = [
    "exact-match",
    "contains",
    "rouge-l(beta=2.0)",
    "json-valid",
    "retrieval-ndcg-at-k(k=3)",
    "retrieval-mrr",
]
SCORE_COLUMNS = "sample_id, repetition, metric, score, passed, error, details"


@pytest.fixture(autouse=True)
def _no_provider_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV.values():
        monkeypatch.delenv(name, raising=False)


def dataset() -> ef.Dataset:
    """Strings, JSON and ranked-retrieval samples, tagged in three cohorts. Retrieval metrics
    error on the string rows and lexical ones score everything: error rows on every part."""
    records = []
    for i in range(N):
        expected: Any = [f"doc-{i % 7}", f"doc-{i % 5}"] if i % 3 == 0 else f"answer {i % 11}"
        records.append(
            {
                "id": f"s{i:03d}",
                "input": {"question": f"question {i}"},
                "expected_output": expected,
                "metadata": {"tags": [["red"], ["blue"], ["red", "green"]][i % 3]},
            }
        )
    return ef.Dataset.from_records(records, name="mixed")


def outputs_frame() -> pl.DataFrame:
    texts = []
    for i in range(N):
        if i % 3 == 0:
            texts.append(json.dumps([f"doc-{(i + k) % 7}" for k in range(4)]))
        elif i % 4 == 0:
            texts.append(json.dumps({"answer": f"answer {i % 11}"}))
        else:
            texts.append(f"the answer {i % 13} is here")
    return pl.DataFrame(
        {
            "sample_id": [f"s{i:03d}" for i in range(N)],
            "actual_output": texts,
            "latency_ms": [float(i) for i in range(N)],
        }
    )


def write_parts(folder: Path, frame: pl.DataFrame, files: int = 3) -> Path:
    """``frame`` as ``files`` Parquet files (shuffled order) of two row groups each."""
    folder.mkdir(parents=True, exist_ok=True)
    shuffled = frame.sample(fraction=1.0, shuffle=True, seed=7)
    size = -(-shuffled.height // files)
    for k in range(files):
        part = shuffled.slice(k * size, size)
        part.write_parquet(folder / f"part-{k}.parquet", row_group_size=max(size // 2, 1))
    return folder


def test_evaluate_on_dask_equals_the_in_process_run(client: Any, tmp_path: Path) -> None:
    ds = dataset()
    single = tmp_path / "outputs.parquet"
    outputs_frame().write_parquet(single)
    parts = write_parts(tmp_path / "outputs", outputs_frame())
    here = ef.evaluate(ds, outputs=single, metrics=METRICS, repetitions=2, run_id="r1")
    there = ef.evaluate(ds, outputs=parts, metrics=METRICS, repetitions=2, run_id="r1", dask=client)
    assert there.scores.height == N * 2 * len(METRICS)
    assert there.scores.get_column("error").null_count() < there.scores.height  # some scored
    assert there.scores.filter(pl.col("error").is_not_null()).height > 0  # and some errors
    assert there.scores.equals(here.scores)
    assert there.frame.equals(here.frame)
    assert there.summary.equals(here.summary)
    assert there.cohorts.equals(here.cohorts)
    assert there.macro_f1 == here.macro_f1
    # The report people read is the same, but for the run's clock.
    a, b = json.loads(here.report().to_json()), json.loads(there.report().to_json())
    clock = ("timestamp", "started_at", "finished_at", "duration_seconds", "duration_s")
    for report in (a, b):
        for key in clock:
            report.pop(key, None)
            report.get("run", {}).pop(key, None)
    assert a == b


def test_parquet_directories_read_in_process_and_a_glob_on_the_cluster(
    client: Any, tmp_path: Path
) -> None:
    ds = dataset()
    parts = write_parts(tmp_path / "outputs", outputs_frame(), files=4)
    reference = ef.evaluate(ds, outputs=outputs_frame(), metrics=["rouge-l"], run_id="r")
    folder = ef.evaluate(ds, outputs=parts, metrics=["rouge-l"], run_id="r")
    globbed = ef.evaluate(
        ds, outputs=str(parts / "part-*.parquet"), metrics=["rouge-l"], run_id="r", dask=client
    )
    url = ef.evaluate(ds, outputs=f"file://{parts}", metrics=["rouge-l"], run_id="r")
    assert folder.scores.equals(reference.scores)
    assert globbed.scores.equals(reference.scores)
    assert url.scores.equals(reference.scores)


def test_coverage_errors_name_the_sample_as_in_process(client: Any, tmp_path: Path) -> None:
    ds = dataset()
    frame = outputs_frame()
    missing = write_parts(tmp_path / "missing", frame.filter(pl.col("sample_id") != "s017"))
    with pytest.raises(ef.DatasetError, match="are missing sample ids: s017"):
        ef.evaluate(ds, outputs=missing, metrics=["exact-match"], dask=client)
    twice = write_parts(tmp_path / "twice", pl.concat([frame, frame.slice(5, 1)]))
    with pytest.raises(ef.DatasetError, match="Duplicate saved output for sample 's005'"):
        ef.evaluate(ds, outputs=twice, metrics=["exact-match"], dask=client)
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "x.parquet").write_bytes(b"not parquet")
    with pytest.raises(ef.DatasetError, match=r"x\.parquet: not a valid Parquet file"):
        ef.evaluate(ds, outputs=bad, metrics=["exact-match"], dask=client)
    with pytest.raises(ef.DatasetError, match="no Parquet file found"):
        ef.evaluate(ds, outputs=tmp_path / "none-*.parquet", metrics=["exact-match"], dask=client)


def test_provider_metrics_ask_each_distinct_text_once_for_the_whole_cluster(
    client: Any, tmp_path: Path
) -> None:
    ds = dataset()
    parts = write_parts(tmp_path / "outputs", outputs_frame())
    with StubOpenAI() as stub:

        def providers() -> Providers:
            return Providers.from_env(
                embeddings_base_url=stub.url,
                embeddings_model="stub-embed",
                cache=tmp_path / "cache.duckdb",
            )

        there = ef.evaluate(
            ds, outputs=parts, metrics=["cosine-embedding"], providers=providers(), dask=client
        )
        sent = [t for call in stub.calls("embeddings") for t in call.body["input"]]
        answers = outputs_frame().get_column("actual_output")
        # Only string-expected rows are embedded (the retrieval rows expect id lists).
        texts = {answers[i] for i in range(N) if i % 3} | {
            f"answer {i % 11}" for i in range(N) if i % 3
        }
        assert sorted(sent) == sorted(texts)  # one request, each distinct text once
        assert len(stub.calls("embeddings")) == 1
        again = ef.evaluate(
            ds, outputs=parts, metrics=["cosine-embedding"], providers=providers(), dask=client
        )
        assert len(stub.calls("embeddings")) == 1  # the second run is served by the cache
        here = ef.evaluate(
            ds, outputs=outputs_frame(), metrics=["cosine-embedding"], providers=providers()
        )
    keep = ["sample_id", "repetition", "metric", "score", "passed", "error", "details"]
    assert there.scores.select(keep).equals(here.scores.select(keep))
    assert again.scores.select(keep).equals(here.scores.select(keep))
    assert there.usage.height == 1
    assert again.usage.height == 0


def stored(tmp_path: Path) -> tuple[Store, str]:
    store = Store(tmp_path / "runs.duckdb")
    run = ef.evaluate(
        dataset(), outputs=outputs_frame(), metrics=["exact-match"], repetitions=3, store=store
    )
    return store, run.run_id


def rows(store: Store, run_id: str) -> dict[str, pl.DataFrame]:
    return {
        "scores": store.sql(
            f"SELECT {SCORE_COLUMNS} FROM scores WHERE run_id = ? ORDER BY ALL", [run_id]
        ),
        "stats": store.sql(
            "SELECT * EXCLUDE (run_id) FROM sample_stats WHERE run_id = ? ORDER BY sample_id",
            [run_id],
        ),
        "summary": store.sql(
            "SELECT * EXCLUDE (run_id) FROM metric_summary WHERE run_id = ? ORDER BY metric",
            [run_id],
        ),
        "run": store.sql(
            "SELECT n_samples, n_executions, repetitions, n_failures, macro_f1, source_run_id "
            "FROM runs WHERE run_id = ?",
            [run_id],
        ),
    }


def same(a: dict[str, pl.DataFrame], b: dict[str, pl.DataFrame]) -> None:
    """Row for row equal; the store's means agree to 1e-12 (DuckDB sums in storage order)."""
    for table, want in a.items():
        if table == "summary":
            assert_frame_equal(b[table], want, check_exact=False, rel_tol=1e-12)
        else:
            assert b[table].equals(want), table


def test_rescore_on_dask_stores_the_rows_of_the_in_process_rescore(
    client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalframe.store import _chunks

    store, source = stored(tmp_path)
    (here,) = store.rescore(METRICS, runs=source, batch_size=50)

    def on_the_client(*args: Any) -> None:
        raise AssertionError("the client read the dataset rows")

    # The workers read the outputs and their dataset rows from the parts; the client does not.
    monkeypatch.setattr(_chunks, "dataset_rows", on_the_client)
    (there,) = store.rescore(METRICS, runs=source, batch_size=50, dask=client)
    monkeypatch.undo()
    a, b = rows(store, here), rows(store, there)
    assert b["scores"].height == N * 3 * len(METRICS)
    same(a, b)
    # Copied metrics (--keep) and computed ones together: statistics from the read-back.
    (kept_here,) = store.rescore(["rouge-l"], runs=source, keep=True, dask=None)
    (kept_there,) = store.rescore(["rouge-l"], runs=source, keep=True, dask=client)
    same(rows(store, kept_here), rows(store, kept_there))
    assert not (tmp_path / "runs.duckdb.parts").exists()  # the parts are gone


BLOCKER = textwrap.dedent(
    """
    import os, time
    import polars as pl
    import evalframe as ef

    def blocker(marker: str, released: str) -> ef.metrics.MetricFactory:
        @ef.metrics.metric("blocker", family="custom", replace=True)
        def blocking() -> ef.metrics.Scored:
            '''Scores 1; the first part to arrive blocks (its process id in ``marker``).'''
            def fn(s: pl.Series) -> pl.Series:
                if not os.path.exists(released):
                    try:
                        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
                    except FileExistsError:
                        pass
                    else:
                        os.write(fd, str(os.getpid()).encode())
                        os.close(fd)
                        time.sleep(600)
                return pl.Series([1.0] * len(s), dtype=pl.Float64)

            return ef.metrics.Scored(
                score=pl.col("actual_output").map_batches(fn, return_dtype=pl.Float64)
            )

        return blocking
    """
)


@pytest.fixture
def blocker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A metric whose first task blocks until its worker is killed; the module is imported
    by value so workers need not import it."""
    import cloudpickle

    module_dir = tmp_path / "blockmod"
    module_dir.mkdir()
    (module_dir / "blockmod.py").write_text(BLOCKER, encoding="utf-8")
    monkeypatch.syspath_prepend(str(module_dir))
    import blockmod

    cloudpickle.register_pickle_by_value(blockmod)
    yield blockmod
    cloudpickle.unregister_pickle_by_value(blockmod)
    sys.modules.pop("blockmod", None)


def wait_for(path: Path, thread: threading.Thread, outcome: dict[str, Any]) -> int:
    """The process id a blocked task wrote to ``path`` (the run must not end first)."""
    while not path.exists() or not path.read_text():
        assert thread.is_alive(), f"the run ended before a task blocked: {outcome}"
        time.sleep(0.05)
    return int(path.read_text())


def test_a_worker_killed_mid_rescore_loses_and_doubles_nothing(
    tmp_path: Path, blocker: Any
) -> None:
    store, source = stored(tmp_path)
    marker, released = tmp_path / "pid", tmp_path / "released"
    metric = blocker.blocker(str(marker), str(released))
    outcome: dict[str, Any] = {}

    def rescore() -> None:
        try:
            outcome["ids"] = store.rescore(
                [metric(), "rouge-l"], runs=source, batch_size=40, dask="local:2"
            )
        except BaseException as exc:  # reported by the assertion below
            outcome["error"] = exc

    worker = threading.Thread(target=rescore)
    worker.start()
    pid = wait_for(marker, worker, outcome)
    released.write_text("go")  # the rerun of the killed task scores
    os.kill(pid, signal.SIGKILL)
    worker.join()
    assert "error" not in outcome, outcome.get("error")
    (new,) = outcome["ids"]
    counts = store.sql(
        "SELECT metric, count(*) AS n, count(DISTINCT (sample_id, repetition)) AS distinct_rows "
        "FROM scores WHERE run_id = ? GROUP BY metric ORDER BY metric",
        [new],
    )
    assert counts.rows() == [("blocker", N * 3, N * 3), ("rouge-l", N * 3, N * 3)]
    (here,) = store.rescore(["rouge-l"], runs=source)
    want = rows(store, here)["scores"]
    got = store.sql(
        f"SELECT {SCORE_COLUMNS} FROM scores WHERE run_id = ? AND metric = 'rouge-l' ORDER BY ALL",
        [new],
    )
    assert got.equals(want)


def dask_cli(command: str) -> list[str]:
    return [sys.executable, "-m", f"distributed.cli.{command}"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_lost_scheduler_fails_the_rescore_and_leaves_the_store_unchanged(
    tmp_path: Path, blocker: Any
) -> None:
    store, source = stored(tmp_path)
    before = (
        store.sql("SELECT count(*) FROM runs").item(),
        store.sql("SELECT count(*) FROM scores").item(),
    )
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    scheduler = subprocess.Popen(
        [*dask_cli("dask_scheduler"), "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
        **quiet,  # type: ignore[call-overload]
    )
    worker = subprocess.Popen(
        [*dask_cli("dask_worker"), address, "--nthreads", "1", "--no-dashboard"],
        **quiet,  # type: ignore[call-overload]
    )
    marker = tmp_path / "pid"
    metric = blocker.blocker(str(marker), str(tmp_path / "never"))
    outcome: dict[str, Any] = {}

    def rescore() -> None:
        try:
            outcome["ids"] = store.rescore([metric()], runs=source, dask=address)
        except BaseException as exc:
            outcome["error"] = exc

    try:
        thread = threading.Thread(target=rescore)
        thread.start()
        wait_for(marker, thread, outcome)
        scheduler.kill()
        thread.join()
    finally:
        for process in (scheduler, worker):
            process.kill()
            process.wait()
    error = outcome.get("error")
    assert isinstance(error, ef.ClusterError), outcome
    assert f"The Dask cluster ({address}) failed during the run" in str(error)
    assert "Nothing was saved." in str(error)
    after = (
        store.sql("SELECT count(*) FROM runs").item(),
        store.sql("SELECT count(*) FROM scores").item(),
    )
    assert after == before
    assert not (tmp_path / "runs.duckdb.parts").exists()


def dataset_file(path: Path) -> Path:
    """``dataset()`` as a JSONL dataset file at ``path``."""
    records = [
        {"id": r["sample_id"], "input": {"question": "q"}, "expected_output": r["expected"]}
        for r in dataset()
        .select("sample_id", pl.col("expected_output").alias("expected"))
        .iter_rows(named=True)
    ]
    path.write_text("\n".join(json.dumps(r) for r in records), encoding="utf-8")
    return path


def test_cli_run_and_rescore_with_a_local_cluster(tmp_path: Path) -> None:
    ds = dataset_file(tmp_path / "mixed.jsonl")
    parts = write_parts(tmp_path / "outputs", outputs_frame())
    db = tmp_path / "runs.duckdb"
    runner = CliRunner()
    common = ["run", str(ds), "--outputs", str(parts), "-m", "rouge-l", "-m", "contains"]
    common += ["--format", "json", "--store", str(db)]
    done = runner.invoke(cli, [*common, "--dask", "local:2"])
    plain = runner.invoke(cli, [*common])
    assert done.exit_code == plain.exit_code, done.stderr
    report, reference = json.loads(done.stdout), json.loads(plain.stdout)
    assert report["metrics"] == reference["metrics"]
    assert report["samples"] == reference["samples"]
    assert report["total_failures"] == reference["total_failures"]
    assert len(report["samples"]) == N
    store = Store(db)
    first = store.sql("SELECT run_id FROM runs ORDER BY seq LIMIT 1").item()
    args = ["rescore", "--store", str(db), "--runs", first, "-m", "exact-match"]
    rescored = runner.invoke(cli, [*args, "--dask", "local:2", "--batch-size", "60"])
    assert rescored.exit_code in (0, 1), rescored.stderr
    assert "run " in rescored.stdout
    bad = runner.invoke(cli, [*args, "--dask", "local:0"])
    assert bad.exit_code != 0
    assert "a local cluster takes 1 to 256 workers" in bad.stderr + str(bad.exception)


def test_bad_cluster_targets_fail_clearly() -> None:
    ds = dataset()
    outputs = outputs_frame()
    with pytest.raises(ef.ClusterError, match="is not a scheduler address"):
        ef.evaluate(ds, outputs=outputs, metrics=["exact-match"], dask="somewhere")
    with pytest.raises(ef.ClusterError, match="write local:N"):
        ef.evaluate(ds, outputs=outputs, metrics=["exact-match"], dask="local")
    with pytest.raises(ef.ClusterError, match=r"No Dask scheduler answered at tcp://127\.0\.0\.1:"):
        ef.evaluate(
            ds, outputs=outputs, metrics=["exact-match"], dask=f"tcp://127.0.0.1:{free_port()}"
        )
    with pytest.raises(ValueError, match="a system under test is called in-process"):
        ef.evaluate(ds, system=lambda _: "x", metrics=["exact-match"], dask="local:1")


def test_without_dask_nothing_imports_it(tmp_path: Path) -> None:
    code = textwrap.dedent(
        f"""
        import sys
        import evalframe as ef
        from evalframe.store import Store
        ds = ef.Dataset.from_records([{{"id": "a", "input": {{}}, "expected_output": "b"}}],
                                     name="d")
        store = Store({str(tmp_path / "s.duckdb")!r})
        run = ef.evaluate(ds, outputs={{"a": "b"}}, metrics=["exact-match"], store=store)
        store.rescore(["rouge-l"], runs=run.run_id)
        print(sorted(m for m in ("dask", "distributed") if m in sys.modules))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stderr


def test_rescore_on_dask_reads_trajectories_as_in_process(client: Any, tmp_path: Path) -> None:
    entries = [
        {
            "id": f"s{i}",
            "actual_output": "done",
            "trajectory": {"tool_calls": [{"name": "search", "arguments": {"q": i}}, "book"]}
            if i % 3
            else None,
        }
        for i in range(40)
    ]
    samples = [
        {
            "id": f"s{i}",
            "input": {"q": "x"},
            "expected_output": "done",
            "metadata": {"trajectory": {"tools": ["book"], "order": ["search", "book"]}},
        }
        for i in range(40)
    ]
    ds = ef.Dataset.from_records(samples, name="agents")
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps({"outputs": [{k: v for k, v in e.items() if v} for e in entries]}))
    store = ef.Store(tmp_path / "runs.duckdb")
    run = ef.evaluate(ds, outputs=path, metrics=["tool-called"], store=store)
    metrics = ["tool-called", "tool-call-order"]
    (here,) = store.rescore(metrics, runs=run.run_id, batch_size=7, force=True)
    (there,) = store.rescore(metrics, runs=run.run_id, batch_size=7, force=True, dask=client)
    a, b = rows(store, here), rows(store, there)
    same(a, b)
    scores = b["scores"]
    assert scores.filter(pl.col("score").is_not_null()).height == 2 * 26  # those with one
    assert scores.filter(pl.col("error").is_not_null()).height == 2 * 14  # the rest: an error


def test_a_cluster_rescore_leaves_its_scores_in_place_for_the_views(
    client: Any, tmp_path: Path
) -> None:
    store, source = stored(tmp_path)
    (here,) = store.rescore(METRICS, runs=source, batch_size=50, force=True)
    (there,) = store.rescore(METRICS, runs=source, batch_size=50, force=True, dask=client)
    # No row was inserted: the workers' files moved beside the store, registered.
    for table in ("stored_scores", "stored_sample_stats"):
        assert store.sql(f"SELECT count(*) FROM {table} WHERE run_id = ?", [there]).item() == 0
    root = tmp_path / "runs.duckdb.runs"
    files = sorted((root / "scores" / f"run_id={there}").glob("*.parquet"))
    stats = sorted((root / "sample_stats" / f"run_id={there}").glob("*.parquet"))
    assert len(files) == len(stats) > 1
    registered = store.sql(
        "SELECT relation, files, rows FROM run_files WHERE run_id = ? ORDER BY relation", [there]
    ).rows()
    assert registered == [("sample_stats", len(stats), N), ("scores", len(files), N * 18)]
    same(rows(store, here), rows(store, there))
    assert_frame_equal(
        store.load(there).scores.drop("run_id"), store.load(here).scores.drop("run_id")
    )
    # The views read the files, checked against the files themselves.
    on_disk = pl.read_parquet(files).sort("sample_id", "repetition", "metric")
    assert_frame_equal(
        store.sql("SELECT * FROM scores WHERE run_id = ? ORDER BY ALL", [there]).select(
            on_disk.columns
        ),
        on_disk.select(pl.all()).sort(on_disk.columns),
        check_dtypes=False,
    )
    # Each file is recorded with its rows, size and SHA-256 (what its worker computed).
    recorded = store.sql(
        "SELECT file, rows, bytes, sha256 FROM run_parts WHERE run_id = ? AND relation = "
        "'scores' ORDER BY file",
        [there],
    ).rows()
    assert recorded == [
        (f.name, pl.read_parquet(f).height, f.stat().st_size, sha256(f.read_bytes()).hexdigest())
        for f in files
    ]
    # A query for another run opens none of the run's files, through evalframe's views and
    # through the ones stored for plain DuckDB alike.
    import duckdb

    con = duckdb.connect(str(tmp_path / "runs.duckdb"), read_only=True)
    try:
        plans = {
            run: con.execute(
                "EXPLAIN ANALYZE SELECT count(*) FROM scores WHERE run_id = ?", [run]
            ).fetchall()[0][1]
            for run in (here, there)
        }
    finally:
        con.close()
    assert "READ_PARQUET" not in plans[here]
    assert f"Total Files Read: {len(files)}" in plans[there]


def test_a_moved_store_reads_its_files_and_the_sandbox_reads_nothing_else(
    client: Any, tmp_path: Path
) -> None:
    import shutil

    (tmp_path / "a").mkdir()
    store, source = stored(tmp_path / "a")
    (there,) = store.rescore(["contains", "rouge-l"], runs=source, batch_size=80, dask=client)
    want = rows(store, there)
    moved = tmp_path / "b" / "renamed.duckdb"
    moved.parent.mkdir()
    shutil.move(tmp_path / "a" / "runs.duckdb", moved)
    shutil.move(tmp_path / "a" / "runs.duckdb.runs", tmp_path / "b" / "renamed.duckdb.runs")
    shutil.rmtree(tmp_path / "a")
    again = Store(moved)
    same(want, rows(again, there))
    folder = tmp_path / "b" / "renamed.duckdb.runs" / "scores" / f"run_id={there}"
    assert again.sql(f"SELECT count(*) FROM read_parquet('{folder}/*.parquet')").item() == N * 6
    secret = tmp_path / "b" / "secret.csv"
    secret.write_text("a\n1\n")
    for text in (
        f"SELECT * FROM read_csv('{secret}')",
        f"SELECT * FROM read_csv('{folder}/../../../secret.csv')",
    ):
        with pytest.raises(ef.StoreError, match="cannot read or write files"):
            again.sql(text)


def test_a_rescore_that_fails_leaves_no_files_and_orphans_go(
    client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalframe.store import _scored

    store, source = stored(tmp_path)
    root = tmp_path / "runs.duckdb.runs"
    before = store.sql("SELECT count(*) FROM runs").item()

    def failing(*args: Any, **kwargs: Any) -> None:
        assert any(root.glob("scores/run_id=*/*.parquet"))  # the files had moved in
        raise RuntimeError("the run record failed")

    monkeypatch.setattr(_scored, "insert_scored_run", failing)
    with pytest.raises(RuntimeError, match="run record failed"):
        store.rescore(["contains"], runs=source, batch_size=80, dask=client)
    monkeypatch.undo()
    assert not any(root.glob("*/run_id=*"))
    assert store.sql("SELECT count(*) FROM runs").item() == before
    assert store.sql("SELECT count(*) FROM run_files").item() == 0
    # What a killed process moved in but never registered goes with the next registration.
    orphan = root / "scores" / "run_id=0123456789abcdef"
    orphan.mkdir(parents=True)
    (orphan / "part-000000.parquet").write_bytes(b"not registered")
    (there,) = store.rescore(["contains"], runs=source, batch_size=80, dask=client)
    assert not orphan.exists()
    assert [p.name for p in (root / "scores").iterdir()] == [f"run_id={there}"]


def test_an_export_of_a_run_with_files_imports_as_rows(client: Any, tmp_path: Path) -> None:
    store, source = stored(tmp_path)
    (there,) = store.rescore(["contains", "rouge-l"], runs=source, batch_size=80, dask=client)
    export = store.export([there], tmp_path / "export")
    fresh = Store(tmp_path / "fresh.duckdb")
    assert fresh.import_runs(export) == [there]
    same(rows(store, there), rows(fresh, there))
    assert fresh.sql("SELECT count(*) FROM stored_scores").item() == N * 3 * 2
    assert not (tmp_path / "fresh.duckdb.runs").exists()


def test_an_in_memory_store_inserts_the_cluster_s_scores(client: Any) -> None:
    store = Store(":memory:")
    run = ef.evaluate(
        dataset(), outputs=outputs_frame(), metrics=["exact-match"], repetitions=2, store=store
    )
    (here,) = store.rescore(["contains", "rouge-l"], runs=run.run_id, batch_size=100, force=True)
    (there,) = store.rescore(
        ["contains", "rouge-l"], runs=run.run_id, batch_size=100, force=True, dask=client
    )
    same(rows(store, here), rows(store, there))
    assert store.sql("SELECT count(*) FROM stored_scores WHERE run_id = ?", [there]).item() == (
        N * 2 * 2
    )
    assert store.sql("SELECT count(*) FROM run_files").item() == 0


def _cli(db: Path, *argv: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, [*argv, "--store", str(db)])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def _damage_named(err: str, db: Path, run_id: str, file: Path, problem: str) -> None:
    """One paragraph naming the store, the run, the file and what is wrong with it."""
    assert err.startswith(f"error: Damaged store {db}: run {run_id} cannot be read"), err
    relative = file.relative_to(db.parent)
    assert f"because its part file {relative} {problem}" in err, err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_a_missing_or_damaged_part_is_named_and_other_runs_read_as_before(
    client: Any, tmp_path: Path
) -> None:
    import shutil

    store, source = stored(tmp_path)
    (first,) = store.rescore(["contains"], runs=source, batch_size=80, dask=client)
    (second,) = store.rescore(["contains", "rouge-l"], runs=source, batch_size=80, dask=client)
    db = tmp_path / "runs.duckdb"
    root = tmp_path / "runs.duckdb.runs" / "scores"
    reports = {r: _cli(db, "report", r, "--format", "json") for r in (source, first, second)}
    assert all(code == 0 for code, _, _ in reports.values())
    assert json.loads(reports[first][1])["metrics"]["contains"]["n"] == N * 3

    def healthy(*runs: str) -> None:
        for run in runs:
            assert _cli(db, "report", run, "--format", "json") == reports[run], run

    backup = tmp_path / "backup.parquet"
    # A part deleted: its run names it; every other run reads as before.
    gone = sorted((root / f"run_id={first}").glob("*.parquet"))[1]
    shutil.copy(gone, backup)
    gone.unlink()
    code, _, err = _cli(db, "report", first, "--format", "json")
    assert code == 2
    _damage_named(err, db, first, gone, "is missing")
    healthy(source, second)
    code, _, err = _cli(db, "sql", "SELECT count(*) AS n FROM scores")
    assert code == 2  # it reads the damaged run too
    _damage_named(err, db, first, gone, "is missing")
    code, out, _ = _cli(db, "sql", f"SELECT count(*) AS n FROM scores WHERE run_id = '{second}'")
    assert (code, out.split()[-1]) == (0, str(N * 3 * 2))
    assert _cli(db, "compare", first, second)[0] == 2
    code, out, _ = _cli(db, "store", "verify", "--format", "json")
    assert code == 1
    found = json.loads(out)
    assert [(p["kind"], p["run_id"], p["file"]) for p in found["problems"]] == [
        ("missing", first, str(gone.relative_to(tmp_path)))
    ]
    shutil.copy(backup, gone)
    healthy(first)
    assert _cli(db, "compare", first, second)[0] == 0
    assert _cli(db, "store", "verify")[0] == 0

    # Cut short: the size no longer matches; a footer rewritten in place: it no longer reads.
    part = sorted((root / f"run_id={second}").glob("*.parquet"))[2]
    whole = part.read_bytes()
    for damaged, problem in (
        (whole[: len(whole) // 2], f"has {len(whole) // 2:,} bytes where {len(whole):,}"),
        (whole[:-12] + bytes(8) + whole[-4:], "is not readable Parquet"),
    ):
        part.write_bytes(damaged)
        code, _, err = _cli(db, "report", second, "--format", "json")
        assert code == 2
        _damage_named(err, db, second, part, problem)
        healthy(source, first)
        code, out, _ = _cli(db, "store", "verify")
        assert code == 1
        assert f"problem: {part.relative_to(tmp_path)} {problem}" in out
        part.write_bytes(whole)
    healthy(second)
    # The first file of a run, which DuckDB reads when it binds the views: the same.
    first_part = sorted((root / f"run_id={second}").glob("*.parquet"))[0]
    kept = first_part.read_bytes()
    first_part.write_bytes(kept[:-12] + bytes(8) + kept[-4:])
    code, _, err = _cli(db, "report", second, "--format", "json")
    assert code == 2
    _damage_named(err, db, second, first_part, "is not readable Parquet")
    healthy(source, first)
    code, _, err = _cli(db, "sql", "SELECT count(*) AS n FROM scores")
    assert code == 2
    _damage_named(err, db, second, first_part, "is unreadable (")
    assert err.count("Damaged store") == 1
    first_part.write_bytes(kept)
    healthy(second)
    # A byte changed inside a page, size and footer intact: found by its SHA-256.
    part.write_bytes(whole[:100] + bytes([whole[100] ^ 0xFF]) + whole[101:])
    code, out, _ = _cli(db, "store", "verify")
    assert code == 1
    assert f"{part.relative_to(tmp_path)} does not have the SHA-256 its writer recorded" in out


def test_a_store_copied_without_its_folder_names_what_is_missing_until_it_comes(
    client: Any, tmp_path: Path
) -> None:
    import shutil

    (tmp_path / "a").mkdir()
    store, source = stored(tmp_path / "a")
    (there,) = store.rescore(["contains"], runs=source, batch_size=80, dask=client)
    want = rows(store, there)
    (tmp_path / "b").mkdir()
    copy = tmp_path / "b" / "runs.duckdb"
    shutil.copy(tmp_path / "a" / "runs.duckdb", copy)
    alone = Store(copy)
    assert alone.sql("SELECT count(*) FROM scores WHERE run_id = ?", [source]).item() == N * 3
    with pytest.raises(ef.StoreError, match=f"run {there} cannot be read.*is missing"):
        alone.load(there)
    with pytest.raises(ef.StoreError, match=f"run {there} cannot be read"):
        alone.sql("SELECT count(*) FROM sample_stats")
    shutil.copytree(tmp_path / "a" / "runs.duckdb.runs", tmp_path / "b" / "runs.duckdb.runs")
    same(want, rows(Store(copy), there))


def test_a_version_6_store_records_its_files_as_they_are_when_migrated(
    client: Any, tmp_path: Path
) -> None:
    import duckdb

    store, source = stored(tmp_path)
    (kept,) = store.rescore(["contains"], runs=source, batch_size=80, dask=client)
    (cut,) = store.rescore(["rouge-l"], runs=source, batch_size=80, dask=client)
    want = rows(store, kept)
    db = tmp_path / "runs.duckdb"
    con = duckdb.connect(str(db))  # the layout of version 6, which had no run_parts
    try:
        con.execute("DROP TABLE run_parts")
        con.execute("DROP TABLE locks")
        con.execute("UPDATE meta SET value = '6' WHERE key = 'schema_version'")
    finally:
        con.close()
    lost = sorted((tmp_path / "runs.duckdb.runs" / "scores" / f"run_id={cut}").glob("*"))[0]
    lost.unlink()
    again = Store(db)
    assert again.schema_version == 7
    same(want, rows(again, kept))
    with pytest.raises(ef.StoreError, match=f"run {cut} cannot be read.*registered part file"):
        again.load(cut)
    code, out, _ = _cli(db, "store", "verify", "--format", "json")
    assert code == 1
    assert [(p["kind"], p["run_id"]) for p in json.loads(out)["problems"]] == [("incomplete", cut)]


# What a process with no capabilities may do (setpriv drops them all, as root): root owns
# the store, its folder and its files, so with the permission bits below nothing there can
# be written, created or removed, as on read-only media; without the capabilities root has
# no way around the bits (checked first, by trying).
NO_CAPABILITIES = ["setpriv", "--bounding-set=-all", "--inh-caps=-all", "--"]


def _freeze(folder: Path) -> None:
    for path in sorted(folder.rglob("*"), reverse=True):
        path.chmod(0o555 if path.is_dir() else 0o444)
    folder.chmod(0o555)


def _thaw(folder: Path) -> None:
    folder.chmod(0o755)
    for path in folder.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)


def _state(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_a_store_moved_onto_read_only_media_opens_read_only_for_every_reading_command(
    client: Any, tmp_path: Path
) -> None:
    import re
    import shutil

    assert shutil.which("setpriv"), "setpriv (util-linux) runs the commands without privileges"
    (tmp_path / "a").mkdir()
    store, source = stored(tmp_path / "a")
    (there,) = store.rescore(
        ["contains", "rouge-l"], runs=source, keep=True, batch_size=80, dask=client
    )
    store.promote_baseline(source, force=True)  # some of its executions error, by design
    commands = {
        "runs": ["runs", "--format", "json"],
        "sql": [
            "sql",
            f"SELECT metric, count(*) FROM scores WHERE run_id = '{there}' GROUP BY 1 ORDER BY 1",
        ],
        "report": ["report", there, "--format", "json"],
        "compare": ["compare", source, there],
        "gate": ["gate", there, "--baseline", source],
        "brief": ["brief", there],
        "baseline list": ["baseline", "list"],
        "store verify": ["store", "verify"],
        "online status": ["online", "status", "mixed"],
        "export": ["export", there, "--to", str(tmp_path / "export")],
    }

    def outcome(db: Path, argv: list[str], prefix: list[str]) -> tuple[int, str, str]:
        done = subprocess.run(
            [*prefix, sys.executable, "-m", "evalframe", *argv, "--store", str(db)],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        text = re.sub(r"hashed in [0-9.]+ s", "hashed", done.stdout.replace(str(db), "STORE"))
        if argv[0] == "export":  # the same export, written again beside the first
            shutil.move(tmp_path / "export", tmp_path / f"export-{len(list(tmp_path.iterdir()))}")
        return done.returncode, text, done.stderr

    want = {
        name: outcome(tmp_path / "a" / "runs.duckdb", argv, []) for name, argv in commands.items()
    }
    assert all(code == 0 for code, _, _ in want.values()), want
    # Moved (the views stored in the file name the old folder), then frozen.
    media = tmp_path / "media"
    media.mkdir()
    shutil.move(tmp_path / "a" / "runs.duckdb", media / "runs.duckdb")
    shutil.move(tmp_path / "a" / "runs.duckdb.runs", media / "runs.duckdb.runs")
    db = media / "runs.duckdb"
    _freeze(media)
    before = _state(media)
    try:
        probe = subprocess.run(
            [*NO_CAPABILITIES, "sh", "-c", f"echo x > '{media}/probe'"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert probe.returncode != 0, "the process could write to the frozen folder"
        for name, argv in commands.items():
            code, text, err = outcome(db, argv, NO_CAPABILITIES)
            assert (code, text) == want[name][:2], (name, err)
            assert err == want[name][2], name
        code, _, err = outcome(
            db, ["rescore", "-m", "exact-match", "--runs", source], NO_CAPABILITIES
        )
        assert code == 2  # a writing command fails in one paragraph
        assert "Traceback" not in err
        assert _state(media) == before  # nothing written, created or removed
    finally:
        _thaw(media)


def test_glob_characters_in_paths_work_on_a_cluster_too(client: Any, tmp_path: Path) -> None:
    base = tmp_path / "exp [v2]*?"
    base.mkdir()
    ds = dataset_file(base / "golden [1].jsonl")
    parts = write_parts(base / "outputs [a]?", outputs_frame())
    db = base / "runs [1]*.duckdb"
    address = client.scheduler.address
    runner = CliRunner()

    def ok(*argv: str) -> str:
        done = runner.invoke(cli, [*argv, "--store", str(db)])
        assert done.exit_code in (0, 1), (argv, done.stderr, done.exception)
        return done.stdout

    common = ["run", str(ds), "-m", "rouge-l", "-m", "contains"]
    here = json.loads(ok(*common, "--outputs", str(parts), "--format", "json"))
    for source in (parts, base / "outputs [a]?" / "*.parquet"):  # a folder, and a glob in it
        there = json.loads(
            ok(*common, "--outputs", str(source), "--dask", address, "--format", "json")
        )
        assert there["samples"] == here["samples"]
        assert there["metrics"] == here["metrics"]
    ok(*common, "--outputs", str(parts), "--dask", address, "--batch-size", "100")
    streamed = Store(db).sql("SELECT run_id FROM runs ORDER BY seq DESC LIMIT 1").item()
    assert Store(db).sql("SELECT count(*) FROM run_files WHERE run_id = ?", [streamed]).item()
    report = json.loads(ok("report", streamed, "--format", "json"))
    assert report["metrics"] == here["metrics"]
    assert f"from {streamed}" in ok(
        "rescore", "--runs", streamed, "-m", "exact-match", "--dask", address
    )
    newest = Store(db).sql("SELECT run_id FROM runs ORDER BY seq DESC LIMIT 1").item()
    counts = Store(db).sql("SELECT count(*) FROM scores WHERE run_id = ?", [newest]).item()
    assert counts == N
    assert json.loads(ok("report", newest, "--format", "json"))["metrics"]["exact-match"]["n"] == N
    assert "sound: no problem found" in ok("store", "verify")
    ok("export", newest, "--to", str(base / "export [x]"))
    other = base / "other [2].duckdb"
    done = runner.invoke(cli, ["import", str(base / "export [x]"), "--store", str(other)])
    assert done.exit_code == 0, done.stderr
    assert Store(other).sql("SELECT count(*) FROM scores").item() == N
