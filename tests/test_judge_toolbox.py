"""The judge toolbox against the loopback stub: g-eval, pairwise, rubric, prompt-alignment,
summarization (dag has its own file). Exact scores, recomputed from the details alone."""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from judge_script import fields, items, script
from openai_stub import StubOpenAI, scripted_logprobs

import evalframe as ef
from evalframe.core._errors import MetricError
from evalframe.metrics._rag_prompts import CLAIMS, CORRECTNESS
from evalframe.metrics._toolbox_prompts import (
    ALIGNMENT,
    G_EVAL,
    G_EVAL_STEPS,
    PAIRWISE,
    RUBRIC,
    SUMMARY_ANSWERS,
    SUMMARY_CHECK,
    SUMMARY_QUESTIONS,
)
from evalframe.metrics.judge_toolbox import expected_rating, parse_rubric
from evalframe.providers import ENV


@pytest.fixture(autouse=True)
def _no_provider_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV.values():
        monkeypatch.delenv(name, raising=False)


def _frame(actual: list[str | None], inputs: list[str] | None = None, **extra: Any) -> pl.DataFrame:
    n = len(actual)
    return pl.DataFrame(
        {
            "sample_id": [f"s{i}" for i in range(n)],
            "input": inputs or ['{"question":"what is it?"}'] * n,
            "expected_output": ["ref"] * n,
            "expected_type": ["string"] * n,
            "metadata": ["{}"] * n,
            "tags": [[] for _ in range(n)],
            "row_hash": [f"h{i}" for i in range(n)],
            "actual_output": actual,
        },
        schema_overrides={"tags": pl.List(pl.String), "actual_output": pl.String},
    ).with_columns(pl.Series(k, v, dtype=pl.String) for k, v in extra.items())


def _providers(stub: StubOpenAI, cache: Any = False) -> ef.Providers:
    return ef.Providers(judge=ef.OpenAIJudge("judge-m", base_url=stub.url, retries=0), cache=cache)


def _prompts(stub: StubOpenAI) -> list[str]:
    return [c.body["messages"][0]["content"] for c in stub.calls("chat/completions")]


def _score(stub: StubOpenAI, frame: pl.DataFrame, spec: str, cache: Any = False) -> pl.DataFrame:
    return ef.score(frame, [ef.metrics.get(spec)], context=_providers(stub, cache))


def _details(out: pl.DataFrame) -> list[Any]:
    return [None if d is None else json.loads(d) for d in out.get_column("details").to_list()]


def _counting(fn: Callable[[dict[str, str]], Any], counter: Counter[str], key: str) -> Any:
    def wrapped(f: dict[str, str]) -> Any:
        counter[key] += 1
        return fn(f)

    return wrapped


# --- providers: token logprobs -------------------------------------------------------------------


def test_judge_asks_for_logprobs_only_when_told() -> None:
    judge = ef.OpenAIJudge("m", base_url="http://127.0.0.1:9/v1")
    assert "logprobs" not in judge.request("p")
    body = judge.request("p", None, 5)
    assert body["logprobs"] is True
    assert body["top_logprobs"] == 5


def test_replies_carry_token_logprobs_and_fall_back_to_none() -> None:
    from evalframe.providers._ledger import Ledger

    def lp(prompt: str, content: str) -> list[dict[str, Any]]:
        return scripted_logprobs(content, {"4": 0.5, "5": 0.5})

    with StubOpenAI(verdict=lambda p: '{"score": 4}', logprobs=lp) as stub:
        judge = ef.OpenAIJudge("m", base_url=stub.url, retries=0)
        got = judge.complete(["a"], Ledger(), top_logprobs=2)[0]
        assert got.content == '{"score": 4}'
        rating = next(t for t in got.logprobs if t["token"] == "4")
        assert [[t, round(math.exp(p), 6)] for t, p in rating["top"]] == [["4", 0.5], ["5", 0.5]]
        stub.fail("chat", ("no_logprobs",))
        assert judge.complete(["a"], Ledger(), top_logprobs=2)[0].logprobs is None
        assert judge.complete(["a"], Ledger())[0].logprobs is None
        assert "logprobs" not in stub.requests[-1].body


# --- g-eval --------------------------------------------------------------------------------------

CRITERIA = "The answer is correct and concise."


