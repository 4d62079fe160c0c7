"""A run as OpenTelemetry signals, through the OpenTelemetry SDK (``otel`` extra).

``evalframe run --otel`` and ``evalframe rescore --otel`` (or ``EVALFRAME_OTEL=1``), and
``export_run(run)`` in Python, send:

* a span per run, ``evaluate <dataset>``, from the run's start to its end, with the run id,
  dataset, sample and repetition counts, metric ids and macro-F1 as ``evalframe.*``
  attributes;
* a child span per call to the system under test, ``call system``, from when evalframe
  called it for its measured latency, with ``evalframe.sample_id``, ``evalframe.repetition``
  and, when the call failed, ``error.type`` (``system_error``);
* a child span per provider call, following the GenAI semantic conventions for model calls:
  named ``{gen_ai.operation.name} {gen_ai.request.model}`` (``chat judge-x`` for a judge,
  ``embeddings bge-small`` for embeddings), of kind CLIENT (INTERNAL for a model evalframe
  runs in-process), with ``gen_ai.operation.name``, ``gen_ai.provider.name`` (``openai``
  for an OpenAI-compatible endpoint, a provider's own name for the hosts the conventions
  name, ``evalframe`` in-process), ``gen_ai.request.model``, ``server.address`` and
  ``server.port`` (the endpoint), ``gen_ai.usage.input_tokens`` and
  ``gen_ai.usage.output_tokens``; a failed call has status ERROR and ``error.type`` (the
  HTTP status, the transport error's class, ``timeout``, ``deadline_exceeded``,
  ``invalid_response``, ``request_not_sent`` or ``_OTHER``). Each spans the call from its
  start (the usage table's ``started_at``) for its measured latency, retries included; runs
  stored before start times were kept have their calls laid end to end from the run's
  start;
* an event per (sample, repetition, metric) following the GenAI semantic conventions for
  evaluation results: a log record named ``gen_ai.evaluation.result``, in the run span's
  trace, with ``gen_ai.evaluation.name`` (the metric id), ``gen_ai.evaluation.score.value``,
  ``gen_ai.evaluation.score.label`` (``pass`` or ``fail``), ``error.type`` when the row could
  not be scored, and ``evalframe.sample_id`` / ``evalframe.repetition``.

No key, input or output text goes into an attribute. ``capture_content=True`` (or
``EVALFRAME_OTEL_CAPTURE_CONTENT=true``) adds ``gen_ai.evaluation.explanation``: the metric's
details, or the error message, which may quote the output; and a failed provider call's
error message as its span's status description.

Where the signals go: the SDK's OTLP/HTTP exporters, configured by the standard
``OTEL_EXPORTER_OTLP_*`` variables (``OTEL_EXPORTER_OTLP_ENDPOINT``, ``..._HEADERS``, ...) and
``OTEL_SERVICE_NAME`` (default ``evalframe``); or the tracer and logger providers passed in.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

import polars as pl

from evalframe.core import schema as C

if TYPE_CHECKING:
    from evalframe.core._run import Run

__all__ = ["CAPTURE_ENV", "EVENT_NAME", "error_type", "export_run", "provider_name"]

CAPTURE_ENV: Final = "EVALFRAME_OTEL_CAPTURE_CONTENT"
EVENT_NAME: Final = "gen_ai.evaluation.result"
_SCOPE: Final = "evalframe"
_INSTALL: Final = (
    "OpenTelemetry export needs the otel extra (opentelemetry-sdk and the OTLP/HTTP "
    "exporter): pip install '.[otel]' in a clone of evalframe."
)
_TRUE: Final = frozenset({"1", "true", "yes", "on"})
_OPERATIONS: Final = {"judge": "chat", "embeddings": "embeddings"}
# Hosts whose provider has its own name in the GenAI conventions; any other endpoint speaks
# the OpenAI API, which the conventions name "openai" whoever serves it.
_HOSTS: Final = (
    (".openai.azure.com", "azure.ai.openai"),
    ("api.mistral.ai", "mistral_ai"),
    ("api.groq.com", "groq"),
    ("api.deepseek.com", "deepseek"),
    ("api.x.ai", "x_ai"),
    ("api.perplexity.ai", "perplexity"),
    ("generativelanguage.googleapis.com", "gcp.gemini"),
)
# What a provider call's error (as the usage ledger words it) becomes in error.type: the
# HTTP status, the transport error's class, or one of a few names; "_OTHER" otherwise.
_ERRORS: Final = (
    (re.compile(r"\bHTTP (\d{3})\b"), None),
    (re.compile(r"before receiving a response after \d+ attempt\(s\): (\w+)"), None),
    (re.compile(r"no complete reply within"), "timeout"),
    (re.compile(r"^Deadline exceeded"), "deadline_exceeded"),
    (re.compile(r"could not be sent"), "request_not_sent"),
    (re.compile(r"not a valid JSON object|larger than the|response missing|response has no"
                r"|returned \d+ vector|indexes do not match"), "invalid_response"),
)  # fmt: skip


def _ns(seconds: float) -> int:
    return int(seconds * 1_000_000_000)


def _default_providers() -> tuple[Any, Any]:
    try:
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        raise ModuleNotFoundError(_INSTALL) from exc
    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "evalframe")})
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter()))
    return tracer_provider, logger_provider


def export_run(
    run: Run,
    *,
    tracer_provider: Any = None,
    logger_provider: Any = None,
    capture_content: bool | None = None,
) -> None:
    """Send ``run``'s spans and evaluation events through the OpenTelemetry SDK.

    Args:
        run: the evaluation.
        tracer_provider, logger_provider: the SDK providers to use (both or neither).
            Default: new providers exporting over OTLP/HTTP, flushed and shut down before
            this returns.
        capture_content: add each result's details as ``gen_ai.evaluation.explanation``
            (default: ``EVALFRAME_OTEL_CAPTURE_CONTENT``).
    """
    try:
        from opentelemetry import trace
        from opentelemetry._logs import SeverityNumber
    except ImportError as exc:
        raise ModuleNotFoundError(_INSTALL) from exc
    if (tracer_provider is None) != (logger_provider is None):
        raise ValueError("Pass both tracer_provider and logger_provider, or neither.")
    owned = tracer_provider is None
    if owned:
        tracer_provider, logger_provider = _default_providers()
    if capture_content is None:
        capture_content = os.environ.get(CAPTURE_ENV, "").strip().lower() in _TRUE
    tracer = tracer_provider.get_tracer(_SCOPE)
    logger = logger_provider.get_logger(_SCOPE)
    try:
        root = tracer.start_span(
            f"evaluate {run.dataset.name}",
            start_time=_ns(run.started_at),
            attributes={
                "evalframe.run_id": run.run_id,
                "evalframe.run_name": run.name,
                "evalframe.dataset": run.dataset.name,
                "evalframe.samples": run.dataset.height,
                "evalframe.repetitions": run.repetitions,
                "evalframe.metrics": list(run.metric_ids),
                # null without a quality metric (safety metrics stay out of it)
                **({} if run.macro_f1 is None else {"evalframe.macro_f1": float(run.macro_f1)}),
            },
        )
        context = trace.set_span_in_context(root)
        _system_spans(run, tracer, context)
        _provider_spans(run, tracer, context, capture_content)
        _events(run, logger, context, SeverityNumber.INFO, capture_content)
        root.end(end_time=_ns(run.finished_at))
    finally:
        if owned:
            tracer_provider.force_flush()
            logger_provider.force_flush()
            tracer_provider.shutdown()
            logger_provider.shutdown()


def provider_name(provider: str | None) -> str:
    """``gen_ai.provider.name`` for a usage row's ``provider`` (its endpoint URL, or
    ``local`` for a model evalframe runs itself).

    Examples:
        >>> provider_name("https://api.openai.com/v1/chat/completions")
        'openai'
        >>> provider_name("https://eu.openai.azure.com/openai/deployments/x/embeddings")
        'azure.ai.openai'
        >>> provider_name("http://127.0.0.1:8000/v1/chat/completions")
        'openai'
        >>> provider_name("local")
        'evalframe'
    """
    host = urlsplit(provider or "").hostname
    if host is None:
        return "evalframe"
    for suffix, name in _HOSTS:
        if host == suffix.lstrip(".") or host.endswith(
            suffix if suffix[0] == "." else "." + suffix
        ):
            return name
    return "openai"


def error_type(error: str) -> str:
    """``error.type`` for a provider call's error message.

    Examples:
        >>> error_type("judge request failed: HTTP 429 after 3 attempt(s).")
        '429'
        >>> error_type("judge request failed before receiving a response after 1 attempt(s): "
        ...            "ConnectError: connection refused.")
        'ConnectError'
        >>> error_type("something else")
        '_OTHER'
    """
    for pattern, name in _ERRORS:
        found = pattern.search(error)
        if found:
            return name or found.group(1)
    return "_OTHER"


def _system_spans(run: Run, tracer: Any, context: Any) -> None:
    from evalframe.core._system import STARTED_AT

    if STARTED_AT not in run.frame.columns:  # saved outputs: evalframe called no system
        return
    columns = (C.SAMPLE_ID, C.REPETITION, STARTED_AT, "latency_ms", C.SYSTEM_ERROR)
    for sample_id, repetition, started, latency, error in run.frame.select(columns).iter_rows():
        if started is None:  # an execution resumed from a checkpoint written before
            continue
        attributes: dict[str, Any] = {
            "evalframe.sample_id": sample_id,
            "evalframe.repetition": int(repetition),
        }
        if error is not None:
            attributes["error.type"] = "system_error"
        start = _ns(started)
        span = tracer.start_span(
            "call system", context=context, start_time=start, attributes=attributes
        )
        span.end(end_time=start + int((latency or 0.0) * 1_000_000))


def _provider_spans(run: Run, tracer: Any, context: Any, capture: bool) -> None:
    from opentelemetry.trace import SpanKind, Status, StatusCode

    if run.usage.height == 0:
        return
    cursor = _ns(run.started_at)
    timed = "started_at" in run.usage.columns
    columns = ("kind", "provider", "model", "prompt_tokens", "completion_tokens", "latency_ms")
    frame = run.usage.with_columns(
        pl.col("started_at") if timed else pl.lit(None, pl.Float64).alias("started_at"),
        pl.col(C.ERROR) if C.ERROR in run.usage.columns else pl.lit(None, pl.String),
    )
    for kind, provider, model, prompt, completion, latency, started, error in frame.select(
        *columns, "started_at", C.ERROR
    ).iter_rows():
        operation = _OPERATIONS.get(kind, kind)
        remote = urlsplit(provider or "")
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": operation,
            "gen_ai.provider.name": provider_name(provider),
        }
        if model:
            attributes["gen_ai.request.model"] = model
        if remote.hostname:
            attributes["server.address"] = remote.hostname
            attributes["server.port"] = remote.port or (443 if remote.scheme == "https" else 80)
        if prompt is not None:
            attributes["gen_ai.usage.input_tokens"] = int(prompt)
        if completion is not None:
            attributes["gen_ai.usage.output_tokens"] = int(completion)
        if error is not None:
            attributes["error.type"] = error_type(error)
        start = _ns(started) if started is not None else cursor
        span = tracer.start_span(
            f"{operation} {model}" if model else operation,
            context=context,
            kind=SpanKind.CLIENT if remote.hostname else SpanKind.INTERNAL,
            start_time=start,
            attributes=attributes,
        )
        if error is not None:
            span.set_status(Status(StatusCode.ERROR, error if capture else None))
        end = start + int((latency or 0.0) * 1_000_000)
        span.end(end_time=end)
        cursor = max(cursor, end)


def _events(run: Run, logger: Any, context: Any, severity: Any, capture: bool) -> None:
    stamp = _ns(run.finished_at)
    columns = (C.SAMPLE_ID, C.REPETITION, C.METRIC, C.SCORE, "passed", C.ERROR, "details")
    for sample_id, repetition, metric, score, passed, error, details in run.scores.select(
        columns
    ).iter_rows():
        attributes: dict[str, Any] = {
            "gen_ai.evaluation.name": metric,
            "evalframe.sample_id": sample_id,
            "evalframe.repetition": int(repetition),
            "evalframe.run_id": run.run_id,
        }
        if score is not None:
            attributes["gen_ai.evaluation.score.value"] = float(score)
            attributes["gen_ai.evaluation.score.label"] = "pass" if passed else "fail"
        if error is not None:
            attributes["error.type"] = "evalframe.not_scored"
        if capture and (details or error):
            attributes["gen_ai.evaluation.explanation"] = error or details
        logger.emit(
            timestamp=stamp,
            context=context,
            severity_number=severity,
            event_name=EVENT_NAME,
            attributes=attributes,
        )
