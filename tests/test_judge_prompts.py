"""Judge prompts as package data: one versioned file per prompt, one loader, and the version
in every judge request's cache key and in the run record."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from conftest import STUB_API_KEY
from openai_stub import StubOpenAI

import evalframe as ef
from evalframe.core._errors import MetricError
from evalframe.metrics import judge
from evalframe.metrics._judge_engine import DATA_RULE, PROMPTS, prompt_keys
from evalframe.metrics._prompt_texts import prompt_text
from evalframe.metrics._registry import available, definition
from evalframe.providers import OpenAIJudge, Providers
from evalframe.store import Store

FOLDER = Path(ef.__file__).parent / "metrics" / "prompts"


@pytest.fixture(autouse=True)
def _private_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))


def _files() -> dict[str, tuple[int, str]]:
    """Each prompt file's id -> (version, text), read here without the loader."""
    out: dict[str, tuple[int, str]] = {}
    for path in sorted(FOLDER.iterdir()):
        m = re.fullmatch(r"(.+)\.v(\d+)\.txt", path.name)
        assert m is not None, path.name
        assert m.group(1) not in out, f"two versions of {m.group(1)}"
        text = path.read_bytes().decode("utf-8")
        assert text.endswith("\n"), path.name
        assert not text.endswith("\n\n"), path.name
        out[m.group(1)] = (int(m.group(2)), text[:-1])
    return out


def test_every_prompt_file_is_one_registered_prompt_and_every_prompt_has_a_file() -> None:
    available()  # the built-in families register their prompts
    files = _files()
    rule = files.pop("data-rule")  # the paragraph every prompt starts with
    assert rule[1] == DATA_RULE
    assert len(files) >= 31
    assert set(files) == set(PROMPTS)
    for id_, (version, text) in files.items():
        p = PROMPTS[id_]
        assert (p.version, p.template, p.key) == (version, text, f"{id_}@v{version}")
        assert p.text == f"{DATA_RULE}\n\n{text}"
        assert prompt_text(id_) == (text, version)
    assert files["judge.llm-as-judge"][1] == judge.DEFAULT_TEMPLATE
    assert files["judge.refusal-quality"][1] == judge.REFUSAL_TEMPLATE


def test_a_prompt_text_changes_only_with_its_version() -> None:
    """A version names one text for good: the hashes of every text ever shipped are kept in
    tests/data/prompt_versions.json. A changed text (or data rule) under the same version
    fails here: give it a new version (rename the file) and add its line."""
    available()
    known = json.loads((Path(__file__).parent / "data" / "prompt_versions.json").read_text())
    for p in PROMPTS.values():
        digest = hashlib.sha256(p.text.encode()).hexdigest()
        assert p.key in known, f"{p.key} is new: add its line {p.key!r}: {digest!r}"
        assert known[p.key] == digest, f"the text of {p.key} changed without a new version"


def test_the_judge_docs_show_the_prompts_as_sent() -> None:
    docs = (Path(__file__).parent.parent / "docs" / "metrics" / "judge.md").read_text()
    for text in (DATA_RULE, judge.DEFAULT_TEMPLATE, judge.REFUSAL_TEMPLATE):
        assert f"```text\n{text}\n```" in docs
    assert f"`{judge.LLM_JUDGE.key}`" in docs
    assert f"`{judge.REFUSAL.key}`" in docs


def test_an_unknown_prompt_id_names_the_shipped_ones() -> None:
    with pytest.raises(MetricError, match=r"No prompt file for 'rag\.nope'; shipped: \["):
        prompt_text("rag.nope")


def test_every_judged_metric_reports_the_versions_of_the_prompts_it_sends() -> None:
    judged = {
        d.name
        for d in available()
        if d.family in {"judge", "rag", "toolbox", "safety", "agent", "conversation"}
        and d.needs is not None
    }
    params = {
        "g-eval": {"criteria": "Correct."},
        "pairwise": {"baseline": "b"},
        "rubric": {"rubric": ("good=1", "bad=0")},
        "prompt-alignment": {"instructions": ("Be brief.",)},
        "compliance": {"policy": "No advice."},
        "role-violation": {"role": "A tutor."},
    }
    params["dag"] = {"tree": str(Path(__file__).parent / "data" / "answer-quality.dag.yaml")}
    params["conversational-g-eval"] = {"criteria": "Helpful."}
    # Deterministic metrics with a judged variant send prompts only with judge=true.
    for name in ("argument-correctness", "step-efficiency", "prompt-injection"):
        params[name] = {"judge": True}
    metrics = [definition(n).bind(**params.get(n, {})) for n in sorted(judged)]
    keys = prompt_keys(metrics)
    assert len(keys) == len(metrics) == 42
    for metric_keys in keys.values():
        assert metric_keys
        assert all(k.split("@v")[0] in PROMPTS for k in metric_keys)
        assert all(k == PROMPTS[k.split("@v")[0]].key for k in metric_keys)
    assert keys["faithfulness"] == [
        PROMPTS["rag.claims"].key,
        PROMPTS["rag.grounding"].key,
    ]  # required stages first
    custom = prompt_keys([ef.metrics.llm_as_judge(template="Grade {actual}.")])
    (key,) = custom['llm-as-judge(template="Grade {actual}.")']
    assert key.startswith(PROMPTS["judge.llm-as-judge"].key + "+")


