"""Provider settings: secrets, timeouts, the retry policy, endpoints and environment variables.

Everything here is a value: reading the environment happens only in ``from_env`` functions
that are given (or default to) ``os.environ``, never at import.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from evalframe.core._limits import checked, parsed
from evalframe.core._secret import Secret, display_url

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_CONCURRENCY",
    "DEFAULT_EMBEDDINGS_MODEL",
    "DEFAULT_EMBEDDINGS_TIMEOUT",
    "DEFAULT_JUDGE_MODEL",
    "DEFAULT_JUDGE_TIMEOUT",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "ENV",
    "RetryPolicy",
    "Secret",
    "check_key",
    "display_url",
    "endpoint_url",
    "env_setting",
    "normalize_retries",
    "normalize_timeout",
    "number_setting",
    "redact",
]

DEFAULT_BASE_URL: Final = "https://api.openai.com/v1"
DEFAULT_EMBEDDINGS_MODEL: Final = "text-embedding-3-small"
DEFAULT_JUDGE_MODEL: Final = "gpt-4o-mini"
DEFAULT_JUDGE_TIMEOUT: Final = 60.0
DEFAULT_EMBEDDINGS_TIMEOUT: Final = 30.0
DEFAULT_RETRIES: Final = 3
DEFAULT_CONCURRENCY: Final = 8
DEFAULT_MAX_RESPONSE_BYTES: Final = 32 * 1024 * 1024

ENV: Final = {
    "api_key": "OPENAI_API_KEY",
    "base_url": "OPENAI_BASE_URL",
    "embeddings_base_url": "EVALFRAME_EMBEDDINGS_BASE_URL",
    "embeddings_model": "EVALFRAME_EMBEDDINGS_MODEL",
    "embeddings_api_key": "EVALFRAME_EMBEDDINGS_API_KEY",
    "judge_base_url": "EVALFRAME_JUDGE_BASE_URL",
    "judge_model": "EVALFRAME_JUDGE_MODEL",
    "judge_api_key": "EVALFRAME_JUDGE_API_KEY",
    "timeout": "EVALFRAME_TIMEOUT",
    "retries": "EVALFRAME_RETRIES",
    "deadline": "EVALFRAME_DEADLINE",
    "embeddings_concurrency": "EVALFRAME_EMBEDDINGS_CONCURRENCY",
    "judge_concurrency": "EVALFRAME_JUDGE_CONCURRENCY",
    "webhook_url": "EVALFRAME_WEBHOOK_URL",
    "webhook_token": "EVALFRAME_WEBHOOK_TOKEN",
}
"""The environment variables evalframe reads, by role."""


def _forms(value: str) -> list[str]:
    r"""Every form a secret can take in an error message, longest first.

    Libraries quote header values as ``repr`` of bytes or str (``b'Bearer sk-\nx'``) or
    JSON-escape them, so the raw value alone is not enough; a key split by a control
    character can also appear piecewise, so each run of 4+ printable characters is a form.
    """
    forms = {value, repr(value)[1:-1], repr(value.encode("utf-8", "replace"))[2:-1]}
    forms.add(json.dumps(value)[1:-1])
    forms.update(p for p in re.split(r"[\x00-\x20\x7f]+", value) if len(p) >= 4)
    return sorted((f for f in forms if f), key=len, reverse=True)


def redact(text: str, *secrets: Secret | None) -> str:
    r"""Replace every occurrence of the secrets, in any quoted or split form, by ``***``.

    Examples:
        >>> redact("Illegal header value b'Bearer sk-ab\\ncdef'", Secret("sk-ab\ncdef"))
        "Illegal header value b'Bearer ***'"
    """
    for s in secrets:
        if s is not None and s.reveal():
            for form in _forms(s.reveal()):
                text = text.replace(form, "***")
    return text


_HEADER_SAFE = re.compile(r"[\x21-\x7e]+")


def check_key(value: str | Secret | None, source: str) -> Secret | None:
    """The key as a ``Secret`` (``None`` when missing or blank), checked for use in a header.

    A key must be printable ASCII without spaces: anything else (a pasted newline, a
    non-ASCII character) cannot be sent as a bearer token, and HTTP libraries would quote
    the value in their errors.

    Raises:
        ProviderError: naming ``source`` (an environment variable or argument), never the value.
    """
    key = Secret.of(value)
    if key is not None and not _HEADER_SAFE.fullmatch(key.reveal()):
        from evalframe.core._errors import ProviderError

        raise ProviderError(
            f"The API key in {source} contains whitespace, control or non-ASCII characters, "
            "so it cannot be sent in an HTTP header; set it to the key alone (printable "
            "ASCII, no spaces or line breaks)."
        )
    return key


def number_setting(value: Any, role: str, source: str | None = None) -> Any:
    """The number ``value`` gives the setting ``role``, within its range
    (``core._limits.LIMITS[role]``): a number, or the text of one (a variable's value).

    ``None`` and blank text give ``None``. A typo in a limit must not silently mean "no
    limit", nor a huge value a thread pool or a wait of that size.

    Raises:
        ValueError: not such a number; the message names ``source`` (default: ``role``)
            and the range.

    Examples:
        >>> number_setting(" 16 ", "judge_concurrency"), number_setting("", "timeout")
        (16, None)
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, str):
        return parsed(value, role, source or role)
    return checked(value, role, source)


