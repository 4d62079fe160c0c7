"""Importers: files the real tools wrote (tests/data/peers/<tool>/, made by
scripts/peers/make_peer_files.sh; each folder's VERSIONS names the tool versions) converted
to an evalframe dataset and saved outputs, and rescored here against the tools' own verdicts."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

import evalframe as ef
from evalframe.cli import cli
from evalframe.core._errors import DatasetError

PEERS = Path(__file__).parent / "data" / "peers"


def _verdicts(dataset: Path | ef.Dataset, outputs: Path | pl.DataFrame, metric: str) -> dict:
    run = ef.evaluate(dataset, outputs=outputs, metrics=[metric])
    return dict(run.scores.select("sample_id", "passed").iter_rows())


def _convert(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["convert", *args])
    return result.exit_code, result.stdout, result.stderr


# --- Inspect ----------------------------------------------------------------------------------


def _inspect_log() -> dict:
    return json.loads((PEERS / "inspect" / "capitals.json").read_text("utf-8"))


@pytest.mark.parametrize("log", ["capitals.eval", "capitals.json"])
def test_inspect_logs_both_formats_every_epoch_any_of_targets(tmp_path: Path, log: str) -> None:
    source = PEERS / "inspect" / log
    if log.endswith(".eval"):  # Inspect's default format: a zip archive, Zstandard members
        with zipfile.ZipFile(source) as archive:
            assert {i.compress_type for i in archive.infolist()} == {93}
    to, outs = tmp_path / "i.yaml", tmp_path / "i.outputs.json"
    imported = ef.io.from_inspect(source, to=to, outputs=outs)
    assert imported.dataset.name == "capitals"
    dataset = ef.read_dataset(to)
    assert dataset.get_column("sample_id").to_list() == ["fr", "de", "it"]  # the task's order
    meta = {s: json.loads(m) for s, m in dataset.select("sample_id", "metadata").iter_rows()}
    # a target list is any of its items, carried whole
    assert meta["de"]["expected_any"] == ["Berlin", "the city of Berlin"]
    assert meta["it"]["expected_any"] == ["Rome", "Roma"]
    assert "expected_any" not in meta["fr"]
    assert meta["it"]["inspect_scores"] == {
        "epoch1": {"includes": "C"},
        "epoch2": {"includes": "I"},
    }
    assert meta["it"]["inspect_metadata"] == {"region": "south"}
    logged = _inspect_log()["samples"]
    assert imported.variant_files == {"epoch1": outs, "epoch2": tmp_path / "i.outputs.epoch2.json"}
    for epoch in (1, 2):
        frame = imported.variants[f"epoch{epoch}"]
        want = {s["id"]: s["output"]["completion"] for s in logged if s["epoch"] == epoch}
        assert dict(frame.select("sample_id", "actual_output").iter_rows()) == want
        # includes() is a case-insensitive substring check over any of the targets
        theirs = {
            s["id"]: s["scores"]["includes"]["value"] == "C" for s in logged if s["epoch"] == epoch
        }
        assert (
            _verdicts(to, imported.variant_files[f"epoch{epoch}"], "contains(case_sensitive=false)")
            == theirs
        )
    entries = {e["id"]: e for e in json.loads(outs.read_text())["outputs"]}
    assert entries["de"]["trajectory"] == {
        "tool_calls": [{"name": "lookup", "arguments": {"country": "Germany"}, "result": "Berlin"}],
        "steps": 2,
        "finish_reason": "stop",
    }


def test_inspect_both_formats_convert_to_the_same_dataset(tmp_path: Path) -> None:
    first = ef.io.from_inspect(PEERS / "inspect" / "capitals.eval")
    second = ef.io.from_inspect(PEERS / "inspect" / "capitals.json")
    assert first.dataset_document == second.dataset_document
    assert first.variants["epoch2"].equals(second.variants["epoch2"])


def test_a_damaged_eval_archive_names_the_member(tmp_path: Path) -> None:
    data = bytearray((PEERS / "inspect" / "capitals.eval").read_bytes())
    with zipfile.ZipFile(PEERS / "inspect" / "capitals.eval") as archive:
        info = archive.getinfo("header.json")
    at = info.header_offset + 30 + len(info.filename) + len(info.extra) + 20
    data[at] ^= 0xFF
    bad = tmp_path / "bad.eval"
    bad.write_bytes(bytes(data))
    code, _, err = _convert("--from", "inspect", str(bad), "--to", str(tmp_path / "x.yaml"))
    assert code == 2
    assert f"{bad}: header.json" in err


# --- promptfoo --------------------------------------------------------------------------------


def _promptfoo_results() -> list[dict]:
    return json.loads((PEERS / "promptfoo" / "results.json").read_text("utf-8"))["results"][
        "results"
    ]


@pytest.mark.parametrize("results", ["results.json", "results.jsonl"])
def test_promptfoo_one_set_per_pair_with_its_verdicts(tmp_path: Path, results: str) -> None:
    to, outs = tmp_path / "p.yaml", tmp_path / "p.out.json"
    imported = ef.io.from_promptfoo(PEERS / "promptfoo" / results, to=to, outputs=outs)
    logged = _promptfoo_results()
    columns = json.loads((PEERS / "promptfoo" / "results.json").read_text("utf-8"))["results"]
    columns = columns["prompts"]  # promptfoo's (prompt, provider) columns, promptIdx order
    assert len(columns) == 6
    # one set per pair, in column order; openai:gpt-4, openai/gpt-4 and openai gpt-4 each
    # keep their own file
    labels = list(imported.variants)
    assert len(set(labels)) == 6
    assert len({p.name for p in imported.variant_files.values()}) == 6
    assert all(path.exists() for path in imported.variant_files.values())
    assert all(label.startswith(("Capital-of-country--openai-gpt-4-", "long-form--openai-gpt-4-"))
               for label in labels)  # fmt: skip
    dataset = ef.read_dataset(to)
    meta = {s: json.loads(m) for s, m in dataset.select("sample_id", "metadata").iter_rows()}
    for column, label in enumerate(labels):
        mine = [r for r in logged if r["promptIdx"] == column]
        frame = imported.variants[label]
        assert dict(frame.select("sample_id", "actual_output").iter_rows()) == {
            str(r["testIdx"]): r["response"]["output"] for r in mine
        }
        for r in mine:  # each pair's own verdicts, kept per test
            verdict = meta[str(r["testIdx"])]["promptfoo"]["verdicts"][label]
            assert verdict["success"] == r["success"]
            assert verdict["score"] == r["score"]
            assert [a["type"] for a in verdict["assertions"]] == [
                c["assertion"]["type"] for c in r["gradingResult"]["componentResults"]
            ]
        # rescored here with the mapped metrics, the verdicts agree with promptfoo's on the
        # tests whose assertions all map (test 3 also asserts javascript and not-contains)
        for r in mine:
            metric = meta[str(r["testIdx"])]["promptfoo"]["metrics"][0]
            sample = dataset.filter(pl.col("sample_id") == str(r["testIdx"]))
            answer = frame.filter(pl.col("sample_id") == str(r["testIdx"]))
            ours = _verdicts(ef.Dataset.from_frame(sample, name="one"), answer, metric)
            if r["testIdx"] != 3:
                assert ours == {str(r["testIdx"]): r["success"]}, (label, r["testIdx"])
    # the mapping: icontains is contains(case_sensitive=false), contains-any any-of answers
    assert meta["1"]["promptfoo"]["metrics"] == ["contains(case_sensitive=false)"]
    assert meta["2"]["promptfoo"]["metrics"] == ["contains"]
    assert meta["2"]["expected_any"] == ["Rome", "Italy"]
    assert meta["3"]["promptfoo"]["metrics"] == ["exact-match"]
    # unmappable assertion types are named, never dropped silently
    assert any("javascript (test 3)" in n and "not-contains (test 3)" in n for n in imported.notes)


def test_promptfoo_json_and_jsonl_give_the_same_names_and_data() -> None:
    first = ef.io.from_promptfoo(PEERS / "promptfoo" / "results.json")
    second = ef.io.from_promptfoo(PEERS / "promptfoo" / "results.jsonl")
    assert list(first.variants) == list(second.variants)
    assert first.dataset_document["samples"] == second.dataset_document["samples"]


def test_promptfoo_uniform_assertions_become_the_dataset_metrics(tmp_path: Path) -> None:
    results = _promptfoo_results()
    kept = [r for r in results if r["testIdx"] in (1,)]  # only icontains tests
    source = tmp_path / "one.json"
    source.write_text(json.dumps({"results": {"results": kept}}), encoding="utf-8")
    imported = ef.io.from_promptfoo(source, to=tmp_path / "d.yaml", outputs=tmp_path / "o.json")
    assert imported.dataset.metrics == ["contains(case_sensitive=false)"]
    assert imported.notes == ()


def test_convert_lists_every_set_and_the_notes(tmp_path: Path) -> None:
    code, out, err = _convert(
        "--from", "promptfoo", str(PEERS / "promptfoo" / "results.json"),
        "--to", str(tmp_path / "p.yaml"), "--outputs", str(tmp_path / "out.json"),
    )  # fmt: skip
    assert code == 0, err
    assert "6 sets of outputs, one file each:" in out
    assert "note: promptfoo assertions with no evalframe metric" in err


# --- Ragas ------------------------------------------------------------------------------------


@pytest.mark.parametrize("file", ["single_turn.csv", "single_turn.jsonl", "scores.csv"])
def test_ragas_lists_and_empty_responses_read_exactly(tmp_path: Path, file: str) -> None:
    outs = tmp_path / "o.json"
    imported = ef.io.from_ragas(PEERS / "ragas" / file, to=tmp_path / "d.yaml", outputs=outs)
    truth = [
        json.loads(x)
        for x in (PEERS / "ragas" / "single_turn.jsonl").read_text("utf-8").splitlines()
    ]
    entries = json.loads(outs.read_text())["outputs"]
    assert [e["actual_output"] for e in entries] == [t["response"] for t in truth]  # "" kept
    assert [e["contexts"] for e in entries] == [t["retrieved_contexts"] for t in truth]
    assert imported.dataset.get_column("expected_output").to_list() == ["Paris", "Berlin", "Rome"]


def test_ragas_scores_become_metadata(tmp_path: Path) -> None:
    imported = ef.io.from_ragas(PEERS / "ragas" / "scores.csv")
    theirs = pl.read_csv(PEERS / "ragas" / "scores.csv")
    meta = [json.loads(m) for m in imported.dataset.get_column("metadata")]
    for row, m in zip(theirs.iter_rows(named=True), meta, strict=True):
        assert m["ragas_scores"] == {
            k: row[k] for k in ("exact_match", "string_present", "non_llm_string_similarity")
        }


def test_ragas_01_columns_and_multi_turn(tmp_path: Path) -> None:
    old = ef.io.from_ragas(PEERS / "ragas" / "v01_columns.csv", outputs=None)
    assert old.outputs is not None
    entries = old.outputs_document["outputs"]  # type: ignore[index]
    assert entries[0]["contexts"] == [
        "Paris is the capital of France.",
        'France\'s capital is "Paris".',
    ]
    assert entries[1]["contexts"] == []  # [] is no passage, not one passage "[]"
    multi = ef.io.from_ragas(PEERS / "ragas" / "multi_turn.jsonl", outputs=tmp_path / "m.json")
    entry = json.loads((tmp_path / "m.json").read_text())["outputs"][0]
    assert [t["role"] for t in entry["turns"]] == ["user", "assistant", "tool", "assistant"]
    assert entry["actual_output"] == "It is 18 C and sunny in Paris."
    assert multi.outputs is not None
    assert "turns" in multi.outputs.columns


def test_ragas_without_known_columns_names_what_it_found(tmp_path: Path) -> None:
    source = tmp_path / "x.csv"
    source.write_text("q,a\nhi,there\n", encoding="utf-8")
    code, _, err = _convert("--from", "ragas", str(source), "--to", str(tmp_path / "x.yaml"))
    assert code == 2
    assert "found: q, a" in err


def test_ragas_list_text_is_never_evaluated(tmp_path: Path) -> None:
    source = tmp_path / "x.csv"
    source.write_text("user_input,retrieved_contexts\nhi,\"__import__('os').getcwd()\"\n", "utf-8")
    code, _, err = _convert("--from", "ragas", str(source), "--to", str(tmp_path / "x.yaml"))
    assert code == 2
    assert "row 0 column 'retrieved_contexts' is not a list as Ragas writes one" in err


# --- DeepEval ---------------------------------------------------------------------------------


@pytest.mark.parametrize("file", ["test_cases.json", "test_cases.jsonl", "test_cases.csv"])
def test_deepeval_every_form_splits_what_deepeval_splits(tmp_path: Path, file: str) -> None:
    to, outs = tmp_path / "d.yaml", tmp_path / "o.json"
    ef.io.from_deepeval(PEERS / "deepeval" / file, to=to, outputs=outs)
    truth = json.loads((PEERS / "deepeval" / "test_cases.json").read_text("utf-8"))
    entries = json.loads(outs.read_text())["outputs"]
    assert [e["contexts"] for e in entries] == [t["retrieval_context"] for t in truth]
    assert entries[0]["trajectory"] == {
        "tool_calls": [{"name": "policy_search", "arguments": {"topic": "returns"}}]
    }
    meta = [json.loads(m) for m in ef.read_dataset(to).get_column("metadata")]
    assert meta[0]["context"] == ["Returns policy, section 2"]
    assert meta[0]["additional_metadata"] == {"team": "support"}
    assert _verdicts(to, outs, "contains") == {"0": True, "1": False}


@pytest.mark.parametrize("file", ["goldens.json", "goldens.jsonl", "goldens.csv"])
def test_deepeval_goldens(file: str) -> None:
    imported = ef.io.from_deepeval(PEERS / "deepeval" / file)
    assert imported.outputs is None
    meta = json.loads(imported.dataset.get_column("metadata")[0])
    assert meta["context"] == ["Shipping policy", "International rates"]


def test_deepeval_goldens_beside_test_cases_both_run(tmp_path: Path) -> None:
    to, outs = tmp_path / "m.yaml", tmp_path / "m.json"
    code, out, err = _convert("--from", "deepeval", str(PEERS / "deepeval" / "mixed.json"),
                              "--to", str(to), "--outputs", str(outs))  # fmt: skip
    assert code == 0, err
    rest = tmp_path / "m.no-outputs.yaml"
    assert f"2 sample(s) without an output (goldens) went to {rest}" in out
    result = CliRunner().invoke(cli, ["run", str(to), "--outputs", str(outs), "-m", "contains"])
    assert result.exit_code == 0, result.output
    goldens = ef.read_dataset(rest)
    assert goldens.get_column("expected_output").to_list() == [
        "Yes, to 40 countries.",
        "Yes, for business accounts.",
    ]
    run = ef.evaluate(rest, system=lambda _: "Yes, to 40 countries.", metrics=["exact-match"])
    assert run.scores.get_column("score").to_list() == [1.0, 0.0]


# --- Hugging Face -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "split"),
    [
        ("squad_dict", "validation"),
        ("squad_validation.parquet", None),
        ("squad_validation.jsonl", None),
        ("squad_validation.json", None),
    ],
)
def test_hf_squad_answers_any_of(tmp_path: Path, source: str, split: str | None) -> None:
    imported = ef.io.from_hf(PEERS / "hf" / source, split=split, to=tmp_path / "s.yaml")
    dataset = ef.read_dataset(tmp_path / "s.yaml")
    assert dataset.get_column("sample_id").to_list() == ["v1", "v2"]
    meta = [json.loads(m) for m in dataset.get_column("metadata")]
    assert meta[0]["expected_any"] == ["Paris", "the city of Paris"]
    assert meta[1]["expected_any"] == []  # unanswerable, as SQuAD 2.0 has them
    assert json.loads(dataset.get_column("input")[0])["context"].startswith("Paris is")
    run = ef.evaluate(
        dataset, outputs={"v1": "the city of Paris", "v2": "x"}, metrics=["exact-match"]
    )
    scores = dict(run.scores.select("sample_id", "score").iter_rows())
    assert scores["v1"] == 1.0
    assert scores["v2"] is None  # no answer: an error, never a 0
    assert imported.dataset.height == 2


def test_hf_split_and_map_paths(tmp_path: Path) -> None:
    train = ef.io.from_hf(PEERS / "hf" / "squad_dict", split="train")
    assert train.dataset.get_column("sample_id").to_list() == ["t1"]
    default = ef.io.from_hf(PEERS / "hf" / "squad_dict")  # no test split: the first
    assert default.dataset.get_column("sample_id").to_list() == ["t1"]
    code, _, err = _convert("--from", "hf", str(PEERS / "hf" / "squad_dict"), "--split", "test",
                            "--to", str(tmp_path / "x.yaml"))  # fmt: skip
    assert code == 2
    assert "no split 'test'; it has: train, validation" in err
    first = ef.io.from_hf(
        PEERS / "hf" / "squad_validation.parquet",
        mapping={"answers.text.0": "expected_output", "answers.answer_start": "metadata.starts"},
    )
    assert first.dataset.get_column("expected_output").to_list() == ["Paris", "null"]
    meta = json.loads(first.dataset.get_column("metadata")[0])
    assert meta["starts"] == [0, 57]
    folder = tmp_path / "exported"
    folder.mkdir()
    for name in ("squad_train.parquet", "squad_validation.parquet"):
        (folder / name).write_bytes((PEERS / "hf" / name).read_bytes())
    picked = ef.io.from_hf(folder, split="validation")
    assert picked.dataset.get_column("sample_id").to_list() == ["v1", "v2"]


# --- hostile and wrong input ------------------------------------------------------------------


def test_deep_nesting_and_wrong_types_are_exit_2_naming_file_record_field(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text('{"results": {"results": [' + "[" * 5000 + "]" * 5000 + "]}}", "utf-8")
    code, _, err = _convert("--from", "promptfoo", str(deep), "--to", str(tmp_path / "x.yaml"))
    assert code == 2
    assert f"{deep}: JSON nests lists and maps more than 100 levels deep" in err
    result = _promptfoo_results()[0]
    bad = tmp_path / "numeric.json"
    bad.write_text(json.dumps({"results": {"results": [{**result, "provider": 7}]}}), "utf-8")
    code, _, err = _convert("--from", "promptfoo", str(bad), "--to", str(tmp_path / "x.yaml"))
    assert code == 2
    assert f"{bad}: result 0 field 'provider' must be" in err
    for tool, text in [
        ("deepeval", '[{"input": "q", "retrieval_context": 5}]'),
        ("inspect", '{"samples": [{"id": "a", "input": 3}]}'),
        ("ragas", "[" + "[" * 200 + "]" * 200 + "]"),
    ]:
        source = tmp_path / f"{tool}.json"
        source.write_text(text, "utf-8")
        code, _, err = _convert("--from", tool, str(source), "--to", str(tmp_path / "x.yaml"))
        assert code == 2, (tool, err)
        assert str(source) in err
        assert "Traceback" not in err


def test_hand_written_csv_contexts_of_one_passage_are_refused_not_guessed(tmp_path: Path) -> None:
    source = tmp_path / "ragas.csv"
    source.write_text("user_input,retrieved_contexts\nq,just one passage\n", "utf-8")
    with pytest.raises(DatasetError, match="is not a list as Ragas writes one"):
        ef.io.from_ragas(source)


def test_converted_text_that_yaml_reads_as_another_type_stays_text(tmp_path: Path) -> None:
    """Strings YAML would read as numbers, booleans or dates, and several lines, survive
    the written dataset file exactly (the converter writes YAML the reader reads back)."""
    texts = ["0o17", "1_000", "yes", "2026-01-01", "0x1F", "~", "a\nb  \n", "null", "+.inf"]
    rows = [{"user_input": t, "response": t, "reference": t} for t in texts]
    source = tmp_path / "r.jsonl"
    source.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    imported = ef.io.from_ragas(source, to=tmp_path / "d.yaml", outputs=tmp_path / "o.json")
    assert imported.dataset.get_column("expected_output").to_list() == texts
    questions = [json.loads(q)["question"] for q in imported.dataset.get_column("input")]
    assert questions == texts  # read back from d.yaml
