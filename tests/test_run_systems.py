"""`evalframe run DATASET --system a:f --system b:g` (or several --outputs): one run per
system, each labelled with its system, all with one comparison label, compared together."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import evalframe as ef
from evalframe.cli import cli

EXAMPLES = Path(ef.__file__).parent / "examples"


def _runs(db: Path) -> list[dict[str, object]]:
    with ef.Store(db) as store:
        frame = store.sql("SELECT run_id, name, labels FROM runs ORDER BY seq")
    return [{**r, "labels": json.loads(str(r["labels"]))} for r in frame.to_dicts()]


def test_one_run_per_system_sharing_a_label(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "systems_under_test.py").write_text(
        "def terse(inp):\n    return '30 days'\n\ndef vague(inp):\n    return 'it depends'\n",
        encoding="utf-8",
    )
    db = tmp_path / "runs.duckdb"
    result = CliRunner().invoke(
        cli,
        ["run", str(EXAMPLES / "support.yaml"), "--system", "systems_under_test:terse",
         "--system", "systems_under_test:vague", "-m", "contains", "--store", str(db),
         "--label", "team=search"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    runs = _runs(db)
    assert [r["name"] for r in runs] == ["support.faq [terse]", "support.faq [vague]"]
    labels = [r["labels"] for r in runs]
    assert [x["system"] for x in labels] == [  # type: ignore[index]
        "systems_under_test:terse",
        "systems_under_test:vague",
    ]
    shared = {x["comparison"] for x in labels}  # type: ignore[index]
    assert len(shared) == 1
    assert all(x["team"] == "search" for x in labels)  # type: ignore[index]
    assert "Systems compared" in result.stdout
    assert f"/compare?runs={runs[0]['run_id']},{runs[1]['run_id']}" in result.stderr

    import httpx

    from evalframe.views._web import Viewer

    with Viewer(db) as viewer:
        listed = httpx.get(
            viewer.url + "/api/v1/runs", params={"label": f"comparison={shared.pop()}"}, timeout=60
        ).json()
        assert listed["total"] == 2
        ids = ",".join(str(r["run_id"]) for r in runs)
        matrix = httpx.get(viewer.url + "/api/v1/compare", params={"runs": ids}, timeout=60)
        rows = matrix.json()["rows"]["items"]
        refund = next(r for r in rows if r["sample_id"] == "refund-window")
        assert [side["output"] for side in refund["runs"]] == ["30 days", "it depends"]


def test_one_run_per_outputs_file(tmp_path: Path) -> None:
    saved = json.loads((EXAMPLES / "support.outputs.json").read_text("utf-8"))["outputs"]
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"outputs": {**saved, "warranty": "never"}}), encoding="utf-8")
    db = tmp_path / "runs.duckdb"
    result = CliRunner().invoke(
        cli,
        ["run", str(EXAMPLES / "support.yaml"), "--outputs", str(EXAMPLES / "support.outputs.json"),
         "--outputs", str(other), "-m", "rouge-l", "--store", str(db), "--format", "json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    docs = json.loads(result.stdout)
    assert [d["run_name"] for d in docs] == [
        "support.faq [support.outputs.json]",
        "support.faq [other.json]",
    ]
    assert [r["run_id"] for r in _runs(db)] == [d["run_id"] for d in docs]


def test_what_takes_one_system_is_refused(tmp_path: Path) -> None:
    out = str(EXAMPLES / "support.outputs.json")
    for extra, word in ((["--batch-size", "10"], "--batch-size"), (["--outputs", out], "twice")):
        result = CliRunner().invoke(
            cli, ["run", str(EXAMPLES / "support.yaml"), "--outputs", out, *extra]
        )
        assert result.exit_code == 2, result.output
        assert word in result.output
