"""A small OpenAI-compatible server for tests: real HTTP on 127.0.0.1, scripted faults.

``/v1/embeddings`` returns deterministic vectors (a fixed table for chosen words, otherwise
a vector seeded by the text's SHA-256); ``/v1/chat/completions`` returns the verdict a test's
function gives for the prompt. Faults queued with :meth:`StubOpenAI.fail` are served, one
per request, before normal answers resume:

* ``("status", 429, {"Retry-After": "0"})`` or ``("status", 500)``: that status;
* ``("slow", seconds)``: answer normally, but only after ``seconds``;
* ``("drop",)``: close the connection without a response;
* ``("malformed",)``: 200 with a body that is not JSON;
* ``("wrong_count",)``: embeddings with one vector too few;
* ``("no_content",)``: a chat completion without ``message.content``;
* ``("hang",)``: accept the request and never answer (until the stub stops);
* ``("huge", nbytes)``: 200 with an ``nbytes`` body streamed in 1 MiB chunks, without a
  ``Content-Length`` (the client must count as it reads);
* ``("no_logprobs",)``: a chat completion without ``logprobs`` even when asked for them;
* ``("bad_vector", position, value)``: embeddings where the vector at ``position`` is
  ``value``: ``"nan"`` for a NaN component, or an int for a vector of that many dimensions.

When a chat request asks for ``logprobs`` and the stub has a ``logprobs`` function, the
answer carries ``choices[0].logprobs.content`` as that function gives it for (prompt,
content); ``scripted_logprobs`` builds one that puts chosen probabilities on the first number
token of the reply.

Error replies echo the request's ``Authorization`` header, as some real providers do
("Incorrect API key provided: sk-..."), so tests can check that nothing echoes it further.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

__all__ = ["Recorded", "StubOpenAI", "scripted_logprobs"]


@dataclass
class Recorded:
    """One request the stub received (headers lower-cased)."""

    path: str
    headers: dict[str, str]
    body: Any


_TOKEN = re.compile(r"\d+|\w+|\s+|.", flags=re.DOTALL)


def scripted_logprobs(content: str, alternatives: dict[str, float]) -> list[dict[str, Any]]:
    """OpenAI-shaped token logprobs for ``content``: its first number token gets
    ``alternatives`` (token -> probability) as its top logprobs, every other token
    probability 1."""
    out: list[dict[str, Any]] = []
    placed = False
    for token in _TOKEN.findall(content):
        if not placed and token.isdigit():
            placed = True
            top = [{"token": t, "logprob": math.log(p)} for t, p in alternatives.items()]
            own = next((t["logprob"] for t in top if t["token"] == token), -20.0)
            out.append({"token": token, "logprob": own, "top_logprobs": top})
        else:
            out.append(
                {"token": token, "logprob": 0.0, "top_logprobs": [{"token": token, "logprob": 0.0}]}
            )
    return out


def _default_verdict(prompt: str) -> str:
    return json.dumps({"score": 0.9, "reason": "close enough"})


@dataclass
class StubOpenAI:
    """The stub's state; start it with ``with StubOpenAI() as stub:``.

    Attributes:
        api_key: when set, requests without ``Authorization: Bearer <api_key>`` get 401.
        dim: the size of generated vectors.
        vectors: fixed vectors for chosen texts.
        verdict: maps a prompt to the reply content.
        model_reply: the ``model`` the server reports.
        cost_per_call: when set, ``usage.cost_usd`` reported on every answer.
        latency: seconds every request waits before it is answered (faults included), as a
            remote model would; requests are served on their own threads, so they overlap.
        max_in_flight: the most requests the stub has been serving at once.
        logprobs: maps (prompt, reply content) to ``choices[0].logprobs.content`` (the
            OpenAI shape) for requests that ask for logprobs; ``None`` sends none.
    """

    api_key: str | None = None
    dim: int = 8
    vectors: dict[str, list[float]] = field(default_factory=dict)
    verdict: Callable[[str], str] = _default_verdict
    model_reply: str | None = None
    cost_per_call: float | None = None
    latency: float = 0.0
    max_in_flight: int = 0
    logprobs: Callable[[str, str], list[dict[str, Any]] | None] | None = None
    requests: list[Recorded] = field(default_factory=list)
    streamed: int = 0
    _faults: dict[str, deque[tuple[Any, ...]]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None
    _stopping: threading.Event = field(default_factory=threading.Event)
    _in_flight: int = 0

    # -- control -------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def fail(self, endpoint: str, *faults: tuple[Any, ...]) -> None:
        """Queue faults for ``"embeddings"`` or ``"chat"`` requests."""
        with self._lock:
            self._faults.setdefault(endpoint, deque()).extend(faults)

    def calls(self, endpoint: str) -> list[Recorded]:
        return [r for r in self.requests if r.path.endswith(endpoint)]

    def vector(self, text: str) -> list[float]:
        if text in self.vectors:
            return list(self.vectors[text])
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        return np.random.default_rng(seed).standard_normal(self.dim).round(6).tolist()

    def __enter__(self) -> StubOpenAI:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in two writes; with Nagle's algorithm on, the body waits
            # for the client's delayed ACK (about 40 ms). Real servers set TCP_NODELAY.
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                with stub._lock:
                    stub._in_flight += 1
                    stub.max_in_flight = max(stub.max_in_flight, stub._in_flight)
                try:
                    self._post()
                finally:
                    with stub._lock:
                        stub._in_flight -= 1

            def _post(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                headers = {k.lower(): v for k, v in self.headers.items()}
                with stub._lock:
                    stub.requests.append(Recorded(self.path, headers, body))
                endpoint = "embeddings" if self.path.endswith("/embeddings") else "chat"
                if stub.latency > 0:
                    time.sleep(stub.latency)
                with stub._lock:
                    queue = stub._faults.get(endpoint)
                    fault = queue.popleft() if queue else None
                echo = f"injected; you sent {headers.get('authorization')}"
                if stub.api_key and headers.get("authorization") != f"Bearer {stub.api_key}":
                    self._send(401, {"error": {"message": f"bad key: {echo}"}})
                    return
                if fault is not None:
                    kind = fault[0]
                    if kind == "status":
                        extra = fault[2] if len(fault) > 2 else {}
                        self._send(fault[1], {"error": {"message": echo}}, extra)
                        return
                    if kind == "hang":
                        stub._stopping.wait()
                        self.close_connection = True
                        return
                    if kind == "huge":
                        self._send_stream(fault[1])
                        return
                    if kind == "slow":
                        time.sleep(fault[1])
                    elif kind == "drop":
                        self.close_connection = True
                        self.connection.shutdown(socket.SHUT_RDWR)
                        return
                    elif kind == "malformed":
                        self._send_raw(200, b"{not json " + echo.encode())
                        return
                answer = stub._answer(endpoint, body, fault)
                self._send(200, answer)

            def _send(self, status: int, payload: Any, extra: dict[str, str] | None = None) -> None:
                self._send_raw(status, json.dumps(payload).encode(), extra)

            def _send_stream(self, nbytes: int) -> None:
                self.close_connection = True
                chunk = b" " * 2**20
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Connection", "close")
                    self.end_headers()
                    sent = 0
                    while sent < nbytes:
                        part = chunk[: nbytes - sent]
                        self.wfile.write(part)
                        sent += len(part)
                        stub.streamed = sent
                except OSError:  # the client stopped reading: the point of the test
                    return

            def _send_raw(
                self, status: int, data: bytes, extra: dict[str, str] | None = None
            ) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in (extra or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client gave up (a timeout test)
                    self.close_connection = True

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            block_on_close = False
            # The default backlog of 5 drops connection attempts beyond it, and the client's
            # kernel resends them only after a second: a cost no real endpoint has.
            request_queue_size = 256

            def handle_error(self, request: Any, client_address: Any) -> None:
                return  # dropped and timed-out connections are the point of some tests

        self._server = Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()

    # -- answers -------------------------------------------------------------------------------

    def _usage(self, prompt: int, completion: int | None) -> dict[str, Any]:
        usage: dict[str, Any] = {"prompt_tokens": prompt}
        if completion is not None:
            usage["completion_tokens"] = completion
        usage["total_tokens"] = prompt + (completion or 0)
        if self.cost_per_call is not None:
            usage["cost_usd"] = self.cost_per_call
        return usage

    def _answer(self, endpoint: str, body: Any, fault: tuple[Any, ...] | None) -> dict[str, Any]:
        model = self.model_reply or body.get("model")
        if endpoint == "embeddings":
            texts = body["input"]
            data = [
                {"object": "embedding", "index": i, "embedding": self.vector(t)}
                for i, t in enumerate(texts)
            ]
            if fault is not None and fault[0] == "wrong_count":
                data = data[:-1]
            if fault is not None and fault[0] == "bad_vector":
                position, value = fault[1], fault[2]
                vector: list[Any] = self.vector(texts[position])
                if value == "nan":
                    vector[0] = float("nan")
                else:
                    vector = (vector * (value // len(vector) + 1))[:value]
                data[position]["embedding"] = vector
            tokens = sum(len(t.split()) for t in texts)
            return {
                "object": "list",
                "data": data,
                "model": model,
                "usage": self._usage(tokens, None),
            }
        prompt = body["messages"][0]["content"]
        content: str | None = self.verdict(prompt)
        if fault is not None and fault[0] == "no_content":
            content = None
        completion = len(content.split()) if content else 0
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": "stop",
        }
        no_logprobs = fault is not None and fault[0] == "no_logprobs"
        if body.get("logprobs") and self.logprobs is not None and content and not no_logprobs:
            choice["logprobs"] = {"content": self.logprobs(prompt, content)}
        return {
            "id": "chatcmpl-stub",
            "object": "chat.completion",
            "model": model,
            "choices": [choice],
            "usage": self._usage(len(prompt.split()), completion),
        }
