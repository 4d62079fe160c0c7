"""Trajectories and turns as data: readers, the system under test, the recorder, the store."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import polars as pl
import pytest

import evalframe as ef
from evalframe.core._trajectory import TRAJECTORY
from evalframe.core._turns import TURNS

DATASET = {
    "name": "agents",
    "samples": [
        {
            "id": "a",
            "input": {"question": "book"},
            "expected_output": "booked",
            "metadata": {"trajectory": {"tools": ["search", "book"], "max_steps": 3}},
        },
        {"id": "b", "input": {"question": "hi"}, "expected_output": "hello"},
    ],
}
TRAJ_A = {
    "tool_calls": [
        {"name": "search", "arguments": {"q": "flights", "n": 3}, "result": "3 hits"},
        {"tool": "book", "args": {"id": 7}, "error": {"code": 500}, "latency_ms": 12.5},
    ],
    "finish_reason": "stop",
    "approvals": ["pay", 7],
    "pending_approvals": 1,
}


def _dataset(tmp_path: Path) -> ef.Dataset:
    path = tmp_path / "agents.json"
    path.write_text(json.dumps(DATASET))
    return ef.read_dataset(path)


def _expected_a() -> dict[str, object]:
    return {
        "tool_calls": [
            {
                "name": "search",
                "arguments": '{"q":"flights","n":3}',
                "result": "3 hits",
                "error": None,
                "latency_ms": None,
                "tokens": None,
            },
            {
                "name": "book",
                "arguments": '{"id":7}',
                "result": None,
                "error": '{"code":500}',
                "latency_ms": 12.5,
                "tokens": None,
            },
        ],
        "steps": 2,
        "finish_reason": "stop",
        "approvals": ["pay", "7"],
        "pending_approvals": 1,
    }


def test_saved_outputs_list_form_reads_both_tool_call_forms(tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    entries = [
        {"id": "a", "actual_output": "booked", "trajectory": TRAJ_A},
        {
            "id": "b",
            "actual_output": "hello",
            "trajectory": {"tool_calls": ["greet"], "steps": "4"},
        },
    ]
    path.write_text(json.dumps({"outputs": entries}))
    frame = ef.read_outputs(path)
    assert frame.schema["trajectory"] == TRAJECTORY
    rows = frame.get_column("trajectory").to_list()
    assert rows[0] == _expected_a()
    assert rows[1]["tool_calls"][0]["name"] == "greet"
    assert rows[1]["steps"] == 4  # a digit string is a count
    assert rows[1]["pending_approvals"] == 0


def test_outputs_without_trajectories_have_no_column(tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    path.write_text(json.dumps({"outputs": {"a": "x", "b": "y"}}))
    assert "trajectory" not in ef.read_outputs(path).columns


def test_jsonl_and_parquet_columns_carry_trajectories_as_json_text(tmp_path: Path) -> None:
    jsonl = tmp_path / "out.jsonl"
    jsonl.write_text(
        json.dumps({"sample_id": "a", "actual_output": "booked", "trajectory": TRAJ_A})
        + "\n"
        + json.dumps({"sample_id": "b", "actual_output": "hello"})
        + "\n"
    )
    from_jsonl = ef.read_outputs(jsonl).get_column("trajectory").to_list()
    assert from_jsonl == [_expected_a(), None]
    parquet = tmp_path / "out.parquet"
    pl.DataFrame(
        {
            "sample_id": ["a", "b"],
            "actual_output": ["booked", "hello"],
            "trajectory": [json.dumps(TRAJ_A), None],
        }
    ).write_parquet(parquet)
    assert ef.read_outputs(parquet).get_column("trajectory").to_list() == from_jsonl


def test_turns_column_in_outputs(tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    turns = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello", "latency_ms": 5, "tokens": 9,
         "tool_calls": ["lookup"]},
    ]  # fmt: skip
    path.write_text(json.dumps({"outputs": [{"id": "a", "actual_output": "x", "turns": turns}]}))
    frame = ef.read_outputs(path)
    assert frame.schema["turns"] == TURNS
    got = frame.get_column("turns").to_list()[0]
    assert [t["role"] for t in got] == ["user", "assistant"]
    assert got[1]["latency_ms"] == 5.0
    assert got[1]["tokens"] == 9
    assert got[1]["tool_calls"][0]["name"] == "lookup"


@pytest.mark.parametrize(
    ("trajectory", "field"),
    [
        ([1, 2], "'trajectory' must be an object; got list"),
        ({"tool_calls": "search"}, "'trajectory.tool_calls' must be a list; got str"),
        ({"tool_calls": [{"arguments": {}}]}, "'trajectory.tool_calls[0].name'"),
        ({"tool_calls": [{"name": "s", "arguments": [1]}]}, "'trajectory.tool_calls[0].arguments'"),
        ({"tool_calls": [], "steps": -1}, "'trajectory.steps' must be a non-negative integer"),
        ({"approvals": "pay"}, "'trajectory.approvals' must be a list"),
        ({"tool_calls": [{"name": "s", "latency_ms": "fast"}]}, "tool_calls[0].latency_ms"),
    ],
)
def test_bad_trajectory_shapes_name_file_sample_and_field(
    tmp_path: Path, trajectory: object, field: str
) -> None:
    path = tmp_path / "out.json"
    path.write_text(
        json.dumps({"outputs": [{"id": "a", "actual_output": "x", "trajectory": trajectory}]})
    )
    with pytest.raises(ef.DatasetError) as info:
        ef.read_outputs(path)
    message = str(info.value)
    assert str(path) in message
    assert "sample 'a'" in message
    assert field in message


@pytest.mark.parametrize(
    ("block", "field"),
    [
        ("search", "'metadata.trajectory' must be a map"),
        ({"tools": 3}, "'metadata.trajectory.tools' must be a tool name or a list"),
        ({"order": "a"}, "'metadata.trajectory.order' must be a list of strings"),
        ({"max_steps": "many"}, "'metadata.trajectory.max_steps' must be an integer"),
        ({"tool_arguments": {"tool": "x"}}, "'metadata.trajectory.tool_arguments' must be a list"),
        ({"forbidden_tools": [1]}, "'metadata.trajectory.forbidden_tools'"),
    ],
)
def test_bad_expectations_are_dataset_errors_naming_file_sample_and_field(
    tmp_path: Path, block: object, field: str
) -> None:
    doc = {
        "name": "d",
        "samples": [
            {"id": "ok", "input": {}, "expected_output": "x"},
            {"id": "q7", "input": {}, "expected_output": "x", "metadata": {"trajectory": block}},
        ],
    }
    path = tmp_path / "d.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ef.DatasetError) as info:
        ef.read_dataset(path)
    message = str(info.value)
    assert "Sample 'q7' (index 1)" in message
    assert field in message


def test_system_returning_output_and_trajectory(tmp_path: Path) -> None:
    def agent(inp: dict[str, object]) -> dict[str, object]:
        if inp["question"] == "book":
            return {"output": "booked", "trajectory": TRAJ_A}
        return {"output": "hello"}

    run = ef.evaluate(_dataset(tmp_path), system=agent, metrics=["tool-called"])
    assert run.frame.get_column("actual_output").to_list() == ["booked", "hello"]
    assert run.frame.get_column("trajectory").to_list() == [_expected_a(), None]


def test_system_with_a_bad_trajectory_is_that_samples_error(tmp_path: Path) -> None:
    run = ef.evaluate(
        _dataset(tmp_path),
        system=lambda inp: {"output": "x", "trajectory": {"steps": "many"}},
        metrics=["exact-match"],
    )
    errors = run.frame.get_column("system_error").to_list()
    assert all("'trajectory.steps' must be a non-negative integer" in e for e in errors)


def test_a_non_finite_number_in_a_tool_call_is_that_samples_error_naming_the_field(
    tmp_path: Path,
) -> None:
    """JSON has no NaN or Infinity: Python's encoder refuses them, so the reader names them."""
    bad = {"tool_calls": [{"name": "s", "result": float("inf")}]}
    run = ef.evaluate(
        _dataset(tmp_path),
        system=lambda inp: {"output": "x", "trajectory": bad},
        metrics=["exact-match"],
    )
    errors = run.frame.get_column("system_error").to_list()
    assert all("'trajectory.tool_calls[0].result' holds NaN or an infinity" in e for e in errors)
    path = tmp_path / "out.jsonl"
    line = '{"id": "a", "actual_output": "x", "trajectory": {"tool_calls": [{"name": "s", '
    path.write_text(line + '"arguments": {"q": NaN}}]}}\n')
    with pytest.raises(ef.DatasetError) as info:
        ef.read_outputs(path)
    assert str(path) in str(info.value)
    assert "sample 'a'" in str(info.value)


