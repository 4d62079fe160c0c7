"""Providers over real HTTP: a loopback OpenAI-compatible stub with injected faults."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from conftest import STUB_API_KEY, frame
from openai_stub import StubOpenAI

import evalframe as ef
from evalframe.providers import (
    Embedded,
    HashingEmbedder,
    Ledger,
    OnnxEmbedder,
    OpenAIEmbeddings,
    OpenAIJudge,
    Providers,
    ResponseCache,
    Secret,
)
from evalframe.providers._config import endpoint_url, normalize_retries, normalize_timeout
from evalframe.providers._onnx import _load


@pytest.fixture(autouse=True)
def _private_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The default cache file lives in the test's own folder."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))


def embeddings(stub: StubOpenAI, **kw: Any) -> OpenAIEmbeddings:
    options: dict[str, Any] = {"backoff": 0.001, "max_backoff": 0.002, "retries": 2}
    options.update(kw)
    return OpenAIEmbeddings("stub-embed", base_url=stub.url, api_key=STUB_API_KEY, **options)


def judge(stub: StubOpenAI, **kw: Any) -> OpenAIJudge:
    options: dict[str, Any] = {"backoff": 0.001, "max_backoff": 0.002, "retries": 2}
    options.update(kw)
    return OpenAIJudge("stub-judge", base_url=stub.url, api_key=STUB_API_KEY, **options)


# --- configuration ------------------------------------------------------------------------------


def test_without_an_embeddings_endpoint_the_embedded_model_is_the_default() -> None:
    p = Providers.from_env(environ={"OPENAI_API_KEY": "sk-x"}, cache=False)
    assert isinstance(p.embeddings, OnnxEmbedder)  # a stray OpenAI key starts no paid calls
    assert isinstance(p.judge, OpenAIJudge)
    assert p.judge.url == "https://api.openai.com/v1/chat/completions"


def test_role_variables_override_the_openai_fallback() -> None:
    env = {
        "OPENAI_API_KEY": "sk-fallback",
        "OPENAI_BASE_URL": "http://fallback.test/v1",
        "EVALFRAME_EMBEDDINGS_MODEL": "bge-small",
        "EVALFRAME_JUDGE_BASE_URL": "http://judge.test/v1/",
        "EVALFRAME_JUDGE_MODEL": "llama-judge",
        "EVALFRAME_JUDGE_API_KEY": "sk-judge",
    }
    p = Providers.from_env(environ=env, cache=False)
    emb, jdg = p.embeddings, p.judge
    assert isinstance(emb, OpenAIEmbeddings)
    assert isinstance(jdg, OpenAIJudge)
    assert (emb.model, emb.url) == ("bge-small", "http://fallback.test/v1/embeddings")
    assert emb.api_key == Secret("sk-fallback")
    assert (jdg.model, jdg.url) == ("llama-judge", "http://judge.test/v1/chat/completions")
    assert jdg.api_key == Secret("sk-judge")
    env2 = {
        "EVALFRAME_EMBEDDINGS_BASE_URL": "http://emb.test/v1",
        "EVALFRAME_EMBEDDINGS_API_KEY": "k",
    }
    p2 = Providers.from_env(environ=env2, cache=False)
    assert isinstance(p2.embeddings, OpenAIEmbeddings)
    assert p2.embeddings.model == "text-embedding-3-small"
    assert p2.judge is None
    hashing = Providers.from_env(environ={"EVALFRAME_EMBEDDINGS_MODEL": "hashing"}, cache=False)
    assert isinstance(hashing.embeddings, HashingEmbedder)
    shared = {"OPENAI_BASE_URL": "http://shared.test/v1", "OPENAI_API_KEY": "sk-shared"}
    p3 = Providers.from_env(environ=shared, cache=False)
    assert isinstance(p3.embeddings, OpenAIEmbeddings)  # the fallback endpoint serves both roles
    assert p3.embeddings.url == "http://shared.test/v1/embeddings"
    assert isinstance(p3.judge, OpenAIJudge)
    assert p3.judge.url == "http://shared.test/v1/chat/completions"
    local = {**shared, "EVALFRAME_EMBEDDINGS_MODEL": "onnx"}
    assert isinstance(Providers.from_env(environ=local, cache=False).embeddings, OnnxEmbedder)


def test_timeouts_and_retries_are_normalised_and_zero_never_means_forever() -> None:
    assert normalize_timeout(0, 30.0) == 30.0
    assert normalize_timeout("0", 30.0) == 30.0
    assert normalize_timeout("7", 30.0) == 7.0
    assert normalize_retries("4") == 4
    assert normalize_retries(None) == 3
    assert OpenAIJudge(timeout=0).timeout == 60.0
    assert OpenAIEmbeddings(timeout=None).timeout == 30.0
    for bad in (-5, float("inf"), float("nan"), 1e300, "soon", True):
        with pytest.raises(ValueError, match=r"^timeout must be a number of seconds more than 0"):
            OpenAIJudge(timeout=bad)
    for bad in (True, -1, 2.5, 10**30, "1e300"):
        with pytest.raises(ValueError, match=r"^retries must be a whole number from 0 to 100"):
            OpenAIEmbeddings(retries=bad)
    assert endpoint_url("http://h/v1/embeddings", "embeddings") == "http://h/v1/embeddings"
    with pytest.raises(ValueError, match="http"):
        OpenAIJudge(base_url="ftp://x")


def test_budget_and_prices_are_validated() -> None:
    with pytest.raises(ValueError, match="budget_usd must be a number of USD more than 0"):
        Providers(budget_usd=0, cache=False)
    with pytest.raises(ValueError, match="unknown key"):
        Providers(prices={"m": {"input": 1.0}}, cache=False)


def test_no_judge_configured_is_one_error_before_scoring() -> None:
    p = Providers(embeddings="hashing", cache=False)
    with pytest.raises(ef.ProviderError) as caught:
        ef.score(frame(["a"], ["a"]), [ef.metrics.llm_as_judge()], context=p)
    message = str(caught.value)
    assert "llm-as-judge" in message
    assert "EVALFRAME_JUDGE_BASE_URL" in message
    assert "judge__" not in message


# --- embeddings over HTTP -----------------------------------------------------------------------


def test_embeddings_are_batched_authorised_and_in_order(openai_stub: StubOpenAI) -> None:
    client = embeddings(openai_stub, batch_size=2, concurrency=2)
    texts = ["one", "two", "three", "four", "five"]
    ledger = Ledger()
    out = client.embed(texts, ledger)
    assert out.errors == [None] * 5
    for t, v in zip(texts, out.vectors, strict=True):
        assert v is not None
        np.testing.assert_allclose(v, openai_stub.vector(t), rtol=1e-6)
    calls = openai_stub.calls("/embeddings")
    assert sorted(len(c.body["input"]) for c in calls) == [1, 2, 2]
    assert all(c.headers["authorization"] == f"Bearer {STUB_API_KEY}" for c in calls)
    usage = ledger.frame()
    assert usage.height == 3
    assert usage["prompt_tokens"].sum() == 5
    assert usage["latency_ms"].min() > 0
    assert usage["attempts"].to_list() == [1, 1, 1]


def test_429_with_retry_after_is_honoured_and_retried(openai_stub: StubOpenAI) -> None:
    openai_stub.fail("embeddings", ("status", 429, {"retry-after-ms": "150"}))
    ledger = Ledger()
    started = time.perf_counter()
    out = embeddings(openai_stub).embed(["a"], ledger)
    assert time.perf_counter() - started >= 0.15
    assert out.errors == [None]
    assert ledger.frame()["attempts"].to_list() == [2]
    assert len(openai_stub.calls("/embeddings")) == 2


@pytest.mark.parametrize(
    "fault",
    [("status", 500), ("status", 503), ("drop",), ("slow", 0.6)],
    ids=["500", "503", "dropped-connection", "timeout"],
)
def test_transient_faults_are_retried(openai_stub: StubOpenAI, fault: tuple[Any, ...]) -> None:
    openai_stub.fail("embeddings", fault)
    ledger = Ledger()
    out = embeddings(openai_stub, timeout=0.3).embed(["a", "b"], ledger)
    assert out.errors == [None, None]
    assert ledger.frame()["attempts"].to_list() == [2]


def test_exhausted_retries_become_that_batch_s_error(openai_stub: StubOpenAI) -> None:
    openai_stub.fail("embeddings", *[("status", 500)] * 3)
    ledger = Ledger()
    out = embeddings(openai_stub, batch_size=1, concurrency=1).embed(["a", "b"], ledger)
    assert out.errors[0] == "Embeddings request failed: HTTP 500 after 3 attempt(s)."
    assert out.vectors[0] is None
    assert out.errors[1] is None
    assert out.vectors[1] is not None
    assert ledger.frame()["error"].to_list()[0] == out.errors[0]


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        (("status", 400), "Embeddings request failed: HTTP 400."),
        (("malformed",), "Embeddings response is not a valid JSON object."),
        (("wrong_count",), "Embeddings client returned 1 vector(s); expected 2."),
    ],
)
def test_client_errors_and_malformed_bodies_fail_at_once(
    openai_stub: StubOpenAI, fault: tuple[Any, ...], message: str
) -> None:
    openai_stub.fail("embeddings", fault)
    out = embeddings(openai_stub).embed(["a", "b"], Ledger())
    assert out.errors == [message, message]
    assert len(openai_stub.calls("/embeddings")) == 1


def test_unreachable_server_names_the_transport_error_without_the_key() -> None:
    client = OpenAIEmbeddings(
        "m", base_url="http://127.0.0.1:9/v1", api_key=STUB_API_KEY, retries=1, backoff=0.001
    )
    out = client.embed(["a"], Ledger())
    assert out.errors[0] is not None
    assert out.errors[0].startswith(
        "Embeddings request failed before receiving a response after 2 attempt(s): ConnectError"
    )
    assert STUB_API_KEY not in out.errors[0]


def test_failed_rows_keep_their_error_and_every_other_row_is_scored(
    openai_stub: StubOpenAI,
) -> None:
    openai_stub.fail("embeddings", *[("status", 502)] * 3)
    p = Providers(embeddings(openai_stub, batch_size=2, concurrency=1), cache=False)
    f = frame(["w1", "w3", "w5"], ["w2", "w4", "w6"])
    scores = ef.score(f, [ef.metrics.cosine_embedding()], context=p)
    assert scores.height == 3
    # 6 unique texts in 3 batches of 2; the first batch (w1, w3) failed for good.
    errors = scores["error"].to_list()
    assert errors[0] == errors[1] == "Embeddings request failed: HTTP 502 after 3 attempt(s)."
    assert errors[2] is None
    assert scores["score"][2] is not None


def test_one_embedding_per_unique_text_across_the_batch(openai_stub: StubOpenAI) -> None:
    p = Providers(embeddings(openai_stub, batch_size=100), cache=False)
    f = frame(["Paris", "Paris", "Rome", "Paris"], ["Paris", "Rome", "Paris", None])
    ef.score(f, [ef.metrics.cosine_embedding()], context=p)
    sent = [t for c in openai_stub.calls("/embeddings") for t in c.body["input"]]
    assert sorted(sent) == ["Paris", "Rome"]


def test_clients_work_under_a_running_event_loop(openai_stub: StubOpenAI) -> None:
    client = embeddings(openai_stub)

    async def notebook_cell() -> list[str | None]:
        return client.embed(["inside a loop"], Ledger()).errors

    assert asyncio.run(notebook_cell()) == [None]


# --- the judge over HTTP ------------------------------------------------------------------------


def test_judge_requests_are_deterministic_json_mode(openai_stub: StubOpenAI) -> None:
    p = Providers(embeddings="hashing", judge=judge(openai_stub), cache=False)
    scores = ef.score(frame(["4"], ["four"]), [ef.metrics.llm_as_judge()], context=p)
    assert scores["score"].to_list() == [0.9]
    (call,) = openai_stub.calls("/chat/completions")
    body = call.body
    assert body["temperature"] == 0
    assert body["seed"] == 42
    assert body["response_format"] == {"type": "json_object"}
    assert body["model"] == "stub-judge"
    prompt = body["messages"][0]["content"]
    assert 'Question: "q"\nEXPECTED: "4"\nACTUAL: "four"' in prompt
    details = json.loads(scores["details"][0])
    assert details["prompt_chars"] == len(prompt.encode())
    assert details["judge_reason"] == "close enough"


def test_judge_failures_are_per_sample_errors(openai_stub: StubOpenAI) -> None:
    openai_stub.verdict = lambda prompt: json.dumps({"score": 0.5, "reason": "r"})
    openai_stub.fail("chat", ("no_content",), ("status", 401))
    p = Providers(embeddings="hashing", judge=judge(openai_stub, concurrency=1), cache=False)
    scores = ef.score(
        frame(["a", "b", "c"], ["x", "y", "z"]), [ef.metrics.llm_as_judge()], context=p
    )
    assert scores["error"].to_list() == [
        "LLM judge response missing choices[0].message.content (or it is empty).",
        "LLM judge request failed: HTTP 401.",
        None,
    ]
    assert scores["score"].to_list() == [None, None, 0.5]


# --- usage, cost, budget ------------------------------------------------------------------------


def test_cost_is_reported_or_derived_from_prices(openai_stub: StubOpenAI) -> None:
    prices = {"openai/stub-judge": {"input_per_million": 2.0, "output_per_million": 4.0}}
    p = Providers(embeddings="hashing", judge=judge(openai_stub), cache=False, prices=prices)
    ef.score(frame(["a b", "c"], ["d", "e f"]), [ef.metrics.llm_as_judge()], context=p)
    usage = p.usage_frame().filter(pl.col("kind") == "judge")
    assert usage.height == 2
    prompt_tokens = int(usage["prompt_tokens"].sum())
    completion_tokens = int(usage["completion_tokens"].sum())
    cost = p.cost_summary()
    expected = (prompt_tokens * 2.0 + completion_tokens * 4.0) / 1e6
    assert cost["derived_usd"] == pytest.approx(expected)
    assert cost["complete"] is True
    judge_row = next(m for m in cost["models"] if m["model"] == "stub-judge")
    assert judge_row["calls"] == 2
    assert judge_row["priced"] is True

    openai_stub.cost_per_call = 0.25
    reported = Providers(embeddings="hashing", judge=judge(openai_stub), cache=False)
    ef.score(frame(["x"], ["y"]), [ef.metrics.llm_as_judge()], context=reported)
    summary = reported.cost_summary()
    assert summary["reported_usd"] == 0.25
    assert summary["total_usd"] == 0.25

    unpriced = Providers(embeddings="hashing", judge=judge(openai_stub), cache=False)
    openai_stub.cost_per_call = None
    ef.score(frame(["x"], ["z"]), [ef.metrics.llm_as_judge()], context=unpriced)
    summary = unpriced.cost_summary()
    assert summary["complete"] is False
    assert summary["unpriced_models"] == ["stub-judge"]


def test_budget_halts_spending_and_keeps_scores(openai_stub: StubOpenAI) -> None:
    openai_stub.cost_per_call = 0.4
    p = Providers(
        embeddings="hashing",
        judge=judge(openai_stub, concurrency=1),
        cache=False,
        budget_usd=0.5,
        prices={"stub-judge": "reported"},  # the stub reports each call's cost
    )
    ds = ef.Dataset.from_records(
        [{"id": f"q{i}", "input": {"question": "?"}, "expected_output": f"e{i}"} for i in range(4)],
        name="budget",
    )
    run = ef.evaluate(
        ds,
        outputs={f"q{i}": f"a{i}" for i in range(4)},
        metrics=["llm-as-judge", "exact-match"],
        providers=p,
    )
    judged = run.scores.filter(pl.col("metric") == "llm-as-judge")
    assert judged["score"].to_list() == [0.9, 0.9, None, None]  # $0.80 > $0.50 after two calls
    assert judged["error"][2].startswith("Budget exhausted: spent $0.8000 of a $0.5000 budget")
    assert len(openai_stub.calls("/chat/completions")) == 2
    report = run.report()
    assert report["budget"] == {
        "limit_usd": 0.5,
        "spent_usd": pytest.approx(0.8),
        "halted": True,
        "completed_rows": 2,
        "reason": "Spent $0.8000 of a $0.5000 budget after 2 row(s).",
    }
    assert report["cost"]["reported_usd"] == pytest.approx(0.8)
    assert report["usage"]["cost_usd"] == pytest.approx(0.8)
    assert report["usage"]["latency_ms"]["count"] == 2
    assert report["usage"]["observations"] == 2


# --- the cache ----------------------------------------------------------------------------------


def test_second_run_makes_zero_calls_and_the_cache_holds_no_key(
    openai_stub: StubOpenAI, tmp_path: Path
) -> None:
    path = tmp_path / "cache.duckdb"
    f = frame(["alpha", "beta"], ["gamma", "beta"])
    metrics = [
        ef.metrics.cosine_embedding(),
        ef.metrics.bertscore_like(),
        ef.metrics.llm_as_judge(),
    ]

    def run() -> pl.DataFrame:
        p = Providers(embeddings(openai_stub), judge(openai_stub), cache=path)
        return ef.score(f, metrics, context=p).sort("metric", "sample_id")

    first = run()
    calls = len(openai_stub.requests)
    assert calls > 0
    second = run()
    assert len(openai_stub.requests) == calls  # everything came from the cache
    assert first["score"].to_list() == second["score"].to_list()
    assert STUB_API_KEY.encode() not in path.read_bytes()
    cache = ResponseCache(path)
    assert cache.get_replies("nothing", [{"x": 1}]) == [None]
    off = Providers(embeddings(openai_stub), judge(openai_stub), cache=False)
    ef.score(f, metrics, context=off)
    assert len(openai_stub.requests) > calls


def test_a_locked_or_broken_cache_file_never_fails_the_run(tmp_path: Path) -> None:
    path = tmp_path / "cache.duckdb"
    path.write_bytes(b"this is not a duckdb file")
    p = Providers(embeddings="onnx", cache=path)
    scores = ef.score(frame(["a cat"], ["a cat"]), [ef.metrics.cosine_embedding()], context=p)
    assert scores["score"].to_list() == [1.0]


# --- secrets ------------------------------------------------------------------------------------


def test_the_api_key_appears_in_no_report_log_error_or_repr(
    openai_stub: StubOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    openai_stub.fail("chat", ("status", 429, {"Retry-After": "0"}), ("status", 500))
    openai_stub.fail("embeddings", *[("status", 500)] * 3)
    p = Providers(embeddings(openai_stub), judge(openai_stub, retries=0), cache=False)
    ds = ef.Dataset.from_records(
        [{"id": "q1", "input": {"question": "?"}, "expected_output": "Paris"}], name="keys"
    )
    run = ef.evaluate(
        ds,
        outputs={"q1": "Paris"},
        metrics=["cosine-embedding", "llm-as-judge"],
        providers=p,
    )
    texts = [run.to_json(), run.to_markdown(), caplog.text, repr(p), repr(p.judge)]
    texts += [e for e in run.scores["error"].to_list() if e]
    texts.append(str(p.usage_frame().to_dicts()))
    assert run.failures.height == 2
    assert "retry 1 of 2" in caplog.text  # the retries were logged
    for text in texts:
        assert STUB_API_KEY not in text
    assert repr(Secret(STUB_API_KEY)) == "Secret('***')"


# --- local embedders ----------------------------------------------------------------------------


def test_hashing_embedder_is_deterministic_and_lexical() -> None:
    e = HashingEmbedder(dim=256)
    a, b, c = e.embed(["the cat sat", "The cat sat!", "quarterly revenue"]).vectors
    assert a is not None
    assert b is not None
    assert c is not None
    assert float(a @ b) == pytest.approx(1.0)
    assert float(a @ c) < 0.3
    # BLAKE2b, not hash(): the same on every machine and under any PYTHONHASHSEED.
    assert np.flatnonzero(a)[:5].tolist() == [10, 13, 14, 21, 28]


def test_onnx_embedder_verifies_its_model_and_is_batch_independent() -> None:
    e = OnnxEmbedder(threads=1)
    texts = ["A man is playing a guitar.", "Someone plays the guitar.", "The stock market fell."]
    ledger = Ledger()
    together = e.embed(texts, ledger).vectors
    alone = e.embed(texts[:1], ledger).vectors
    assert together[0] is not None
    assert alone[0] is not None
    np.testing.assert_array_equal(together[0], alone[0])
    a, b, c = (v for v in together if v is not None)
    assert a.shape == (384,)
    assert float(np.linalg.norm(a)) == pytest.approx(1.0, abs=1e-5)
    assert float(a @ b) > 0.6  # a paraphrase
    assert float(a @ c) < 0.2  # unrelated
    assert ledger.frame()["cost_usd"].to_list() == [0.0, 0.0]
    tokens = e.embed_tokens(["it's 3.14 école"], [["it", "s", "3", "14", "école"]], ledger)
    assert tokens.vectors[0] is not None
    assert tokens.vectors[0].shape == (5, 384)
    _load.cache_clear()
    bad = OnnxEmbedder(sha256="0" * 64)
    with pytest.raises(ef.ProviderError, match="has sha256 8199be6f"):
        bad.embed(["x"], Ledger())
    _load.cache_clear()


# --- the command line ---------------------------------------------------------------------------


def test_cli_provider_options_budget_and_cache(
    openai_stub: StubOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from evalframe.cli import cli

    example = Path(ef.__file__).parent / "examples"
    dataset, outputs = str(example / "support.yaml"), str(example / "support.outputs.json")
    monkeypatch.setenv("EVALFRAME_JUDGE_API_KEY", STUB_API_KEY)
    openai_stub.cost_per_call = 0.01
    cache = str(tmp_path / "cli-cache.duckdb")
    args = ["run", dataset, "--outputs", outputs, "-m", "llm-as-judge", "-m", "cosine-embedding"]
    args += ["--judge-base-url", openai_stub.url, "--judge-model", "m", "--cache", cache]
    args += ["--embeddings-model", "hashing", "--format", "json"]
    first = CliRunner().invoke(cli, args)
    assert first.exit_code == 0, first.stderr
    report = json.loads(first.stdout)
    assert report["cost"]["reported_usd"] > 0
    calls = len(openai_stub.requests)
    again = CliRunner().invoke(cli, args)
    assert again.exit_code == 0
    assert len(openai_stub.requests) == calls  # all from the cache
    assert json.loads(again.stdout)["cost"]["calls"] == 1  # the local hashing embedder only
    # The stub reports each call's cost: a budget binds on it once that is declared.
    budget = ["--no-cache", "--budget-usd", "0.015", "--price", "m=reported"]
    halted = CliRunner().invoke(cli, [*args[:-6], *budget])
    assert halted.exit_code == 1
    assert "budget exhausted: Spent $0.0" in halted.stderr
    assert STUB_API_KEY not in halted.stdout + halted.stderr


# --- one bad vector fails only its own rows ------------------------------------------------------


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        ("nan", "Embedding for 'two' contains NaN or infinite values."),
        (768, "Embedding for 'two' has 768 dimensions; the others have 384."),
    ],
)
def test_a_bad_vector_fails_only_the_rows_of_its_text(
    openai_stub: StubOpenAI, fault: object, message: str
) -> None:
    openai_stub.dim = 384
    texts = ["one", "two", "three"]
    openai_stub.fail("embeddings", ("bad_vector", 1, fault))
    out = embeddings(openai_stub, batch_size=8).embed(texts, Ledger())
    assert out.errors == [None, message, None]
    assert [v is None for v in out.vectors] == [False, True, False]
    # Through a metric: rows that use "two" (on either side) fail, the others score.
    openai_stub.fail("embeddings", ("bad_vector", 1, fault))
    p = Providers(embeddings(openai_stub, batch_size=8), cache=False)
    scores = ef.score(
        frame(["one", "two", "one"], ["three", "one", "one"]),
        [ef.metrics.cosine_embedding()],
        context=p,
    )
    assert scores["error"].to_list() == [None, message, None]
    assert scores["score"].is_null().to_list() == [False, True, False]


def test_a_bad_vector_message_quotes_a_shortened_text(openai_stub: StubOpenAI) -> None:
    long = "a very long answer " * 20
    openai_stub.fail("embeddings", ("bad_vector", 0, "nan"))
    out = embeddings(openai_stub).embed([long, "b"], Ledger())
    assert (
        out.errors[0] == f"Embedding for {long[:39]!r}"[:-1] + "…' contains NaN or infinite values."
    )
    assert out.errors[1] is None


# --- the budget block counts the rows the budget did not stop ----------------------------------


def test_budget_completed_rows_counts_rows_scored_before_the_halt(openai_stub: StubOpenAI) -> None:
    openai_stub.cost_per_call = 0.4
    p = Providers(
        embeddings="hashing",
        judge=judge(openai_stub, concurrency=1),
        cache=False,
        budget_usd=0.5,
        prices={"stub-judge": "reported"},  # the stub reports each call's cost
    )
    ds = ef.Dataset.from_records(
        [{"id": f"q{i}", "input": {"question": "?"}, "expected_output": f"e{i}"} for i in range(4)],
        name="budget",
    )
    run = ef.evaluate(
        ds,
        outputs={f"q{i}": f"a{i}" for i in range(4)},
        metrics=[
            "llm-as-judge",
            "llm-as-judge(template='Rate {actual_output} vs {expected_output}')",
        ],
        providers=p,
    )
    scored = run.scores.filter(pl.col("score").is_not_null())
    assert scored["sample_id"].to_list() == ["q0", "q1"]  # the second metric got no call
    budget = run.report()["budget"]
    assert budget["completed_rows"] == 2
    assert budget["reason"] == "Spent $0.8000 of a $0.5000 budget after 2 row(s)."


# --- usage.reported is what the provider reported ------------------------------------------------


def test_usage_reported_counts_only_provider_figures_and_derived_is_labelled(
    openai_stub: StubOpenAI, tmp_path: Path
) -> None:
    prices = {"stub-judge": {"input_per_million": 1.0, "output_per_million": 2.0}}
    p = Providers(embeddings="hashing", judge=judge(openai_stub), cache=False, prices=prices)
    store = tmp_path / "runs.duckdb"
    ds = ef.Dataset.from_records(
        [{"id": f"q{i}", "input": {"question": "?"}, "expected_output": f"e{i}"} for i in range(3)],
        name="usage",
    )
    run = ef.evaluate(
        ds,
        outputs={f"q{i}": f"a{i}" for i in range(3)},
        metrics=["llm-as-judge"],
        providers=p,
        store=store,
    )
    usage = run.report()["usage"]
    assert usage["observations"] == 3
    assert usage["reported"] == {
        "prompt_tokens": 3,
        "completion_tokens": 3,
        "total_tokens": 3,
        "cost_usd": 0,  # priced from the price table, not reported by the provider
        "latency_ms": 0,  # measured by evalframe, not reported by the provider
    }
    assert usage["derived"] == {"cost_usd": 3, "latency_ms": 3}
    with ef.Store(store) as db:
        extra = db.sql("SELECT extra FROM usage ORDER BY ordinal")["extra"].to_list()
        again = db.load(run.run_id).report()["usage"]
    assert [json.loads(e)["derived"] for e in extra] == [["cost_usd", "latency_ms"]] * 3
    assert (again["reported"], again["derived"]) == (usage["reported"], usage["derived"])
    openai_stub.cost_per_call = 0.01
    p2 = Providers(embeddings="hashing", judge=judge(openai_stub), cache=False, prices=prices)
    run2 = ef.evaluate(
        ds, outputs={f"q{i}": f"b{i}" for i in range(3)}, metrics=["llm-as-judge"], providers=p2
    )
    usage2 = run2.report()["usage"]
    assert usage2["reported"]["cost_usd"] == 3  # the provider's own figure
    assert usage2["derived"] == {"cost_usd": 0, "latency_ms": 3}


def test_markdown_usage_shows_derived_figures(openai_stub: StubOpenAI) -> None:
    prices = {"stub-judge": {"input_per_million": 1.0, "output_per_million": 2.0}}
    p = Providers(embeddings="hashing", judge=judge(openai_stub), cache=False, prices=prices)
    ds = ef.Dataset.from_records(
        [{"id": "q", "input": {"question": "?"}, "expected_output": "e"}], name="md"
    )
    run = ef.evaluate(ds, outputs={"q": "a"}, metrics=["llm-as-judge"], providers=p)
    table = run.report().to_markdown().split("## Usage summary")[1].split("\n\n")[1]
    assert "n/a" not in table  # derived cost and measured latency are shown, not hidden


def _judged_run(openai_stub: StubOpenAI, *extra: str) -> Any:
    from click.testing import CliRunner

    from evalframe.cli import cli

    example = Path(ef.__file__).parent / "examples"
    args = ["run", str(example / "support.yaml"), "--outputs"]
    args += [str(example / "support.outputs.json"), "-m", "llm-as-judge", "--no-cache"]
    args += ["--judge-base-url", openai_stub.url, "--judge-model", "stub-mini", "--format"]
    return CliRunner().invoke(cli, [*args, "json", *extra])


def test_a_budget_that_cannot_bind_is_refused_before_any_call(
    openai_stub: StubOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The stub reports tokens but no cost: without a price the budget would read $0 spent.
    monkeypatch.setenv("EVALFRAME_JUDGE_API_KEY", STUB_API_KEY)
    refused = _judged_run(openai_stub, "--budget-usd", "0.5")
    assert refused.exit_code == 2
    assert refused.stderr.startswith("error: The $0.5 budget cannot bind: these models have no ")
    assert "'stub-mini' (the judge, for llm-as-judge): --price stub-mini=INPUT/OUTPUT" in (
        refused.stderr
    )
    assert openai_stub.requests == []  # refused before any call


def test_a_price_makes_the_budget_bind_on_derived_cost(
    openai_stub: StubOpenAI, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("EVALFRAME_JUDGE_API_KEY", STUB_API_KEY)
    # $1000 per million tokens in and out: every judge call costs cents.
    done = _judged_run(openai_stub, "--budget-usd", "100", "--price", "stub-mini=1000/1000")
    assert done.exit_code == 0, done.stderr
    report = json.loads(done.stdout)
    cost = report["cost"]
    assert cost["derived_usd"] > 0
    assert cost["reported_usd"] == 0
    assert cost["complete"] is True
    tokens = sum(r["prompt_tokens"] + r["completion_tokens"] for r in cost["models"])
    assert cost["total_usd"] == pytest.approx(tokens * 1000 / 1e6)
    assert report["budget"]["spent_usd"] == pytest.approx(cost["total_usd"])
    # the same price from evalframe.toml, and a budget it exhausts
    monkeypatch.chdir(tmp_path)
    (tmp_path / "evalframe.toml").write_text('[prices]\n"stub-mini" = "1000/1000"\n')
    limit = f"{cost['total_usd'] / 3:.6f}"
    halted = _judged_run(openai_stub, "--budget-usd", limit)
    assert halted.exit_code == 1, halted.stderr
    assert "budget exhausted: Spent $" in halted.stderr
    assert json.loads(halted.stdout)["budget"]["halted"] is True


def test_a_model_declared_reported_that_reports_no_cost_stops_the_run(
    openai_stub: StubOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVALFRAME_JUDGE_API_KEY", STUB_API_KEY)
    halted = _judged_run(
        openai_stub, "--budget-usd", "1", "--price", "stub-mini=reported", "--judge-concurrency",
        "1",
    )  # fmt: skip
    assert halted.exit_code == 1
    budget = json.loads(halted.stdout)["budget"]
    assert budget["halted"] is True
    assert budget["reason"].startswith(
        "The $1.0000 budget cannot bind: a call to model 'stub-mini' reported no cost and the "
        "model has no price"
    )


@pytest.mark.parametrize(
    ("price", "message"),
    [
        ("stub-mini", "is not MODEL=INPUT/OUTPUT"),
        ("stub-mini=cheap", "--price stub-mini must be INPUT/OUTPUT"),
        ("stub-mini=-1/2", "--price stub-mini must be INPUT/OUTPUT"),
        ("stub-mini=1/2/3", "--price stub-mini must be INPUT/OUTPUT"),
    ],
)
def test_bad_prices_exit_2_naming_the_option(
    openai_stub: StubOpenAI, monkeypatch: pytest.MonkeyPatch, price: str, message: str
) -> None:
    monkeypatch.setenv("EVALFRAME_JUDGE_API_KEY", STUB_API_KEY)
    bad = _judged_run(openai_stub, "--price", price)
    assert bad.exit_code == 2
    assert message in bad.stderr


# --- the vectors as one matrix, a chunk at a time ------------------------------------------------


class _Sized:
    """An embedder giving ``[len(text), 1, ...]`` of ``dim(text)`` values; records each call."""

    id, model, cacheable = "sized-v1", "sized", True

    def __init__(self) -> None:
        self.asked: list[list[str]] = []

    def embed(self, texts: Any, ledger: Ledger) -> Embedded:
        self.asked.append(list(texts))
        ledger.progressed(len(texts))
        vectors = [np.array([len(t)] + [1] * (4 if t == "wide" else 2), np.float32) for t in texts]
        return Embedded(
            [None if t == "lost" else v for t, v in zip(texts, vectors, strict=True)],
            ["Embeddings: lost." if t == "lost" else None for t in texts],
        )


def test_the_matrix_is_asked_a_chunk_at_a_time_and_holds_each_text_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Texts are looked up, asked and copied ``EMBED_CHUNK`` at a time; a vector of another
    size than the first chunk's, or none, is its text's error and a zero row."""
    import evalframe.providers._providers as P

    monkeypatch.setattr(P, "EMBED_CHUNK", 2)
    client = _Sized()
    cache = str(tmp_path / "cache.duckdb")
    texts = ["a", "bb", "ccc", "wide", "lost", "ffffff", "g"]
    Providers(client, cache=cache).embed_texts(["ccc"])  # one text already cached
    client.asked.clear()
    matrix, errors = Providers(client, cache=cache).embed_matrix(texts)
    assert client.asked == [["a", "bb"], ["wide"], ["lost", "ffffff"], ["g"]]
    assert matrix.dtype == np.float32
    assert matrix.shape == (7, 3)
    assert matrix[:, 0].tolist() == [1, 2, 3, 0, 0, 6, 1]
    assert errors == [
        None, None, None,
        "Embedding for 'wide' has 5 dimensions; the others have 3.",
        "Embeddings: lost.", None, None,
    ]  # fmt: skip
    # The same as one call's vectors, stacked.
    whole = Providers(client, cache=False).embed_texts(texts)
    for i, v in enumerate(whole.vectors):
        if errors[i] is None:
            assert v is not None
            assert np.array_equal(matrix[i], v)
