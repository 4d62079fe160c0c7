"""OpenTelemetry export through the real SDK: in-memory exporters, and OTLP/HTTP to a
loopback receiver this test starts, decoded with opentelemetry-proto."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as g
from opentelemetry.semconv.attributes.error_attributes import ERROR_TYPE
from opentelemetry.semconv.attributes.server_attributes import SERVER_ADDRESS, SERVER_PORT
from opentelemetry.trace import SpanKind, StatusCode

import evalframe as ef
from evalframe.cli import cli
from evalframe.integrations._otel import error_type, export_run, provider_name

SECRET_OUTPUT = "Munich, says the secret model output"

DATASET = """\
schema_version: eval-harness.dataset.v1
name: capitals
samples:
  - id: fr
    input: {question: "Capital of France?"}
    expected_output: "Paris"
  - id: de
    input: {question: "Capital of Germany?"}
    expected_output: "Berlin"
"""


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    dataset = tmp_path / "capitals.yaml"
    dataset.write_text(DATASET)
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps({"outputs": {"fr": "Paris", "de": SECRET_OUTPUT}}))
    return dataset, outputs


def _values(attributes: Any) -> list[str]:
    return [str(v) for v in dict(attributes).values()]


def test_spans_and_evaluation_events_in_memory(files: tuple[Path, Path]) -> None:
    dataset, outputs = files
    run = ef.evaluate(
        dataset,
        outputs=outputs,
        metrics=["exact-match", "cosine-embedding"],
        providers=ef.HashingEmbedder(),
    )
    spans, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))

    export_run(run, tracer_provider=tracer_provider, logger_provider=logger_provider)

    finished = spans.get_finished_spans()
    root = next(s for s in finished if s.name == "evaluate capitals")
    assert root.attributes["evalframe.run_id"] == run.run_id
    assert root.attributes["evalframe.samples"] == 2
    calls = [s for s in finished if s is not root]
    assert len(calls) == run.usage.height == 1  # one embeddings call for the whole run
    (call,) = calls
    model = run.usage.get_column("model")[0]
    assert call.parent.span_id == root.context.span_id
    assert call.name == f"embeddings {model}"
    assert call.kind == SpanKind.INTERNAL  # a model evalframe runs in-process
    assert call.attributes[g.GEN_AI_OPERATION_NAME] == "embeddings"
    assert call.attributes[g.GEN_AI_PROVIDER_NAME] == "evalframe"
    assert call.attributes[g.GEN_AI_REQUEST_MODEL] == model
    assert call.attributes[g.GEN_AI_USAGE_INPUT_TOKENS] > 0
    assert SERVER_ADDRESS not in call.attributes

    records = [r.log_record for r in logs.get_finished_logs()]
    assert len(records) == 4  # 2 samples x 2 metrics
    assert {r.event_name for r in records} == {"gen_ai.evaluation.result"}
    assert {r.trace_id for r in records} == {root.context.trace_id}
    by_key = {
        (r.attributes["evalframe.sample_id"], r.attributes["gen_ai.evaluation.name"]): r
        for r in records
    }
    # Exact match by construction: fr passes with 1.0, de fails with 0.0.
    fr = by_key["fr", "exact-match"].attributes
    de = by_key["de", "exact-match"].attributes
    assert (fr["gen_ai.evaluation.score.value"], fr["gen_ai.evaluation.score.label"]) == (
        1.0,
        "pass",
    )
    assert (de["gen_ai.evaluation.score.value"], de["gen_ai.evaluation.score.label"]) == (
        0.0,
        "fail",
    )
    # No output text anywhere unless asked for.
    everything = [v for s in finished for v in _values(s.attributes)]
    everything += [v for r in records for v in _values(r.attributes)]
    assert not any("Munich" in v for v in everything)
    assert not any("gen_ai.evaluation.explanation" in dict(r.attributes) for r in records)


def test_capture_content_adds_the_explanation(files: tuple[Path, Path]) -> None:
    dataset, outputs = files
    run = ef.evaluate(dataset, outputs=outputs, metrics=["exact-match"])
    logs = InMemoryLogRecordExporter()
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    export_run(
        run,
        tracer_provider=TracerProvider(),
        logger_provider=logger_provider,
        capture_content=True,
    )
    explained = [
        r.log_record.attributes["gen_ai.evaluation.explanation"] for r in logs.get_finished_logs()
    ]
    assert any("Munich" in text for text in explained)


class _Receiver(BaseHTTPRequestHandler):
    bodies: dict[str, list[bytes]]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.server.bodies.setdefault(self.path, []).append(body)  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    server.bodies = {}  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.mark.parametrize("switch", ["--otel", "EVALFRAME_OTEL=1"])
def test_cli_otel_sends_otlp_http_to_a_loopback_receiver(
    files: tuple[Path, Path],
    receiver: ThreadingHTTPServer,
    monkeypatch: pytest.MonkeyPatch,
    switch: str,
) -> None:
    dataset, outputs = files
    flags = [switch] if switch.startswith("--") else []
    if not flags:
        monkeypatch.setenv(*switch.split("="))
    host, port = receiver.server_address[:2]
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://{host}:{port}")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "capitals-ci")
    result = CliRunner().invoke(
        cli, ["run", str(dataset), "--outputs", str(outputs), "-m", "exact-match", *flags]
    )
    assert result.exit_code == 0, result.output
    bodies: dict[str, list[bytes]] = receiver.bodies  # type: ignore[attr-defined]

    traces = [ExportTraceServiceRequest.FromString(b) for b in bodies["/v1/traces"]]
    spans = [
        s for t in traces for rs in t.resource_spans for ss in rs.scope_spans for s in ss.spans
    ]
    assert [s.name for s in spans] == ["evaluate capitals"]
    service = {
        a.value.string_value
        for t in traces
        for rs in t.resource_spans
        for a in rs.resource.attributes
        if a.key == "service.name"
    }
    assert service == {"capitals-ci"}

    logs = [ExportLogsServiceRequest.FromString(b) for b in bodies["/v1/logs"]]
    records = [
        r for x in logs for rl in x.resource_logs for sl in rl.scope_logs for r in sl.log_records
    ]
    assert [r.event_name for r in records] == ["gen_ai.evaluation.result"] * 2
    assert {r.trace_id for r in records} == {spans[0].trace_id}
    scores = {}
    for r in records:
        attrs = {a.key: a.value for a in r.attributes}
        scores[attrs["evalframe.sample_id"].string_value] = (
            attrs["gen_ai.evaluation.score.value"].double_value,
            attrs["gen_ai.evaluation.score.label"].string_value,
        )
        assert attrs["gen_ai.evaluation.name"].string_value == "exact-match"
        assert b"Munich" not in r.SerializeToString()
    assert scores == {"fr": (1.0, "pass"), "de": (0.0, "fail")}


def test_rescore_otel_sends_the_new_run(
    files: tuple[Path, Path],
    receiver: ThreadingHTTPServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    dataset, outputs = files
    store = tmp_path / "runs.duckdb"
    ef.evaluate(dataset, outputs=outputs, metrics=["exact-match"], store=store)
    host, port = receiver.server_address[:2]
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://{host}:{port}")
    result = CliRunner().invoke(cli, ["rescore", "--store", str(store), "-m", "contains", "--otel"])
    assert result.exit_code == 0, result.output
    bodies: dict[str, list[bytes]] = receiver.bodies  # type: ignore[attr-defined]
    logs = [ExportLogsServiceRequest.FromString(b) for b in bodies["/v1/logs"]]
    names = sorted(
        {a.key: a.value.string_value for a in r.attributes}["gen_ai.evaluation.name"]
        for x in logs
        for rl in x.resource_logs
        for sl in rl.scope_logs
        for r in sl.log_records
    )
    assert names == ["contains", "contains"]  # the new run holds only what it computed


def test_no_integration_library_loads_unless_used() -> None:
    code = (
        "import sys, evalframe, evalframe.cli, evalframe.integrations, evalframe.io\n"
        "import evalframe.testing\n"
        "loaded = {'mlflow', 'opentelemetry', 'opentelemetry.sdk'} & set(sys.modules)\n"
        "print(sorted(loaded))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stderr


def test_system_calls_and_provider_calls_are_spans_at_their_real_times(
    files: tuple[Path, Path], openai_stub: Any
) -> None:
    import time

    from conftest import STUB_API_KEY

    dataset, _ = files
    began: dict[str, float] = {}
    served: list[float] = []

    def system(inp: dict[str, Any]) -> str:
        began[inp["question"]] = time.time()
        time.sleep(0.02)
        if "Germany" in inp["question"]:
            raise RuntimeError("down")
        return "Paris"

    def verdict(prompt: str) -> str:
        served.append(time.time())
        return json.dumps({"score": 1.0, "reason": "ok"})

    openai_stub.verdict = verdict
    judge = ef.OpenAIJudge("stub-judge", base_url=openai_stub.url, api_key=STUB_API_KEY)
    run = ef.evaluate(
        dataset,
        system=system,
        metrics=["exact-match", "llm-as-judge"],
        providers=ef.Providers(embeddings="hashing", judge=judge, cache=False),
        repetitions=2,
    )
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    logger_provider = LoggerProvider()
    export_run(run, tracer_provider=tracer_provider, logger_provider=logger_provider)
    finished = spans.get_finished_spans()
    root = next(s for s in finished if s.name == "evaluate capitals")
    system_spans = [s for s in finished if s.name == "call system"]
    assert len(system_spans) == run.frame.height == 4  # 2 samples x 2 repetitions
    assert all(s.parent.span_id == root.context.span_id for s in system_spans)
    failed = [s for s in system_spans if s.attributes.get("error.type") == "system_error"]
    assert {s.attributes["evalframe.sample_id"] for s in failed} == {"de"}
    # each span starts when evalframe called the system (the system saw the call just after)
    # and lasts the measured latency, within the run's span
    for span in system_spans:
        assert root.start_time <= span.start_time <= span.end_time <= root.end_time
        assert span.end_time - span.start_time >= 20_000_000  # the 20 ms the system slept
    latest = max(s.start_time for s in system_spans)
    assert latest <= int(max(began.values()) * 1e9)
    judge_spans = [s for s in finished if s.name == "chat stub-judge"]
    assert len(judge_spans) == run.usage.height == len(served) == 1  # one distinct prompt
    (call,) = judge_spans
    # the judge call began before the stub served it, and after every system call ended
    assert call.start_time <= int(served[0] * 1e9) <= call.end_time
    assert call.start_time >= max(s.end_time for s in system_spans)
    assert call.end_time <= root.end_time


def test_a_stored_run_keeps_its_provider_calls_start_times(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    dataset, outputs = files
    run = ef.evaluate(
        dataset, outputs=outputs, metrics=["cosine-embedding"], providers=ef.HashingEmbedder()
    )
    started = run.usage.get_column("started_at").to_list()
    assert all(run.started_at <= s <= run.finished_at for s in started)
    with ef.Store(tmp_path / "runs.duckdb") as store:
        store.save(run)
        loaded = store.load(run.run_id)
    assert loaded.usage.get_column("started_at").to_list() == started


def _model_calls_run(files: tuple[Path, Path], openai_stub: Any) -> ef.Run:
    """Two samples judged and embedded over real HTTP; the first judge request gets HTTP 400."""
    from conftest import STUB_API_KEY

    dataset, outputs = files
    openai_stub.verdict = lambda prompt: json.dumps({"score": 1.0, "reason": "ok"})
    openai_stub.fail("chat", ("status", 400))
    providers = ef.Providers(
        embeddings=ef.OpenAIEmbeddings(
            "stub-embed", base_url=openai_stub.url, api_key=STUB_API_KEY
        ),
        judge=ef.OpenAIJudge("stub-judge", base_url=openai_stub.url, api_key=STUB_API_KEY),
        cache=False,
    )
    return ef.evaluate(
        dataset, outputs=outputs, metrics=["llm-as-judge", "cosine-embedding"], providers=providers
    )


def test_model_calls_follow_the_genai_conventions(
    files: tuple[Path, Path], openai_stub: Any
) -> None:
    run = _model_calls_run(files, openai_stub)
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    export_run(run, tracer_provider=tracer_provider, logger_provider=LoggerProvider())
    finished = spans.get_finished_spans()
    port = int(openai_stub.url.rsplit(":", 1)[1].split("/")[0])

    chats = [s for s in finished if s.name == "chat stub-judge"]
    embeds = [s for s in finished if s.name == "embeddings stub-embed"]
    # Independent count: what the stub received (both judge prompts, one embeddings batch).
    assert len(chats) == len(openai_stub.calls("chat/completions")) == 2
    assert len(embeds) == len(openai_stub.calls("embeddings")) == 1
    for span in chats + embeds:
        assert span.kind == SpanKind.CLIENT
        assert span.attributes[g.GEN_AI_PROVIDER_NAME] == "openai"  # not the endpoint URL
        assert span.attributes[SERVER_ADDRESS] == "127.0.0.1"
        assert span.attributes[SERVER_PORT] == port
        assert not any("http" in str(v) for v in span.attributes.values())
    assert {s.attributes[g.GEN_AI_OPERATION_NAME] for s in chats} == {"chat"}
    assert embeds[0].attributes[g.GEN_AI_OPERATION_NAME] == "embeddings"
    assert embeds[0].attributes[g.GEN_AI_REQUEST_MODEL] == "stub-embed"

    failed = [s for s in chats if s.status.status_code == StatusCode.ERROR]
    (ok,) = [s for s in chats if s.status.status_code != StatusCode.ERROR]
    assert len(failed) == 1
    assert failed[0].attributes[ERROR_TYPE] == "400"
    assert failed[0].status.description is None  # the message only with capture on
    assert g.GEN_AI_USAGE_INPUT_TOKENS not in failed[0].attributes
    # The stub counts a prompt's whitespace-separated words as its input tokens.
    served = openai_stub.calls("chat/completions")[-1]
    prompt = " ".join(m["content"] for m in served.body["messages"])
    assert ok.attributes[g.GEN_AI_USAGE_INPUT_TOKENS] == len(prompt.split())
    assert ok.attributes[g.GEN_AI_USAGE_OUTPUT_TOKENS] > 0
    assert ERROR_TYPE not in ok.attributes


def test_model_calls_over_otlp_http_to_a_loopback_receiver(
    files: tuple[Path, Path],
    openai_stub: Any,
    receiver: ThreadingHTTPServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

    run = _model_calls_run(files, openai_stub)
    host, port = receiver.server_address[:2]
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://{host}:{port}")
    export_run(run, capture_content=True)  # the SDK's own OTLP/HTTP exporters
    bodies: dict[str, list[bytes]] = receiver.bodies  # type: ignore[attr-defined]
    traces = [ExportTraceServiceRequest.FromString(b) for b in bodies["/v1/traces"]]
    spans = {
        s.name + ("!" if s.status.code == Status.STATUS_CODE_ERROR else ""): s
        for t in traces
        for rs in t.resource_spans
        for ss in rs.scope_spans
        for s in ss.spans
    }
    assert sorted(spans) == [
        "chat stub-judge",
        "chat stub-judge!",
        "embeddings stub-embed",
        "evaluate capitals",
    ]
    failed = spans["chat stub-judge!"]
    assert failed.kind == Span.SPAN_KIND_CLIENT
    attrs = {a.key: a.value for a in failed.attributes}
    assert attrs[ERROR_TYPE].string_value == "400"
    assert attrs[g.GEN_AI_OPERATION_NAME].string_value == "chat"
    assert attrs[g.GEN_AI_PROVIDER_NAME].string_value == "openai"
    assert attrs[SERVER_PORT].int_value == int(openai_stub.url.rsplit(":", 1)[1].split("/")[0])
    assert "HTTP 400" in failed.status.message  # capture on: the redacted error message
    assert STUB_KEY_FRAGMENT not in failed.SerializeToString().decode("utf-8", "replace")
    ok = spans["chat stub-judge"]
    ok_attrs = {a.key: a.value for a in ok.attributes}
    assert ok_attrs[g.GEN_AI_USAGE_INPUT_TOKENS].int_value > 0
    assert ok.parent_span_id == spans["evaluate capitals"].span_id


STUB_KEY_FRAGMENT = "sk-test-"


@pytest.mark.parametrize(
    ("provider", "name"),
    [
        ("https://api.openai.com/v1/chat/completions", "openai"),
        (
            "https://my-res.openai.azure.com/openai/deployments/gpt/chat/completions",
            "azure.ai.openai",
        ),
        ("https://api.mistral.ai/v1/embeddings", "mistral_ai"),
        ("http://localhost:8000/v1/chat/completions", "openai"),
        ("local", "evalframe"),
    ],
)
def test_provider_names_are_the_conventions_values(provider: str, name: str) -> None:
    assert provider_name(provider) == name
    known = {v.value for v in g.GenAiProviderNameValues} | {"evalframe"}
    assert provider_name(provider) in known


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("judge request failed: HTTP 503 after 3 attempt(s).", "503"),
        ("judge request failed: no complete reply within 30 s after 2 attempt(s).", "timeout"),
        ("embeddings request failed before receiving a response after 3 attempt(s): "
         "ConnectError: [Errno 111] Connection refused.", "ConnectError"),
        ("Deadline exceeded: the run's 5 s provider deadline passed; the call was abandoned.",
         "deadline_exceeded"),
        ("LLM judge response missing choices[0].message.content (or it is empty).",
         "invalid_response"),
        ("something nobody planned", "_OTHER"),
    ],
)  # fmt: skip
def test_error_types_are_low_cardinality(message: str, expected: str) -> None:
    assert error_type(message) == expected
