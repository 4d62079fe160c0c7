"""``evalframe rescore`` reaches providers as ``evalframe run`` does: the same options, one
set of providers per command (one cache, one loaded embedder), usage stored per new run, and
a configurable number of requests in flight."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from openai_stub import StubOpenAI

import evalframe as ef
from evalframe.cli import cli
from evalframe.core._errors import ProviderError
from evalframe.providers import ENV, Providers
from evalframe.store import Store

N = 12
ANSWERS = [f"answer number {i}" for i in range(N)]


@pytest.fixture(autouse=True)
def _no_provider_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV.values():
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def stub() -> Iterator[StubOpenAI]:
    with StubOpenAI(verdict=_verdict) as server:
        yield server


def _verdict(prompt: str) -> str:
    return json.dumps({"score": len(prompt) % 10 / 10, "reason": "by length"})


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A store holding one run of N samples scored with exact-match only."""
    path = tmp_path / "runs.duckdb"
    ds = ef.Dataset.from_records(
        [
            {"id": f"s{i:02d}", "input": {"question": f"question {i}"}, "expected_output": "Paris"}
            for i in range(N)
        ],
        name="geo",
    )
    outputs = {f"s{i:02d}": ANSWERS[i] for i in range(N)}
    ef.evaluate(ds, outputs=outputs, metrics=["exact-match"], store=path)
    return path


