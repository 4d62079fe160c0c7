"""Compatibility check: evalframe's RAG metrics against DeepEval's (and Ragas') on the same
samples, each library asking the same scripted judge (a loopback OpenAI-compatible stub).

Not part of the test suite: DeepEval and Ragas pull large dependency trees, so each runs in
an environment of its own and this script is run once per library, then once to compare:

    DEEPEVAL_VENV/bin/python benchmarks/compat_ragas_deepeval.py --tool deepeval --out d.json
    RAGAS_VENV/bin/python benchmarks/compat_ragas_deepeval.py --tool ragas --out r.json
    .venv/bin/python benchmarks/compat_ragas_deepeval.py --tool evalframe --out e.json
    .venv/bin/python benchmarks/compat_ragas_deepeval.py --compare e.json d.json r.json

(each environment also needs numpy, for the stub). Set ``NO_PROXY=127.0.0.1`` if a proxy is
configured: the stub listens on the loopback.

The judge follows one rule set whatever library asks (the rules of tests/rag_script.py,
which evalframe's RAG tests and benchmarks use): a text's claims (statements) are its
sentences split on ". "; a claim is supported by a context that contains it word for word
(case-insensitive) and contradicted by one that contains it after "not "; a claim addresses
the question when it shares a word of four letters or more with it. Each library's own
prompts are read only to find the texts in them; nothing of them is used by evalframe.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

SAMPLES: list[dict[str, Any]] = [
    {
        "id": "all-supported",
        "question": "How long is the refund window?",
        "answer": "The refund window is 30 days. Refunds go to the original card.",
        "contexts": [
            "Policy: the refund window is 30 days. Refunds go to the original card.",
        ],
    },
    {
        "id": "half-supported",
        "question": "How long is the refund window?",
        "answer": "The refund window is 30 days. Shipping is free worldwide.",
        "contexts": ["Policy: the refund window is 30 days."],
    },
    {
        "id": "contradicted",
        "question": "Is shipping free worldwide?",
        "answer": "Shipping is free worldwide.",
        "contexts": ["Shipping is not shipping is free worldwide, only in the EU."],
    },
    {
        "id": "beside-the-point",
        "question": "How long is the refund window?",
        "answer": "Our office has a nice garden. The refund window is 30 days.",
        "contexts": ["The refund window is 30 days."],
    },
    {
        "id": "off-topic",
        "question": "How long is the refund window?",
        "answer": "The refund window is 30 days. Our office has a nice garden.",
        "contexts": [
            "The refund window is 30 days. Our office has a nice garden.",
        ],
    },
]


# --- the one rule set ----------------------------------------------------------------------


def claims_of(text: str) -> list[str]:
    text = text.strip().strip('"').strip().rstrip(".")
    return [c.strip() for c in text.split(". ") if c.strip()] if text else []


def supported(claim: str, contexts: str) -> str:
    low, ctx = claim.lower().rstrip("."), contexts.lower()
    if f"not {low}" in ctx:
        return "no"
    return "yes" if low in ctx else "no"


def addresses(claim: str, question: str) -> bool:
    words = {w for w in re.findall(r"\w+", question.lower()) if len(w) >= 4}
    return bool(words & set(re.findall(r"\w+", claim.lower())))


def _between(prompt: str, start: str, end: str = "\n\nJSON:") -> str:
    i = prompt.rindex(start) + len(start)
    j = prompt.index(end, i) if end in prompt[i:] else len(prompt)
    return prompt[i:j].strip()


def _listed(text: str) -> list[str]:
    """A list the prompt shows as JSON or as a Python repr."""
    try:
        value = json.loads(text)
    except ValueError:
        import ast

        value = ast.literal_eval(text)
    return [str(v) for v in value]


def _text(content: Any) -> str:
    """A chat message's text: a string, or content parts (DeepEval sends parts)."""
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content)


