"""The webhook metric against a real HTTP server on 127.0.0.1: reading replies the ways
harness-evals does, status verdicts, batches, retries, timeouts, the cache, secrets, and
configured URLs only."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import evalframe as ef
from evalframe.core._errors import ProviderError

TOKEN = "whk-Secret-7f3a9c"
HEADER_SECRET = "hdr-Secret-55e1"
QUERY_SECRET = "qry-Secret-0d2b"

Answer = Callable[[dict[str, Any]], tuple[int, Any]]


class Hook:
    """A scoring service: ``answer(row) -> (status, JSON body)`` per row, batches split into
    rows; ``faults`` (statuses, or ``("slow", seconds)``) are served first, one per request."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.requests: list[tuple[dict[str, str], Any]] = []
        self.faults: deque[Any] = deque()
        self.drop_one = False
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                hook.requests.append(({k.lower(): v for k, v in self.headers.items()}, body))
                status, reply = 200, None
                if hook.faults:
                    fault = hook.faults.popleft()
                    if isinstance(fault, tuple):
                        time.sleep(fault[1])
                    else:
                        status, reply = (
                            fault,
                            {"error": f"echo {self.headers.get('Authorization')}"},
                        )
                if reply is None:
                    if "items" in body:
                        items = body["items"][1:] if hook.drop_one else body["items"]
                        reply = {"results": [hook.answer(item)[1] for item in items]}
                    else:
                        status, reply = hook.answer(body)
                data = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/score"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def service() -> Iterator[Callable[[Answer], Hook]]:
    started: list[Hook] = []

    def start(answer: Answer) -> Hook:
        started.append(Hook(answer))
        return started[-1]

    yield start
    for hook in started:
        hook.close()


def dataset(n: int = 3) -> ef.Dataset:
    return ef.Dataset.from_records(
        [
            {
                "id": f"s{i}",
                "input": {"question": f"q{i}"},
                "expected_output": f"answer {i}",
                "metadata": {"policy": "strict"},
            }
            for i in range(n)
        ],
        name="hooks",
    )


def outputs(n: int = 3) -> dict[str, str]:
    return {f"s{i}": f"answer {i}" if i % 2 == 0 else "wrong" for i in range(n)}


def providers(hook: Hook, **options: Any) -> ef.Providers:
    options.setdefault("backoff", 0.001)
    endpoint = ef.Webhook(hook.url, **options)
    return ef.Providers(webhooks=[endpoint], cache=False)


def rows(run: ef.Run) -> dict[str, dict[str, Any]]:
    out = {}
    for r in run.scores.iter_rows(named=True):
        out[r["sample_id"]] = r | {"details": json.loads(r["details"] or "null")}
    return out


def correct(row: dict[str, Any]) -> tuple[int, Any]:
    return 200, {"valid": row["output"] == row["expected"], "confidence": 0.9, "score": 0.25}


def test_each_row_is_posted_with_its_fields(service: Callable[[Answer], Hook]) -> None:
    hook = service(correct)
    run = ef.evaluate(
        dataset(2), outputs=outputs(2), metrics=["webhook"], providers=providers(hook)
    )
    assert [r["score"] for r in rows(run).values()] == [0.25, 0.25]  # the default: 'score'
    sent = sorted((body for _, body in hook.requests), key=lambda b: b["id"])
    assert sent[0] == {
        "id": "s0",
        "input": {"question": "q0"},
        "output": "answer 0",
        "expected": "answer 0",
        "contexts": None,
        "metadata": {"policy": "strict"},
    }
    usage = run.usage
    assert usage.get_column("kind").to_list() == ["webhook", "webhook"]
    assert set(usage.get_column("model").to_list()) == {"default"}


def test_harness_evals_reply_modes(service: Callable[[Answer], Hook]) -> None:
    hook = service(correct)
    p = providers(hook)
    flags = rows(
        ef.evaluate(
            dataset(), outputs=outputs(), metrics=["webhook(response_key=valid)"], providers=p
        )
    )
    assert [r["score"] for r in flags.values()] == [1.0, 0.0, 1.0]
    assert flags["s0"]["details"] == {
        "status": 200, "verdict": True, "raw_score": None, "endpoint": "default"
    }  # fmt: skip
    scored = rows(
        ef.evaluate(
            dataset(),
            outputs=outputs(),
            metrics=["webhook(response_key=valid, score_key=confidence)"],
            providers=p,
        )
    )
    assert [r["score"] for r in scored.values()] == [0.9, 0.9, 0.9]


