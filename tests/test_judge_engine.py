"""The judge engine: staged needs filled in order, prompts deduplicated across the frame,
per-item prompts re-gathered, strict replies, the cache and the prompt version."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import polars as pl
import pytest
from judge_script import fields, items, script
from openai_stub import StubOpenAI

import evalframe as ef
from evalframe.core._errors import MetricError
from evalframe.enrich._enrich import fill
from evalframe.metrics._fence import numbered, verbatim
from evalframe.metrics._judge_engine import (
    DATA_RULE,
    JudgeNeed,
    Prompt,
    decode_reply,
    json_schema,
    parsed,
    reply,
)
from evalframe.providers import ENV, Reply

CLAIMS = Prompt("t.claims", 1, "CLAIMS OF: {text}", pl.Struct({"claims": pl.List(pl.String)}))
CHECK = Prompt("t.check", 1, "CHECK:\n{claims}", pl.Struct({"ok": pl.List(pl.Boolean)}))
ITEM = Prompt("t.item", 1, "ITEM: {item} FOR {question}", pl.Struct({"n": pl.Int64}))

CLAIMS_NEED = JudgeNeed("claims", CLAIMS, {"text": pl.col("actual_output")})
CHECK_NEED = JudgeNeed(
    "check",
    CHECK,
    {
        "claims": verbatim(
            numbered(parsed(CLAIMS_NEED).struct.field("value").struct.field("claims"))
        )
    },
    requires=(CLAIMS_NEED,),
)
ITEM_NEED = JudgeNeed(
    "items",
    ITEM,
    {"item": pl.col("ctx"), "question": pl.col("input")},
    each="item",
    optional={"ctx": pl.List(pl.String)},
)


R = DATA_RULE + "\n\n"  # every prompt starts with the data rule


class _Uses:
    """The smallest metric-like value ``fill`` reads: an id and needs."""

    def __init__(self, *needs: JudgeNeed) -> None:
        self.id = "m"
        self._needs = list(needs)

    def needs(self) -> list[JudgeNeed]:
        return self._needs


def _claims(f: dict[str, str]) -> Any:
    if f["text"] == "garbled":
        return "not json at all"
    if f["text"] == "wrong shape":
        return {"claims": "one"}
    return {"claims": f["text"].split()}


def _check(f: dict[str, str]) -> Any:
    return {"ok": [not claim.endswith("no") for _, claim in items(f["claims"])]}


VERDICT = script({CLAIMS: _claims, CHECK: _check, ITEM: lambda f: {"n": len(f["item"])}})

FRAME = pl.DataFrame(
    {
        "sample_id": ["a", "b", "c", "d", "e"],
        "input": ["q1", "q1", "q2", "q3", "q3"],
        "actual_output": ["x no", "x no", "garbled", None, "wrong shape"],
        "ctx": [["pp", "q"], [], None, ["pp", "pp"], ["zzz"]],
    }
)


@pytest.fixture(autouse=True)
def _no_provider_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV.values():
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def stub() -> Iterator[StubOpenAI]:
    with StubOpenAI(verdict=VERDICT) as server:
        yield server


def _providers(stub: StubOpenAI, **kwargs: Any) -> ef.Providers:
    kwargs.setdefault("cache", False)
    return ef.Providers(judge=ef.OpenAIJudge("judge-m", base_url=stub.url), **kwargs)


def _prompts(stub: StubOpenAI) -> list[str]:
    return [c.body["messages"][0]["content"] for c in stub.calls("chat/completions")]


def test_stages_fill_in_order_one_call_per_distinct_prompt(stub: StubOpenAI) -> None:
    out, failed = fill(FRAME, [_Uses(CHECK_NEED)], _providers(stub))
    assert failed == {}
    sent = _prompts(stub)
    # claims: "x no" once for rows a and b, "garbled", "wrong shape"; check: once for "x no"
    assert sorted(sent) == sorted(
        [
            R + 'CLAIMS OF: "x no"',
            R + 'CLAIMS OF: "garbled"',
            R + 'CLAIMS OF: "wrong shape"',
            R + 'CHECK:\n1. "x"\n2. "no"',
        ]
    )
    got = out.select(reply(CHECK_NEED).alias("r")).unnest("r")
    assert got["value"].struct.field("ok").to_list() == [
        [True, False],
        [True, False],
        None,
        None,
        None,
    ]
    errors = got["error"].to_list()
    assert errors[:2] == [None, None]
    assert errors[2].startswith("claims (t.claims@v1): judge reply is not valid JSON")
    assert errors[3] is None  # no output: no prompt, no error (the metric decides)
    assert errors[4] == (
        "claims (t.claims@v1): judge reply does not fit the schema: "
        "'claims' must be an array; got string."
    )


def test_each_sends_one_prompt_per_distinct_item_and_regathers_in_order(stub: StubOpenAI) -> None:
    out, failed = fill(FRAME.drop("ctx"), [_Uses(ITEM_NEED)], _providers(stub))
    assert failed == {}
    assert _prompts(stub) == []
    out, _ = fill(FRAME, [_Uses(ITEM_NEED)], _providers(stub))
    assert sorted(_prompts(stub)) == sorted(
        [
            R + 'ITEM: "pp" FOR "q1"',
            R + 'ITEM: "q" FOR "q1"',
            R + 'ITEM: "pp" FOR "q3"',
            R + 'ITEM: "zzz" FOR "q3"',
        ]
    )
    value = out.select(reply(ITEM_NEED).struct.field("value")).to_series()
    assert value.to_list() == [[{"n": 2}, {"n": 1}], [], None, [{"n": 2}, {"n": 2}], [{"n": 3}]]


def test_reply_schema_is_sent_and_versions_key_the_cache(stub: StubOpenAI, tmp_path: Any) -> None:
    providers = _providers(stub, cache=tmp_path / "cache.duckdb")
    fill(FRAME, [_Uses(CLAIMS_NEED)], providers)
    first = stub.calls("chat/completions")
    assert first[0].body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "t_claims", "strict": True, "schema": json_schema(CLAIMS.reply)},
    }
    fill(FRAME, [_Uses(CLAIMS_NEED)], providers)
    assert len(stub.calls("chat/completions")) == len(first)  # second run: zero calls
    bumped = JudgeNeed(
        "claims", CLAIMS.__class__(**{**_asdict(CLAIMS), "version": 2}), CLAIMS_NEED.inputs
    )
    out, _ = fill(FRAME, [_Uses(bumped)], providers)
    assert len(stub.calls("chat/completions")) == 2 * len(first)  # a new version asks again
    assert bumped.column in out.columns
    assert bumped.column != CLAIMS_NEED.column


def _asdict(p: Prompt) -> dict[str, Any]:
    return {
        f: getattr(p, f) for f in ("id", "version", "template", "reply", "description", "custom")
    }


def test_filled_columns_are_kept_so_a_filled_frame_makes_zero_calls(stub: StubOpenAI) -> None:
    out, _ = fill(FRAME, [_Uses(CHECK_NEED)], _providers(stub))
    n = len(_prompts(stub))
    again, _ = fill(out, [_Uses(CHECK_NEED)], _providers(stub))
    assert len(_prompts(stub)) == n
    assert again.equals(out)


def test_json_object_mode_for_endpoints_without_schemas(stub: StubOpenAI) -> None:
    judge = ef.OpenAIJudge("judge-m", base_url=stub.url, structured=False)
    fill(FRAME, [_Uses(CLAIMS_NEED)], ef.Providers(judge=judge, cache=False))
    assert stub.calls("chat/completions")[0].body["response_format"] == {"type": "json_object"}


def test_override_keeps_placeholders_and_changes_the_key() -> None:
    other = CLAIMS.with_template("Claims please: {text}")
    assert other.key.startswith("t.claims@v1+")
    assert other.custom
    assert CLAIMS.with_template(CLAIMS.template) is CLAIMS
    with pytest.raises(MetricError, match=r"must use the placeholders \['\{text\}'\]"):
        CLAIMS.with_template("no placeholder")


def test_decode_reply_is_lenient_on_wrapping_and_strict_on_shape() -> None:
    dtype = pl.Struct({"v": pl.List(pl.Struct({"id": pl.String, "ok": pl.Boolean, "n": pl.Int64}))})
    good = '```json\n{"v": [{"id": "A1", "ok": true, "n": 2.0, "extra": 1}]}\n```'
    assert decode_reply(good, dtype) == ({"v": [{"id": "A1", "ok": True, "n": 2}]}, None)
    assert decode_reply('{"v": [{"id": "A1", "ok": "yes", "n": 1}]}', dtype)[1] == (
        "judge reply does not fit the schema: 'v[0].ok' must be a boolean; got string."
    )
    assert decode_reply('{"v": [{"id": "A1", "n": 1}]}', dtype)[1] == (
        "judge reply does not fit the schema: 'v[0].ok' is missing."
    )
    assert decode_reply('{"v": NaN}', dtype)[1].startswith("judge reply is not valid JSON")
    enum = pl.Struct({"label": pl.Enum(["yes", "no"])})
    assert decode_reply('{"label": "maybe"}', enum)[1] == (
        "judge reply does not fit the schema: 'label' must be one of ['yes', 'no']; got \"maybe\"."
    )


def test_script_fields_recover_placeholder_values() -> None:
    assert fields(R + 'ITEM: "a {b}\\n" FOR "c"', ITEM) == {"item": "a {b}\n", "question": "c"}
    assert fields("something else", ITEM) is None
    assert json.loads(VERDICT(R + 'CLAIMS OF: "p q"')) == {"claims": ["p", "q"]}


@dataclass(frozen=True, slots=True)
class _ReplyWithLogprobs(Reply):
    logprobs: Any = None


class _LogprobJudge:
    """An in-process judge that gives token log-probabilities when asked."""

    id = "logprob-judge"
    model = "lp"

    def __init__(self) -> None:
        self.asked: list[dict[str, Any]] = []

    def request(self, prompt: str, top_logprobs: int | None = None) -> dict[str, object]:
        return {"model": self.model, "prompt": prompt, "top_logprobs": top_logprobs}

    def complete(
        self, prompts: list[str], ledger: Any, top_logprobs: int | None = None
    ) -> list[Reply]:
        self.asked.append({"n": len(prompts), "top_logprobs": top_logprobs})
        return [
            _ReplyWithLogprobs(json.dumps({"n": len(p)}), None, [{"token": "7", "logprob": -0.1}])
            for p in prompts
        ]


def test_top_logprobs_are_asked_for_and_kept_beside_the_replies() -> None:
    need = JudgeNeed(
        "lp", ITEM, {"item": pl.col("actual_output"), "question": pl.col("input")}, top_logprobs=5
    )
    judge = _LogprobJudge()
    f = FRAME.filter(pl.col("actual_output").is_not_null())
    out, failed = fill(f, [_Uses(need)], ef.Providers(judge=judge, cache=False))
    assert failed == {}
    assert judge.asked == [{"n": 3, "top_logprobs": 5}]  # 3 distinct prompts, one batch
    assert (
        out.get_column(need.logprobs_column).to_list()
        == ['[{"token": "7", "logprob": -0.1}]'] * f.height
    )
