"""API keys never leave the process: not in errors, stores, reports, caches or exports.

Every artifact a run leaves (stdout, stderr, JSON/Markdown/HTML reports, every store table,
the provider cache, Parquet exports) is searched for a marker key after each provider fault,
for both embeddings and the judge. The stub echoes the ``Authorization`` header in its error
replies, as some real providers do, so anything that kept a reply's text would show it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner, Result
from conftest import write
from openai_stub import StubOpenAI

import evalframe as ef
from evalframe.cli import cli
from evalframe.providers import OpenAIEmbeddings, OpenAIJudge, Providers, Secret
from evalframe.providers._config import redact

MARKER = "sk-MARKER-7f3a9cQ"
PIECES = ("MARKER-7f3a9cQ", "TAIL-55e1R")  # any fragment of a key counts as a leak
BAD_KEY = f"{MARKER}\nTAIL-55e1R"  # a pasted key with a line break: not a valid header

FAULTS: dict[str, tuple[Any, ...]] = {
    "429": ("status", 429, {"Retry-After": "0"}),
    "5xx": ("status", 503),
    "malformed": ("malformed",),
    "timeout": ("slow", 3.0),
    "dropped": ("drop",),
}
ROLES = {
    "embeddings": (["-m", "cosine-embedding"], "EVALFRAME_EMBEDDINGS_API_KEY", "embeddings"),
    "judge": (["-m", "llm-as-judge"], "EVALFRAME_JUDGE_API_KEY", "chat"),
}


@pytest.fixture(autouse=True)
def _no_ambient_provider_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "EVALFRAME_TIMEOUT", "EVALFRAME_RETRIES"):
        monkeypatch.delenv(name, raising=False)


def _files(tmp_path: Path) -> tuple[Path, Path]:
    dataset = write(
        tmp_path,
        "ds.yaml",
        """\
        name: secrets
        samples:
          - {id: a, input: {question: q1}, expected_output: alpha}
          - {id: b, input: {question: q2}, expected_output: beta}
        """,
    )
    outputs = write(tmp_path, "out.json", json.dumps({"outputs": {"a": "alpha!", "b": "gamma"}}))
    return dataset, outputs


def _provider_args(role: str, url: str) -> list[str]:
    if role == "embeddings":
        return ["--embeddings-base-url", url, "--embeddings-model", "stub-embed"]
    return ["--judge-base-url", url, "--judge-model", "stub-judge"]


def _invoke(args: list[str]) -> Result:
    return CliRunner().invoke(cli, args, catch_exceptions=False)


def _duckdb_text(path: Path) -> str:
    """Every row of every table of a DuckDB file, as text."""
    with duckdb.connect(str(path), read_only=True) as con:
        tables = [t for (t,) in con.sql("SELECT table_name FROM duckdb_tables()").fetchall()]
        assert tables
        return "\n".join(repr(con.sql(f'SELECT * FROM "{t}"').fetchall()) for t in tables)


def _artifacts(tmp_path: Path, store: Path, cache: Path | None) -> dict[str, str]:
    """Every artifact of the stored runs, as text: reports, store tables, cache, exports."""
    found: dict[str, str] = {}
    runs = _invoke(["runs", "--store", str(store)])
    found["runs"] = runs.output
    with duckdb.connect(str(store), read_only=True) as con:
        run_ids = [r for (r,) in con.sql("SELECT run_id FROM runs").fetchall()]
    assert run_ids
    for run_id in run_ids:
        for fmt in ("json", "markdown", "html"):
            shown = _invoke(["report", run_id, "--store", str(store), "--format", fmt])
            assert shown.exit_code == 0, shown.output
            found[f"report.{fmt}"] = shown.stdout + shown.stderr
        target = tmp_path / f"export-{run_id}"
        exported = _invoke(["export", run_id, "--to", str(target), "--store", str(store)])
        assert exported.exit_code == 0, exported.output
        parquet = sorted(target.rglob("*.parquet"))
        assert parquet
        for f in parquet:
            found[f"export:{f.name}"] = repr(pq.read_table(f).to_pylist())
            found[f"export-bytes:{f.name}"] = f.read_bytes().decode("latin-1")
        for f in target.rglob("*"):
            if f.is_file() and f.suffix != ".parquet":
                found[f"export:{f.name}"] = f.read_text(encoding="utf-8", errors="replace")
    found["store"] = _duckdb_text(store)
    if cache is not None and cache.exists():
        found["cache"] = _duckdb_text(cache)
    return found


def _assert_no_key(artifacts: dict[str, str]) -> None:
    leaks = [name for name, text in artifacts.items() for p in PIECES if p in text]
    assert leaks == []


@pytest.mark.parametrize("fault", sorted(FAULTS))
@pytest.mark.parametrize("role", sorted(ROLES))
def test_no_artifact_carries_the_key_after_a_provider_fault(
    role: str, fault: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    metric, variable, endpoint = ROLES[role]
    dataset, outputs = _files(tmp_path)
    store, cache = tmp_path / "runs.duckdb", tmp_path / "cache.duckdb"
    monkeypatch.setenv(variable, MARKER)
    with StubOpenAI(api_key=MARKER) as stub:
        stub.fail(endpoint, *[FAULTS[fault]] * 8)  # every attempt of every request fails
        ran = _invoke(
            [
                "run",
                str(dataset),
                "--outputs",
                str(outputs),
                *metric,
                *_provider_args(role, stub.url),
                "--store",
                str(store),
                "--cache",
                str(cache),
                "--format",
                "json",
                "--retries",
                "1",
                "--timeout",
                "1",
            ]
        )
        retried = fault != "malformed"  # a malformed body is not worth a retry
        sent = stub.calls("/embeddings" if role == "embeddings" else "/chat/completions")
        assert len(sent) >= (2 if retried else 1)  # the key was really sent
    assert ran.exit_code == 1, ran.output  # failed rows, not a crash
    report = json.loads(ran.stdout)
    errors = [f["error"] for f in report["failures"]]
    assert len(errors) == 2
    assert all(("request failed" in e or "not a valid JSON" in e) for e in errors), errors
    artifacts = _artifacts(tmp_path, store, cache)
    artifacts["stdout"], artifacts["stderr"] = ran.stdout, ran.stderr
    _assert_no_key(artifacts)


@pytest.mark.parametrize("role", sorted(ROLES))
def test_a_key_that_is_no_valid_header_is_a_usage_error_naming_the_variable(
    role: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    metric, variable, _endpoint = ROLES[role]
    dataset, outputs = _files(tmp_path)
    monkeypatch.setenv(variable, BAD_KEY)
    with StubOpenAI() as stub:
        ran = _invoke(
            [
                "run",
                str(dataset),
                "--outputs",
                str(outputs),
                *metric,
                *_provider_args(role, stub.url),
                "--no-cache",
                "--store",
                str(tmp_path / "runs.duckdb"),
            ]
        )
        assert stub.requests == []  # refused before any call
    assert ran.exit_code == 2
    assert variable in ran.stderr
    assert "Traceback" not in ran.stderr
    assert len(ran.stderr.strip().splitlines()) == 1
    _assert_no_key({"stdout": ran.stdout, "stderr": ran.stderr})
    assert not (tmp_path / "runs.duckdb").exists()


def test_clients_refuse_a_key_that_cannot_be_a_header_without_showing_it() -> None:
    for make in (OpenAIJudge, OpenAIEmbeddings):
        with pytest.raises(ef.ProviderError, match="api_key") as caught:
            make(base_url="http://127.0.0.1:9/v1", api_key="sk-ok\u00e9-" + PIECES[0])
        assert PIECES[0] not in str(caught.value)


def test_a_key_httpx_rejects_is_redacted_from_every_row_store_report_and_export(
    tmp_path: Path,
) -> None:
    """Past validation (a key set on the client afterwards), httpx's own error quotes the
    header; the ledger's redaction still keeps it out of every artifact."""
    dataset, outputs = _files(tmp_path)
    store = tmp_path / "runs.duckdb"
    with StubOpenAI() as stub:
        judge = OpenAIJudge("stub-judge", base_url=stub.url)
        embedder = OpenAIEmbeddings("stub-embed", base_url=stub.url)
        judge.api_key = embedder.api_key = Secret(BAD_KEY)
        providers = Providers(embedder, judge, cache=tmp_path / "cache.duckdb")
        run = ef.evaluate(
            dataset,
            outputs=outputs,
            metrics=["llm-as-judge", "cosine-embedding"],
            providers=providers,
            store=store,
        )
        assert stub.requests == []  # httpx refused to send the header
    errors = run.scores["error"].to_list()
    assert len(errors) == 4
    assert all(e is not None and "Illegal header value" in e for e in errors), errors
    assert all("***" in e for e in errors)  # the header was quoted, and redacted
    assert all("after 1 attempt(s)" in e for e in errors)  # a request that cannot be formed
    assert set(run.usage["attempts"].to_list()) == {1}  # is not retried
    artifacts = _artifacts(tmp_path, store, tmp_path / "cache.duckdb")
    artifacts["scores"] = repr(run.scores.rows())
    artifacts["usage"] = repr(run.usage.rows())
    _assert_no_key(artifacts)


def test_redaction_covers_quoted_escaped_and_split_forms() -> None:
    key = Secret(BAD_KEY)
    texts = [
        BAD_KEY,
        repr(BAD_KEY),
        repr(f"Bearer {BAD_KEY}".encode()),
        json.dumps({"auth": BAD_KEY}),
        f"line one {MARKER} and {PIECES[1]} apart",
    ]
    for text in texts:
        cleaned = redact(text, key)
        assert all(p not in cleaned for p in PIECES), cleaned
        assert "***" in cleaned


def test_an_exception_escaping_a_client_is_redacted() -> None:
    class Leaky:
        id = model = "leaky"
        cacheable = False
        api_key = Secret(MARKER)

        def embed(self, texts: Any, ledger: Any) -> Any:
            raise RuntimeError(f"boom with Authorization: Bearer {MARKER}")

    p = Providers(Leaky(), cache=False)  # type: ignore[arg-type]
    with pytest.raises(ef.ProviderError) as caught:
        p.embed_texts(["x"])
    assert str(caught.value) == "RuntimeError: boom with Authorization: Bearer ***"
    assert caught.value.__cause__ is None