def test_scores_are_clamped_and_bad_replies_are_errors(service: Callable[[Answer], Hook]) -> None:
    replies = {"s0": {"score": 1.5}, "s1": {"score": "high"}, "s2": {"other": 1}}
    hook = service(lambda row: (200, replies[row["id"]]))
    got = rows(
        ef.evaluate(dataset(), outputs=outputs(), metrics=["webhook"], providers=providers(hook))
    )
    assert got["s0"]["score"] == 1.0
    assert got["s0"]["details"]["raw_score"] == 1.5
    assert got["s1"]["error"] == "Sample 's1' webhook 'default' reply's 'score' is not a number."
    assert got["s2"]["error"] == "Sample 's2' webhook 'default' reply has no 'score'."
    flags = {"s0": {"valid": "yes"}, "s1": {}, "s2": ["not", "an", "object"]}
    hook2 = service(lambda row: (200, flags[row["id"]]))
    got = rows(
        ef.evaluate(dataset(), outputs=outputs(), metrics=["webhook(response_key=valid)"],
                    providers=providers(hook2))
    )  # fmt: skip
    assert got["s0"]["error"].endswith("reply's 'valid' is not true or false.")
    assert got["s1"]["error"].endswith("reply has no 'valid'.")
    assert got["s2"]["error"].endswith("reply is not a JSON object.")


def test_the_status_code_as_the_verdict(service: Callable[[Answer], Hook]) -> None:
    statuses = {"s0": 204, "s1": 422, "s2": 401}
    hook = service(lambda row: (statuses[row["id"]], {}))
    got = rows(
        ef.evaluate(dataset(), outputs=outputs(), metrics=["webhook(use_status_code=true)"],
                    providers=providers(hook))
    )  # fmt: skip
    assert got["s0"]["score"] == 1.0
    assert got["s1"]["score"] == 0.0
    assert got["s1"]["details"]["status"] == 422
    assert got["s2"]["error"] == (
        "Sample 's2' webhook 'default' answered HTTP 401, which is not a verdict."
    )
    # Without use_status_code a non-2xx answer is the row's error, never a 0.
    got = rows(
        ef.evaluate(dataset(), outputs=outputs(), metrics=["webhook"], providers=providers(hook))
    )
    assert got["s1"]["error"] == "Sample 's1' webhook 'default' answered HTTP 422."


def test_batches(service: Callable[[Answer], Hook]) -> None:
    hook = service(correct)
    run = ef.evaluate(
        dataset(5), outputs=outputs(5), metrics=["webhook(response_key=valid, batch=2)"],
        providers=providers(hook),
    )  # fmt: skip
    assert [r["score"] for r in rows(run).values()] == [1.0, 0.0, 1.0, 0.0, 1.0]
    sizes = sorted(len(body["items"]) for _, body in hook.requests)
    assert sizes == [1, 2, 2]
    assert run.usage.get_column("items").sort().to_list() == [1, 2, 2]

    short = service(correct)
    short.drop_one = True  # a batch reply with one result too few
    got = rows(
        ef.evaluate(dataset(2), outputs=outputs(2), metrics=["webhook(batch=2)"],
                    providers=providers(short))
    )  # fmt: skip
    assert got["s0"]["error"] == (
        "Sample 's0' webhook 'default' request failed: Webhook batch reply must hold a "
        "'results' list of 2 replies, in the order of 'items'."
    )


def test_retries_timeouts_and_failures_keep_the_other_rows(
    service: Callable[[Answer], Hook],
) -> None:
    hook = service(correct)
    hook.faults.extend([503, 503])  # retried: the row still gets its answer
    run = ef.evaluate(
        dataset(1), outputs=outputs(1), metrics=["webhook(response_key=valid)"],
        providers=providers(hook, retries=3),
    )  # fmt: skip
    assert rows(run)["s0"]["score"] == 1.0
    assert run.usage.get_column("attempts").to_list() == [3]

    slow = service(correct)
    slow.faults.append(("slow", 1.0))
    got = rows(
        ef.evaluate(dataset(3), outputs=outputs(3), metrics=["webhook(response_key=valid)"],
                    providers=providers(slow, timeout=0.3, retries=0, concurrency=1))
    )  # fmt: skip
    errors = [r["error"] for r in got.values() if r["error"] is not None]
    assert len(errors) == 1
    assert "no complete reply within 0.3 s" in errors[0]
    assert sorted(r["score"] for r in got.values() if r["score"] is not None) == [0.0, 1.0]