def deepeval_judge(content: Any) -> str:
    """Replies to DeepEval's faithfulness and answer-relevancy prompts by the rule set."""
    prompt = _text(content)
    if "Faithfulness Score:" in prompt or "Answer Relevancy Score:" in prompt:
        return json.dumps({"reason": "scripted"})
    if '"truths"' in prompt:
        return json.dumps({"truths": claims_of(_between(prompt, "Text:\n"))})
    if '"claims" key' in prompt and "AI Output:" in prompt:
        return json.dumps({"claims": claims_of(_between(prompt, "AI Output:\n"))})
    if "Retrieval Contexts:" in prompt and "Claims:" in prompt:
        contexts = _between(prompt, "Retrieval Contexts:\n", "\n\nClaims:")
        claims = _listed(_between(prompt, "Claims:\n"))
        verdicts = [{"verdict": supported(c, contexts), "reason": "scripted"} for c in claims]
        return json.dumps({"verdicts": verdicts})
    if '"statements"' in prompt and "Statements:" not in prompt:
        return json.dumps({"statements": claims_of(_between(prompt, "Text:\n"))})
    if "Statements:" in prompt and "Input:" in prompt:
        question = _between(prompt, "Input:\n", "\n\nStatements:")
        statements = _listed(_between(prompt, "Statements:\n"))
        verdicts = [
            {"verdict": "yes" if addresses(s, question) else "no", "reason": "scripted"}
            for s in statements
        ]
        return json.dumps({"verdicts": verdicts})
    raise AssertionError(f"no scripted reply for DeepEval prompt:\n{prompt[:400]}")


def asked_question(answer: str) -> str:
    """The question the judge says an answer answers: the sample's own question when the
    answer's first claim addresses it, else one made from that claim."""
    claims = claims_of(answer)
    if not claims:
        return "What?"
    for s in SAMPLES:
        if s["answer"] == answer and addresses(claims[0], s["question"]):
            return str(s["question"])
    return f"What about {claims[0].lower()}?"


def _ragas_input(prompt: str) -> dict[str, Any]:
    """The input object a Ragas prompt ends with (``input: {...}`` then ``Output:``)."""
    start = prompt.rindex("input: ") + len("input: ")
    end = prompt.rindex("Output:")
    return dict(json.loads(prompt[start:end]))


def ragas_judge(content: Any) -> str:
    """Replies to Ragas' faithfulness and response-relevancy prompts by the rule set."""
    given = _ragas_input(_text(content))
    if set(given) >= {"question", "answer"}:
        return json.dumps({"statements": claims_of(given["answer"])})
    if set(given) >= {"context", "statements"}:
        verdicts = [
            {"statement": st, "reason": "scripted",
             "verdict": int(supported(st, given["context"]) == "yes")}
            for st in given["statements"]
        ]  # fmt: skip
        return json.dumps({"statements": verdicts})
    if "response" in given:
        return json.dumps({"question": asked_question(given["response"]), "noncommittal": 0})
    raise AssertionError(f"no scripted reply for Ragas prompt input: {sorted(given)}")


# --- the libraries -------------------------------------------------------------------------


def run_ragas(url: str) -> dict[str, dict[str, float]]:
    from langchain_openai import ChatOpenAI, OpenAIEmbeddings
    from ragas import SingleTurnSample
    from ragas.embeddings import LangchainEmbeddingsWrapper
    from ragas.llms import LangchainLLMWrapper
    from ragas.metrics import Faithfulness, ResponseRelevancy

    llm = LangchainLLMWrapper(ChatOpenAI(model="gpt-4o-mini", base_url=url, api_key="stub"))
    embeddings = LangchainEmbeddingsWrapper(
        OpenAIEmbeddings(
            model="stub-embed", base_url=url, api_key="stub", check_embedding_ctx_length=False
        )
    )
    out: dict[str, dict[str, float]] = {}
    for s in SAMPLES:
        sample = SingleTurnSample(
            user_input=s["question"], response=s["answer"], retrieved_contexts=s["contexts"]
        )
        out[s["id"]] = {
            "faithfulness": float(Faithfulness(llm=llm).single_turn_score(sample)),
            "answer-relevancy(mode=questions)": float(
                ResponseRelevancy(llm=llm, embeddings=embeddings, strictness=1).single_turn_score(
                    sample
                )
            ),
        }
    return out