# --- the cache key and the run record, over the loopback stub --------------------------------


def _judge(stub: StubOpenAI) -> OpenAIJudge:
    return OpenAIJudge("stub-judge", base_url=stub.url, api_key=STUB_API_KEY, retries=1)


def _dataset() -> ef.Dataset:
    return ef.Dataset.from_records(
        [
            {"id": "q1", "input": {"question": "Capital of France?"}, "expected_output": "Paris"},
            {"id": "q2", "input": {"question": "Capital of Spain?"}, "expected_output": "Madrid"},
        ],
        name="geo",
    )


OUTPUTS = {"q1": "Paris.", "q2": "Madrid."}


def _runs_extra(store: Store, run_id: str) -> dict[str, Any]:
    extra = store.sql("SELECT extra FROM runs WHERE run_id = ?", [run_id]).item()
    return dict(json.loads(extra))


def test_the_prompt_version_is_in_the_cache_key_and_the_run_record(
    openai_stub: StubOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store(tmp_path / "runs.duckdb")
    providers = Providers(judge=_judge(openai_stub), cache=tmp_path / "cache.duckdb")
    key = judge.LLM_JUDGE.key
    metrics = ["llm-as-judge", "exact-match"]

    first = ef.evaluate(_dataset(), outputs=OUTPUTS, metrics=metrics, providers=providers)
    assert len(openai_stub.calls("/chat/completions")) == 2
    assert first.extra["prompts"] == {"llm-as-judge": [key]}
    store.save(first)
    assert _runs_extra(store, first.run_id)["prompts"] == {"llm-as-judge": [key]}
    assert store.load(first.run_id).extra["prompts"] == {"llm-as-judge": [key]}
    # ... and in the report JSON (after outputs) and each score's details
    for source in (first, store.load(first.run_id)):
        report = json.loads(source.report().to_json())
        assert report["prompts"] == {"llm-as-judge": [key]}
        assert list(report)[list(report).index("outputs") + 1] == "prompts"
    judged = first.scores.filter(pl.col("metric") == "llm-as-judge").get_column("details")
    assert [json.loads(d)["prompt"] for d in judged] == [key, key]
    lexical = ef.evaluate(_dataset(), outputs=OUTPUTS, metrics=["exact-match"])
    assert "prompts" not in json.loads(lexical.report().to_json())

    again = ef.evaluate(_dataset(), outputs=OUTPUTS, metrics=metrics, providers=providers)
    assert len(openai_stub.calls("/chat/completions")) == 2  # every reply from the cache
    assert again.scores.equals(first.scores.with_columns(run_id=pl.lit(again.run_id)))

    # The same text under another version is another cache key: asked again.
    bumped = dataclasses.replace(judge.LLM_JUDGE, version=judge.LLM_JUDGE.version + 1)
    monkeypatch.setattr(judge, "LLM_JUDGE", bumped)
    third = ef.evaluate(_dataset(), outputs=OUTPUTS, metrics=metrics, providers=providers)
    assert len(openai_stub.calls("/chat/completions")) == 4
    assert third.extra["prompts"] == {"llm-as-judge": [bumped.key]}
    store.save(third)

    # A rescore keeps the source's versions for the scores it copies and records the
    # current ones for those it computes.
    (rescored,) = store.rescore(
        ["llm-as-judge", "faithfulness"], runs=third.run_id, keep=True, providers=providers
    )
    prompts = _runs_extra(store, rescored)["prompts"]
    assert prompts == {
        "llm-as-judge": [bumped.key],
        "faithfulness": [PROMPTS["rag.claims"].key, PROMPTS["rag.grounding"].key],
    }
    assert _runs_extra(store, rescored)["rescore"]["copied"] == ["llm-as-judge", "exact-match"]
    store.close()


def test_a_streamed_run_records_its_prompt_versions(
    openai_stub: StubOpenAI, tmp_path: Path
) -> None:
    folder = tmp_path / "outputs"
    folder.mkdir()
    pl.DataFrame(
        {"sample_id": list(OUTPUTS), "actual_output": list(OUTPUTS.values())}
    ).write_parquet(folder / "part-0.parquet")
    store = Store(tmp_path / "runs.duckdb")
    providers = Providers(judge=_judge(openai_stub), cache=False)
    run_id = store.score_outputs(_dataset(), folder, ["llm-as-judge"], providers=providers)
    extra = _runs_extra(store, run_id)
    assert extra["prompts"] == {"llm-as-judge": [judge.LLM_JUDGE.key]}
    assert extra["outputs"] == "saved"  # the streamed run's own record is kept
    store.close()