def test_answers_are_cached(service: Callable[[Answer], Hook], tmp_path: Path) -> None:
    hook = service(lambda row: (200 if row["id"] != "s1" else 422, {"score": 0.5}))
    cache = tmp_path / "cache.duckdb"

    def run(metric: str) -> dict[str, dict[str, Any]]:
        p = ef.Providers(webhooks=[ef.Webhook(hook.url, backoff=0.001)], cache=cache)
        return rows(ef.evaluate(dataset(), outputs=outputs(), metrics=[metric], providers=p))

    first = run("webhook")
    assert len(hook.requests) == 3
    second = run("webhook")
    assert len(hook.requests) == 4  # only the row answered 422 (an error, not cached) again
    assert [r["score"] for r in second.values()] == [r["score"] for r in first.values()]
    run("webhook(use_status_code=true)")  # the status mode shares the cache, 422 included
    run("webhook(use_status_code=true)")
    assert len(hook.requests) == 5


def test_secrets_never_show(service: Callable[[Answer], Hook], tmp_path: Path) -> None:
    hook = service(correct)
    hook.faults.extend([400, 400])
    endpoint = ef.Webhook(
        f"{hook.url}?key={QUERY_SECRET}",
        bearer_token=TOKEN,
        headers={"X-Api-Key": HEADER_SECRET},
        retries=0,
    )
    store = tmp_path / "runs.duckdb"
    run = ef.evaluate(
        dataset(2), outputs=outputs(2), metrics=["webhook(response_key=valid)"],
        providers=ef.Providers(webhooks=[endpoint], cache=tmp_path / "c.duckdb"), store=store,
    )  # fmt: skip
    headers = hook.requests[0][0]
    assert headers["authorization"] == f"Bearer {TOKEN}"
    assert headers["x-api-key"] == HEADER_SECRET
    shown = [
        repr(endpoint),
        run.scores.write_csv(),
        run.usage.write_json(),
        run.report().to_json(),
        run.report().to_markdown(),
        store.read_bytes().decode("latin-1"),
        (tmp_path / "c.duckdb").read_bytes().decode("latin-1"),
    ]
    for text in shown:
        for secret in (TOKEN, HEADER_SECRET, QUERY_SECRET):
            assert secret not in text


def test_urls_come_from_configuration_only(service: Callable[[Answer], Hook]) -> None:
    with pytest.raises(ef.MetricError, match="URL is configuration"):
        ef.metrics.get('webhook(endpoint="http://127.0.0.1:9/steal")')
    records = [{"id": "a", "input": {"q": "?"}, "expected_output": "x"}]
    ds = ef.Dataset.from_records(records, name="hooks", metrics=["webhook(endpoint=grader)"])
    with pytest.raises(ProviderError, match="EVALFRAME_WEBHOOK_GRADER_URL") as caught:
        ef.evaluate(ds, outputs={"a": "x"}, providers=ef.Providers(cache=False))
    assert "webhook(endpoint=grader)" in str(caught.value)
    with pytest.raises(ef.MetricError, match="one answer"):
        ef.metrics.get("webhook(use_status_code=true, response_key=ok)")


def test_endpoints_from_the_environment(service: Callable[[Answer], Hook]) -> None:
    hook = service(correct)
    environ = {
        "EVALFRAME_WEBHOOK_URL": hook.url,
        "EVALFRAME_WEBHOOK_TOKEN": TOKEN,
        "EVALFRAME_WEBHOOK_GRADER_URL": hook.url,
    }
    p = ef.Providers.from_env(environ=environ, cache=False)
    assert sorted(p.webhooks) == ["default", "grader"]
    assert "Secret('***')" not in repr(p.webhooks["default"])
    run = ef.evaluate(
        dataset(1), outputs=outputs(1), metrics=["webhook(endpoint=grader, response_key=valid)"],
        providers=p,
    )  # fmt: skip
    assert rows(run)["s0"]["score"] == 1.0
    assert "authorization" not in hook.requests[0][0]  # only the default endpoint has a token
    with pytest.raises(ProviderError, match="EVALFRAME_WEBHOOK_URL"):
        ef.Providers.from_env(environ={"EVALFRAME_WEBHOOK_URL": "ftp://x"}, cache=False)


def test_rows_without_an_output_send_nothing(service: Callable[[Answer], Hook]) -> None:
    hook = service(correct)
    frame = pl.DataFrame(
        {
            "sample_id": ["a", "b"],
            "input": ['{"q": 1}', '{"q": 2}'],
            "expected_output": ["x", "y"],
            "expected_type": ["string", "string"],
            "metadata": ["{}", "{}"],
            "tags": [[], []],
            "actual_output": ["x", None],
        },
        schema_overrides={"tags": pl.List(pl.String)},
    )
    out = ef.score(frame, ["webhook(response_key=valid)"], providers=providers(hook))
    assert out.get_column("score").to_list()[0] == 1.0
    assert len(hook.requests) == 1