def _g_eval_script(counter: Counter[str], rating: Callable[[str], Any] | None = None) -> Any:
    rate = rating or (lambda a: 4 if a == "good" else 2)
    return script(
        {
            G_EVAL_STEPS: _counting(
                lambda f: {"steps": ["Read it.", "Check\nfacts."]}, counter, "steps"
            ),
            G_EVAL: _counting(
                lambda f: {"score": rate(f["answer"]), "reason": f["steps"]}, counter, "rate"
            ),
        }
    )


def test_g_eval_weights_ratings_by_token_probabilities(tmp_path: Path) -> None:
    counter: Counter[str] = Counter()

    def lp(prompt: str, content: str) -> list[dict[str, Any]]:
        if '"score": 4' in content:
            return scripted_logprobs(content, {"4": 0.5, "5": 0.3, "3": 0.1, "x": 0.1})
        return scripted_logprobs(content, {"2": 0.8, "1": 0.2})

    frame = _frame(["good", "bad", "good", None])
    with StubOpenAI(verdict=_g_eval_script(counter), logprobs=lp) as stub:
        out = _score(stub, frame, f"g-eval(criteria={json.dumps(CRITERIA)})", tmp_path / "c.db")
        # steps once per criteria; one rating per distinct prompt
        assert counter == Counter({"steps": 1, "rate": 2})
        assert all(
            c.body["logprobs"] is True and c.body["top_logprobs"] == 5
            for c in stub.calls("chat/completions")
            if fields(c.body["messages"][0]["content"], G_EVAL) is not None
        )
        rate_prompt = next(p for p in _prompts(stub) if fields(p, G_EVAL))
        steps = fields(rate_prompt, G_EVAL)["steps"]
        assert items(steps) == [("1", "Read it."), ("2", "Check\nfacts.")]
        n = len(stub.calls("chat/completions"))
        again = _score(stub, frame, f"g-eval(criteria={json.dumps(CRITERIA)})", tmp_path / "c.db")
        assert len(stub.calls("chat/completions")) == n  # second run: zero calls
    assert again.select("score", "error", "details").equals(out.select("score", "error", "details"))
    scores = out.get_column("score").to_list()
    good = (4 * 0.5 + 5 * 0.3 + 3 * 0.1) / 0.9
    bad = 2 * 0.8 + 1 * 0.2
    assert scores[:3] == pytest.approx([(good - 1) / 4, (bad - 1) / 4, (good - 1) / 4], abs=1e-12)
    assert scores[3] is None
    assert out.get_column("error")[3] == "Sample 's3' has no actual output."
    details = _details(out)
    for d, score in zip(details[:3], scores[:3], strict=True):
        assert d["method"] == "logprobs"
        assert d["steps"] == ["Read it.", "Check\nfacts."]
        recomputed = sum((i + 1) * p for i, p in enumerate(d["probabilities"]))
        assert (recomputed - 1) / 4 == pytest.approx(score, abs=1e-12)
        assert d["prompt"] == G_EVAL.key


def test_g_eval_without_logprobs_uses_the_parsed_rating() -> None:
    counter: Counter[str] = Counter()
    with StubOpenAI(verdict=_g_eval_script(counter)) as stub:
        out = _score(stub, _frame(["good", "bad"]), f"g-eval(criteria={json.dumps(CRITERIA)})")
    assert out.get_column("score").to_list() == [0.75, 0.25]
    details = _details(out)
    assert [d["method"] for d in details] == ["rating", "rating"]
    assert [d["probabilities"] for d in details] == [None, None]
    assert [(d["rating"] - 1) / 4 for d in details] == [0.75, 0.25]


def test_g_eval_with_given_steps_skips_generation_and_top_logprobs_zero_asks_none() -> None:
    counter: Counter[str] = Counter()
    spec = f"g-eval(criteria={json.dumps(CRITERIA)}, steps=[Compare, Decide], top_logprobs=0)"
    with StubOpenAI(verdict=_g_eval_script(counter)) as stub:
        out = _score(stub, _frame(["good"]), spec)
        body = stub.calls("chat/completions")[0].body
    assert counter == Counter({"rate": 1})
    assert "logprobs" not in body
    steps = fields(body["messages"][0]["content"], G_EVAL)["steps"]
    assert steps == '1. "Compare"\n2. "Decide"'
    assert out.get_column("score").to_list() == [0.75]
    assert _details(out)[0]["steps"] == ["Compare", "Decide"]