def test_recorder_is_per_call_across_repetitions_and_threads(tmp_path: Path) -> None:
    barrier = threading.Barrier(2)

    def agent(inp: dict[str, object]) -> str:
        question = str(inp["question"])
        ef.trajectory.record("search", {"q": question})
        barrier.wait(timeout=30)  # both samples are inside the system at once
        ef.trajectory.record(question, result="done", tokens=3)
        ef.trajectory.record(finish_reason="stop", approval=f"ok-{question}")
        return question

    run = ef.evaluate(
        _dataset(tmp_path), system=agent, metrics=["exact-match"], repetitions=2, concurrency=2
    )
    rows = run.frame.select("sample_id", "repetition", "trajectory").rows()
    assert len(rows) == 4
    for sample_id, _, trajectory in rows:
        question = "book" if sample_id == "a" else "hi"
        assert [c["name"] for c in trajectory["tool_calls"]] == ["search", question]
        assert trajectory["tool_calls"][0]["arguments"] == json.dumps(
            {"q": question}, separators=(",", ":")
        )
        assert trajectory["tool_calls"][1]["tokens"] == 3
        assert trajectory["steps"] == 2
        assert trajectory["approvals"] == [f"ok-{question}"]


def test_record_outside_a_system_call_does_nothing() -> None:
    from evalframe.core._trajectory import recording

    ef.trajectory.record("search", {"q": 1}, steps=4)  # no error, nothing kept
    with recording() as recorder:
        assert recorder.block() is None  # a later call starts empty


