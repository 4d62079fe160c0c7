"""Clients of OpenAI-compatible HTTP endpoints: ``/embeddings`` and ``/chat/completions``.

Both batch and run concurrently: each call of ``embed`` or ``complete`` runs ``concurrency``
workers that send one request at a time, every 8 workers sharing an ``httpx.AsyncClient``.
They work from Jupyter: under a running event loop the requests run on a fresh loop in a
worker thread.
"""

from __future__ import annotations

import contextlib
import math
import random
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import numpy as np

from evalframe.core._limits import checked
from evalframe.providers._base import Embedded, Reply, Vector
from evalframe.providers._config import (
    DEFAULT_BASE_URL,
    DEFAULT_EMBEDDINGS_MODEL,
    DEFAULT_EMBEDDINGS_TIMEOUT,
    DEFAULT_JUDGE_MODEL,
    DEFAULT_JUDGE_TIMEOUT,
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_RETRIES,
    RetryPolicy,
    Secret,
    check_key,
    display_url,
    endpoint_url,
    normalize_retries,
    normalize_timeout,
)
from evalframe.providers._http import RequestFailedError, post_json, run_sync
from evalframe.providers._ledger import Call, Ledger, StopCallsError, usage_from_body

if TYPE_CHECKING:
    import httpx

    from evalframe.core._rate import RateLimit

__all__ = ["OpenAIEmbeddings", "OpenAIJudge", "quote", "token_logprobs"]

T = TypeVar("T")

_POOL = 8
"""Connections per ``httpx`` client: httpcore's pool scans every connection for every
queued request, so one pool of 32 costs about 16 times the CPU per request of four of 8."""