def run_deepeval(url: str) -> dict[str, dict[str, float]]:
    from deepeval.metrics import AnswerRelevancyMetric, FaithfulnessMetric
    from deepeval.models import GPTModel
    from deepeval.test_case import LLMTestCase

    model = GPTModel(model="gpt-4o-mini", base_url=url, api_key="stub")
    out: dict[str, dict[str, float]] = {}
    for s in SAMPLES:
        case = LLMTestCase(
            input=s["question"], actual_output=s["answer"], retrieval_context=s["contexts"]
        )
        scores = {}
        for name, metric in (
            ("faithfulness", FaithfulnessMetric(model=model, async_mode=False)),
            ("answer-relevancy", AnswerRelevancyMetric(model=model, async_mode=False)),
        ):
            scores[name] = float(metric.measure(case))
        out[s["id"]] = scores
    return out


def evalframe_judge() -> Any:
    """evalframe's prompts answered by the same rules (tests/rag_script.py, plus the
    relevancy-questions prompt)."""
    from judge_script import fields
    from rag_script import VERDICT

    from evalframe.metrics._rag_prompts import QUESTIONS

    def judge(prompt: str) -> str:
        found = fields(prompt, QUESTIONS)
        if found is not None:
            question = asked_question(found["answer"])
            return json.dumps({"questions": [question] * int(found["n"]), "noncommittal": False})
        return str(VERDICT(prompt))

    return judge


def run_evalframe(url: str) -> dict[str, dict[str, float]]:
    import evalframe as ef

    ds = ef.Dataset.from_records(
        [{"id": s["id"], "input": {"question": s["question"]}, "expected_output": ""}
         for s in SAMPLES],
        name="compat",
    )  # fmt: skip
    outputs = [{"id": s["id"], "actual_output": s["answer"], "contexts": s["contexts"]}
               for s in SAMPLES]  # fmt: skip
    path = Path(__file__).with_name(".compat-outputs.json")
    path.write_text(json.dumps({"outputs": outputs}), encoding="utf-8")
    try:
        judge = ef.OpenAIJudge("gpt-4o-mini", base_url=url)
        embedder = ef.OpenAIEmbeddings("stub-embed", base_url=url)
        run = ef.evaluate(
            ds,
            outputs=path,
            metrics=[
                "faithfulness",
                "answer-relevancy",
                "answer-relevancy(mode=questions, questions=1)",
            ],
            providers=ef.Providers(embeddings=embedder, judge=judge, cache=False),
        )
    finally:
        path.unlink()
    out: dict[str, dict[str, float]] = {}
    for row in run.scores.iter_rows(named=True):
        metric = row["metric"].replace(", questions=1", "")
        out.setdefault(row["sample_id"], {})[metric] = row["score"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tool", choices=["deepeval", "ragas", "evalframe"])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--compare", nargs="+", type=Path)
    args = parser.parse_args()
    if args.compare:
        docs = [json.loads(p.read_text("utf-8")) for p in args.compare]
        tools = [d["tool"] for d in docs]
        print("| sample | metric | " + " | ".join(tools) + " | calls: " + ", ".join(
            f"{d['tool']} {d['calls']}" for d in docs) + " |")  # fmt: skip
        print("|---|---|" + "---|" * len(docs) + "---|")
        shared = [m for m in docs[0]["scores"][SAMPLES[0]["id"]]
                  if all(m in d["scores"][SAMPLES[0]["id"]] for d in docs)]  # fmt: skip
        for s in SAMPLES:
            for metric in shared:
                values = [d["scores"][s["id"]][metric] for d in docs]
                agree = "agree" if max(values) - min(values) <= 1e-6 else "differ"
                cells = " | ".join(f"{v:.3f}" for v in values)
                print(f"| {s['id']} | {metric} | {cells} | {agree} |")
        return
    from openai_stub import StubOpenAI as TestStub

    class StubOpenAI(TestStub):
        """The test stub, reading a message given as content parts as its text."""

        def _answer(self, endpoint: str, body: Any, fault: Any) -> dict[str, Any]:
            for message in body.get("messages") or []:
                message["content"] = _text(message.get("content"))
            return super()._answer(endpoint, body, fault)

    if args.tool == "deepeval":
        verdict, run = deepeval_judge, run_deepeval
    elif args.tool == "ragas":
        verdict, run = ragas_judge, run_ragas
    else:
        verdict, run = evalframe_judge(), run_evalframe
    with StubOpenAI(verdict=verdict) as stub:
        scores = run(stub.url)
        calls = len(stub.calls("chat/completions"))
    doc = {"tool": args.tool, "calls": calls, "scores": scores}
    text = json.dumps(doc, indent=2)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