@pytest.fixture
def chunks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of the chunks the rescore scores, in order."""
    from evalframe.engine import _rescore

    seen: list[int] = []
    original = _rescore.score

    def counting(frame: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(frame.height)
        return original(frame, *args, **kwargs)

    monkeypatch.setattr(_rescore, "score", counting)
    return seen


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def new_run_ids(out: str) -> list[str]:
    return re.findall(r"^run (\w+) from", out, flags=re.MULTILINE)


def cosine(a: list[float], b: list[float]) -> float:
    x, y = np.asarray(a), np.asarray(b)
    return float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y)))


def test_rescore_embeds_each_distinct_text_once_per_command_and_stores_usage(
    db: Path, stub: StubOpenAI, chunks: list[int], tmp_path: Path
) -> None:
    args = ["rescore", "--store", str(db), "-m", "cosine-embedding", "--batch-size", "4"]
    args += ["--embeddings-base-url", stub.url, "--embeddings-model", "stub-embed"]
    args += ["--cache", str(tmp_path / "cache.duckdb")]
    code, out, err = invoke(*args)
    assert code == 0, err
    (first,) = new_run_ids(out)
    calls = stub.calls("embeddings")
    assert len(chunks) > 2
    assert sum(chunks) == N
    assert len(calls) == len(chunks)  # one request per scoring batch, not one per row or text
    sent = [text for call in calls for text in call.body["input"]]
    # "Paris" is every row's expected output: asked once, then read from the shared cache.
    assert sorted(sent) == sorted(["Paris", *ANSWERS])
    store = Store(db)
    usage = store.sql("SELECT model, latency_ms FROM usage WHERE run_id = ?", [first])
    assert usage.height == len(calls)
    assert set(usage.get_column("model")) == {"stub-embed"}
    scores = store.sql(
        "SELECT sample_id, score, error FROM scores WHERE run_id = ? ORDER BY sample_id", [first]
    )
    assert scores.get_column("error").null_count() == N
    want = [max(0.0, cosine(stub.vector(a), stub.vector("Paris"))) for a in ANSWERS]
    np.testing.assert_allclose(scores.get_column("score").to_numpy(), want, rtol=1e-5)

    source = store.sql("SELECT source_run_id FROM runs WHERE run_id = ?", [first]).item()
    code, out, err = invoke(*args, "--runs", source)
    assert code == 0, err
    (second,) = new_run_ids(out)
    assert len(stub.calls("embeddings")) == len(calls)  # all from the cache
    assert store.sql("SELECT count(*) FROM usage WHERE run_id = ?", [second]).item() == 0
    again = store.sql("SELECT score FROM scores WHERE run_id = ? ORDER BY sample_id", [second])
    assert again.get_column("score").equals(scores.get_column("score"))


def test_rescore_loads_the_embedded_model_once_per_command(
    db: Path, chunks: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    import onnxruntime

    from evalframe.providers import _onnx

    made: list[str] = []
    sessions: list[str] = []
    real_init, real_session = _onnx.OnnxEmbedder.__init__, onnxruntime.InferenceSession

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        made.append("embedder")
        real_init(self, *args, **kwargs)

    def session(*args: Any, **kwargs: Any) -> Any:
        sessions.append("session")
        return real_session(*args, **kwargs)

    monkeypatch.setattr(_onnx.OnnxEmbedder, "__init__", init)
    monkeypatch.setattr(onnxruntime, "InferenceSession", session)
    _onnx._load.cache_clear()  # so a session made by an earlier test does not hide this one's
    # A second source run, so the command rescores two runs in 2 x several batches.
    Store(db).rescore(["exact-match"], force=True)
    chunks.clear()
    code, out, err = invoke(
        "rescore", "--store", str(db), "--runs", "SELECT run_id FROM runs", "-m",
        "cosine-embedding", "--batch-size", "4", "--no-cache",
    )  # fmt: skip
    assert code == 0, err
    runs = new_run_ids(out)
    assert len(runs) == 2
    assert len(chunks) > 4
    assert made == ["embedder"]
    assert sessions == ["session"]
    usage = Store(db).sql(
        "SELECT run_id, count(*) AS calls FROM usage WHERE list_contains(?::VARCHAR[], run_id) "
        "GROUP BY run_id",
        [runs],
    )
    assert usage.height == 2
    assert usage.get_column("calls").min() >= 1


def test_rescore_judges_through_the_stub_with_the_cli_options(
    db: Path, stub: StubOpenAI, chunks: list[int]
) -> None:
    stub.latency = 0.2
    code, out, err = invoke(
        "rescore", "--store", str(db), "-m", "llm-as-judge", "--batch-size", "5", "--no-cache",
        "--judge-base-url", stub.url, "--judge-model", "stub-judge", "--judge-concurrency", "3",
    )  # fmt: skip
    assert code == 0, err
    (run_id,) = new_run_ids(out)
    prompts = [call.body["messages"][0]["content"] for call in stub.calls("chat/completions")]
    assert len(prompts) == len(set(prompts)) == N
    assert all(any(a in p for p in prompts) for a in ANSWERS)
    assert stub.max_in_flight == 3
    store = Store(db)
    scores = store.sql("SELECT score FROM scores WHERE run_id = ?", [run_id])
    assert sorted(scores.get_column("score")) == sorted(len(p) % 10 / 10 for p in prompts)
    assert store.sql("SELECT count(*) FROM usage WHERE run_id = ?", [run_id]).item() == N


def test_run_takes_the_same_provider_options(stub: StubOpenAI, tmp_path: Path) -> None:
    stub.latency = 0.2
    example = Path(ef.__file__).parent / "examples"
    code, _, err = invoke(
        "run", str(example / "support.yaml"), "--outputs", str(example / "support.outputs.json"),
        "-m", "llm-as-judge", "--judge-base-url", stub.url, "--judge-model", "m",
        "--judge-concurrency", "2", "--no-cache",
    )  # fmt: skip
    assert code in (0, 1), err
    assert len(stub.calls("chat/completions")) > 2
    assert stub.max_in_flight == 2


@pytest.mark.parametrize("concurrency", [1, 5, 12])
def test_judge_keeps_exactly_the_configured_requests_in_flight(
    stub: StubOpenAI, concurrency: int
) -> None:
    stub.latency = 0.5  # long enough for every worker's first request to overlap
    providers = Providers.from_env(
        judge_base_url=stub.url,
        judge_model="m",
        judge_concurrency=concurrency,
        cache=False,
        environ={},
    )
    prompts = [f"prompt {i}" for i in range(2 * concurrency + 1)]
    replies = providers.complete(prompts)
    assert [r.content for r in replies] == [_verdict(p) for p in prompts]
    assert len(stub.calls("chat/completions")) == len(prompts)
    assert stub.max_in_flight == concurrency


def test_concurrency_comes_from_the_environment_and_bad_values_name_the_variable(
    stub: StubOpenAI,
) -> None:
    environ = {
        "EVALFRAME_EMBEDDINGS_BASE_URL": stub.url,
        "EVALFRAME_EMBEDDINGS_CONCURRENCY": "3",
        "EVALFRAME_JUDGE_BASE_URL": stub.url,
        "EVALFRAME_JUDGE_CONCURRENCY": " 16 ",
    }
    p = Providers.from_env(environ=environ, cache=False)
    assert getattr(p.embeddings, "concurrency", None) == 3
    assert getattr(p.judge, "concurrency", None) == 16
    q = Providers.from_env(environ=environ, cache=False, judge_concurrency=2)
    assert getattr(q.judge, "concurrency", None) == 2
    default = Providers.from_env(environ={}, judge_model="m", cache=False)
    assert getattr(default.judge, "concurrency", 0) == 8
    for bad in ("0", "1.5", "many"):
        with pytest.raises(ProviderError, match="EVALFRAME_JUDGE_CONCURRENCY must be a whole"):
            Providers.from_env(environ={**environ, "EVALFRAME_JUDGE_CONCURRENCY": bad}, cache=False)
    code, _, err = invoke("rescore", "--store", "x", "-m", "rouge-l", "--judge-concurrency", "0")
    assert code == 2
    assert "--judge-concurrency" in err