class _HTTPClient:
    """Settings shared by both clients; see ``OpenAIEmbeddings`` for the arguments."""

    _path = ""
    _operation = ""
    _kind: Literal["embeddings", "judge", "webhook"] = "embeddings"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None,
        api_key: str | Secret | None,
        timeout: float | str | None,
        default_timeout: float,
        retries: int | str | None,
        backoff: float,
        max_backoff: float,
        concurrency: int,
        transport: httpx.AsyncBaseTransport | None,
        seed: int | None,
        max_response_bytes: int,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ValueError("model must be a non-empty string.")
        checked(concurrency, "concurrency")
        if not isinstance(max_response_bytes, int) or max_response_bytes < 1:
            raise ValueError(
                f"max_response_bytes must be an integer >= 1; got {max_response_bytes!r}."
            )
        self._model = model.strip()
        self.url = endpoint_url(base_url or DEFAULT_BASE_URL, self._path)
        self.api_key = check_key(api_key, "api_key")
        self.max_response_bytes = max_response_bytes
        self.timeout = normalize_timeout(timeout, default_timeout)
        self.policy = RetryPolicy(
            retries=normalize_retries(retries, DEFAULT_RETRIES),
            backoff=backoff,
            max_backoff=max_backoff,
        )
        self.concurrency = concurrency
        self.transport = transport
        self.headers: dict[str, Secret] = {}
        self._rng = random.Random(seed)

    @property
    def model(self) -> str:
        return self._model

    @property
    def provider(self) -> str:
        return display_url(self.url)

    @property
    def secrets(self) -> tuple[Secret, ...]:
        """Every value this client sends that must never be shown."""
        return tuple(s for s in (self.api_key, *self.headers.values()) if s is not None)

    @property
    def id(self) -> str:
        return f"openai:{self._model}@{self.provider}"

    def __repr__(self) -> str:
        key = "set" if self.api_key is not None else "none"
        return f"{type(self).__name__}(model={self._model!r}, url={self.provider!r}, api_key={key})"

    def _client(self, connections: int) -> httpx.AsyncClient:
        import httpx

        limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
        # post_json bounds each whole attempt; these bound each connect and read within it.
        timeout = httpx.Timeout(self.timeout, connect=min(self.timeout, 10.0))
        return httpx.AsyncClient(timeout=timeout, limits=limits, transport=self.transport)

    async def _post(
        self, client: httpx.AsyncClient, body: dict[str, Any], rate: RateLimit | None = None
    ) -> Any:
        return await post_json(
            client,
            self.url,
            body,
            api_key=self.api_key,
            policy=self.policy,
            operation=self._operation,
            timeout=self.timeout,
            max_bytes=self.max_response_bytes,
            rng=self._rng,
            rate=rate,
            headers=self.headers,
            hidden=self.secrets,
        )

    def _exchange(
        self,
        requests: Sequence[tuple[dict[str, Any], int]],
        parse: Callable[[dict[str, Any], int], tuple[T, str | None]],
        ledger: Ledger,
        refused: Callable[[RequestFailedError, int], T | None] | None = None,
    ) -> list[tuple[T | None, str | None]]:
        """Send the ``(body, items)`` requests concurrently; request ``i`` gives
        ``parse(body, i)``.

        ``concurrency`` workers take the requests in order, each sending one at a time; every
        ``_POOL`` workers share one client (and its connection pool). Each request checks
        the budget and the run's deadline first and is recorded in
        ``ledger``, sent or failed; a request that fails, is refused, or is still running
        when the deadline passes gives ``(None, error)``, unless ``refused(exc, i)`` makes a
        result of a failed request (a webhook's HTTP status is its answer). Every error
        passes through ``ledger.redact`` with this client's secrets.
        """
        import asyncio  # loaded with the first provider call, not at ``import evalframe``

        results: list[tuple[T | None, str | None]] = [(None, "not sent")] * len(requests)

        secrets = self.secrets

        def fail(i: int, message: str) -> None:
            results[i] = (None, ledger.redact(message, *secrets))

        async def one(client: httpx.AsyncClient, i: int) -> None:
            body, items = requests[i]
            try:
                ledger.check()
            except StopCallsError as exc:
                fail(i, str(exc))
                return
            started = time.perf_counter()
            try:
                response = await asyncio.wait_for(
                    self._post(client, body, ledger.rate), ledger.remaining_seconds()
                )
            except RequestFailedError as exc:
                message = ledger.redact(str(exc), *secrets)
                ledger.record(self._call(items, exc.attempts, exc.latency_ms, error=message))
                answer = refused(exc, i) if refused is not None else None
                if answer is not None:
                    results[i] = (answer, None)
                    return
                fail(i, message)
                return
            except TimeoutError:
                message = ledger.deadline_message(sent=True)
                latency = (time.perf_counter() - started) * 1000.0
                ledger.record(self._call(items, 1, latency, error=message))
                fail(i, message)
                return
            got, problem = parse(response.body, i)
            usage = usage_from_body(response.body)
            ledger.record(self._call(items, response.attempts, response.latency_ms, problem, usage))
            results[i] = (got, problem)

        pending = iter(range(len(requests)))

        async def worker(client: httpx.AsyncClient) -> None:
            for i in pending:  # shared by the workers: each request is taken once
                await one(client, i)
                ledger.progressed(requests[i][1])

        async def main() -> None:
            width = min(self.concurrency, len(requests))
            sizes = [min(_POOL, width - start) for start in range(0, width, _POOL)]
            async with contextlib.AsyncExitStack() as stack:
                clients = [await stack.enter_async_context(self._client(n)) for n in sizes]
                await asyncio.gather(*(worker(clients[w // _POOL]) for w in range(width)))

        if requests:
            run_sync(main)
        return results

    def _call(
        self,
        items: int,
        attempts: int,
        latency_ms: float,
        error: str | None = None,
        usage: dict[str, Any] | None = None,
    ) -> Call:
        usage = usage or {}
        return Call(
            kind=self._kind,
            provider=self.provider,
            model=usage.get("model") or self.model,
            prompt_tokens=usage.get("prompt_tokens"),
            completion_tokens=usage.get("completion_tokens"),
            total_tokens=usage.get("total_tokens"),
            reported_cost_usd=usage.get("reported_cost_usd"),
            latency_ms=latency_ms,
            attempts=attempts,
            items=items,
            error=error,
        )


class OpenAIEmbeddings(_HTTPClient):
    """Embeddings from any OpenAI-compatible ``/embeddings`` endpoint.

    Args:
        model: the embedding model, e.g. ``"text-embedding-3-small"``.
        base_url: the API root (``.../v1``) or the full ``.../embeddings`` URL
            (default ``https://api.openai.com/v1``).
        api_key: sent as a bearer token when given; never logged, cached or reported. It
            must be printable ASCII without spaces (else ``ProviderError``).
        timeout: seconds per request, reading the whole reply included: more than 0, at
            most a day (default 30; ``0`` means the default).
        retries: extra attempts on connection errors, timeouts, 429 and 5xx, 0 to 100
            (default 3).
        backoff: the first retry wait in seconds (doubling up to ``max_backoff``).
        max_backoff: the longest wait between attempts, in seconds.
        batch_size: texts per request, at least 1 (default 128).
        concurrency: requests in flight at once, 1 to 1,000 (default 8).
        dimensions: ask the model for this many dimensions (models that support it).
        transport: an ``httpx`` transport, e.g. ``httpx.MockTransport`` in tests.
        seed: seeds the retry jitter.
        max_response_bytes: the largest reply body read (default 32 MiB); a larger reply
            is that request's error, and is never held in memory whole.

    Examples:
        >>> from evalframe.providers import OpenAIEmbeddings
        >>> OpenAIEmbeddings("bge-small", base_url="http://127.0.0.1:8080/v1")
        OpenAIEmbeddings(model='bge-small', url='http://127.0.0.1:8080/v1/embeddings', api_key=none)
    """

    _path = "embeddings"
    _operation = "Embeddings"
    _kind = "embeddings"

    def __init__(
        self,
        model: str = DEFAULT_EMBEDDINGS_MODEL,
        *,
        base_url: str | None = None,
        api_key: str | Secret | None = None,
        timeout: float | str | None = None,
        retries: int | str | None = None,
        backoff: float = 0.5,
        max_backoff: float = 20.0,
        batch_size: int = 128,
        concurrency: int = 8,
        dimensions: int | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        seed: int | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        super().__init__(
            model,
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            default_timeout=DEFAULT_EMBEDDINGS_TIMEOUT,
            retries=retries,
            backoff=backoff,
            max_backoff=max_backoff,
            concurrency=concurrency,
            transport=transport,
            seed=seed,
            max_response_bytes=max_response_bytes,
        )
        checked(batch_size, "batch_size")
        self.batch_size = batch_size
        self.dimensions = dimensions

    @property
    def cacheable(self) -> bool:
        return True

    @property
    def id(self) -> str:
        dims = f"/d={self.dimensions}" if self.dimensions else ""
        return f"openai:{self.model}{dims}@{self.provider}"

    def embed(self, texts: Sequence[str], ledger: Ledger) -> Embedded:
        """Embed ``texts`` in batches.

        A batch that fails gives its texts that error; a bad vector in a good reply (not
        finite, or of another size than the rest) fails only its own text.
        """
        n = len(texts)
        vectors: list[Vector | None] = [None] * n
        errors: list[str | None] = [None] * n
        batches = [range(i, min(i + self.batch_size, n)) for i in range(0, n, self.batch_size)]
        requests = []
        for idx in batches:
            body: dict[str, Any] = {"model": self.model, "input": [texts[i] for i in idx]}
            if self.dimensions:
                body["dimensions"] = self.dimensions
            requests.append((body, len(idx)))

        def parse(body: dict[str, Any], i: int) -> tuple[_Batch, str | None]:
            return _vectors(body, [texts[j] for j in batches[i]])

        results = self._exchange(requests, parse, ledger)
        for idx, (got, problem) in zip(batches, results, strict=True):
            if got is None or problem is not None:
                errors[idx.start : idx.stop] = [problem] * len(idx)
            else:
                vectors[idx.start : idx.stop], errors[idx.start : idx.stop] = got
        return Embedded(vectors, errors)


_Batch = tuple[list[Vector | None], list[str | None]]


def quote(text: str, limit: int = 40) -> str:
    """``text`` quoted for a message, cut to ``limit`` characters.

    Examples:
        >>> quote("short"), quote("x" * 50, 8)
        ("'short'", "'xxxxxxx…'")
    """
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


def _vectors(body: dict[str, Any], texts: Sequence[str]) -> tuple[_Batch, str | None]:
    """Per text of a batch, its vector or what is wrong with it; or what is wrong with the
    whole reply (no ``data`` list, a count or indexes that do not match the inputs).

    The batch's dimension is its most common vector size: a vector of another size, empty,
    not numeric or not finite fails only its own text.
    """
    expected = len(texts)
    data = body.get("data")
    if not isinstance(data, list):
        return ([], []), "Embeddings response has no 'data' list."
    if len(data) != expected:
        return ([], []), f"Embeddings client returned {len(data)} vector(s); expected {expected}."
    items = data
    if all(isinstance(d, dict) and isinstance(d.get("index"), int) for d in data):
        items = sorted(data, key=lambda d: d["index"])
        if [d["index"] for d in items] != list(range(expected)):
            return ([], []), "Embeddings response indexes do not match the inputs."
    parsed: list[Vector | None] = []
    errors: list[str | None] = []
    for text, d in zip(texts, items, strict=True):  # one per text of a batch, not per row
        raw = d.get("embedding") if isinstance(d, dict) else None
        try:
            v = np.asarray(raw, dtype=np.float32)
        except (TypeError, ValueError):
            v = np.zeros((0,), np.float32)
        if v.ndim != 1 or v.size == 0:
            parsed.append(None)
            errors.append(f"Embedding for {quote(text)} is not a non-empty list of numbers.")
        elif not bool(np.isfinite(v).all()):
            parsed.append(None)
            errors.append(f"Embedding for {quote(text)} contains NaN or infinite values.")
        else:
            parsed.append(v)
            errors.append(None)
    sizes = Counter(v.shape[0] for v in parsed if v is not None)
    if sizes:
        d = sizes.most_common(1)[0][0]
        for j, got in enumerate(parsed):
            if got is not None and got.shape[0] != d:
                parsed[j] = None
                errors[j] = (
                    f"Embedding for {quote(texts[j])} has {got.shape[0]} dimensions; "
                    f"the others have {d}."
                )
    return (parsed, errors), None


class OpenAIJudge(_HTTPClient):
    """A judge model behind any OpenAI-compatible ``/chat/completions`` endpoint.

    Each prompt is one request: ``temperature`` 0, ``seed`` 42 and a JSON-object
    ``response_format`` by default. The reply is
    ``choices[0].message.content``; parsing it is the metric's job.

    Args:
        model: the judge model (default ``"gpt-4o-mini"``).
        base_url: the API root (``.../v1``) or the full ``.../chat/completions`` URL.
        api_key: sent as a bearer token when given; never logged, cached or reported. It
            must be printable ASCII without spaces (else ``ProviderError``).
        timeout: seconds per request, reading the whole reply included: more than 0, at
            most a day (default 60; ``0`` means the default).
        retries: extra attempts on connection errors, timeouts, 429 and 5xx, 0 to 100
            (default 3).
        backoff: the first retry wait in seconds (doubling up to ``max_backoff``).
        max_backoff: the longest wait between attempts, in seconds.
        concurrency: requests in flight at once, 1 to 1,000 (default 8).
        temperature: sampling temperature (default 0).
        seed: the request's ``seed`` (default 42; ``None`` leaves it out).
        json_mode: send ``response_format={"type": "json_object"}`` (default true).
        structured: when a prompt comes with a reply schema, send it as
            ``response_format={"type": "json_schema", ...}`` (strict) instead; turn it off for
            endpoints that accept only ``json_object`` (default true).
        max_tokens: cap the reply length, when given.
        transport: an ``httpx`` transport, e.g. ``httpx.MockTransport`` in tests.
        max_response_bytes: the largest reply body read (default 32 MiB).
    """

    _path = "chat/completions"
    _operation = "LLM judge"
    _kind = "judge"

    def __init__(
        self,
        model: str = DEFAULT_JUDGE_MODEL,
        *,
        base_url: str | None = None,
        api_key: str | Secret | None = None,
        timeout: float | str | None = None,
        retries: int | str | None = None,
        backoff: float = 0.5,
        max_backoff: float = 20.0,
        concurrency: int = 8,
        temperature: float = 0.0,
        seed: int | None = 42,
        json_mode: bool = True,
        max_tokens: int | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        structured: bool = True,
    ) -> None:
        super().__init__(
            model,
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            default_timeout=DEFAULT_JUDGE_TIMEOUT,
            retries=retries,
            backoff=backoff,
            max_backoff=max_backoff,
            concurrency=concurrency,
            transport=transport,
            seed=seed,
            max_response_bytes=max_response_bytes,
        )
        if not (isinstance(temperature, int | float) and math.isfinite(temperature)):
            raise ValueError(f"temperature must be a number; got {temperature!r}.")
        self.temperature = float(temperature)
        self.seed = seed
        self.json_mode = json_mode
        self.structured = structured
        self.max_tokens = max_tokens

    def request(
        self,
        prompt: str,
        schema: Mapping[str, Any] | None = None,
        top_logprobs: int | None = None,
    ) -> dict[str, object]:
        body: dict[str, object] = {"model": self.model, "temperature": self.temperature}
        if self.seed is not None:
            body["seed"] = self.seed
        if self.json_mode and schema is not None and self.structured:
            body["response_format"] = {"type": "json_schema", "json_schema": dict(schema)}
        elif self.json_mode:
            body["response_format"] = {"type": "json_object"}
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        if top_logprobs:
            body["logprobs"] = True
            body["top_logprobs"] = int(top_logprobs)
        body["messages"] = [{"role": "user", "content": prompt}]
        return body

    def complete(
        self,
        prompts: Sequence[str],
        ledger: Ledger,
        schema: Mapping[str, Any] | None = None,
        top_logprobs: int | None = None,
    ) -> list[Reply]:
        """One reply per prompt; a failed request gives that prompt's error.

        With ``top_logprobs``, each reply carries the top log-probabilities of its tokens
        (``Reply.logprobs``) when the endpoint returns them, and ``None`` when it does not.
        """
        requests = [(dict(self.request(p, schema, top_logprobs)), 1) for p in prompts]
        if not top_logprobs:
            return [Reply(c, problem) for c, problem in self._exchange(requests, _reply, ledger)]
        got = self._exchange(requests, _reply_with_logprobs, ledger)
        return [
            Reply(None, problem) if r is None else Reply(r[0], problem, logprobs=r[1])
            for r, problem in got
        ]


def _reply(body: dict[str, Any], i: int) -> tuple[str | None, str | None]:
    """The reply's content, or what is wrong with it."""
    content = _content(body)
    if content is None:
        return None, "LLM judge response missing choices[0].message.content (or it is empty)."
    return content, None


def _reply_with_logprobs(
    body: dict[str, Any], i: int
) -> tuple[tuple[str, list[dict[str, Any]] | None] | None, str | None]:
    """The reply's content and its token logprobs (``None`` when the endpoint sent none)."""
    content, problem = _reply(body, i)
    if content is None:
        return None, problem
    return (content, token_logprobs(body)), None


def token_logprobs(body: dict[str, Any]) -> list[dict[str, Any]] | None:
    """Per token of ``choices[0]``: ``{"token": ..., "top": [[token, logprob], ...]}``.

    Read from ``choices[0].logprobs.content`` (the chat completions shape); entries that
    are not of that shape are skipped, and a reply without any gives ``None``.

    Examples:
        >>> body = {"choices": [{"logprobs": {"content": [
        ...     {"token": "4", "logprob": -0.1,
        ...      "top_logprobs": [{"token": "4", "logprob": -0.1}, {"token": "5", "logprob": -2.4}]}
        ... ]}}]}
        >>> token_logprobs(body)
        [{'token': '4', 'top': [['4', -0.1], ['5', -2.4]]}]
        >>> token_logprobs({"choices": [{"message": {"content": "4"}}]}) is None
        True
    """
    choices = body.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    logprobs = first.get("logprobs") if isinstance(first, dict) else None
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not isinstance(content, list):
        return None
    out: list[dict[str, Any]] = []
    for entry in content:  # tokens of one reply
        if not isinstance(entry, dict) or not isinstance(entry.get("token"), str):
            continue
        top = entry.get("top_logprobs")
        alternatives = [
            [t["token"], float(t["logprob"])]
            for t in (top if isinstance(top, list) else [])
            if isinstance(t, dict)
            and isinstance(t.get("token"), str)
            and isinstance(t.get("logprob"), int | float)
            and not isinstance(t.get("logprob"), bool)
        ]
        if not alternatives and isinstance(entry.get("logprob"), int | float):
            alternatives = [[entry["token"], float(entry["logprob"])]]
        out.append({"token": entry["token"], "top": alternatives})
    return out or None


def _content(body: dict[str, Any]) -> str | None:
    """``choices[0].message.content`` when it is a non-empty string."""
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    message = choices[0].get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, str) and content.strip() else None
