"""``Providers``: which embedder and judge a run uses, with their cache, ledger and budget."""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING, Any

import polars as pl

from evalframe.core import schema as C
from evalframe.core._errors import ProviderError
from evalframe.core._progress import track
from evalframe.core._rate import RateLimit
from evalframe.core._run_options import Endpoint, Limits, grouped
from evalframe.providers._base import (
    Embedded,
    EmbeddingClient,
    JudgeClient,
    Reply,
    TokenEmbeddingClient,
    Vector,
)
from evalframe.providers._cache import ResponseCache, default_cache_path
from evalframe.providers._config import (
    DEFAULT_BASE_URL,
    DEFAULT_CONCURRENCY,
    DEFAULT_EMBEDDINGS_MODEL,
    DEFAULT_JUDGE_MODEL,
    ENV,
    Secret,
    check_key,
    env_setting,
    env_value,
    number_setting,
)
from evalframe.providers._ledger import Ledger, Prices

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from evalframe.providers._webhook import Webhook

__all__ = ["BUDGET_ERROR_PREFIX", "Providers"]

BUDGET_ERROR_PREFIX = "Budget exhausted:"

# Texts ``embed_matrix`` asks for, and copies into its matrix, at a time: the embedder's
# per-text arrays are then held for one chunk (25 MB at 384 values a vector), not for all.
EMBED_CHUNK = 16_384

_NO_WEBHOOK = (
    "The metric(s) {metrics} POST rows to the webhook endpoint {name!r}, and none is "
    "configured{known}. Set {variable} (with {token} if it needs a bearer token), or use "
    "ef.Providers(webhooks=[ef.Webhook(url, name={name!r})]). A metric names an endpoint; its "
    "URL is configuration, never taken from a dataset or a metric spec."
)
_WEBHOOK_ENV = re.compile(r"EVALFRAME_WEBHOOK_(?:([A-Z0-9_]+)_)?URL")

_NO_JUDGE = (
    "{what} need a judge model, and none is configured. Set EVALFRAME_JUDGE_BASE_URL and "
    "EVALFRAME_JUDGE_MODEL (with EVALFRAME_JUDGE_API_KEY if the endpoint needs a key), or "
    "OPENAI_API_KEY for api.openai.com; or pass --judge-base-url/--judge-model to "
    "`evalframe run`; or use ef.Providers(judge=ef.OpenAIJudge(...))."
)


def _embedder(value: EmbeddingClient | str | None) -> EmbeddingClient | None:
    if value is None or isinstance(value, EmbeddingClient):
        return value
    if value in {"onnx", "embedded", "default"}:
        from evalframe.providers._onnx import OnnxEmbedder

        return OnnxEmbedder()
    if value == "hashing":
        from evalframe.providers._hashing import HashingEmbedder

        return HashingEmbedder()
    raise ValueError(
        f"embeddings must be an embedding client, 'onnx' or 'hashing'; got {value!r}. "
        "For a remote model use ef.OpenAIEmbeddings(model, base_url=...)."
    )


def _cache(value: bool | str | os.PathLike[str] | ResponseCache | None) -> ResponseCache | None:
    if value is None or value is False:
        return None
    if value is True:
        return ResponseCache(default_cache_path())
    if isinstance(value, ResponseCache):
        return value
    return ResponseCache(value)


def _with_error(r: Reply, error: str | None) -> Reply:
    """``r`` with its (redacted) error, every other field kept (``logprobs``, say)."""
    return dataclasses.replace(r, error=error)


def _to_cache(r: Reply, top_logprobs: int | None) -> str:
    """What the cache keeps of a reply: its content, with its logprobs when asked."""
    content = r.content or ""
    if not top_logprobs:
        return content
    return json.dumps({"content": content, "logprobs": getattr(r, "logprobs", None)})


def _from_cache(stored: str, top_logprobs: int | None) -> Reply:
    if not top_logprobs:
        return Reply(stored)
    value = json.loads(stored)
    reply = Reply(value["content"])
    logprobs = value.get("logprobs")
    if logprobs is not None and "logprobs" in {f.name for f in dataclasses.fields(Reply)}:
        reply = dataclasses.replace(reply, logprobs=logprobs)
    return reply