def test_g_eval_bad_replies_are_row_errors() -> None:
    counter: Counter[str] = Counter()
    rating = {"good": 9, "bad": "four"}
    with StubOpenAI(verdict=_g_eval_script(counter, lambda a: rating[a])) as stub:
        out = _score(stub, _frame(["good", "bad"]), f"g-eval(criteria={json.dumps(CRITERIA)})")
    assert out.get_column("score").to_list() == [None, None]
    errors = out.get_column("error").to_list()
    assert errors[0] == "Sample 's0' g-eval rating 9 is outside 1-5."
    assert errors[1].startswith("Sample 's1' g-eval judge failed: judge reply does not fit")
    with pytest.raises(MetricError, match="criteria"):
        ef.metrics.get('g-eval(criteria=" ")')


def test_expected_rating_ignores_tokens_that_are_not_ratings() -> None:
    assert expected_rating(None) is None
    assert expected_rating([{"token": "x", "top": [["x", 0.0]]}]) is None
    assert expected_rating([{"token": '"3"', "top": [["3", 0.0], [" 1", 0.0]]}]) == [
        0.5,
        0.0,
        0.5,
        0.0,
        0.0,
    ]


# --- pairwise ------------------------------------------------------------------------------------


def _longer(f: dict[str, str]) -> dict[str, str]:
    a, b = len(f["first"]), len(f["second"])
    return {"winner": "A" if a > b else "B" if b > a else "tie", "reason": f"{a} vs {b}"}


def test_pairwise_judges_both_orders_and_averages() -> None:
    frame = _frame(
        ["a long answer", "short", "same!", None], base=["short", "a long answer", "same?", "x"]
    )
    with StubOpenAI(verdict=script({PAIRWISE: _longer})) as stub:
        out = _score(stub, frame, "pairwise(baseline=base)")
        assert len(_prompts(stub)) == 6  # two orders for each of the three judged rows
    assert out.get_column("score").to_list() == [1.0, 0.0, 0.5, None]
    assert out.get_column("error")[3] == "Sample 's3' has no actual output."
    for d, score in zip(_details(out)[:3], out.get_column("score")[:3], strict=True):
        assert (d["actual_first"]["points"] + d["baseline_first"]["points"]) / 2 == score
        assert d["baseline"] == "base"


def test_pairwise_cancels_a_judge_that_always_prefers_the_first_response() -> None:
    frame = _frame(["x", "yy"], base=["yy", "x"])
    verdict = script({PAIRWISE: lambda f: {"winner": "A", "reason": "first"}})
    with StubOpenAI(verdict=verdict) as stub:
        out = _score(stub, frame, "pairwise(baseline=base)")
    assert out.get_column("score").to_list() == [0.5, 0.5]
    d = _details(out)[0]
    assert d["actual_first"]["winner"] == "A"
    assert d["baseline_first"]["winner"] == "A"


def test_pairwise_without_the_baseline_column_names_it() -> None:
    with StubOpenAI(verdict=script({PAIRWISE: _longer})) as stub:
        out = _score(stub, _frame(["x"]), "pairwise(baseline=saved)")
        assert _prompts(stub) == []
    assert out.get_column("error")[0] == (
        "Sample 's0' has no actual output or no baseline output in column 'saved'."
    )


# --- rubric --------------------------------------------------------------------------------------

BANDS = '["excellent=1: complete and correct", "partial=0.4: some facts", "wrong=0"]'


