"""``Webhook``: a user-configured HTTP endpoint that scores rows, for the ``webhook`` metric.

The endpoint is configured by the user (``ef.Webhook(url, name=...)``, or the
``EVALFRAME_WEBHOOK_URL`` / ``EVALFRAME_WEBHOOK_<NAME>_URL`` variables), never taken from the
data: the metric names an endpoint, it cannot give a URL. Requests are JSON POSTs sent like the
judge's (concurrent workers, retries on connection errors, timeouts, 429 and 5xx, the run's
rate limit, budget and deadline, each call in the usage ledger). Header values, a bearer token
and the URL's query and password are secrets: sent, never shown, logged, cached or stored.

One row is one request, or with ``batch=N`` up to N rows go in one request as
``{"items": [row, ...]}`` and the reply must be ``{"results": [reply, ...]}`` in the same order.
Each row's outcome is kept as the JSON text ``{"status": <HTTP status>, "reply": <object or
null>}``; what it means is the metric's business.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import parse_qsl, urlsplit

from evalframe.providers._config import (
    DEFAULT_MAX_RESPONSE_BYTES,
    Secret,
    check_key,
)
from evalframe.providers._http import RequestFailedError
from evalframe.providers._ledger import Ledger
from evalframe.providers._openai import _HTTPClient

if TYPE_CHECKING:
    import httpx

__all__ = ["DEFAULT_WEBHOOK_TIMEOUT", "WEBHOOK_NAME", "Webhook", "outcome"]

DEFAULT_WEBHOOK_TIMEOUT: Final = 30.0
WEBHOOK_NAME: Final = re.compile(r"[a-z][a-z0-9_-]*")
"""What an endpoint's name may be: lower-case letters, digits, ``_`` and ``-``."""

_HEADER_NAME: Final = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]+")


def outcome(status: int, reply: Any) -> str:
    """A row's outcome as the metric reads it: ``{"status": ..., "reply": ...}``."""
    return json.dumps({"status": status, "reply": reply}, separators=(",", ":"))


class Webhook(_HTTPClient):
    """An HTTP endpoint of the user's that scores rows: JSON POSTed, JSON (or a status) back.

    Args:
        url: the endpoint (``http://`` or ``https://``). Its query string and password are
            treated as secrets.
        name: how metrics name it (``webhook(endpoint=NAME)``; default ``default``).
        headers: extra request headers; their values are secrets.
        bearer_token: sent as ``Authorization: Bearer ...`` when given.
        timeout: seconds per request, reading the whole reply included: more than 0, at
            most a day (default 30; ``0`` means the default).
        retries: extra attempts on connection errors, timeouts, 429 and 5xx, 0 to 100
            (default 3).
        backoff, max_backoff: the retry waits, in seconds.
        concurrency: requests in flight at once, 1 to 1,000 (default 8).
        transport: an ``httpx`` transport, e.g. ``httpx.MockTransport`` in tests.
        max_response_bytes: the largest reply body read (default 32 MiB).

    Examples:
        >>> from evalframe.providers import Webhook
        >>> Webhook("https://scores.example.test/grade?key=s3cret", name="grader")
        Webhook(name='grader', url='https://scores.example.test/grade', headers=0, token=none)
    """

    _path = ""
    _operation = "Webhook"
    _kind = "webhook"

    def __init__(
        self,
        url: str,
        *,
        name: str = "default",
        headers: Mapping[str, str | Secret] | None = None,
        bearer_token: str | Secret | None = None,
        timeout: float | str | None = None,
        retries: int | str | None = None,
        backoff: float = 0.5,
        max_backoff: float = 20.0,
        concurrency: int = 8,
        transport: httpx.AsyncBaseTransport | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        if not isinstance(name, str) or not WEBHOOK_NAME.fullmatch(name):
            raise ValueError(
                "A webhook's name must be lower-case letters, digits, '_' or '-', starting "
                f"with a letter; got {name!r}."
            )
        super().__init__(
            name,
            base_url=url,
            api_key=bearer_token,
            timeout=timeout,
            default_timeout=DEFAULT_WEBHOOK_TIMEOUT,
            retries=retries,
            backoff=backoff,
            max_backoff=max_backoff,
            concurrency=concurrency,
            transport=transport,
            seed=None,
            max_response_bytes=max_response_bytes,
        )
        self.name = name
        for header, value in (headers or {}).items():
            if not isinstance(header, str) or not _HEADER_NAME.fullmatch(header):
                raise ValueError(f"Webhook {name!r}: {header!r} is not a valid header name.")
            found = check_key(value, f"the webhook {name!r} header {header!r}")
            if found is not None:
                self.headers[header] = found
        parts = urlsplit(self.url)
        hidden = [v for _, v in parse_qsl(parts.query, keep_blank_values=False)]
        hidden += [parts.query, parts.password or ""]
        self.url_secrets = tuple(s for s in (Secret.of(v) for v in hidden) if s is not None)

    @property
    def id(self) -> str:
        return f"webhook:{self.name}@{self.provider}"

    @property
    def secrets(self) -> tuple[Secret, ...]:
        """Every value this client sends that must never be shown."""
        found = (self.api_key, *self.headers.values(), *self.url_secrets)
        return tuple(s for s in found if s is not None)

    def __repr__(self) -> str:
        token = "set" if self.api_key is not None else "none"
        return (
            f"Webhook(name={self.name!r}, url={self.provider!r}, headers={len(self.headers)}, "
            f"token={token})"
        )

    def post(
        self, payloads: Sequence[Any], batch: int, ledger: Ledger
    ) -> list[tuple[str | None, str | None]]:
        """POST the rows' payloads, ``batch`` to a request; per payload ``(outcome, error)``.

        ``outcome`` (see :func:`outcome`) is given for every HTTP answer: a 2xx JSON reply,
        or, when the endpoint answered with a status and nothing usable, that status and a
        null reply (the metric decides whether a status is a verdict). A failure to get an
        answer (connection, timeout, budget, deadline, a malformed batch reply) is the
        payload's error.
        """
        chunks = [range(i, min(i + batch, len(payloads))) for i in range(0, len(payloads), batch)]
        requests: list[tuple[dict[str, Any], int]] = []
        for idx in chunks:
            if batch == 1:
                requests.append((dict(payloads[idx[0]]), 1))
            else:
                requests.append(({"items": [payloads[i] for i in idx]}, len(idx)))

        def parse(body: dict[str, Any], k: int) -> tuple[list[str], str | None]:
            if batch == 1:
                return [outcome(200, body)], None
            results = body.get("results")
            if not isinstance(results, list) or len(results) != len(chunks[k]):
                return [], (
                    f"Webhook batch reply must hold a 'results' list of {len(chunks[k])} "
                    "replies, in the order of 'items'."
                )
            return [outcome(200, r) for r in results], None

        def refused(exc: RequestFailedError, k: int) -> list[str] | None:
            if exc.status is None:
                return None
            return [outcome(exc.status, None)] * len(chunks[k])

        got = self._exchange(requests, parse, ledger, refused)
        out: list[tuple[str | None, str | None]] = [(None, "not sent")] * len(payloads)
        for idx, (found, problem) in zip(chunks, got, strict=True):
            for j, i in enumerate(idx):
                if problem is not None or not found:
                    out[i] = (None, ledger.redact(problem or "no reply", *self.secrets))
                else:
                    out[i] = (found[j], None)
        return out
