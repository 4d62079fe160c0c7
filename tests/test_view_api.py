"""`evalframe view`'s JSON API over a real server on loopback (uvicorn on a thread, port 0),
checked against the library's own answers for the same store; its safety rules; and the
command itself (a subprocess, stopped with SIGINT)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import polars as pl
import pytest
from click.testing import CliRunner
from view_store import EXAMPLES, HOSTILE, PROBES, ViewStore, build

import evalframe as ef
from evalframe.cli import cli
from evalframe.views._web import Viewer


@pytest.fixture(scope="module")
def vs(tmp_path_factory: pytest.TempPathFactory) -> ViewStore:
    return build(tmp_path_factory.mktemp("view-api"))


@pytest.fixture(scope="module")
def server(vs: ViewStore) -> Iterator[Viewer]:
    with Viewer(vs.path) as viewer:
        yield viewer


@pytest.fixture
def api(server: Viewer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url + "/api/v1", timeout=60) as client:
        yield client


def _error(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["status"] == status
    message: str = body["message"]
    assert message
    return message


def test_health(api: httpx.Client) -> None:
    body = api.get("/health").json()
    assert body["status"] == "ok"
    assert body["runs"] == 4
    assert body["schema_version"] == ef.store.SCHEMA_VERSION


def test_runs_filters_and_paging(api: httpx.Client, vs: ViewStore) -> None:
    everything = api.get("/runs").json()
    assert everything["total"] == 4
    with ef.Store(vs.path) as store:
        newest_first = store.runs().get_column("run_id").to_list()
    assert [r["run_id"] for r in everything["runs"]] == newest_first
    first = everything["runs"][-1]
    assert first["metrics"] == ["exact-match", "contains", "rouge-l"]
    assert first["labels"] == {"team": "search", "attempt": "0"}
    paged = api.get("/runs", params={"limit": 2, "offset": 1}).json()
    assert [r["run_id"] for r in paged["runs"]] == newest_first[1:3]
    assert paged["total"] == 4
    support = api.get("/runs", params={"dataset": "support.faq"}).json()
    assert sorted(r["run_id"] for r in support["runs"]) == sorted(vs.runs)
    assert api.get("/runs", params={"name": "V1"}).json()["runs"][0]["run_id"] == vs.runs[1]
    labelled = api.get("/runs", params={"label": "attempt=2"}).json()
    assert [r["run_id"] for r in labelled["runs"]] == [vs.runs[2]]
    assert api.get("/runs", params={"label": "team"}).json()["total"] == 3
    assert api.get("/runs", params={"label": f"{PROBES[3]}={PROBES[4]}"}).json()["total"] == 1
    # The days the runs were saved on (a run saved at 23:59 UTC and a clock read at 00:00
    # are a day apart): since the first, until the last, every run is in.
    days = sorted({str(r["created_at"])[:10] for r in everything["runs"]})
    assert api.get("/runs", params={"since": days[0], "until": days[-1]}).json()["total"] == 4
    assert api.get("/runs", params={"until": "2000-01-01"}).json()["total"] == 0
    assert "integer" in _error(api.get("/runs", params={"limit": "x"}), 400)
    assert "from 1 to 500" in _error(api.get("/runs", params={"limit": 0}), 400)
    assert "date" in _error(api.get("/runs", params={"since": "yesterday"}), 400)
    assert "KEY=VALUE" in _error(api.get("/runs", params={"label": "=x"}), 400)


def test_run_document_is_the_json_report_without_samples(api: httpx.Client, vs: ViewStore) -> None:
    result = CliRunner().invoke(
        cli, ["report", vs.runs[1], "--store", str(vs.path), "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    expected = json.loads(result.output)
    assert expected.pop("samples")  # the CLI's document has them; the API's leaves them out
    got = api.get(f"/runs/{vs.runs[1]}").json()
    assert "samples" not in got
    differ = sorted(k for k in set(got) | set(expected) if got.get(k) != expected.get(k))
    assert differ == [], {k: (got.get(k), expected.get(k)) for k in differ}
    assert api.get("/runs/support v1").json()["run_id"] == vs.runs[1]  # a name is a reference
    assert "Unknown run" in _error(api.get("/runs/no-such-run"), 404)
    assert "not SQL" in _error(api.get("/runs/SELECT run_id FROM runs"), 400)


def _failing(run: ef.Run) -> pl.DataFrame:
    """Executions with a metric below its threshold (the slow obvious way)."""
    thresholds = {m.id: m.threshold for m in run.metrics}
    rows = [
        (r["sample_id"], r["repetition"])
        for r in run.scores.iter_rows(named=True)
        if r["error"] is None and r["score"] < thresholds[r["metric"]]
    ]
    return pl.DataFrame(rows, schema=["sample_id", "repetition"], orient="row").unique()


def test_executions_filters_against_the_run(api: httpx.Client, vs: ViewStore) -> None:
    with ef.Store(vs.path) as store:
        run = store.load(vs.runs[1])
    everything = api.get(f"/runs/{vs.runs[1]}/executions", params={"limit": 500}).json()
    assert everything["total"] == run.frame.height
    ids = [e["sample_id"] for e in everything["executions"]]
    assert ids == run.frame.get_column("sample_id").to_list()  # the run's own order
    pages = [
        api.get(f"/runs/{vs.runs[1]}/executions", params={"limit": 5, "offset": o}).json()
        for o in (0, 5, 10)
    ]
    assert [e["sample_id"] for p in pages for e in p["executions"]] == ids
    failing = api.get(f"/runs/{vs.runs[1]}/executions", params={"status": "fail"}).json()
    want = _failing(run).get_column("sample_id").to_list()
    assert sorted(e["sample_id"] for e in failing["executions"]) == sorted(want)
    assert failing["total"] == len(want)
    assert all(e["status"] == "fail" for e in failing["executions"])
    by_metric = api.get(
        f"/runs/{vs.runs[1]}/executions", params={"metric": "contains", "status": "fail"}
    ).json()
    contains = run.scores.filter((pl.col("metric") == "contains") & ~pl.col("passed"))
    assert sorted(e["sample_id"] for e in by_metric["executions"]) == sorted(
        contains.get_column("sample_id").to_list()
    )
    found = api.get(f"/runs/{vs.runs[1]}/executions", params={"q": "MONTH"}).json()
    assert [e["sample_id"] for e in found["executions"]] == ["refund-window"]
    cohort = api.get(f"/runs/{vs.runs[1]}/executions", params={"cohort": "shipping"}).json()
    tagged = run.frame.filter(pl.col("tags").list.contains("shipping"))
    assert sorted(e["sample_id"] for e in cohort["executions"]) == sorted(
        tagged.get_column("sample_id").to_list()
    )
    row = next(e for e in everything["executions"] if e["sample_id"] == "warranty")
    score = run.scores.filter(
        (pl.col("sample_id") == "warranty") & (pl.col("metric") == "rouge-l")
    ).item(0, "score")
    assert row["scores"]["rouge-l"]["score"] == pytest.approx(score)
    one = api.get(f"/runs/{vs.runs[1]}/executions/warranty").json()
    assert one["actual_output"] == "2 years"
    assert [c["metric"] for c in one["scores"]] == ["exact-match", "contains", "rouge-l"]
    assert "Unknown metric" in _error(
        api.get(f"/runs/{vs.runs[1]}/executions", params={"metric": "bleu"}), 400
    )
    assert "status" in _error(
        api.get(f"/runs/{vs.runs[1]}/executions", params={"status": "bad"}), 400
    )
    assert _error(api.get(f"/runs/{vs.runs[1]}/executions/nope"), 404)


def test_compare_three_runs(api: httpx.Client, vs: ViewStore) -> None:
    body = api.get("/compare", params={"runs": ",".join(vs.runs)}).json()
    assert body["reference"] == vs.runs[0]
    with ef.Store(vs.path) as store:
        for i, c in enumerate(body["comparisons"], start=1):
            oracle = store.compare(vs.runs[0], vs.runs[i])
            assert c["run_id"] == vs.runs[i]
            assert c["counts"] == oracle.counts
            for m in body["metrics"]:
                row = oracle.metrics.filter(pl.col("metric") == m["metric"]).row(0, named=True)
                assert m["runs"][vs.runs[i]]["mean_delta"] == pytest.approx(row["mean_delta"])
    rows = body["rows"]
    assert rows["total"] == 12
    regressed = api.get("/compare", params={"runs": ",".join(vs.runs), "rows": "regressed"}).json()
    names = {r["sample_id"] for r in regressed["rows"]["items"]}
    assert "refund-window" in names
    differs = api.get("/compare", params={"runs": ",".join(vs.runs), "rows": "differs"}).json()
    assert {r["sample_id"] for r in differs["rows"]["items"]} == {
        "refund-window",
        "warranty",
        "shipping-time",
    }
    item = next(r for r in differs["rows"]["items"] if r["sample_id"] == "warranty")
    assert [side["output"] for side in item["runs"]][1] == "2 years"
    assert "2 to 10" in _error(api.get("/compare", params={"runs": vs.runs[0]}), 400)
    assert "2 to 10" in _error(api.get("/compare", params={"runs": ",".join(["x"] * 11)}), 400)
    assert _error(api.get("/compare", params={"runs": f"{vs.runs[0]},nope"}), 404)
    other = _error(api.get("/compare", params={"runs": f"{vs.runs[0]},{vs.hostile}"}), 400)
    assert "one dataset" in other


def test_trend(api: httpx.Client, vs: ViewStore) -> None:
    body = api.get("/trend", params={"dataset": "support.faq", "metric": "rouge-l"}).json()
    assert [p["run_id"] for p in body["points"]] == vs.runs  # oldest first
    with ef.Store(vs.path) as store:
        means = [float(store.load(r).summary.filter(pl.col("metric") == "rouge-l").item(0, "mean"))
                 for r in vs.runs]  # fmt: skip
    assert [p["mean"] for p in body["points"]] == pytest.approx(means)
    assert body["baselines"] == [
        {
            "name": "support-main",
            "run_id": vs.runs[0],
            "promoted_at": body["baselines"][0]["promoted_at"],
        }
    ]
    by_label = api.get("/trend", params={"label": "team=search", "metric": "contains"}).json()
    assert len(by_label["points"]) == 3
    assert "dataset=NAME" in _error(api.get("/trend"), 400)
    assert "value" in _error(api.get("/trend", params={"dataset": "x", "value": "max"}), 400)


def test_labels_are_written_and_read(api: httpx.Client, vs: ViewStore) -> None:
    run = vs.runs[2]
    sent = api.post(
        "/labels",
        json={"labels": [
            {"run_id": run, "sample_id": "warranty", "metric": "rouge-l", "label": "pass",
             "note": HOSTILE},
            {"run_id": run, "sample_id": "refund-window", "metric": "rouge-l", "label": 0.25},
        ]},
    )  # fmt: skip
    assert sent.status_code == 201, sent.text
    assert sent.json()["saved"] == 2
    listed = api.get(f"/runs/{run}/labels", params={"metric": "rouge-l"}).json()["labels"]
    assert {(x["sample_id"], x["label"], x["verdict"]) for x in listed} == {
        ("warranty", 1.0, "pass"),
        ("refund-window", 0.25, None),
    }
    again = api.post(
        "/labels",
        json={"run_id": run, "sample_id": "warranty", "metric": "rouge-l", "label": "fail"},
    )
    assert again.status_code == 201
    with ef.Store(vs.path) as store:
        current = store.labels(run, metric="rouge-l")
    assert dict(current.select("sample_id", "verdict").rows()) == {
        "refund-window": None,
        "warranty": "fail",  # the newest label is the current one
    }
    bad = {"run_id": run, "sample_id": "warranty", "metric": "rouge-l"}
    assert "label" in _error(api.post("/labels", json={**bad, "label": 2}), 400)
    assert "metric" in _error(api.post("/labels", json={**bad, "metric": "bleu", "label": 1}), 400)
    unnamed = {"run_id": run, "sample_id": "warranty", "label": 1}
    assert "Name the metric" in _error(api.post("/labels", json=unnamed), 400)
    assert "no execution" in _error(
        api.post("/labels", json={**bad, "sample_id": "nope", "label": 1}), 400
    )
    assert "Unknown run" in _error(
        api.post("/labels", json={**bad, "run_id": "zz", "label": 1}), 404
    )
    assert "JSON" in _error(
        api.post("/labels", content=b"{", headers={"content-type": "application/json"}), 400
    )


def test_cross_site_writes_and_foreign_hosts_are_refused(server: Viewer, vs: ViewStore) -> None:
    label = {"run_id": vs.runs[0], "sample_id": "warranty", "metric": "contains", "label": "pass"}
    url = server.url + "/api/v1/labels"
    before = _label_count(vs)
    for headers, body in (
        ({"content-type": "text/plain"}, json.dumps(label)),  # what a cross-site form can send
        ({"content-type": "application/x-www-form-urlencoded"}, "label=pass"),
        ({"content-type": "application/json", "origin": "http://evil.example"}, json.dumps(label)),
        ({"content-type": "application/json", "sec-fetch-site": "cross-site"}, json.dumps(label)),
    ):
        response = httpx.post(url, content=body, headers=headers, timeout=30)
        _error(response, 403)
    assert _label_count(vs) == before
    # DNS rebinding: a page of another name resolving to 127.0.0.1 is not answered.
    rebound = httpx.get(server.url + "/api/v1/health", headers={"host": "evil.example"}, timeout=30)
    assert rebound.status_code == 421
    page = httpx.get(server.url + "/", timeout=30)
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert page.headers["x-frame-options"] == "DENY"


def _label_count(vs: ViewStore) -> int:
    with ef.Store(vs.path) as store:
        return int(store.sql("SELECT count(*) FROM labels").item())


def test_a_token_is_checked_on_every_request(vs: ViewStore) -> None:
    from evalframe.views._web._serve import _settings

    token, hosts = _settings("0.0.0.0", None)
    assert token
    assert len(token) >= 24
    assert hosts is None
    with Viewer(vs.path, token="s3cret-token") as viewer:
        health = viewer.url + "/api/v1/health"
        assert httpx.get(health, timeout=30).status_code == 401
        assert (
            httpx.get(health, headers={"authorization": "Bearer wrong"}, timeout=30).status_code
            == 401
        )
        ok = httpx.get(health, headers={"authorization": "Bearer s3cret-token"}, timeout=30)
        assert ok.status_code == 200
        with httpx.Client(timeout=30, follow_redirects=True) as browser_like:
            opened = browser_like.get(viewer.url + "/?token=s3cret-token&dataset=support.faq")
            assert opened.status_code == 200  # redirected to the address without the token
            assert "token" not in str(opened.url)
            assert "dataset=support.faq" in str(opened.url)
            assert browser_like.get(viewer.url + "/trends").status_code == 200  # the cookie


def test_sql_page_runs_the_sandbox(server: Viewer) -> None:
    def run(q: str) -> str:
        return httpx.get(server.url + "/sql", params={"q": q}, timeout=30).text

    assert "4 row(s)" in run("SELECT run_id FROM runs")
    assert "Refused" in run("COPY runs TO 'out.csv'")
    assert "Refused" in run("SELECT * FROM read_text('/etc/passwd')")
    assert "Refused" in run("SELECT 1; SELECT 2")


def test_unknown_paths(api: httpx.Client, server: Viewer) -> None:
    assert "No API endpoint" in _error(api.get("/nothing"), 404)
    assert httpx.get(server.url + "/assets/../../etc/passwd", timeout=30).status_code == 404
    assert httpx.get(server.url + "/assets/app.js", timeout=30).status_code == 200


# --- the command ---------------------------------------------------------------------------


def _start(args: list[str], env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalframe", "view", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stderr is not None
    line = proc.stderr.readline()
    assert "serving" in line, line + (proc.stderr.read() if proc.poll() is not None else "")
    url = line.split(" at ", 1)[1].split(" ", 1)[0]
    return proc, url


def test_the_command_serves_until_interrupted(vs: ViewStore, tmp_path: Path) -> None:
    env = {**os.environ, "EVALFRAME_STORE": str(vs.path)}
    proc, url = _start(["--port", "0"], env)
    try:
        assert url.startswith("http://127.0.0.1:")
        assert httpx.get(url + "api/v1/health", timeout=60).json()["runs"] >= 4
        # A second process writes the store while the viewer serves it: the viewer lets go
        # of the file within a second of its last request, so the write goes through.
        written = subprocess.run(
            [sys.executable, "-m", "evalframe", "run", str(EXAMPLES / "support.yaml"),
             "--outputs", str(EXAMPLES / "support.outputs.json"),
             "-m", "contains", "--store", str(vs.path), "--name", "written meanwhile"],
            capture_output=True, text=True, env=env, timeout=300, check=False,
        )  # fmt: skip
        assert written.returncode in (0, 1), written.stderr
        listed = httpx.get(url + "api/v1/runs", params={"name": "written meanwhile"}, timeout=60)
        assert listed.json()["total"] == 1
    finally:
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "stopped" in err
    assert "Traceback" not in err
    with ef.Store(vs.path) as store:  # the file is free again
        store.sql("SELECT 1")


def test_the_command_refuses_what_it_cannot_do(vs: ViewStore, tmp_path: Path) -> None:
    env = dict(os.environ)
    proc, url = _start(["--store", str(vs.path), "--port", "0"], env)
    try:
        port = url.rsplit(":", 1)[1].strip("/")
        taken = subprocess.run(
            [sys.executable, "-m", "evalframe", "view", "--store", str(vs.path), "--port", port],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert taken.returncode == 2
        assert "Cannot listen" in taken.stderr
        assert "--port" in taken.stderr
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    missing = CliRunner().invoke(cli, ["view", "--store", str(tmp_path / "none.duckdb")])
    assert missing.exit_code == 2
    assert "No store" in missing.output
