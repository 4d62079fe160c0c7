"""The RAG family from the command line: prompts listed, contexts read from saved outputs,
kept out of reports unless --include-evidence, and a rescore answered from the cache."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from openai_stub import StubOpenAI
from rag_script import VERDICT

from evalframe.cli import cli
from evalframe.metrics._rag_prompts import GROUNDING
from evalframe.providers import ENV


@pytest.fixture(autouse=True)
def _no_provider_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV.values():
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def stub() -> Iterator[StubOpenAI]:
    with StubOpenAI(verdict=VERDICT) as server:
        yield server


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    dataset = tmp_path / "rag.jsonl"
    dataset.write_text(
        json.dumps(
            {
                "id": "paris",
                "input": {"question": "Where is Paris located"},
                "expected_output": "Paris is in France",
            }
        )
        + "\n"
    )
    outputs = tmp_path / "outputs.json"
    outputs.write_text(
        json.dumps(
            {
                "outputs": [
                    {
                        "id": "paris",
                        "actual_output": "Paris is in France",
                        "contexts": [{"id": "doc-1", "text": "SECRET-DOC: Paris is in France"}],
                    }
                ]
            }
        )
    )
    return dataset, outputs


def test_metrics_prompts_lists_every_rag_prompt_with_its_version() -> None:
    code, out, err = invoke("metrics", "--prompts", "--format", "json")
    assert code == 0, err
    rows = {r["id"]: r for r in json.loads(out)}
    assert {"rag.claims", "rag.grounding", "rag.correctness", "rag.entities"} <= set(rows)
    assert rows["rag.grounding"]["key"] == GROUNDING.key == "rag.grounding@v2"
    assert rows["rag.claims"]["reply_schema"]["required"] == ["claims"]
    code, out, _ = invoke("metrics", "--prompts")
    assert code == 0
    assert GROUNDING.key in out


def test_contexts_stay_out_of_reports_unless_asked(
    files: tuple[Path, Path], stub: StubOpenAI, tmp_path: Path
) -> None:
    dataset, outputs = files
    db = tmp_path / "runs.duckdb"
    cache = tmp_path / "cache.duckdb"
    base = ["run", str(dataset), "--outputs", str(outputs), "-m", "faithfulness"]
    base += ["-m", "context-precision", "--judge-base-url", stub.url, "--judge-model", "m"]
    base += ["--cache", str(cache), "--format", "json"]
    code, out, err = invoke(*base, "--store", str(db))
    assert code == 0, err
    report = json.loads(out)
    assert "SECRET-DOC" not in out
    assert "evidence" not in report
    scores = report["samples"][0]["scores"]
    assert scores["faithfulness"]["score"] == 1.0
    assert scores["context-precision"]["details"]["relevant_ranks"] == [1]
    calls = len(stub.calls("chat/completions"))
    assert calls == 2  # claims of the one distinct text, then one grounding call

    code, out, err = invoke(*base, "--include-evidence")
    assert code == 0, err
    assert len(stub.calls("chat/completions")) == calls  # the cache answered every prompt
    evidence = json.loads(out)["evidence"]
    assert evidence == [
        {
            "id": "paris",
            "repetition": 0,
            "contexts": ["SECRET-DOC: Paris is in France"],
            "context_ids": ["doc-1"],
        }
    ]

    run_id = report["run_id"]
    code, out, err = invoke("report", run_id, "--store", str(db), "--format", "json")
    assert code == 0, err
    assert "SECRET-DOC" not in out
    code, out, err = invoke(
        "report", run_id, "--store", str(db), "--format", "json", "--include-evidence"
    )
    assert code == 0, err
    assert json.loads(out)["evidence"][0]["contexts"] == ["SECRET-DOC: Paris is in France"]

    code, out, err = invoke(
        "rescore",
        "--store",
        str(db),
        "-m",
        "context-recall",
        "--runs",
        run_id,
        "--judge-base-url",
        stub.url,
        "--judge-model",
        "m",
        "--cache",
        str(cache),
    )
    assert code == 0, err
    # context-recall reads the same claims and grounding replies: zero new calls
    assert len(stub.calls("chat/completions")) == calls
