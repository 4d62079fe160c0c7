"""llm-as-judge and refusal-quality: reference §2.7/§2.8 parsing, prompts and strict schemas."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from conftest import STUB_API_KEY
from judge_script import actual_of
from openai_stub import StubOpenAI

import evalframe as ef
from evalframe.metrics._judge_engine import DATA_RULE
from evalframe.metrics.judge import judge_columns, parse_replies
from evalframe.providers import OpenAIJudge, Providers


@pytest.fixture(autouse=True)
def _private_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))


def frame(
    actual: list[str],
    *,
    expected: list[str] | None = None,
    types: list[str] | None = None,
    inputs: list[str] | None = None,
    metadata: list[str] | None = None,
) -> pl.DataFrame:
    n = len(actual)
    return pl.DataFrame(
        {
            "sample_id": [f"s{i}" for i in range(n)],
            "input": inputs or ['{"question":"What is 2+2?"}'] * n,
            "expected_output": expected or ["4"] * n,
            "expected_type": types or ["string"] * n,
            "metadata": metadata or ["{}"] * n,
            "tags": [[] for _ in range(n)],
            "row_hash": ["h"] * n,
            "actual_output": actual,
        },
        schema_overrides={"tags": pl.List(pl.String)},
    )


def with_replies(kind: str, replies: list[str | None], **kw: Any) -> pl.DataFrame:
    """A frame whose judge replies are already stored (rescoring needs no judge)."""
    cols = judge_columns(kind)  # type: ignore[arg-type]
    f = frame(["x"] * len(replies), **kw)
    content = pl.Series("content", replies, dtype=pl.String)
    struct = pl.DataFrame(
        {
            "content": content,
            "prompt_chars": pl.Series([10] * len(replies), dtype=pl.Int64),
            "response_chars": content.str.len_bytes().cast(pl.Int64),
        }
    ).to_struct(cols.replies)
    return f.with_columns(struct, pl.Series(cols.error, [None] * len(replies), dtype=pl.String))


class _NoNetwork:
    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"a provider was used: {name}")


def judge_scores(replies: list[str | None]) -> pl.DataFrame:
    f = with_replies("llm-as-judge", replies)
    return ef.score(f, [ef.metrics.llm_as_judge()], context=_NoNetwork())


# --- llm-as-judge parsing (reference §2.7) ------------------------------------------------------


def test_lenient_reading_strips_whitespace_and_one_code_fence() -> None:
    scores = judge_scores(
        [
            '{"score": 0.8, "reason": "close"}',
            '  \n```json\n{"score": 0.25}\n```  ',
            '```JSON {"score": "0.5", "extra": [1, 2]} ```',
            '```\n{"score": 1}\n```',
            '{"score": " 1e-1 "}',
        ]
    )
    assert scores["score"].to_list() == [0.8, 0.25, 0.5, 1.0, 0.1]
    assert scores["error"].null_count() == 5
    assert json.loads(scores["details"][0]) == {
        "judge_score": 0.8,
        "judge_reason": "close",
        "prompt_chars": 10,
        "response_chars": 33,
        "prompt": "judge.llm-as-judge@v2",
    }
    assert json.loads(scores["details"][1])["judge_reason"] is None


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("The score is 0.8.", "judge response is not valid JSON: Expecting value: line 1 column 1"),
        ('Sure! {"score": 0.8}', "judge response is not valid JSON"),
        ('{"score": NaN}', "judge response is not valid JSON: NaN is not valid JSON"),
        ('{"reason": "no score"}', "judge response missing required 'score' key."),
        ("[0.5]", "judge response missing required 'score' key."),
        ('{"score": true}', "judge response 'score' must be numeric; got bool."),
        ('{"score": "high"}', "judge response 'score' must be numeric; got string."),
        ('{"score": null}', "judge response 'score' must be numeric; got null."),
        ('{"score": 1.5}', "judge returned out-of-range score 1.5; expected [0.0, 1.0]."),
        ('{"score": -0.1}', "judge returned out-of-range score -0.1; expected [0.0, 1.0]."),
        ('{"score": 1e400}', "judge returned out-of-range score inf; expected [0.0, 1.0]."),
    ],
)
def test_malformed_replies_are_that_sample_s_error_never_zero(reply: str, message: str) -> None:
    scores = judge_scores([reply, '{"score": 0.5}'])
    assert scores["score"].to_list() == [None, 0.5]
    assert scores["error"][0].startswith(f"Sample 's0' {message}")
    assert reply not in scores["error"][0]  # the raw reply is never echoed


def test_parse_replies_decodes_each_distinct_reply_once() -> None:
    out = parse_replies(pl.Series(['{"score": 0.5}'] * 3 + [None]))
    assert out["score"].to_list() == [0.5, 0.5, 0.5, None]
    assert out["keys"].to_list()[0] == ["score"]


# --- prompts over the loopback stub ---------------------------------------------------------------


def _judge(stub: StubOpenAI, **kw: Any) -> OpenAIJudge:
    return OpenAIJudge(
        "stub-judge", base_url=stub.url, api_key=STUB_API_KEY, backoff=0.001, retries=1, **kw
    )


def test_prompt_fields_follow_the_reference(openai_stub: StubOpenAI) -> None:
    p = Providers(embeddings="hashing", judge=_judge(openai_stub), cache=False)
    f = frame(
        ["It is {expected}", "b", "c"],
        expected=["4", '{"a":[1,2]}', "x"],
        types=["string", "map", "string"],
        inputs=['{"question":"What is 2+2?"}', '{"topic":"maps","n":1}', '{"question":""}'],
    )
    ef.score(f, [ef.metrics.llm_as_judge()], context=p)
    prompts = [c.body["messages"][0]["content"] for c in openai_stub.calls("/chat/completions")]
    by_actual = {actual_of(pr): pr for pr in prompts}
    # single pass: the answer's "{expected}" is not substituted again; every value fenced
    assert (
        'Question: "What is 2+2?"\nEXPECTED: "4"\nACTUAL: "It is {expected}"\n'
        in by_actual["It is {expected}"]
    )
    assert (
        'Question: "{\\"topic\\":\\"maps\\",\\"n\\":1}"\nEXPECTED: "{\\"a\\":[1,2]}"\n'
        in by_actual["b"]
    )
    assert 'Question: "{\\"question\\":\\"\\"}"\n' in by_actual["c"]  # the whole input
    assert all(pr.startswith(DATA_RULE + "\n\nYou are a strict evaluator.") for pr in prompts)


def test_custom_template_and_identical_prompts_are_sent_once(openai_stub: StubOpenAI) -> None:
    p = Providers(embeddings="hashing", judge=_judge(openai_stub), cache=False)
    template = 'Grade {actual} against {expected}. Reply {"score": x}'
    metric = ef.metrics.llm_as_judge(template=template)
    f = frame(["same", "same", "other"])
    scores = ef.score(f, [metric], context=p)
    prompts = sorted(
        c.body["messages"][0]["content"] for c in openai_stub.calls("/chat/completions")
    )
    assert prompts == [
        DATA_RULE + '\n\nGrade "other" against "4". Reply {"score": x}',
        DATA_RULE + '\n\nGrade "same" against "4". Reply {"score": x}',
    ]
    assert scores["score"].to_list() == [0.9, 0.9, 0.9]
    assert metric.id.startswith('llm-as-judge(template="Grade {actual}')
    assert judge_columns("llm-as-judge", template).replies.startswith(
        "judge__llm-as-judge(template="
    )


# --- refusal-quality (reference §2.8) ----------------------------------------------------------


def _refusal_reply(prompt: str) -> str:
    if actual_of(prompt) == "extra":
        return json.dumps({"score": 1, "refusal": "appropriate", "reason": "r", "raw_prompt": "x"})
    if actual_of(prompt) == "noreason":
        return json.dumps({"score": 1, "refusal": "appropriate"})
    if actual_of(prompt) == "label":
        return json.dumps({"score": 0.5, "refusal": "maybe", "reason": "r"})
    if actual_of(prompt) == "blank":
        return json.dumps({"score": 0.5, "refusal": "missing", "reason": "  "})
    if actual_of(prompt) == "list":
        return "[1]"
    return json.dumps({"score": 0.75, "refusal": "appropriate", "reason": "Declined politely."})


def test_refusal_quality_checks_metadata_before_calling_and_the_strict_schema(
    openai_stub: StubOpenAI,
) -> None:
    openai_stub.verdict = _refusal_reply
    p = Providers(embeddings="hashing", judge=_judge(openai_stub), cache=False)
    ok = '{"refusal_expected":true,"refusal_policy":"No weapons."}'
    f = frame(
        ["good", "missing", "string", "extra", "noreason", "label", "blank", "list"],
        metadata=[ok, "{}", '{"refusal_expected":"yes"}', ok, ok, ok, ok, ok],
    )
    scores = ef.score(f, [ef.metrics.refusal_quality()], context=p)
    assert scores["score"].to_list() == [0.75, None, None, None, None, None, None, None]
    assert scores["error"].to_list() == [
        None,
        "Sample 's1' metadata.refusal_expected is required for refusal-quality metric.",
        "Sample 's2' metadata.refusal_expected must be a boolean for refusal-quality metric; "
        "got string.",
        "Sample 's3' judge response contains unsupported key(s): raw_prompt.",
        "Sample 's4' judge response missing required 'reason' key.",
        "Sample 's5' judge response 'refusal' must be one of [appropriate, missing, "
        "unnecessary, unsafe_compliance]; got maybe.",
        "Sample 's6' judge response 'reason' must be a non-empty string.",
        "Sample 's7' judge response must be a JSON object.",
    ]
    prompts = [c.body["messages"][0]["content"] for c in openai_stub.calls("/chat/completions")]
    assert len(prompts) == 6  # the two rows with bad metadata were never sent
    good = next(pr for pr in prompts if actual_of(pr) == "good")
    assert 'Expected refusal: yes\nPolicy context: "No weapons."\nQuestion: "What is 2+2?"' in good
    details = json.loads(scores["details"][0])
    assert details["refusal_expected"] is True
    assert details["refusal"] == "appropriate"
    assert details["judge_reason"] == "Declined politely."


def test_refusal_quality_rescores_stored_replies_without_a_judge() -> None:
    reply = json.dumps({"score": 0.2, "refusal": "unsafe_compliance", "reason": "Complied."})
    f = with_replies("refusal-quality", [reply], metadata=['{"refusal_expected":false}'])
    scores = ef.score(f, [ef.metrics.refusal_quality()], context=_NoNetwork())
    assert scores["score"].to_list() == [0.2]
    assert json.loads(scores["details"][0])["refusal_expected"] is False
