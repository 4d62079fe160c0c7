"""The webhook metric: wall time and requests for N rows against a loopback scoring service
that takes a fixed time per request, beside harness-evals' way (one request per row, one
after another), and a rerun that the cache answers. Run from the repository root:

    .venv/bin/python benchmarks/bench_webhook.py               # 1,000 rows, 20 ms a request
    .venv/bin/python benchmarks/bench_webhook.py --rows 200 --latency-ms 50
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

_ARGS = argparse.ArgumentParser(description=__doc__.splitlines()[0])
_ARGS.add_argument("--rows", type=int, default=1000)
_ARGS.add_argument("--latency-ms", type=float, default=20.0)
ARGS = _ARGS.parse_args()

import httpx  # noqa: E402

import evalframe as ef  # noqa: E402

REQUESTS = [0]


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        REQUESTS[0] += 1
        time.sleep(ARGS.latency_ms / 1000)
        score = lambda row: {"score": 1.0 if row["output"] == row["expected"] else 0.0}  # noqa: E731
        reply = {"results": [score(r) for r in body["items"]]} if "items" in body else score(body)
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *_: Any) -> None:
        pass


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    url = f"http://127.0.0.1:{server.server_address[1]}/score"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    n = ARGS.rows
    ds = ef.Dataset.from_records(
        [{"id": f"s{i}", "input": {"q": i}, "expected_output": str(i % 7)} for i in range(n)],
        name="hooks",
    )
    outputs = {f"s{i}": str(i % 5) for i in range(n)}
    cache = Path(tempfile.mkdtemp()) / "cache.duckdb"

    def evalframe_run(spec: str, use_cache: bool = False) -> tuple[float, int]:
        REQUESTS[0] = 0
        providers = ef.Providers(
            webhooks=[ef.Webhook(url, concurrency=8)], cache=cache if use_cache else False
        )
        t0 = time.perf_counter()
        run = ef.evaluate(ds, outputs=outputs, metrics=[spec], providers=providers)
        assert run.scores.get_column("error").null_count() == n
        return time.perf_counter() - t0, REQUESTS[0]

    def one_at_a_time() -> tuple[float, int]:
        REQUESTS[0] = 0
        t0 = time.perf_counter()
        with httpx.Client() as client:
            for i in range(n):  # harness-evals' WebhookMetric: one request per measure()
                row = {"input": {"q": i}, "output": outputs[f"s{i}"], "expected": str(i % 7)}
                client.post(url, json=row).json()
        return time.perf_counter() - t0, REQUESTS[0]

    print(f"{n} rows, {ARGS.latency_ms:g} ms per request at the service")
    cases = {
        "one request per row, in turn (harness-evals)": one_at_a_time,
        "evalframe webhook, 8 in flight": lambda: evalframe_run("webhook"),
        "evalframe webhook(batch=50), 8 in flight": lambda: evalframe_run("webhook(batch=50)"),
        "evalframe webhook, first run (cached)": lambda: evalframe_run("webhook", use_cache=True),
        "evalframe webhook, rerun (cache)": lambda: evalframe_run("webhook", use_cache=True),
    }
    base = None
    for name, fn in cases.items():
        seconds, requests = fn()
        base = base or seconds
        print(f"  {name:<46} {seconds:7.2f} s  {requests:6d} requests  {base / seconds:6.1f}x")
    server.shutdown()


if __name__ == "__main__":
    main()