def test_a_system_that_records_nothing_has_no_trajectory(tmp_path: Path) -> None:
    run = ef.evaluate(_dataset(tmp_path), system=lambda inp: "x", metrics=["exact-match"])
    assert "trajectory" not in run.frame.columns


def _run_with_trajectories(tmp_path: Path, metrics: tuple[str, ...] = ("tool-called",)) -> ef.Run:
    path = tmp_path / "out.json"
    turns = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    entries = [
        {"id": "a", "actual_output": "booked", "trajectory": TRAJ_A},
        {"id": "b", "actual_output": "hello", "turns": turns},
    ]
    path.write_text(json.dumps({"outputs": entries}))
    return ef.evaluate(_dataset(tmp_path), outputs=path, metrics=list(metrics))


def test_store_round_trip_views_and_export_import(tmp_path: Path) -> None:
    run = _run_with_trajectories(tmp_path)
    store = ef.Store(tmp_path / "s.duckdb")
    store.save(run)
    back = store.load(run.run_id)
    assert back.frame.schema["trajectory"] == TRAJECTORY
    assert back.frame.schema["turns"] == TURNS
    assert back.frame.get_column("trajectory").to_list() == [_expected_a(), None]
    assert back.frame.get_column("turns").equals(run.frame.get_column("turns"))
    calls = store.sql("SELECT * FROM tool_calls ORDER BY position")
    assert calls.select("sample_id", "position", "name", "arguments", "error").rows() == [
        ("a", 0, "search", '{"q":"flights","n":3}', None),
        ("a", 1, "book", '{"id":7}', '{"code":500}'),
    ]
    assert calls.get_column("latency_ms").to_list() == [None, 12.5]
    summary = store.sql("SELECT * FROM trajectories")
    assert summary.select(
        "run_id", "sample_id", "steps", "finish_reason", "approvals", "pending_approvals"
    ).rows() == [(run.run_id, "a", 2, "stop", ["pay", "7"], 1)]
    # The trajectory is a table of its own, not a copy kept in the outputs' extra JSON.
    extra = store.sql("SELECT extra FROM outputs ORDER BY sample_id").get_column("extra")
    assert ["trajectory" in (e or "") for e in extra] == [False, False]
    assert store.sql("SELECT n_tool_calls FROM run_trajectories").item() == 2
    exported = store.export([run.run_id], tmp_path / "export")
    other = ef.Store(tmp_path / "other.duckdb")
    assert other.import_runs(exported) == [run.run_id]
    assert other.sql("SELECT count(*) AS n FROM tool_calls").item() == 2
    again = other.load(run.run_id)
    assert again.frame.get_column("trajectory").to_list() == [_expected_a(), None]


