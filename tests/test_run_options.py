"""The typed option values ``ef.Concurrency``, ``ef.Checkpoint`` and ``ef.Limits``: each is
taken by ``evaluate``, ``run_set``, ``Store.rescore`` and ``Providers.from_env`` where its
fields apply, gives what its shortcut keywords give, and refuses a shortcut beside it, a
value of the wrong type and a field outside its range (naming the field)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest
from openai_stub import StubOpenAI

import evalframe as ef
from evalframe.core._limits import LIMITS
from evalframe.engine._eval_set import run_set


def _dataset(n: int = 10) -> ef.Dataset:
    return ef.Dataset.from_records(
        [{"id": f"s{i}", "input": {"i": i}, "expected_output": "x"} for i in range(n)], name="d"
    )


def _table(run: ef.Run) -> list[tuple[Any, ...]]:
    return run.scores.sort("sample_id", "repetition").select("sample_id", "score").rows()


class Stop(BaseException):
    """Stops a run midway, as an interrupt would."""


def test_each_group_is_frozen_and_checks_its_fields_by_name() -> None:
    for kind, field, limit in [
        (ef.Concurrency, "calls", "concurrency"),
        (ef.Concurrency, "rate_limit", "rate_limit"),
        (ef.Concurrency, "rate_window_seconds", "rate_window_seconds"),
        (ef.Checkpoint, "every", "checkpoint_every"),
        (ef.Limits, "budget_usd", "budget_usd"),
        (ef.Limits, "deadline", "deadline"),
        (ef.Limits, "timeout", "timeout"),
        (ef.Limits, "retries", "retries"),
        (ef.Endpoint, "concurrency", "concurrency"),
    ]:
        describe = LIMITS[limit].describe()
        for bad in (10**30, -1, float("nan"), True):
            with pytest.raises(ValueError, match=r" must be ") as raised:
                kind(**{field: bad})
            name = f"{kind.__name__}.{field}"
            assert str(raised.value) == f"{name} must be {describe}; got {bad!r}."
    with pytest.raises(ValueError, match=r"^Checkpoint.resume must be a run id; got ''"):
        ef.Checkpoint(resume="")
    with pytest.raises(dataclasses.FrozenInstanceError):
        ef.Limits().retries = 2  # type: ignore[misc]
    assert ef.Concurrency() == ef.Concurrency(calls=8, rate_limit=None, rate_window_seconds=60.0)
    assert ef.Limits() == ef.Limits(None, None, None, None)


def test_concurrency_and_its_shortcuts_give_the_same_run() -> None:
    ds = _dataset()
    by_keywords = ef.evaluate(
        ds, system=lambda _: "x", metrics=["exact-match"], concurrency=3, rate_limit=1000
    )
    pace = ef.Concurrency(calls=3, rate_limit=1000, rate_window_seconds=60.0)
    by_group = ef.evaluate(ds, system=lambda _: "x", metrics=["exact-match"], concurrency=pace)
    assert _table(by_keywords) == _table(by_group)
    assert [s for _, s in _table(by_group)] == [1.0] * 10


def test_a_concurrency_rate_limit_paces_the_system_calls() -> None:
    """Three calls at most per 0.3 s window: nine calls span at least two windows."""
    import time

    started: list[float] = []

    def system(_: Any) -> str:
        started.append(time.monotonic())
        return "x"

    pace = ef.Concurrency(calls=9, rate_limit=3, rate_window_seconds=0.3)
    ef.evaluate(_dataset(9), system=system, metrics=["exact-match"], concurrency=pace)
    started.sort()
    assert started[-1] - started[0] >= 2 * 0.3 - 0.01


def test_a_group_beside_its_shortcut_or_of_the_wrong_kind_is_refused(tmp_path: Path) -> None:
    ds = _dataset(1)

    def run(**kwargs: Any) -> ef.Run:
        return ef.evaluate(ds, system=lambda _: "x", metrics=["exact-match"], **kwargs)

    with pytest.raises(ValueError, match=r"^Pass rate_limit= or concurrency=ef.Concurrency"):
        run(concurrency=ef.Concurrency(4), rate_limit=10)
    with pytest.raises(ValueError, match=r"^Pass checkpoint_every=, resume= or checkpoint="):
        run(store=tmp_path / "r.duckdb", checkpoint=ef.Checkpoint(), checkpoint_every=3, resume="a")
    with pytest.raises(TypeError, match=r"^checkpoint must be ef.Checkpoint\(...\); got 5"):
        run(store=tmp_path / "r.duckdb", checkpoint=5)
    with pytest.raises(ValueError, match=r"^checkpoint=, checkpoint_every= and resume= need"):
        ef.evaluate(ds, outputs={"s0": "x"}, metrics=["exact-match"], checkpoint=ef.Checkpoint())
    with pytest.raises(ValueError, match=r"^Pass budget_usd= or limits=ef.Limits"):
        ef.Providers.from_env(limits=ef.Limits(deadline=5), budget_usd=1.0, environ={})
    with pytest.raises(TypeError, match=r"^limits must be ef.Limits\(...\); got \{"):
        ef.Providers.from_env(limits={"retries": 1}, environ={})  # type: ignore[arg-type]


def test_a_checkpoint_group_checkpoints_and_resumes_as_its_shortcuts_do(tmp_path: Path) -> None:
    ds = _dataset()
    calls: list[int] = []

    def system(sample: Any) -> str:
        calls.append(sample["i"])
        if len(calls) == 7:
            raise Stop
        return "x"

    common: dict[str, Any] = {"metrics": ["exact-match"], "system": system, "concurrency": 1}
    for form, db in (("group", tmp_path / "g.duckdb"), ("keywords", tmp_path / "k.duckdb")):
        calls.clear()
        start = {"checkpoint": ef.Checkpoint(every=2)}
        if form == "keywords":
            start = {"checkpoint_every": 2}
        with pytest.raises(Stop):
            ef.evaluate(_dataset(), store=db, run_id="r1", **start, **common)
        con = duckdb.connect(str(db), read_only=True)
        try:  # three chunks of two executions were written before the seventh call
            assert con.execute("SELECT count(*) FROM checkpoints").fetchone() == (3,)
        finally:
            con.close()
        calls.clear()
        again = {"checkpoint": ef.Checkpoint(resume="r1")}
        if form == "keywords":
            again = {"resume": "r1"}
        run = ef.evaluate(ds, store=db, **again, **common)
        assert run.run_id == "r1"
        assert len(calls) == 4  # only the executions the checkpoints lack
        assert [s for _, s in _table(run)] == [1.0] * 10
        with pytest.raises(ef.StoreError, match="already saved"):
            ef.evaluate(ds, store=db, **again, **common)


def test_limits_and_their_shortcuts_build_the_same_providers() -> None:
    env = {"EVALFRAME_JUDGE_BASE_URL": "http://127.0.0.1:9/v1"}
    limits = ef.Limits(budget_usd=2.5, deadline=90, timeout=7.5, retries=1)
    by_group = ef.Providers.from_env(limits=limits, environ=env, cache=False)
    by_keywords = ef.Providers.from_env(
        budget_usd=2.5, deadline=90, timeout=7.5, retries=1, environ=env, cache=False
    )
    for found in (by_group, by_keywords):
        assert (found.ledger.budget_usd, found.ledger.deadline) == (2.5, 90.0)
        judge: Any = found.judge
        assert (judge.timeout, judge.policy.retries) == (7.5, 1)
    # a field left None falls back to the environment, as the shortcut left out does
    env["EVALFRAME_RETRIES"] = "0"
    judge = ef.Providers.from_env(limits=ef.Limits(timeout=3), environ=env, cache=False).judge
    assert judge is not None
    assert judge.policy.retries == 0  # type: ignore[attr-defined]


def test_endpoints_and_their_shortcuts_build_the_same_providers() -> None:
    """Each role's ``ef.Endpoint`` and its four shortcuts give the same clients, over real
    HTTP to a loopback server that checks the key."""
    with StubOpenAI(api_key="sk-endpoint-key") as stub:
        groups = ef.Providers.from_env(
            embeddings=ef.Endpoint(stub.url, model="emb", api_key="sk-endpoint-key",
                                   concurrency=3),
            judge=ef.Endpoint(stub.url, model="jdg", api_key="sk-endpoint-key", concurrency=5),
            environ={}, cache=False,
        )  # fmt: skip
        keywords = ef.Providers.from_env(
            embeddings_base_url=stub.url, embeddings_model="emb",
            embeddings_api_key="sk-endpoint-key", embeddings_concurrency=3,
            judge_base_url=stub.url, judge_model="jdg", judge_api_key="sk-endpoint-key",
            judge_concurrency=5, environ={}, cache=False,
        )  # fmt: skip
        for found in (groups, keywords):
            embedder: Any = found.configured_embeddings
            judge: Any = found.judge
            assert (embedder.model, embedder.concurrency) == ("emb", 3)
            assert (judge.model, judge.concurrency) == ("jdg", 5)
            assert repr(embedder) == repr(keywords.configured_embeddings)
            assert repr(judge) == repr(keywords.judge)
            assert found.embed_texts(["a", "b"]).errors == [None, None]  # the stub took the key
        assert all(r.headers["authorization"] == "Bearer sk-endpoint-key" for r in stub.requests)
    # a field left None falls back to the role's variables, as the shortcut left out does
    env = {"EVALFRAME_JUDGE_MODEL": "from-env", "EVALFRAME_JUDGE_BASE_URL": "http://127.0.0.1:9/v1"}
    judge = ef.Providers.from_env(judge=ef.Endpoint(concurrency=2), environ=env, cache=False).judge
    assert (judge.model, judge.concurrency) == ("from-env", 2)  # type: ignore[union-attr]
    local = ef.Providers.from_env(embeddings=ef.Endpoint(model="hashing"), environ={}, cache=False)
    assert repr(local.configured_embeddings) == "HashingEmbedder(dim=512)"


def test_an_endpoint_beside_its_shortcut_is_refused_naming_both() -> None:
    for role, shortcut, value in [("embeddings", "embeddings_model", "m"),
                                  ("judge", "judge_base_url", "http://127.0.0.1:9/v1"),
                                  ("judge", "judge_concurrency", 2)]:  # fmt: skip
        with pytest.raises(ValueError, match=rf"^Pass {shortcut}= or {role}=ef.Endpoint"):
            ef.Providers.from_env(**{role: ef.Endpoint(), shortcut: value}, environ={})
    # the other role's shortcuts go with a group: they set the other endpoint
    found = ef.Providers.from_env(
        judge=ef.Endpoint(model="j"), embeddings_model="hashing", environ={}, cache=False
    )
    assert repr(found.configured_embeddings) == "HashingEmbedder(dim=512)"
    with pytest.raises(TypeError, match=r"^Endpoint.model must be a string; got int"):
        ef.Endpoint(model=3)  # type: ignore[arg-type]


def test_an_endpoint_never_shows_its_key() -> None:
    key = "sk-live-do-not-show-4242"
    endpoint = ef.Endpoint("http://127.0.0.1:9/v1", model="m", api_key=key)
    found = ef.Providers.from_env(embeddings=endpoint, judge=endpoint, environ={}, cache=False)
    shown = [
        repr(endpoint),
        str(endpoint),
        f"{endpoint}",
        repr(found),
        repr(found.judge),
        repr(found.configured_embeddings),
        repr(dataclasses.replace(endpoint, model="n")),
    ]
    for call in (
        lambda: ef.Providers.from_env(judge=endpoint, judge_api_key=key, environ={}),
        lambda: ef.Providers.from_env(judge=key, environ={}),  # a key where the group goes
        lambda: ef.Providers.from_env(judge=ef.Endpoint(api_key=key + " x"), environ={}),
        lambda: ef.Endpoint(api_key=key, concurrency=0),
        lambda: ef.Endpoint(api_key=[key]),
    ):
        with pytest.raises((ValueError, TypeError, ef.ProviderError)) as raised:
            call()  # type: ignore[no-untyped-call]
        shown.append(str(raised.value))
    assert "judge must be ef.Endpoint(...); got str." in shown
    assert any("judge=ef.Endpoint(api_key=...)" in text for text in shown)
    assert endpoint.api_key is not None
    assert endpoint.api_key.reveal() == key  # type: ignore[union-attr]
    for text in shown:
        assert "do-not-show" not in text, text


def _judge_dataset(n: int) -> ef.Dataset:
    return ef.Dataset.from_records(
        [
            {"id": f"q{i}", "input": {"question": f"q{i}?"}, "expected_output": "y"}
            for i in range(n)
        ],
        name="j",
    )


def test_evaluate_run_set_and_rescore_bound_the_providers_they_build_with_limits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With retries=0 each failing judge request is made once (the default, 3 retries, makes
    four), whichever entry point builds the providers from the environment."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    no_retry = ef.Limits(retries=0)
    with StubOpenAI() as stub:
        monkeypatch.setenv("EVALFRAME_JUDGE_BASE_URL", stub.url)
        stub.fail("chat", *[("status", 500)] * 2)
        run = ef.evaluate(
            _judge_dataset(2), outputs={"q0": "y", "q1": "y"}, metrics=["llm-as-judge"],
            limits=no_retry,
        )  # fmt: skip
        assert len(stub.calls("/chat/completions")) == 2
        assert run.scores.get_column("error").null_count() == 0  # both rows failed, recorded

        store = ef.Store(tmp_path / "runs.duckdb")
        ef.evaluate(_judge_dataset(2), outputs={"q0": "y", "q1": "y"}, metrics=["exact-match"],
                    store=store)  # fmt: skip
        stub.requests.clear()
        stub.fail("chat", *[("status", 500)] * 2)
        (new_id,) = store.rescore(["llm-as-judge"], limits=no_retry)
        assert len(stub.calls("/chat/completions")) == 2
        errors = store.sql("SELECT count(error) FROM scores WHERE run_id = ?", [new_id]).item()
        assert errors == 2

        dataset = tmp_path / "j.yaml"
        dataset.write_text(
            "name: j\nmetrics: [llm-as-judge]\nsamples:\n"
            "  - {id: q0, input: {question: q0?}, expected_output: y}\n",
            encoding="utf-8",
        )
        (tmp_path / "o.json").write_text('{"outputs": {"q0": "y"}}', encoding="utf-8")
        eval_set = tmp_path / "set.yaml"
        eval_set.write_text(
            "schema_version: eval-harness.eval-set.v1\nname: s\n"
            "datasets:\n  - {path: j.yaml, outputs: o.json}\n",
            encoding="utf-8",
        )
        stub.requests.clear()
        stub.fail("chat", ("status", 500))
        _, runs = run_set(eval_set, manifest=tmp_path / "m.json", limits=no_retry,
                          concurrency=ef.Concurrency(calls=2))  # fmt: skip
        assert len(stub.calls("/chat/completions")) == 1
        assert runs[0].scores.get_column("error").null_count() == 0


def test_limits_are_refused_beside_built_providers_before_any_work(tmp_path: Path) -> None:
    built = ef.Providers(cache=False)
    with pytest.raises(ValueError, match=r"^limits= bounds the providers built from the env"):
        ef.evaluate(_dataset(1), outputs={"s0": "x"}, metrics=["exact-match"],
                    providers=built, limits=ef.Limits(retries=0))  # fmt: skip
    manifest = tmp_path / "m.json"
    with pytest.raises(ValueError, match=r"^limits= bounds the providers built from the env"):
        run_set(tmp_path / "missing.yaml", manifest=manifest, providers=built,
                limits=ef.Limits(retries=0))  # fmt: skip
    assert not manifest.exists()


def test_score_takes_providers_as_evaluate_does_and_context_still() -> None:
    frame = pl.DataFrame({
        "sample_id": ["a", "b"], "input": ["{}", "{}"], "expected_output": ["Paris", "4"],
        "expected_type": ["string", "string"], "metadata": ["{}", "{}"], "tags": [[], []],
        "actual_output": ["Paris", "5"],
    })  # fmt: skip
    hashing = ef.Providers(ef.HashingEmbedder(), cache=False)
    named = ef.score(frame, ["embedding-similarity"], providers=hashing)
    former = ef.score(frame, ["embedding-similarity"], context=hashing)
    assert named.get_column("score").to_list() == former.get_column("score").to_list()
    assert named.get_column("score").null_count() == 0
    with pytest.raises(ValueError, match=r"^Pass providers= \(context= is its former name\)"):
        ef.score(frame, ["exact-match"], providers=hashing, context=hashing)


def test_an_endpoint_never_shows_credentials_in_its_url() -> None:
    url = "https://user:pw-do-not-show@host.test:8443/v1?api-key=do-not-show-either"
    endpoint = ef.Endpoint(url, model="m")
    assert endpoint.base_url == url  # kept as given: the requests need it
    for text in (repr(endpoint), str(endpoint), f"{endpoint}"):
        assert "do-not-show" not in text, text
        assert "base_url='https://host.test:8443/v1'" in text
