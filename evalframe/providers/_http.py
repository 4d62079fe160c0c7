"""HTTP plumbing shared by the OpenAI-compatible clients: retries, errors and event loops.

One POST with JSON in and JSON out, retried with tenacity on connection errors, timeouts,
HTTP 429 and 5xx (honouring ``Retry-After``), failing at once on any other status, on a
malformed body and on a body over the byte cap (read as a stream, so an oversize reply
never sits in memory whole). Each attempt, body included, ends within ``timeout`` seconds.
Failure messages name the operation, the status or the transport error and the number of
attempts; they never carry the response body or the API key.
"""

from __future__ import annotations

import contextlib
import email.utils
import json
import logging
import random
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from evalframe.core._errors import RequestFailedError
from evalframe.providers._config import RetryPolicy, Secret, display_url, redact

if TYPE_CHECKING:
    import httpx
    from tenacity import RetryCallState

    from evalframe.core._rate import RateLimit

__all__ = ["RequestFailedError", "Response", "post_json", "run_sync"]

log = logging.getLogger("evalframe.providers")

T = TypeVar("T")


class _RetryableStatusError(Exception):
    def __init__(self, status: int, retry_after: float | None) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.retry_after = retry_after


class _FatalStatusError(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status


class _MalformedBodyError(Exception):
    pass


class _OversizeBodyError(Exception):
    pass


class _AttemptTimeoutError(Exception):
    """One attempt (connect, send, read the whole body) outlived its timeout."""


@dataclass(frozen=True, slots=True)
class Response:
    """A decoded JSON response and how it was obtained (``status``: its HTTP status)."""

    body: dict[str, Any]
    attempts: int
    latency_ms: float
    status: int = 200


def run_sync(factory: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine to completion from synchronous code, even under a running event loop.

    In a plain script this is ``asyncio.run``. Where a loop is already running in this
    thread (Jupyter, an async web app), the coroutine runs on a fresh loop in a worker
    thread, so the caller's loop is neither blocked from re-entry errors nor disturbed.
    """
    import asyncio  # loaded with the first provider call, not at ``import evalframe``

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(factory())
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="evalframe-providers") as pool:
        return pool.submit(lambda: asyncio.run(factory())).result()


def _retry_after(headers: httpx.Headers) -> float | None:
    """Seconds asked for by ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP date)."""
    ms = headers.get("retry-after-ms")
    if ms is not None:
        with contextlib.suppress(ValueError):
            return max(0.0, float(ms) / 1000.0)
    value = headers.get("retry-after")
    if value is None:
        return None
    with contextlib.suppress(ValueError):
        return max(0.0, float(value))
    with contextlib.suppress(TypeError, ValueError):
        when = email.utils.parsedate_to_datetime(value)
        return max(0.0, when.timestamp() - time.time())
    return None


def _is_retryable(exc: BaseException) -> bool:
    import httpx

    if isinstance(exc, httpx.LocalProtocolError):
        return False  # a request that cannot be formed (a bad header) never will be
    return isinstance(exc, _RetryableStatusError | _AttemptTimeoutError | httpx.TransportError)


def _wait(policy: RetryPolicy, rng: random.Random) -> Callable[[RetryCallState], float]:
    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome is not None else None
        if isinstance(exc, _RetryableStatusError) and exc.retry_after is not None:
            return float(min(exc.retry_after, policy.max_retry_after))
        step = min(policy.backoff * 2 ** (state.attempt_number - 1), policy.max_backoff)
        return float(step + rng.uniform(0.0, policy.backoff))

    return wait


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


async def post_json(
    client: httpx.AsyncClient,
    url: str,
    body: Mapping[str, Any],
    *,
    api_key: Secret | None,
    policy: RetryPolicy,
    operation: str,
    timeout: float,
    max_bytes: int,
    rng: random.Random | None = None,
    rate: RateLimit | None = None,
    headers: Mapping[str, Secret] | None = None,
    hidden: Sequence[Secret] = (),
) -> Response:
    """POST ``body`` as JSON and return the decoded JSON object, retrying per ``policy``.

    Args:
        client: the run's client (its timeout and connection limits apply).
        url: the endpoint.
        body: the request body.
        api_key: sent as a bearer token when given.
        policy: retries and waits.
        operation: names the request in messages, e.g. ``"Embeddings"`` or ``"LLM judge"``.
        timeout: seconds one attempt may take, from connecting to the last body byte.
        max_bytes: the largest response body accepted; a larger one fails the call at once.
        rng: the jitter's random source.
        rate: the run's rate limit: every attempt waits for its slot first.
        headers: more request headers, as secrets (sent, never shown in a message).
        hidden: more values to keep out of messages and logs (a URL's query, say).

    Raises:
        RequestFailedError: the request failed for good; the message is safe to show.
    """
    import httpx
    from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt

    extra = dict(headers or {})
    secrets = (api_key, *extra.values(), *hidden)
    sent = {"Content-Type": "application/json", "Accept": "application/json"}
    sent |= {name: value.reveal() for name, value in extra.items()}
    if api_key is not None:
        sent["Authorization"] = f"Bearer {api_key.reveal()}"
    status_seen = 200
    started = time.perf_counter()
    attempts = 0

    def before_sleep(state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome is not None else None
        wait = state.next_action.sleep if state.next_action is not None else 0.0
        reason = _describe(exc) if exc is not None else "unknown"
        log.info(
            "%s request to %s failed (%s); retry %d of %d in %.3f s",
            operation,
            display_url(url),
            redact(reason, *secrets),
            state.attempt_number,
            policy.retries,
            wait,
        )

    async def exchange() -> dict[str, Any]:
        nonlocal status_seen
        async with client.stream("POST", url, json=dict(body), headers=sent) as response:
            status = status_seen = response.status_code
            if status == 429 or status >= 500:
                raise _RetryableStatusError(status, _retry_after(response.headers))
            if status >= 400:
                raise _FatalStatusError(status)
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > max_bytes:
                raise _OversizeBodyError
            chunks, size = [], 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > max_bytes:
                    raise _OversizeBodyError
                chunks.append(chunk)
        try:
            decoded = json.loads(b"".join(chunks))
        except ValueError as exc:
            raise _MalformedBodyError from exc
        if not isinstance(decoded, dict):
            raise _MalformedBodyError
        return decoded

    import asyncio

    async def attempt() -> dict[str, Any]:
        nonlocal attempts
        if rate is not None:
            await rate.wait_async()  # before the attempt's own timeout starts
        attempts += 1
        try:
            return await asyncio.wait_for(exchange(), timeout)
        except TimeoutError as exc:
            raise _AttemptTimeoutError(f"no complete reply within {timeout:g} s") from exc

    retrying = AsyncRetrying(
        stop=stop_after_attempt(policy.attempts),
        wait=_wait(policy, rng or random.Random()),
        retry=retry_if_exception(_is_retryable),
        before_sleep=before_sleep,
        reraise=True,
    )

    def failed(message: str, status: int | None) -> RequestFailedError:
        latency = (time.perf_counter() - started) * 1000.0
        return RequestFailedError(
            redact(message, *secrets), status=status, attempts=attempts, latency_ms=latency
        )

    try:
        decoded: dict[str, Any] = await retrying(attempt)
    except _RetryableStatusError as exc:
        raise failed(
            f"{operation} request failed: HTTP {exc.status} after {attempts} attempt(s).",
            exc.status,
        ) from exc
    except _FatalStatusError as exc:
        raise failed(f"{operation} request failed: HTTP {exc.status}.", exc.status) from exc
    except _MalformedBodyError as exc:
        raise failed(f"{operation} response is not a valid JSON object.", status_seen) from exc
    except _OversizeBodyError as exc:
        raise failed(
            f"{operation} response is larger than the {_size(max_bytes)} limit "
            "(max_response_bytes); it was not read.",
            status_seen,
        ) from exc
    except _AttemptTimeoutError as exc:
        raise failed(
            f"{operation} request failed: {exc} after {attempts} attempt(s).", None
        ) from exc
    except httpx.TransportError as exc:
        raise failed(
            f"{operation} request failed before receiving a response after {attempts} "
            f"attempt(s): {_describe(exc)}.",
            None,
        ) from exc
    except Exception as exc:  # e.g. a header httpx refuses: still a call's error, redacted
        raise failed(f"{operation} request could not be sent: {_describe(exc)}.", None) from exc
    latency = (time.perf_counter() - started) * 1000.0
    return Response(decoded, attempts, latency, status_seen)


def _size(n: int) -> str:
    return f"{n / 2**20:g} MiB" if n >= 2**20 else f"{n} bytes"