def test_a_rescored_run_reads_its_sources_trajectories(tmp_path: Path) -> None:
    run = _run_with_trajectories(tmp_path)
    store = ef.Store(tmp_path / "s.duckdb")
    store.save(run)
    both = ("tool-called", "steps-below")
    (rescored,) = store.rescore(list(both), runs=run.run_id, force=True)
    calls = store.sql(
        "SELECT run_id, name FROM tool_calls WHERE run_id = ? ORDER BY position", [rescored]
    )
    assert calls.rows() == [(rescored, "search"), (rescored, "book")]
    assert store.sql("SELECT count(*) FROM trajectories").item() == 1  # shared, not copied
    direct = _run_with_trajectories(tmp_path, both).scores
    got = store.load(rescored).scores
    assert got.drop("run_id").equals(direct.drop("run_id"))
    assert got.get_column("score").to_list()[0] == 1.0  # scored from the trajectory
    # Exported without its source, the rescored run carries its own copy.
    exported = store.export([rescored], tmp_path / "alone")
    other = ef.Store(tmp_path / "other.duckdb")
    assert other.import_runs(exported) == [rescored]
    assert other.sql("SELECT run_id, sample_id FROM trajectories").rows() == [(rescored, "a")]
    assert other.load(rescored).frame.get_column("trajectory").to_list() == [_expected_a(), None]


def test_report_json_adds_trajectory_only_where_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalframe.views._report_build import build_report
    from evalframe.views._report_json import report_json

    monkeypatch.setenv("EVALFRAME_KERNELS", "compiled")  # the writer from frames, not objects
    run = _run_with_trajectories(tmp_path)
    data = report_json(run)
    assert data == build_report(run).to_json().encode("utf-8")
    samples = json.loads(data)["samples"]
    assert "trajectory" not in samples[1]
    assert samples[0]["trajectory"] == {
        "tool_calls": [
            {"name": "search", "arguments": {"q": "flights", "n": 3}, "result": "3 hits"},
            {"name": "book", "arguments": {"id": 7}, "error": '{"code":500}', "latency_ms": 12.5},
        ],
        "steps": 2,
        "finish_reason": "stop",
        "approvals": ["pay", "7"],
        "pending_approvals": 1,
    }
    assert list(samples[0]) == [
        "id", "row_hash", "repetition", "tags", "adversarial", "actual_output", "trajectory",
        "scores",
    ]  # fmt: skip


# --- schema version 2 kept trajectories in outputs.extra ------------------------------------

# Version 2's views over that JSON, as version 2 created them.
_V2_VIEWS = (
    """CREATE VIEW trajectories AS
    SELECT run_id, sample_id, repetition,
           CAST(json_extract(extra, '$.trajectory.steps') AS BIGINT) AS steps,
           json_array_length(extra, '$.trajectory.tool_calls') AS n_tool_calls
    FROM run_outputs WHERE extra IS NOT NULL AND json_type(extra, '$.trajectory') = 'OBJECT'""",
    """CREATE VIEW tool_calls AS
    SELECT run_id, sample_id, repetition,
           unnest(CAST(json_extract(extra, '$.trajectory.tool_calls') AS JSON[])) AS call
    FROM run_outputs
    WHERE extra IS NOT NULL AND json_type(extra, '$.trajectory.tool_calls') = 'ARRAY'""",
)

# Version 2 wrote the frame's extra columns as one JSON object per output, the trajectory
# among them (null where none was recorded), its fields in the dtype's order.
_V2_EXTRA = """
    UPDATE outputs AS o SET extra = '{"trajectory":' || coalesce(
        (SELECT CAST(to_json(struct_pack(tool_calls := t.tool_calls, steps := t.steps,
                finish_reason := t.finish_reason, approvals := t.approvals,
                pending_approvals := t.pending_approvals)) AS VARCHAR)
         FROM trajectories AS t WHERE t.run_id = o.run_id AND t.sample_id = o.sample_id
         AND t.repetition = o.repetition), 'null') || ',' || substr(o.extra, 2)"""


