"""Synthesize: the judge calls a golden set costs, and the questions kept per call, evalframe
beside DeepEval's and Ragas' generators on the same documents.

Every tool asks a scripted judge whose every reply is usable and passes every filter (the best
case for each: the figures count the calls each pipeline makes by design, not a model's
mistakes). evalframe's judge is the loopback stub of the test suite (tests/openai_stub.py),
counted by the HTTP requests it receives; DeepEval and Ragas each run in an environment of
their own (they pull large dependency trees) with a counting in-process model plugged into
their documented custom-model hooks (``DeepEvalBaseLLM``; Ragas' ``BaseRagasLLM`` and
``BaseRagasEmbeddings``), which answers each request with an instance of the schema the
library asks for. Usage, from the repository root:

    .venv/bin/python benchmarks/bench_synthesize.py --out e.json          # evalframe
    DEEPEVAL_VENV/bin/python benchmarks/bench_synthesize.py --tool deepeval --contexts e.json \\
        --out d.json
    RAGAS_VENV/bin/python benchmarks/bench_synthesize.py --tool ragas --out r.json
    .venv/bin/python benchmarks/bench_synthesize.py --compare e.json d.json r.json

``scripts/peers/make_peer_files.sh`` builds such environments (ragas 0.4.3, deepeval 4.3.1).
The documents are ``docs/howto/*.md`` by default (``--docs``); DeepEval, whose from-documents
path needs ChromaDB and an embedding model, is given evalframe's chunks as its contexts
(``generate_goldens_from_contexts``), which skips its context construction: its figure is a
lower bound.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EVOLVED = {"reasoning", "multi-context", "conditional"}


def documents(given: list[str]) -> list[Path]:
    paths = [Path(p) for p in given] if given else sorted((ROOT / "docs" / "howto").glob("*.md"))
    return [p for p in paths if p.name != "synthesize.md"]  # this page's own figures change


# --- a schema-following stand-in for a model, for the peers ---------------------------------------


def instance(schema: dict[str, Any], defs: dict[str, Any], path: str = "") -> Any:
    """A value of the JSON schema: every field present, lists of two, scores at their best
    (1.0, or 5 for an integer score), booleans true, strings a short distinct sentence."""
    if "$ref" in schema:
        return instance(defs[schema["$ref"].split("/")[-1]], defs, path)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            options = [s for s in schema[key] if s.get("type") != "null"]
            return instance(options[0], defs, path)
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type", "string")
    if kind == "object":
        props = schema.get("properties", {})
        return {k: instance(v, defs, f"{path}.{k}") for k, v in props.items()}
    if kind == "array":
        return [instance(schema.get("items", {}), defs, f"{path}[{i}]") for i in range(2)]
    if kind in ("number", "integer"):  # a 1-5 rubric's best score, a 0-1 score's best
        return (5 if path.endswith("score") else 1) if kind == "integer" else 1.0
    if kind == "boolean":
        return True
    digest = hashlib.sha256(f"{path}{time.perf_counter_ns()}".encode()).hexdigest()[:6]
    return f"A generated {path.strip('.').split('.')[-1] or 'text'} {digest}?"


# --- evalframe ------------------------------------------------------------------------------------


def run_evalframe(args: argparse.Namespace) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT / "tests"))
    from judge_script import script
    from openai_stub import StubOpenAI

    import evalframe as ef
    from evalframe.core._chunking import chunk_documents
    from evalframe.core._documents import find_documents, read_documents
    from evalframe.metrics._synthesis_prompts import CRITIQUE, GENERATE
    from evalframe.providers import OpenAIJudge, Providers

    def generation(evolution: str) -> Any:
        def reply(values: dict[str, str]) -> dict[str, str]:
            first = json.loads(values["passages"].splitlines()[0].split(". ", 1)[1])
            words = " ".join(first.split()[:12])
            out = {"question": f"What does this say ({evolution}): {words}?", "answer": words}
            if evolution in EVOLVED:
                out["draft"] = f"What is said about {words}?"
            return out

        return reply

    def critique(values: dict[str, str]) -> dict[str, Any]:
        rejected = int(hashlib.sha256(values["question"].encode()).hexdigest(), 16) % 100
        ok = rejected >= args.reject
        return {"answerable": ok, "grounded": True, "standalone": True, "non_trivial": True,
                "reason": "" if ok else "scripted rejection"}  # fmt: skip

    routes: dict[Any, Any] = {p: generation(e) for e, p in GENERATE.items()}
    routes[CRITIQUE] = critique
    docs = documents(args.docs)
    chunks = chunk_documents(read_documents(find_documents(docs)), 1500)
    rows = []
    with StubOpenAI(verdict=script(routes), latency=args.latency) as stub:
        for n in args.n:
            with tempfile.TemporaryDirectory() as tmp:
                providers = Providers(
                    judge=OpenAIJudge("stub-judge", base_url=stub.url),
                    cache=Path(tmp) / "cache.duckdb",
                )
                for attempt in ("first", "rerun"):
                    before = len(stub.calls("/chat/completions"))
                    start = time.perf_counter()
                    golden = ef.synthesize(
                        docs, n=n, providers=providers, dedup_threshold=0.99, progress=False
                    )
                    seconds = time.perf_counter() - start
                    calls = len(stub.calls("/chat/completions")) - before
                    stats = golden.synthesis
                    row = {"tool": "evalframe", "n": n, "run": attempt, "calls": calls,
                           "kept": stats.kept, "candidates": stats.candidates,
                           "dropped": stats.dropped, "seconds": round(seconds, 2)}  # fmt: skip
                    rows.append(row)
    contexts = [[c.text] for c in chunks]
    return {"documents": [p.name for p in docs], "chunks": len(chunks), "rows": rows,
            "contexts": contexts, "reject_percent": args.reject}  # fmt: skip


# --- DeepEval -------------------------------------------------------------------------------------


def run_deepeval(args: argparse.Namespace) -> dict[str, Any]:
    from deepeval.models import DeepEvalBaseLLM
    from deepeval.synthesizer import Synthesizer
    from deepeval.synthesizer.config import EvolutionConfig, FiltrationConfig

    class Counting(DeepEvalBaseLLM):  # type: ignore[misc]
        calls = 0

        def __init__(self) -> None:
            self.model = "counting"

        def load_model(self) -> Any:
            return self

        def get_model_name(self) -> str:
            return "counting"

        def generate(self, prompt: str, schema: Any = None) -> Any:
            Counting.calls += 1
            if schema is None:
                return "A generated answer."
            shape = schema.model_json_schema()
            return schema.model_validate(instance(shape, shape.get("$defs", {})))

        async def a_generate(self, prompt: str, schema: Any = None) -> Any:
            return self.generate(prompt, schema)

    given = json.loads(Path(args.contexts).read_text(encoding="utf-8"))["contexts"]
    rows = []
    for n in args.n:
        Counting.calls = 0
        synthesizer = Synthesizer(
            model=Counting(),
            async_mode=False,
            filtration_config=FiltrationConfig(critic_model=Counting()),
            evolution_config=EvolutionConfig(num_evolutions=1),
        )
        contexts = given[: (n + 1) // 2]  # two goldens per context, its default
        goldens = synthesizer.generate_goldens_from_contexts(
            contexts=contexts, include_expected_output=True, max_goldens_per_context=2
        )
        rows.append({"tool": "deepeval", "n": n, "run": "first", "calls": Counting.calls,
                     "kept": len(goldens), "contexts": len(contexts)})  # fmt: skip
    return {"rows": rows}


# --- Ragas ----------------------------------------------------------------------------------------


def run_ragas(args: argparse.Namespace) -> dict[str, Any]:
    import re

    import tiktoken

    class Words:  # the cl100k encoding file is downloaded on first use: no network here
        name = "words"

        def encode(self, text: str, **_: Any) -> list[int]:
            return [hash(t) & 0xFFFF for t in re.findall(r"\w+|[^\w\s]", text)]

        def decode(self, tokens: list[int]) -> str:
            return " ".join(map(str, tokens))

    tiktoken.get_encoding = lambda name: Words()
    tiktoken.encoding_for_model = lambda name: Words()

    from langchain_core.documents import Document
    from langchain_core.outputs import Generation, LLMResult
    from ragas.embeddings import BaseRagasEmbeddings
    from ragas.llms import BaseRagasLLM
    from ragas.run_config import RunConfig
    from ragas.testset import TestsetGenerator

    counts = {"llm": 0, "embeddings": 0}
    asked: dict[str, int] = {}

    def reply(prompt: str) -> str:
        at = prompt.find("JSON Schema:")
        if at < 0:
            return json.dumps({"text": "A generated text."})
        start = prompt.index("{", at)
        shape, _ = json.JSONDecoder().raw_decode(prompt[start:])
        asked[shape.get("title", "?")] = asked.get(shape.get("title", "?"), 0) + 1
        value = instance(shape, shape.get("$defs", {}))
        given = prompt[prompt.index("{", prompt.rfind("Now perform the same")) :]
        asked_for = json.JSONDecoder().raw_decode(given)[0]
        if "headlines" in shape.get("properties", {}):  # the splitter cuts where they are
            text = asked_for["text"]
            value["headlines"] = re.findall(r"^#{1,3} +(.+?)\s*$", text, flags=re.M)[:10]
        if shape.get("title") == "PersonaThemesMapping":  # a free map: every persona, every theme
            themes = asked_for["themes"]
            value["mapping"] = {p["name"]: themes for p in asked_for["personas"]}
        return json.dumps(value)

    class Counting(BaseRagasLLM):  # type: ignore[misc]
        def generate_text(self, prompt: Any, n: int = 1, temperature: Any = 0.01,
                          stop: Any = None, callbacks: Any = None) -> Any:  # fmt: skip
            counts["llm"] += 1
            text = reply(prompt.to_string())
            return LLMResult(generations=[[Generation(text=text) for _ in range(n)]])

        async def agenerate_text(self, prompt: Any, n: int = 1, temperature: Any = 0.01,
                                 stop: Any = None, callbacks: Any = None) -> Any:  # fmt: skip
            return self.generate_text(prompt, n, temperature, stop, callbacks)

        def is_finished(self, response: Any) -> bool:
            return True

    class Vectors(BaseRagasEmbeddings):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.set_run_config(RunConfig())

        def embed_query(self, text: str) -> list[float]:
            counts["embeddings"] += 1
            seed = hashlib.sha256(text.encode()).digest()
            return [b / 255 for b in seed[:16]]

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [self.embed_query(t) for t in texts]

        async def aembed_query(self, text: str) -> list[float]:
            return self.embed_query(text)

        async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
            return self.embed_documents(texts)

    docs = [Document(page_content=p.read_text(encoding="utf-8"), metadata={"source": p.name})
            for p in documents(args.docs)]  # fmt: skip
    rows = []
    for n in args.n:
        counts.update(llm=0, embeddings=0)
        generator = TestsetGenerator(llm=Counting(), embedding_model=Vectors())
        testset = generator.generate_with_langchain_docs(docs, testset_size=n)
        rows.append({"tool": "ragas", "n": n, "run": "first", "calls": counts["llm"],
                     "kept": len(testset.samples), "embedding_texts": counts["embeddings"],
                     "by_output": dict(asked)})  # fmt: skip
        asked.clear()
    return {"rows": rows}


# --- the table ------------------------------------------------------------------------------------


def compare(files: list[str]) -> None:
    rows = [r for f in files for r in json.loads(Path(f).read_text(encoding="utf-8"))["rows"]]
    print("| tool | n | run | judge calls | questions kept | kept per call | calls per question |")
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: |")
    for r in rows:
        per = r["kept"] / r["calls"] if r["calls"] else float("inf")
        each = r["calls"] / r["kept"] if r["kept"] else float("inf")
        print(f"| {r['tool']} | {r['n']} | {r['run']} | {r['calls']:,} | {r['kept']} | "
              f"{per:.2f} | {each:.2f} |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tool", choices=("evalframe", "deepeval", "ragas"), default="evalframe")
    parser.add_argument("--docs", nargs="*", default=[])
    parser.add_argument("-n", type=int, nargs="*", default=[20, 50])
    parser.add_argument("--reject", type=int, default=0, help="percent of critiques that fail")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per stub reply")
    parser.add_argument("--contexts", default="", help="evalframe's output, for DeepEval")
    parser.add_argument("--out", default="")
    parser.add_argument("--compare", nargs="*", default=None)
    args = parser.parse_args()
    if args.compare:
        compare(args.compare)
        return
    os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "YES")
    os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
    run = {"evalframe": run_evalframe, "deepeval": run_deepeval, "ragas": run_ragas}[args.tool]
    result = run(args)
    text = json.dumps(result, indent=1)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    for row in result["rows"]:
        print(json.dumps(row))


if __name__ == "__main__":
    main()