class Providers:
    """The embedder and judge of a run, with the response cache, usage ledger and budget.

    Pass it to ``ef.evaluate(..., providers=...)`` or ``ef.score(..., providers=...)``.
    Without one, evalframe builds ``Providers.from_env()``.

    Args:
        embeddings: an embedding client, ``"onnx"`` (the embedded default, used when
            ``None``) or ``"hashing"``.
        judge: a judge client; required only by judge metrics.
        cache: ``True`` for the default file (``~/.cache/evalframe/cache.duckdb``), a path,
            a ``ResponseCache``, or ``False`` for none.
        budget_usd: stop calling providers once more than this has been spent in a run.
        deadline: stop calling providers this many seconds after the run began
            (``ef.evaluate`` starts the clock; otherwise ``begin_run`` or construction does):
            calls not yet made, and calls still in flight, become their rows' errors; the
            scores already computed are kept.
        prices: USD per million tokens by model, for providers that do not report cost:
            ``{"gpt-4o-mini": {"input_per_million": 0.15, "output_per_million": 0.6}}``.
        rate_limit: at most this many requests start in any window of
            ``rate_window_seconds`` (default 60); ``ef.evaluate`` shares the window with the
            system under test's calls.
        webhooks: the endpoints the ``webhook`` metric may POST rows to (``ef.Webhook``),
            known by their names.

    Examples:
        >>> from evalframe.providers import Providers
        >>> p = Providers(embeddings="hashing", cache=False, budget_usd=1.0)
        >>> p
        Providers(embeddings=HashingEmbedder(dim=512), judge=None, cache=None, budget_usd=1.0)
    """

    def __init__(
        self,
        embeddings: EmbeddingClient | str | None = None,
        judge: JudgeClient | None = None,
        *,
        cache: bool | str | os.PathLike[str] | ResponseCache | None = True,
        budget_usd: float | None = None,
        prices: Prices | None = None,
        deadline: float | None = None,
        rate_limit: int | None = None,
        rate_window_seconds: float = 60.0,
        webhooks: Sequence[Webhook] = (),
    ) -> None:
        from evalframe.providers._webhook import Webhook

        self.webhooks: dict[str, Webhook] = {}
        for hook in webhooks:
            if not isinstance(hook, Webhook):
                raise TypeError(f"webhooks must be ef.Webhook endpoints; got {hook!r}.")
            if hook.name in self.webhooks:
                raise ValueError(f"Two webhooks are named {hook.name!r}.")
            self.webhooks[hook.name] = hook
        if judge is not None and not isinstance(judge, JudgeClient):
            raise TypeError(f"judge must be a judge client such as ef.OpenAIJudge; got {judge!r}.")
        self._embeddings = _embedder(embeddings)
        self.judge = judge
        self.cache = _cache(cache)
        rate = RateLimit(rate_limit, rate_window_seconds) if rate_limit is not None else None
        self.ledger = Ledger(prices=prices, budget_usd=budget_usd, deadline=deadline, rate=rate)

    def _guard(self) -> None:
        """Give the ledger the keys of the current clients, for redaction."""
        keys = (getattr(c, "api_key", None) for c in (self._embeddings, self.judge))
        hooks = (s for hook in self.webhooks.values() for s in hook.secrets)
        self.ledger.secrets = tuple(k for k in (*keys, *hooks) if isinstance(k, Secret))

    def _guarded(self, call: Any, *args: Any) -> Any:
        """``call(*args)``; an exception escaping a client leaves as a redacted
        ``ProviderError`` (its cause is dropped: it may quote a key)."""
        try:
            return call(*args)
        except Exception as exc:
            message = self.ledger.redact(f"{type(exc).__name__}: {exc}")
            raise ProviderError(message) from None

    def _redacted(self, errors: Sequence[str | None]) -> list[str | None]:
        return [self.ledger.redact(e) if e is not None else None for e in errors]

    @classmethod
    def from_env(
        cls,
        *,
        embeddings: Endpoint | None = None,
        judge: Endpoint | None = None,
        embeddings_base_url: str | None = None,
        embeddings_model: str | None = None,
        embeddings_api_key: str | Secret | None = None,
        judge_base_url: str | None = None,
        judge_model: str | None = None,
        judge_api_key: str | Secret | None = None,
        cache: bool | str | os.PathLike[str] | ResponseCache | None = True,
        budget_usd: float | None = None,
        prices: Prices | None = None,
        timeout: float | None = None,
        retries: int | None = None,
        deadline: float | None = None,
        embeddings_concurrency: int | None = None,
        judge_concurrency: int | None = None,
        environ: Mapping[str, str] | None = None,
        rate_limit: int | None = None,
        rate_window_seconds: float = 60.0,
        webhooks: Sequence[Webhook] | None = None,
        limits: Limits | None = None,
    ) -> Providers:
        """Providers from arguments, falling back to environment variables.

        Embeddings go to an HTTP endpoint only when one is configured
        (``EVALFRAME_EMBEDDINGS_BASE_URL``, ``EVALFRAME_EMBEDDINGS_MODEL`` or the shared
        ``OPENAI_BASE_URL``); otherwise the embedded ONNX model runs offline, so a stray
        ``OPENAI_API_KEY`` alone never starts paid calls. ``EVALFRAME_EMBEDDINGS_MODEL=hashing``
        (or ``onnx``) picks a local embedder.
        The judge uses ``EVALFRAME_JUDGE_*``, falling back to ``OPENAI_BASE_URL`` and
        ``OPENAI_API_KEY``; with none of them there is no judge.

        Args:
            embeddings, judge: each role's endpoint (an ``ef.Endpoint``: base URL, model,
                API key, concurrency), its fields overriding the role's variables; the
                shortcuts below set one field each and are not given with their role's group.
            embeddings_base_url, embeddings_model, embeddings_api_key: override
                ``EVALFRAME_EMBEDDINGS_*``.
            judge_base_url, judge_model, judge_api_key: override ``EVALFRAME_JUDGE_*``.
            limits: the budget, deadline, timeout and retries together (an ``ef.Limits``;
                ``budget_usd``, ``deadline``, ``timeout`` and ``retries`` are its shortcuts,
                not given with it).
            cache, budget_usd, prices: as for ``Providers``.
            timeout: seconds per HTTP request for both clients, reading the reply included
                (default ``EVALFRAME_TIMEOUT``, else 30 for embeddings and 60 for the judge).
            retries: extra attempts for both clients (default ``EVALFRAME_RETRIES``, else 3).
            deadline: seconds for all provider calls of a run (default
                ``EVALFRAME_DEADLINE``, else none).
            embeddings_concurrency, judge_concurrency: requests in flight at once to each
                endpoint (default ``EVALFRAME_EMBEDDINGS_CONCURRENCY`` and
                ``EVALFRAME_JUDGE_CONCURRENCY``, else 8).
            environ: the variables to read (default ``os.environ``).
            rate_limit, rate_window_seconds: as for ``Providers``.
            webhooks: the webhook endpoints (default: ``EVALFRAME_WEBHOOK_URL`` names
                ``default``, ``EVALFRAME_WEBHOOK_<NAME>_URL`` names ``<name>``; each with an
                optional ``..._TOKEN`` sent as a bearer token).

        Raises:
            ProviderError: an API key that cannot be sent in a header, or a timeout,
                retries, deadline or concurrency that is not a valid number; the message
                names the variable or argument, never a key.
        """
        from evalframe.providers._openai import OpenAIEmbeddings, OpenAIJudge

        if limits is not None:
            limits = grouped(
                Limits, limits, "limits",
                budget_usd=budget_usd, deadline=deadline, timeout=timeout, retries=retries,
            )  # fmt: skip
            budget_usd, deadline = limits.budget_usd, limits.deadline
            timeout, retries = limits.timeout, limits.retries

        key_source = {
            "embeddings": "the embeddings_api_key argument",
            "judge": "the judge_api_key argument",
        }
        if embeddings is not None:
            e = grouped(
                Endpoint, embeddings, "embeddings",
                embeddings_base_url=embeddings_base_url, embeddings_model=embeddings_model,
                embeddings_api_key=embeddings_api_key,
                embeddings_concurrency=embeddings_concurrency,
            )  # fmt: skip
            embeddings_base_url, embeddings_model = e.base_url, e.model
            embeddings_api_key, embeddings_concurrency = e.api_key, e.concurrency
            key_source["embeddings"] = "embeddings=ef.Endpoint(api_key=...)"
        if judge is not None:
            j = grouped(
                Endpoint, judge, "judge",
                judge_base_url=judge_base_url, judge_model=judge_model,
                judge_api_key=judge_api_key, judge_concurrency=judge_concurrency,
            )  # fmt: skip
            judge_base_url, judge_model = j.base_url, j.model
            judge_api_key, judge_concurrency = j.api_key, j.concurrency
            key_source["judge"] = "judge=ef.Endpoint(api_key=...)"

        def env(role: str) -> str | None:
            return env_value(environ, role)

        def key(argument: str | Secret | None, *roles: str) -> Secret | None:
            if argument is not None:
                return check_key(argument, key_source[roles[0].removesuffix("_api_key")])
            for role in roles:
                if env(role):
                    return check_key(env(role), ENV[role])
            return None

        def number(given: Any, role: str) -> Any:
            if given is None:
                return env_setting(environ, role)
            try:
                return number_setting(given, role, f"the {role} argument")
            except ValueError as exc:
                raise ProviderError(str(exc)) from None

        timeout = number(timeout, "timeout")
        retries = number(retries, "retries")
        deadline = number(deadline, "deadline")
        in_flight = {role: number(given, role) for role, given in (
            ("embeddings_concurrency", embeddings_concurrency),
            ("judge_concurrency", judge_concurrency),
        )}  # fmt: skip

        embedder: EmbeddingClient | str | None = None
        e_url = embeddings_base_url or env("embeddings_base_url")
        e_model = embeddings_model or env("embeddings_model")
        if not e_url and e_model in {"onnx", "embedded", "hashing"}:
            embedder = e_model
        elif e_url or e_model or env("base_url"):
            embedder = OpenAIEmbeddings(
                e_model or DEFAULT_EMBEDDINGS_MODEL,
                base_url=e_url or env("base_url") or DEFAULT_BASE_URL,
                api_key=key(embeddings_api_key, "embeddings_api_key", "api_key"),
                timeout=timeout,
                retries=retries,
                concurrency=in_flight["embeddings_concurrency"] or DEFAULT_CONCURRENCY,
            )
        judge_client = None
        j_url = judge_base_url or env("judge_base_url") or env("base_url")
        j_key = key(judge_api_key, "judge_api_key", "api_key")
        j_model = judge_model or env("judge_model")
        if j_url or j_key or j_model:
            judge_client = OpenAIJudge(
                j_model or DEFAULT_JUDGE_MODEL,
                base_url=j_url or DEFAULT_BASE_URL,
                api_key=j_key,
                timeout=timeout,
                retries=retries,
                concurrency=in_flight["judge_concurrency"] or DEFAULT_CONCURRENCY,
            )
        if webhooks is None:
            webhooks = _webhooks_from_env(
                os.environ if environ is None else environ, timeout, retries
            )
        return cls(
            embedder,
            judge_client,
            cache=cache,
            budget_usd=budget_usd,
            prices=prices,
            deadline=deadline,
            rate_limit=rate_limit,
            rate_window_seconds=rate_window_seconds,
            webhooks=webhooks,
        )

    @classmethod
    def coerce(cls, context: Any) -> Providers:
        """The providers for an enrichment context: a ``Providers``, a client, or ``None``."""
        if isinstance(context, Providers):
            return context
        if context is None:
            return cls.from_env()
        if isinstance(context, EmbeddingClient):
            found = cls.from_env()
            found._embeddings = context
            return found
        if isinstance(context, JudgeClient):
            found = cls.from_env()
            found.judge = context
            return found
        raise TypeError(
            "providers must be an ef.Providers, an embedding or judge client, or None; "
            f"got {type(context).__name__}."
        )

    def __repr__(self) -> str:
        return (
            f"Providers(embeddings={self._embeddings!r}, judge={self.judge!r}, "
            f"cache={self.cache!r}, budget_usd={self.ledger.budget_usd!r})"
        )

    # -- clients ---------------------------------------------------------------------------

    @property
    def configured_embeddings(self) -> EmbeddingClient | None:
        """The embedding client as configured, without loading the embedded model (None
        until it is first needed)."""
        return self._embeddings

    @property
    def embeddings(self) -> EmbeddingClient:
        """The embedding client (the embedded ONNX model unless another was configured)."""
        if self._embeddings is None:
            from evalframe.providers._onnx import OnnxEmbedder

            self._embeddings = OnnxEmbedder()
        return self._embeddings

    def require_judge(self, what: str = "Judge metrics") -> JudgeClient:
        """The judge client.

        Raises:
            ProviderError: no judge is configured; the message names the variables to set.
        """
        if self.judge is None:
            raise ProviderError(_NO_JUDGE.format(what=what))
        return self.judge

    def require_webhook(self, name: str, what: str = "webhook") -> Webhook:
        """The webhook endpoint ``name``.

        Raises:
            ProviderError: no endpoint has that name; the message says how to configure one.
        """
        found = self.webhooks.get(name)
        if found is None:
            prefix = (
                "EVALFRAME_WEBHOOK" if name == "default" else f"EVALFRAME_WEBHOOK_{name.upper()}"
            )
            known = f" (configured: {', '.join(sorted(self.webhooks))})" if self.webhooks else ""
            raise ProviderError(
                _NO_WEBHOOK.format(
                    metrics=what,
                    name=name,
                    known=known,
                    variable=f"{prefix}_URL",
                    token=f"{prefix}_TOKEN",
                )
            )
        return found

    # -- calls, deduplicated and cached ---------------------------------------------------

    def post_webhook(
        self, name: str, payloads: Sequence[str], *, batch: int, verdict: Any
    ) -> list[tuple[str | None, str | None]]:
        """Per payload (JSON texts, distinct) ``(outcome, error)`` from the webhook ``name``.

        From the cache, else from the endpoint, ``batch`` payloads to a request. An outcome
        is cached when ``verdict(status)`` says its HTTP status is an answer (a 2xx reply,
        say), never a failure.
        """
        hook = self.require_webhook(name)
        self._guard()
        namespace = f"webhook|{hook.id}"
        cached = (
            self.cache.get_replies(namespace, list(payloads)) if self.cache is not None else None
        )
        results: list[tuple[str | None, str | None]] = [
            (c, None) if c is not None else (None, "not computed")
            for c in (cached or [None] * len(payloads))
        ]
        missing = [i for i, (c, _) in enumerate(results) if c is None]
        if missing:
            bodies = [json.loads(payloads[i]) for i in missing]
            fresh = self._guarded(lambda: hook.post(bodies, batch, self.ledger))
            for i, got in zip(missing, fresh, strict=True):
                results[i] = got
            if self.cache is not None:
                keep = [
                    (payloads[i], got[0])
                    for i, got in zip(missing, fresh, strict=True)
                    if got[0] is not None and verdict(json.loads(got[0])["status"])
                ]
                self.cache.put_replies(namespace, [p for p, _ in keep], [c for _, c in keep])
        errors = self._redacted([e for _, e in results])
        return [(c, e) for (c, _), e in zip(results, errors, strict=True)]

    def embed_texts(self, texts: Sequence[str]) -> Embedded:
        """One vector per text (pass unique texts): from the cache, else from the client."""
        client = self.embeddings
        return self._cached_vectors(
            f"embedding|{client.id}",
            list(texts),
            lambda idx: client.embed([texts[i] for i in idx], self.ledger),
            cacheable=client.cacheable,
            what="embedding texts",
        )

    def embed_matrix(
        self, texts: Sequence[str]
    ) -> tuple[npt.NDArray[np.float32], list[str | None]]:
        """One vector per text (pass unique texts) as the rows of one float32 matrix (zero
        rows where there is none), and per text the reason there is none.

        Texts are looked up, asked and copied into the matrix ``EMBED_CHUNK`` at a time, so
        the run holds the matrix and one chunk's vectors, not every text's vector twice.
        The matrix's size ``d`` is the most common among the first vectors returned; a
        vector of another size is its text's error.
        """
        import numpy as np

        from evalframe.providers._openai import quote

        client = self.embeddings
        n, namespace = len(texts), f"embedding|{client.id}"
        errors: list[str | None] = [None] * n
        matrix: npt.NDArray[np.float32] | None = None
        whole = self._tracking("embedding texts", n, "texts") if n > EMBED_CHUNK else None
        with whole or nullcontext():
            for start in range(0, n, EMBED_CHUNK):
                part = list(texts[start : start + EMBED_CHUNK])
                got = self._cached_vectors(
                    namespace,
                    part,
                    lambda idx, part=part: client.embed([part[i] for i in idx], self.ledger),
                    cacheable=client.cacheable,
                    what=None if whole else "embedding texts",
                )
                vectors = got.vectors
                if matrix is None:
                    sizes = Counter(v.shape[-1] for v in vectors if v is not None)
                    if sizes:
                        d = sizes.most_common(1)[0][0]
                        matrix = np.zeros((n, d), dtype=np.float32)
                for j, v in enumerate(vectors):
                    i = start + j
                    vectors[j] = None  # copied once: the text's array goes as the matrix fills
                    errors[i] = got.errors[j]
                    if v is None:
                        errors[i] = errors[i] or "Embeddings: no vector was returned."
                    elif matrix is not None and v.shape[-1] != matrix.shape[1]:
                        errors[i] = (
                            f"Embedding for {quote(texts[i])} has {v.shape[-1]} dimensions; "
                            f"the others have {matrix.shape[1]}."
                        )
                    elif matrix is not None:  # (always: this chunk has a vector)
                        matrix[i] = v
        return (matrix if matrix is not None else np.zeros((n, 0), np.float32)), errors

    def embed_tokens(self, texts: Sequence[str], tokens: Sequence[Sequence[str]]) -> Embedded:
        """Contextual token vectors per text (pass unique texts); see ``TokenEmbeddingClient``."""
        client = self.embeddings
        if not isinstance(client, TokenEmbeddingClient):
            raise ProviderError(f"{client!r} does not give contextual token vectors.")
        payloads = [[t, list(toks)] for t, toks in zip(texts, tokens, strict=True)]
        return self._cached_vectors(
            f"tokens-v1|{client.id}",
            payloads,
            lambda idx: client.embed_tokens(
                [texts[i] for i in idx], [tokens[i] for i in idx], self.ledger
            ),
            cacheable=client.cacheable,
            what="embedding tokens",
        )

    def _cached_vectors(
        self,
        namespace: str,
        payloads: list[Any],
        compute: Any,
        *,
        cacheable: bool,
        what: str | None,
    ) -> Embedded:
        """``what``: the progress display's name, or ``None`` inside one already shown
        (cached payloads then count as done)."""
        self._guard()
        n = len(payloads)
        cache = self.cache if cacheable else None
        vectors: list[Vector | None] = (
            cache.get_vectors(namespace, payloads) if cache is not None else [None] * n
        )
        errors: list[str | None] = [None] * n
        missing = [i for i, v in enumerate(vectors) if v is None]
        if what is None:
            self.ledger.progressed(n - len(missing))
        if missing:
            shown = self._tracking(what, len(missing), "texts") if what is not None else None
            with shown or nullcontext():
                result: Embedded = self._guarded(compute, missing)
            for j, i in enumerate(missing):
                vectors[i], errors[i] = result.vectors[j], result.errors[j]
            if cache is not None:
                done = [i for i in missing if vectors[i] is not None]
                cache.put_vectors(
                    namespace,
                    [payloads[i] for i in done],
                    [vectors[i] for i in done],  # type: ignore[misc]
                )
        return Embedded(vectors, self._redacted(errors))

    def complete(
        self,
        prompts: Sequence[str],
        *,
        schema: Mapping[str, Any] | None = None,
        tag: str | None = None,
        top_logprobs: int | None = None,
    ) -> list[Reply]:
        """One judge reply per prompt (pass unique prompts): from the cache, else the judge.

        Args:
            prompts: the prompts, distinct.
            schema: the reply's JSON schema (``{"name", "strict", "schema"}``), sent as a
                structured response format to judges that take one (``structured``).
            tag: a prompt's key (``id@vN``), added to the cache namespace so replies to
                another version of a prompt are never reused.
            top_logprobs: ask for the top token log-probabilities (judges that give them
                put them on ``Reply.logprobs``); cached with the reply.
        """
        judge = self.require_judge()
        self._guard()
        namespace = f"judge|{judge.id}" + (f"|{tag}" if tag else "")
        options: dict[str, Any] = {}
        if schema is not None and getattr(judge, "structured", False):
            options["schema"] = schema
        if top_logprobs:
            options["top_logprobs"] = top_logprobs
            namespace += "|logprobs"
        requests = [judge.request(p, **options) for p in prompts]
        cached = self.cache.get_replies(namespace, requests) if self.cache is not None else None
        replies = [
            _from_cache(c, top_logprobs) if c is not None else None
            for c in (cached or [None] * len(prompts))
        ]
        missing = [i for i, r in enumerate(replies) if r is None]
        if missing:
            asked = [prompts[i] for i in missing]
            with self._tracking("judge calls", len(missing), "calls"):
                fresh: list[Reply] = self._guarded(
                    lambda: judge.complete(asked, self.ledger, **options)
                )
            for j, i in enumerate(missing):
                replies[i] = fresh[j]
            if self.cache is not None:
                ok = [
                    (requests[i], _to_cache(r, top_logprobs))
                    for i, r in zip(missing, fresh, strict=True)
                    if r.content is not None
                ]
                self.cache.put_replies(
                    namespace, [req for req, _ in ok], [content for _, content in ok]
                )
        done = [r if r is not None else Reply(None, "not computed") for r in replies]
        errors = self._redacted([r.error for r in done])
        return [_with_error(r, e) for r, e in zip(done, errors, strict=True)]

    @contextmanager
    def _tracking(self, what: str, total: int, unit: str) -> Iterator[None]:
        """A progress display for a provider call under way, advanced as the client reports
        items done (``Ledger.progressed``)."""
        with track(what, total, unit=unit) as advance:
            self.ledger.on_progress = advance
            try:
                yield
            finally:
                self.ledger.on_progress = None

    # -- the run's accounts ---------------------------------------------------------------

    def begin_run(self) -> None:
        """Start a run's accounts: usage and spending so far are forgotten."""
        self.ledger.reset()

    def usage_frame(self) -> pl.DataFrame:
        """One row per provider call of the current run (tokens, cost, latency, model)."""
        return self.ledger.frame()

    def cost_summary(self) -> dict[str, Any]:
        """The report's ``cost`` block for the current run."""
        return self.ledger.cost_summary()

    def budget_summary(self, scores: pl.DataFrame | None = None) -> dict[str, Any] | None:
        """The report's ``budget`` block (``None`` without a budget).

        ``completed_rows`` counts the executions (sample, repetition) the budget did not
        stop: among the metrics the budget stopped somewhere, those that still scored the
        execution (or failed it for another reason). With no metric stopped, every
        execution.
        """
        if scores is None or scores.height == 0:
            total = completed = 0
        else:
            keys = [C.SAMPLE_ID, C.REPETITION]
            total = scores.select(keys).unique().height
            stopped = (
                pl.col(C.ERROR).str.contains(BUDGET_ERROR_PREFIX, literal=True).fill_null(False)
            )
            affected = scores.filter(stopped.any().over(C.METRIC))
            completed = (
                affected.filter(~stopped).select(keys).unique().height if affected.height else total
            )
        return self.ledger.budget_summary(completed, total)


def _webhooks_from_env(
    environ: Mapping[str, str], timeout: float | None, retries: int | None
) -> list[Webhook]:
    """The webhook endpoints the environment configures, by name (sorted)."""
    from evalframe.providers._webhook import Webhook

    found: list[Webhook] = []
    for variable in sorted(environ):
        match = _WEBHOOK_ENV.fullmatch(variable)
        url = environ[variable].strip()
        if match is None or not url:
            continue
        name = (match.group(1) or "default").lower()
        prefix = variable.removesuffix("_URL")
        token = check_key(environ.get(f"{prefix}_TOKEN"), f"{prefix}_TOKEN")
        try:
            found.append(
                Webhook(url, name=name, bearer_token=token, timeout=timeout, retries=retries)
            )
        except ValueError as exc:
            raise ProviderError(f"{variable}: {exc}") from None
    return found