def _v2_file(path: Path, run: ef.Run) -> None:
    """A version-2 store holding ``run``: its trajectories in ``outputs.extra``."""
    import duckdb

    ef.Store(path).save(run)
    con = duckdb.connect(str(path))
    try:
        con.execute(_V2_EXTRA)
        for statement in (
            # version 4's layout undone first: scores and statistics were tables
            "DROP VIEW scores",
            "DROP VIEW sample_stats",
            "ALTER TABLE stored_scores RENAME TO scores",
            "ALTER TABLE stored_sample_stats RENAME TO sample_stats",
            "DROP TABLE run_files",
            "DROP VIEW tool_calls",
            "DROP VIEW run_trajectories",
            "DROP TABLE trajectories",
            *_V2_VIEWS,
            "UPDATE meta SET value = '2' WHERE key = 'schema_version'",
        ):
            con.execute(statement)
    finally:
        con.close()


def test_a_v2_store_moves_its_trajectories_into_their_table(tmp_path: Path) -> None:
    import duckdb

    run = _run_with_trajectories(tmp_path)
    path = tmp_path / "v2.duckdb"
    _v2_file(path, run)
    con = duckdb.connect(str(path), read_only=True)
    kept = con.sql("SELECT extra FROM outputs ORDER BY sample_id").fetchall()
    con.close()
    assert json.loads(kept[0][0])["trajectory"]["tool_calls"][1]["error"] == '{"code":500}'
    store = ef.Store(path)
    assert store.schema_version == ef.store.SCHEMA_VERSION
    assert (
        store.sql(
            "SELECT table_type FROM information_schema.tables WHERE table_name = 'trajectories'"
        ).item()
        == "BASE TABLE"
    )
    assert store.sql("SELECT sample_id, steps, pending_approvals FROM trajectories").rows() == [
        ("a", 2, 1)
    ]
    fresh = ef.Store(tmp_path / "v3.duckdb")
    fresh.save(run)
    statement = "SELECT extra FROM outputs ORDER BY sample_id"
    migrated = [json.loads(e) for e in store.sql(statement).get_column("extra")]
    assert migrated == [json.loads(e) for e in fresh.sql(statement).get_column("extra")]
    assert migrated[0] == {"turns": None}
    back = store.load(run.run_id)
    assert back.frame.get_column("trajectory").to_list() == [_expected_a(), None]
    assert back.scores.equals(run.scores)
    assert store.sql("SELECT name FROM tool_calls ORDER BY position").to_series().to_list() == [
        "search",
        "book",
    ]


def test_an_export_of_schema_version_2_is_imported(tmp_path: Path) -> None:
    from evalframe.store._verify import file_digest

    run = _run_with_trajectories(tmp_path)
    path = tmp_path / "v2.duckdb"
    _v2_file(path, run)
    export = tmp_path / "export"
    # Version 2 exported the outputs table as it was, with no trajectories file.
    ef.Store(tmp_path / "v3.duckdb").save(run)
    ef.Store(tmp_path / "v3.duckdb").export([run.run_id], export)
    import duckdb

    con = duckdb.connect(str(path), read_only=True)
    con.execute(f"COPY outputs TO '{export / 'outputs.parquet'}' (FORMAT parquet)")
    con.close()
    (export / "trajectories.parquet").unlink()
    manifest = json.loads((export / "manifest.json").read_text())
    manifest["schema_version"] = 2
    del manifest["files"]["trajectories"], manifest["rows"]["trajectories"]
    outputs = export / "outputs.parquet"
    manifest["files"]["outputs"].update(bytes=outputs.stat().st_size, sha256=file_digest(outputs))
    (export / "manifest.json").write_text(json.dumps(manifest))
    store = ef.Store(tmp_path / "fresh.duckdb")
    assert store.import_runs(export) == [run.run_id]
    assert store.load(run.run_id).frame.get_column("trajectory").to_list() == [_expected_a(), None]
    assert store.sql("SELECT count(*) FROM outputs WHERE extra LIKE '%trajectory%'").item() == 0