def env_setting(environ: Mapping[str, str] | None, role: str) -> Any:
    """The number the variable for ``role`` (``ENV[role]``) sets, or ``None`` when unset.

    Raises:
        ProviderError: the value is not a number in the setting's range, naming the
            variable and the range.
    """
    try:
        return number_setting(env_value(environ, role), role, ENV[role])
    except ValueError as exc:
        from evalframe.core._errors import ProviderError

        raise ProviderError(str(exc)) from None


def normalize_timeout(value: Any, default: float) -> float:
    """A timeout in seconds: ``None``, blank and ``0`` give ``default``, as in eval-harness
    (no value ever means "wait forever"); anything else must be a number of seconds in the
    range of ``timeout`` (more than 0, at most a day). Fractions of a second are kept (a
    local server, or a test, may want 0.2 s).

    Raises:
        ValueError: naming ``timeout`` and the range.

    Examples:
        >>> normalize_timeout("12", 60.0), normalize_timeout(0, 60.0), normalize_timeout(0.25, 60.0)
        (12.0, 60.0, 0.25)
    """
    found = None if _zero(value) else number_setting(value, "timeout")
    return default if found is None else float(found)


def _zero(value: Any) -> bool:
    try:
        return not isinstance(value, bool) and float(value) == 0
    except (TypeError, ValueError):
        return False


def normalize_retries(value: Any, default: int = DEFAULT_RETRIES) -> int:
    """Extra attempts after the first: a whole number (or its text) from 0 to 100; ``None``
    and blank give ``default``.

    Raises:
        ValueError: naming ``retries`` and the range.

    Examples:
        >>> [normalize_retries(v) for v in ("2", 2, 0, None)]
        [2, 2, 0, 3]
    """
    found = number_setting(value, "retries")
    return default if found is None else int(found)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """When and how long to wait before trying a provider request again.

    Connection errors, timeouts, HTTP 429 and HTTP 5xx are retried; any other 4xx, and a
    successful response with a malformed body, fail at once. The wait before attempt ``k``
    (``k >= 1``) is the server's ``Retry-After`` (or ``retry-after-ms``) when it sends one,
    capped at ``max_retry_after``; otherwise ``min(backoff * 2**(k-1), max_backoff)`` plus a
    uniform jitter of up to ``backoff``.

    Attributes:
        retries: extra attempts after the first (so ``retries + 1`` attempts in all).
        backoff: the first wait, in seconds.
        max_backoff: the longest exponential wait, in seconds.
        max_retry_after: the longest ``Retry-After`` honoured, in seconds.
    """

    retries: int = DEFAULT_RETRIES
    backoff: float = 0.5
    max_backoff: float = 20.0
    max_retry_after: float = 60.0

    def __post_init__(self) -> None:
        if self.retries < 0:
            raise ValueError(f"retries must be >= 0; got {self.retries}")
        for name in ("backoff", "max_backoff", "max_retry_after"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a finite number >= 0; got {value}")

    @property
    def attempts(self) -> int:
        return self.retries + 1


def endpoint_url(base_url: str, path: str) -> str:
    """The full endpoint: ``base_url`` + ``/path`` unless ``base_url`` already ends with it.

    Examples:
        >>> endpoint_url("http://127.0.0.1:8000/v1/", "embeddings")
        'http://127.0.0.1:8000/v1/embeddings'
        >>> endpoint_url("https://x.test/v1/chat/completions", "chat/completions")
        'https://x.test/v1/chat/completions'
    """
    url = base_url.strip().rstrip("/")
    if not re.match(r"^https?://", url, flags=re.IGNORECASE):
        raise ValueError(f"A provider base URL must start with http:// or https://; got {url!r}.")
    if not path:
        return url
    return url if url.endswith("/" + path) else f"{url}/{path}"


def env_value(environ: Mapping[str, str] | None, role: str) -> str | None:
    """The stripped value of the variable for ``role`` (a key of ``ENV``), or ``None``."""
    env = os.environ if environ is None else environ
    value = env.get(ENV[role])
    return value.strip() if value and value.strip() else None