def test_rubric_scores_the_named_band_and_sends_the_bands_as_an_enum() -> None:
    bands = {"great answer": "excellent", "meh": "partial", "no": "wrong", "odd": "superb"}
    verdict = script({RUBRIC: lambda f: {"band": bands[f["answer"]], "reason": "r"}})
    with StubOpenAI(verdict=verdict) as stub:
        out = _score(stub, _frame(["great answer", "meh", "no", "odd"]), f"rubric(rubric={BANDS})")
        body = stub.calls("chat/completions")[0].body
    schema = body["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["band"]["enum"] == ["excellent", "partial", "wrong"]
    shown = fields(body["messages"][0]["content"], RUBRIC)["bands"]
    assert items(shown) == [
        ("1", {"band": "excellent", "description": "complete and correct"}),
        ("2", {"band": "partial", "description": "some facts"}),
        ("3", {"band": "wrong", "description": None}),
    ]
    assert out.get_column("score").to_list() == [1.0, 0.4, 0.0, None]
    assert "'band' must be one of" in out.get_column("error")[3]
    assert [d["band_score"] for d in _details(out)[:3]] == [1.0, 0.4, 0.0]


def test_rubric_from_a_yaml_file_and_its_checks(tmp_path: Path) -> None:
    path = tmp_path / "bands.yaml"
    path.write_text("good: {score: 1, description: all there}\nbad: 0\n", encoding="utf-8")
    assert [tuple(b) for b in parse_rubric(str(path))] == [
        ("good", 1.0, "all there"),
        ("bad", 0.0, ""),
    ]
    with pytest.raises(MetricError, match="at least two bands"):
        parse_rubric(["only=1"])
    with pytest.raises(MetricError, match=r"band 'a' score must be in \[0, 1\]; got 2"):
        parse_rubric(["a=2", "b=0"])
    with pytest.raises(MetricError, match="band names must differ"):
        parse_rubric(["a=1", "a=0"])
    with pytest.raises(MetricError, match="not of the form"):
        parse_rubric(["a", "b=0"])
    with pytest.raises(MetricError, match=f"Rubric {tmp_path / 'missing.yaml'}: cannot read"):
        parse_rubric(str(tmp_path / "missing.yaml"))


# --- prompt-alignment ----------------------------------------------------------------------------


def _follows(f: dict[str, str]) -> Any:
    lines = f["instructions"].splitlines()
    if f["answer"] == "short":
        return {"verdicts": [{"instruction": 1, "followed": True, "reason": "ok"}]}
    return {
        "verdicts": [
            {"instruction": i, "followed": "no" not in line, "reason": line}
            for i, line in enumerate(lines, 1)
        ]
    }


def test_prompt_alignment_is_the_share_followed_from_one_call_per_sample() -> None:
    spec = "prompt-alignment(instructions=[Be polite, Say no jargon, Use no lists])"
    with StubOpenAI(verdict=script({ALIGNMENT: _follows})) as stub:
        out = _score(stub, _frame(["an answer", "short"]), spec)
        assert len(_prompts(stub)) == 2
    assert out.get_column("score").to_list() == [pytest.approx(1 / 3), None]
    d = _details(out)[0]
    assert d["followed"] == [True, False, False]
    assert sum(d["followed"]) / len(d["instructions"]) == out.get_column("score")[0]
    assert out.get_column("error")[1] == (
        "Sample 's1' prompt-alignment judge must give 3 verdict(s) numbered 1..3 in order; "
        "got instructions [1]."
    )


# --- summarization -------------------------------------------------------------------------------

SOURCE = "Ada wrote the first program. She worked with Babbage. She was born in 1815."


def _summary_script(counter: Counter[str]) -> Any:
    def answers(f: dict[str, str]) -> Any:
        n = len(f["questions"].splitlines())
        got = {"full": ["yes"] * n, "half": ["yes", "no", "idk", "yes"]}[f["summary"]]
        return {"answers": got}

    def claims(f: dict[str, str]) -> Any:
        return {"claims": [] if f["text"] == "half" else ["Ada wrote code.", "Ada was born 1900."]}

    def check(f: dict[str, str]) -> Any:
        return {"verdicts": ["yes", "no"]}

    return script(
        {
            SUMMARY_QUESTIONS: _counting(
                lambda f: {"questions": [f"Q{i}?" for i in range(int(f["n"]))]}, counter, "q"
            ),
            SUMMARY_ANSWERS: _counting(answers, counter, "a"),
            CLAIMS: _counting(claims, counter, "c"),
            SUMMARY_CHECK: _counting(check, counter, "k"),
        }
    )


def test_summarization_is_the_lower_of_coverage_and_alignment() -> None:
    counter: Counter[str] = Counter()
    frame = _frame(["full", "half", "full"], inputs=[SOURCE] * 3)
    with StubOpenAI(verdict=_summary_script(counter)) as stub:
        out = _score(stub, frame, "summarization(questions=4)")
    # questions once per source; answers and claims once per distinct summary; check only
    # for the summary with claims
    assert counter == Counter({"q": 1, "a": 2, "c": 2, "k": 1})
    assert out.get_column("score").to_list() == [0.5, 0.5, 0.5]
    full, half, _ = _details(out)
    assert (full["coverage"], full["alignment"]) == (1.0, 0.5)
    assert (half["coverage"], half["alignment"]) == (0.5, 1.0)  # no claims: nothing unsupported
    for d in (full, half):
        coverage = d["answers"].count("yes") / len(d["questions"])
        alignment = d["verdicts"].count("yes") / len(d["claims"]) if d["claims"] else 1.0
        assert min(coverage, alignment) == 0.5
        assert (coverage, alignment) == (d["coverage"], d["alignment"])


def test_summarization_prompts_can_each_be_replaced() -> None:
    counter: Counter[str] = Counter()
    mine = "Be strict.\n\n" + SUMMARY_CHECK.template
    metric = ef.metrics.summarization(questions=4, check_template=mine)
    replaced = SUMMARY_CHECK.with_template(mine)
    summary = _summary_script(counter)

    def verdict(prompt: str) -> str:
        if fields(prompt, replaced) is not None:
            counter["mine"] += 1
            return json.dumps({"verdicts": ["yes", "yes"]})
        return summary(prompt)

    frame = _frame(["full"], inputs=[SOURCE])
    with StubOpenAI(verdict=verdict) as stub:
        out = ef.score(frame, [metric], context=_providers(stub, False))
    assert counter["mine"] == 1  # the check went to the user's prompt
    assert counter["k"] == 0
    (d,) = _details(out)
    assert d["alignment"] == 1.0
    assert d["prompts"][3] == replaced.key != SUMMARY_CHECK.key
    assert out.get_column("score").to_list() == [1.0]
    with pytest.raises(MetricError):
        ef.metrics.summarization(questions_template="no placeholders here").expressions()


def test_summarization_count_mismatch_is_a_row_error() -> None:
    counter: Counter[str] = Counter()
    with StubOpenAI(verdict=_summary_script(counter)) as stub:
        out = _score(stub, _frame(["half"], inputs=[SOURCE]), "summarization(questions=3)")
    assert out.get_column("error")[0] == (
        "Sample 's0' summarization judge gave 4 answer(s) for 3 question(s) and 0 verdict(s) "
        "for 0 claim(s)."
    )


def test_the_budget_stops_judge_calls_and_the_rest_keep_their_scores() -> None:
    frame = _frame(["a", "bb", "ccc", "dddd"])
    verdict = script({RUBRIC: lambda f: {"band": "excellent", "reason": "r"}})
    with StubOpenAI(verdict=verdict, cost_per_call=0.4) as stub:
        judge = ef.OpenAIJudge("m", base_url=stub.url, retries=0, concurrency=1)
        # the stub reports each call's cost: a budget binds on it once that is declared
        providers = ef.Providers(judge=judge, cache=False, budget_usd=0.5, prices={"m": "reported"})
        out = ef.score(frame, [ef.metrics.get(f"rubric(rubric={BANDS})")], context=providers)
        assert len(stub.calls("chat/completions")) == 2  # $0.80 > $0.50 after two calls
    assert out.get_column("score").to_list() == [1.0, 1.0, None, None]
    assert out.get_column("error")[2].startswith(
        "Sample 's2' rubric judge failed: Budget exhausted: spent $0.8000 of a $0.5000 budget"
    )


def test_pairwise_against_a_saved_outputs_file_matched_by_sample_id(tmp_path: Path) -> None:
    saved = tmp_path / "baseline.outputs.json"
    saved.write_text(
        json.dumps({"outputs": {"s1": "a long answer", "s0": "short", "zz": "unused"}}),
        encoding="utf-8",
    )
    spec = f"pairwise(baseline={json.dumps(str(saved))})"
    with StubOpenAI(verdict=script({PAIRWISE: _longer})) as stub:
        out = _score(stub, _frame(["a long answer", "short", "x"]), spec)
        assert len(_prompts(stub)) == 4
    assert out.get_column("score").to_list() == [1.0, 0.0, None]
    assert out.get_column("error")[2] == (
        f"Sample 's2' has no actual output or no baseline output in file '{saved}'."
    )


def test_summary_claims_are_shared_with_the_rag_metrics_through_the_cache(tmp_path: Path) -> None:
    counter: Counter[str] = Counter()
    summary = _summary_script(counter)

    def verdict(prompt: str) -> str:
        if fields(prompt, CORRECTNESS) is not None:
            return json.dumps({"answer": [], "reference": []})
        return summary(prompt)

    metrics = [ef.metrics.get("answer-correctness"), ef.metrics.get("summarization(questions=2)")]
    with StubOpenAI(verdict=verdict) as stub:
        providers = _providers(stub, tmp_path / "cache.duckdb")
        out = ef.score(_frame(["full"], inputs=[SOURCE]), metrics, context=providers)
        claims = [p for p in _prompts(stub) if fields(p, CLAIMS) is not None]
    # one claims call per distinct text: the summary ("full") and the expected output ("ref")
    assert sorted(fields(p, CLAIMS)["text"] for p in claims) == ["full", "ref"]
    assert out.filter(pl.col("metric") == "summarization(questions=2)")["score"].to_list() == [0.5]


def test_a_metric_prompt_can_be_overridden_and_its_key_changes() -> None:
    text = "Rate {answer} to {question} ({expected}) by {criteria} via {steps}. JSON please."
    custom = G_EVAL.with_template(text)
    verdict = script(
        {
            G_EVAL_STEPS: lambda f: {"steps": ["s"]},
            custom: lambda f: {"score": 5, "reason": "r"},
        }
    )
    spec = f"g-eval(criteria=ok, template={json.dumps(text)})"
    with StubOpenAI(verdict=verdict) as stub:
        out = _score(stub, _frame(["good"]), spec)
        assert fields(_prompts(stub)[-1], custom) is not None
    assert out.get_column("score").to_list() == [1.0]
    assert _details(out)[0]["prompt"] == custom.key
    assert custom.key.startswith(G_EVAL.key + "+")
    with pytest.raises(MetricError, match="must use the placeholders"):
        ef.metrics.get("rubric(rubric=[a=1, b=0], template='no placeholders')").needs()


def test_pairwise_against_a_stored_run_by_evaluate_run_and_rescore(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from evalframe.cli import cli

    data = tmp_path / "d.yaml"
    data.write_text(
        "name: d\nsamples:\n"
        "  - {id: s0, input: {question: q0}, expected_output: x}\n"
        "  - {id: s1, input: {question: q1}, expected_output: x}\n",
        encoding="utf-8",
    )
    db = tmp_path / "runs.duckdb"
    base = ef.evaluate(data, outputs={"s0": "short", "s1": "a much longer answer"},
                       metrics=["contains"], name="base", store=db)  # fmt: skip
    outputs = tmp_path / "new.json"
    outputs.write_text(json.dumps({"outputs": {"s0": "a longer answer", "s1": "tiny"}}))
    spec = f"pairwise(baseline=run:{base.run_id})"
    with StubOpenAI(verdict=script({PAIRWISE: _longer})) as stub:
        judge = {"judge": ef.OpenAIJudge("judge-m", base_url=stub.url, retries=0)}
        run = ef.evaluate(
            data, outputs=outputs, metrics=[spec], providers=ef.Providers(**judge, cache=False),
            baselines_from=db,
        )  # fmt: skip
        # s0: longer than the baseline's, wins both orders; s1: shorter, loses both
        assert dict(run.scores.select("sample_id", "score").iter_rows()) == {"s0": 1.0, "s1": 0.0}
        cli_run = CliRunner().invoke(
            cli,
            ["run", str(data), "--outputs", str(outputs), "-m", "pairwise(baseline=run:base)",
             "--store", str(db), "--judge-base-url", stub.url, "--judge-model", "judge-m",
             "--no-cache", "--format", "json"],
        )  # fmt: skip
        assert cli_run.exit_code == 0, cli_run.output
        doc = json.loads(cli_run.stdout)
        assert [s["scores"]["pairwise(baseline=run:base)"]["score"] for s in doc["samples"]] == [
            1.0,
            0.0,
        ]
        # rescoring the new run against the baseline run reads both from the store
        with ef.Store(db) as store:
            (rescored,) = store.rescore(
                [spec], runs=doc["run_id"], providers=ef.Providers(**judge, cache=False)
            )
            again = store.load(rescored)
    assert dict(again.scores.select("sample_id", "score").iter_rows()) == {"s0": 1.0, "s1": 0.0}
    nowhere = ef.Providers(judge=ef.OpenAIJudge("m", base_url="http://127.0.0.1:9"), cache=False)
    with pytest.raises(ValueError, match="compares with a stored run: pass store="):
        ef.evaluate(data, outputs=outputs, metrics=[spec], providers=nowhere)
