"""Provider calls end: per-request timeouts, retries, the run's deadline and the reply byte cap.

A loopback server that accepts requests and never answers, or streams an endless reply,
must give each affected row an error while the run finishes and keeps what it scored.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner, Result
from conftest import frame, write
from openai_stub import StubOpenAI

import evalframe as ef
from evalframe.cli import cli
from evalframe.providers import Ledger, OpenAIJudge, Providers

MiB = 2**20


@pytest.fixture(autouse=True)
def _no_ambient_provider_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    for name in (
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "EVALFRAME_TIMEOUT",
        "EVALFRAME_RETRIES",
        "EVALFRAME_DEADLINE",
        "EVALFRAME_JUDGE_BASE_URL",
    ):
        monkeypatch.delenv(name, raising=False)


def _dataset(tmp_path: Path, n: int) -> tuple[Path, Path]:
    rows = "\n".join(
        f"  - {{id: s{i}, input: {{question: q{i}}}, expected_output: e{i}}}" for i in range(n)
    )
    dataset = write(tmp_path, "ds.yaml", f"name: deadlines\nsamples:\n{rows}\n")
    outputs = {"outputs": {f"s{i}": f"a{i}" for i in range(n)}}
    return dataset, write(tmp_path, "out.json", json.dumps(outputs))


def _invoke(args: list[str]) -> Result:
    return CliRunner().invoke(cli, args, catch_exceptions=False)


def test_a_server_that_never_answers_gives_per_row_errors_within_the_timeout(
    tmp_path: Path,
) -> None:
    dataset, outputs = _dataset(tmp_path, 3)
    with StubOpenAI() as stub:
        stub.fail("chat", *[("hang",)] * 3)
        ran = _invoke(
            [
                "run",
                str(dataset),
                "--outputs",
                str(outputs),
                "-m",
                "llm-as-judge",
                "-m",
                "exact-match",
                "--judge-base-url",
                stub.url,
                "--judge-model",
                "m",
                "--no-cache",
                "--timeout",
                "2",
                "--retries",
                "0",
                "--format",
                "json",
            ]
        )
        assert len(stub.calls("/chat/completions")) == 3  # one attempt per row, no retry
    assert ran.exit_code == 1
    report = json.loads(ran.stdout)
    judged = [f for f in report["failures"] if f["metric"] == "llm-as-judge"]
    assert len(judged) == 3
    assert all("no complete reply within 2 s after 1 attempt(s)" in f["error"] for f in judged)
    assert report["metrics"]["exact-match"]["n_scored"] == 3  # other metrics still score


def test_retries_option_sets_the_attempts_per_request(tmp_path: Path) -> None:
    dataset, outputs = _dataset(tmp_path, 1)
    with StubOpenAI() as stub:
        stub.fail("chat", *[("status", 503)] * 10)
        ran = _invoke(
            [
                "run",
                str(dataset),
                "--outputs",
                str(outputs),
                "-m",
                "llm-as-judge",
                "--judge-base-url",
                stub.url,
                "--judge-model",
                "m",
                "--no-cache",
                "--retries",
                "2",
                "--format",
                "json",
            ]
        )
        assert len(stub.calls("/chat/completions")) == 3
    assert "HTTP 503 after 3 attempt(s)" in json.loads(ran.stdout)["failures"][0]["error"]


def test_timeout_and_retries_come_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {"EVALFRAME_JUDGE_BASE_URL": "http://127.0.0.1:9/v1", "EVALFRAME_TIMEOUT": "2.5"}
    env["EVALFRAME_RETRIES"] = "0"
    env["EVALFRAME_DEADLINE"] = "30"
    p = Providers.from_env(environ=env, cache=False)
    assert isinstance(p.judge, OpenAIJudge)
    assert (p.judge.timeout, p.judge.policy.retries, p.ledger.deadline) == (2.5, 0, 30.0)
    for name, bad in (("EVALFRAME_TIMEOUT", "soon"), ("EVALFRAME_RETRIES", "1.5")):
        with pytest.raises(ef.ProviderError, match=name):
            Providers.from_env(environ={**env, name: bad}, cache=False)
    dataset, outputs = _dataset(tmp_path, 1)
    monkeypatch.setenv("EVALFRAME_RETRIES", "many")
    monkeypatch.setenv("EVALFRAME_JUDGE_BASE_URL", "http://127.0.0.1:9/v1")
    ran = _invoke(["run", str(dataset), "--outputs", str(outputs), "-m", "llm-as-judge"])
    assert ran.exit_code == 2
    assert "EVALFRAME_RETRIES must be a whole number from 0 to 100; got 'many'" in ran.stderr
    monkeypatch.setenv("EVALFRAME_RETRIES", "0")
    monkeypatch.setenv("EVALFRAME_TIMEOUT", "2")
    with StubOpenAI() as stub:
        stub.fail("chat", ("hang",))
        monkeypatch.setenv("EVALFRAME_JUDGE_BASE_URL", stub.url)
        ran = _invoke(
            [
                "run",
                str(dataset),
                "--outputs",
                str(outputs),
                "-m",
                "llm-as-judge",
                "--no-cache",
                "--format",
                "json",
            ]
        )
    assert "no complete reply within 2 s after 1 attempt(s)" in ran.stdout


def test_the_run_deadline_turns_the_remaining_calls_into_row_errors_and_keeps_scores() -> None:
    with StubOpenAI() as stub:
        stub.fail("chat", None, None, ("hang",))  # type: ignore[arg-type]
        judge = OpenAIJudge("m", base_url=stub.url, concurrency=1, timeout=60, retries=0)
        p = Providers(embeddings="hashing", judge=judge, cache=False, deadline=2.0)
        p.begin_run()
        texts = [f"t{i}" for i in range(5)]
        scores = ef.score(frame(texts, texts), [ef.metrics.llm_as_judge()], context=p)
        assert len(stub.calls("/chat/completions")) == 3  # the rest were never sent
    assert scores["score"].to_list()[:2] == [0.9, 0.9]
    errors = scores["error"].to_list()
    prefix = "Deadline exceeded: the run's 2 s provider deadline passed; "
    assert errors[2] == prefix + "the call was abandoned."
    assert errors[3:] == [prefix + "the provider was not called."] * 2
    usage = p.usage_frame()
    assert usage.height == 3
    assert usage["error"].null_count() == 2


def test_rescore_takes_the_timeout_and_retries_options(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dataset, outputs = _dataset(tmp_path, 2)
    store = tmp_path / "runs.duckdb"
    first = _invoke(
        ["run", str(dataset), "--outputs", str(outputs), "-m", "exact-match", "--store", str(store)]
    )
    assert first.exit_code in (0, 1), first.output
    with StubOpenAI() as stub:
        stub.fail("chat", *[("hang",)] * 2)
        monkeypatch.setenv("EVALFRAME_JUDGE_BASE_URL", stub.url)
        ran = _invoke(
            [
                "rescore",
                "--store",
                str(store),
                "-m",
                "llm-as-judge",
                "--timeout",
                "2",
                "--retries",
                "0",
            ]
        )
        assert len(stub.calls("/chat/completions")) == 2
    # Both hanging calls became row errors of the rescored metric: exit 1, as `run` does.
    assert ran.exit_code == 1, ran.output
    assert "2 of 2 executions errored in the metrics this rescore computed" in ran.stderr
    assert "2 (execution, metric) pair(s) could not be scored" in ran.stderr
    new_id = ran.stdout.split()[1]
    with ef.Store(store) as db:
        scores = db.sql(
            "SELECT error FROM scores WHERE run_id = ? AND metric = 'llm-as-judge'", [new_id]
        )
    assert scores.height == 2
    assert all("no complete reply within 2 s" in e for e in scores["error"])


def test_an_oversize_reply_is_that_call_s_error_and_is_not_read_whole() -> None:
    with StubOpenAI() as stub:
        stub.fail("chat", ("huge", 300 * MiB))
        judge = OpenAIJudge("m", base_url=stub.url, retries=0, concurrency=1)  # "big" first
        assert judge.max_response_bytes == 32 * MiB  # the documented default
        replies = judge.complete(["big", "small"], Ledger())
    assert replies[0].content is None
    assert replies[0].error == (
        "LLM judge response is larger than the 32 MiB limit (max_response_bytes); it was not read."
    )
    assert replies[1].content is not None  # only that call failed
    assert stub.streamed < 300 * MiB  # the client stopped reading at the cap


def test_the_byte_cap_is_configurable_and_checks_a_declared_length_first() -> None:
    with StubOpenAI() as stub:
        stub.verdict = lambda prompt: json.dumps({"score": 1, "reason": "x" * 5000})
        judge = OpenAIJudge("m", base_url=stub.url, retries=0, max_response_bytes=1000)
        [reply] = judge.complete(["p"], Ledger())
    assert reply.error is not None
    assert "larger than the 1000 bytes limit" in reply.error
    with pytest.raises(ValueError, match="max_response_bytes"):
        OpenAIJudge(max_response_bytes=0)


def test_a_missing_judge_is_one_usage_error_before_any_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dataset, outputs = _dataset(tmp_path, 3)
    store = tmp_path / "runs.duckdb"
    ran = _invoke(
        [
            "run",
            str(dataset),
            "--outputs",
            str(outputs),
            "-m",
            "llm-as-judge",
            "-m",
            "exact-match",
            "--store",
            str(store),
        ]
    )
    assert ran.exit_code == 2
    lines = ran.stderr.strip().splitlines()
    assert len(lines) == 1
    for name in ("EVALFRAME_JUDGE_BASE_URL", "EVALFRAME_JUDGE_MODEL", "llm-as-judge"):
        assert name in lines[0]
    assert "judge__" not in lines[0]
    assert "Traceback" not in ran.stderr
    assert not store.exists()
    calls: list[object] = []

    def system(sample_input: object) -> str:
        calls.append(sample_input)
        return "a"

    ds = ef.Dataset.from_records(
        [{"id": "q", "input": {"question": "?"}, "expected_output": "a"}], name="x"
    )
    with pytest.raises(ef.ProviderError, match="EVALFRAME_JUDGE_BASE_URL"):
        ef.evaluate(
            ds,
            system=system,
            metrics=["refusal-quality"],
            providers=Providers(embeddings="hashing", cache=False),
        )
    assert calls == []  # the system under test was never called
    assert isinstance(
        ef.evaluate(ds, outputs={"q": "a"}, metrics=["cosine-embedding"]).scores, pl.DataFrame
    )  # embeddings metrics always have the embedded model


def test_the_deadline_option_bounds_the_run_s_provider_calls(tmp_path: Path) -> None:
    dataset, outputs = _dataset(tmp_path, 2)
    with StubOpenAI() as stub:
        stub.fail("chat", *[("hang",)] * 2)
        ran = _invoke(
            [
                *["run", str(dataset), "--outputs", str(outputs), "-m", "llm-as-judge"],
                *["--judge-base-url", stub.url, "--judge-model", "m", "--no-cache"],
                *["--timeout", "60", "--deadline", "1", "--format", "json"],
            ]
        )
    assert ran.exit_code == 1
    errors = [f["error"] for f in json.loads(ran.stdout)["failures"]]
    assert (
        errors
        == ["Deadline exceeded: the run's 1 s provider deadline passed; the call was abandoned."]
        * 2
    )