def test_an_import_refuses_a_trajectory_without_its_execution(tmp_path: Path) -> None:
    import duckdb

    from evalframe.store._verify import file_digest

    run = _run_with_trajectories(tmp_path)
    store = ef.Store(tmp_path / "s.duckdb")
    store.save(run)
    export = store.export([run.run_id], tmp_path / "export")
    file = export / "trajectories.parquet"
    con = duckdb.connect()
    con.execute(
        f"COPY (SELECT * REPLACE ('zz' AS sample_id) FROM read_parquet('{file}')) "
        f"TO '{tmp_path / 'edited.parquet'}' (FORMAT parquet)"
    )
    con.close()
    (tmp_path / "edited.parquet").replace(file)
    manifest = json.loads((export / "manifest.json").read_text())
    manifest["files"]["trajectories"].update(bytes=file.stat().st_size, sha256=file_digest(file))
    (export / "manifest.json").write_text(json.dumps(manifest))
    other = ef.Store(tmp_path / "other.duckdb")
    with pytest.raises(
        ef.StoreError,
        match=r"trajectories\.parquet: 1 execution\(s\) are invalid; "
        r"the first, sample 'zz' \(repetition 0\) of run \w+, has no output",
    ):
        other.import_runs(export)
    assert other.sql("SELECT count(*) FROM runs").item() == 0


def test_an_outputs_frame_may_carry_trajectories_as_json_text_or_structs(tmp_path: Path) -> None:
    ds = _dataset(tmp_path)
    as_text = pl.DataFrame(
        {"sample_id": ["a", "b"], "actual_output": ["booked", "hi"],
         "trajectory": [json.dumps(TRAJ_A), None]}
    )  # fmt: skip
    run = ef.evaluate(ds, outputs=as_text, metrics=["tool-called"])
    assert run.frame.schema["trajectory"] == TRAJECTORY
    assert run.frame.get_column("trajectory").to_list() == [_expected_a(), None]
    # Structs Polars inferred from dicts (its own field order and types) are parsed the same.
    plain = {"tool_calls": [{"name": "search", "arguments": {"q": "x"}}], "steps": 2}
    as_structs = as_text.with_columns(pl.Series("trajectory", [plain, None]))
    from_text = as_text.with_columns(pl.Series("trajectory", [json.dumps(plain), None]))
    got = ef.evaluate(ds, outputs=as_structs, metrics=["tool-called"]).frame
    want = ef.evaluate(ds, outputs=from_text, metrics=["tool-called"]).frame
    assert got.get_column("trajectory").equals(want.get_column("trajectory"))
    assert got.get_column("trajectory")[0]["tool_calls"][0]["arguments"] == '{"q":"x"}'
    store = ef.Store(tmp_path / "s.duckdb")
    store.save(run)
    assert store.sql("SELECT count(*) FROM tool_calls").item() == 2
    bad = as_text.with_columns(pl.Series("trajectory", ["[1]", None]))
    with pytest.raises(ef.DatasetError) as excinfo:
        ef.evaluate(ds, outputs=bad, metrics=["tool-called"])
    assert str(excinfo.value) == (
        "Outputs frame row 0 (sample 'a') field 'trajectory' must be an object; got list."
    )


def test_a_system_s_agent_fields_read_by_the_compiled_pass_as_one_by_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from evalframe.core import _turns
    from evalframe.core._system import call_system

    replies: list[object] = [
        {"output": "ok", "trajectory": TRAJ_A},
        {"output": "ok", "trajectory": {"tool_calls": [{"name": " "}]}},  # refused
        {"output": "ok", "trajectory": {"tool_calls": ["a\ud800"]}},  # a lone surrogate
        {"output": "ok", "trajectory": TRAJ_A, "contexts": 5},  # the contexts' error
        {"output": 3, "trajectory": TRAJ_A, "turns": [{"role": ""}]},  # the turns' error first
        {"output": "ok", "turns": [{"role": "user", "content": "hi"}], "confidence": 0.5},
        "plain",
    ]
    frame = pl.DataFrame(
        {"sample_id": [f"s{i}" for i in range(len(replies))], "input": ['{"i": 0}'] * 7}
    ).with_columns(pl.format('{{"i": {}}}', pl.int_range(7)).alias("input"))

    def system(sample: dict[str, int]) -> object:
        return replies[sample["i"]]

    results = []
    for threshold in (10**9, 0):
        monkeypatch.setattr(_turns, "_COMPILED_FROM", threshold)
        monkeypatch.setattr(_turns, "_COLD_FROM", threshold)
        results.append(call_system(frame, system, concurrency=2).drop("latency_ms", "started_at"))
    assert results[1].equals(results[0])
    errors = results[0].get_column("system_error").to_list()
    assert [errors[i] for i in (0, 5, 6)] == [None, None, None]
    assert "trajectory.tool_calls[0]" in errors[1]
    assert "lone surrogate" in errors[2]
    assert "contexts" in errors[3]
    assert "turns[0].role" in errors[4]
