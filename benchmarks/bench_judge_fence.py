"""What fencing the judge prompts costs: bytes per prompt, and time to render them.

Run: ``.venv/bin/python benchmarks/bench_judge_fence.py [--quick]``

Sizes: every shipped judge prompt is rendered for the same generated samples (answers and
passages of a few sentences with line breaks, quotes and non-ASCII text; 6-turn
conversations; 3 tool calls), and each prompt is parsed back with the tests' independent
parser. The size "raw" is the prompt as it would be with every value pasted as is and no data
rule (the prompt's bytes minus, for each value, its JSON string's escapes and quotes, minus
the data rule paragraph); "fenced" is the prompt as sent.

Time: the ``llm-as-judge`` prompts of N rows rendered in one query, fenced (as shipped) and
raw (the same template with the values pasted as is), best of 5.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))
import polars as pl
from _common import machine
from test_judge_fence import (
    Params,
    Sample,
    _check_every_prompt,
    _dag_needs,
    _frame,
    _metrics,
    _rendered,
    _upstream,
    _walk,
    parse,
)

from evalframe.core import schema as C
from evalframe.metrics._fence import fenced
from evalframe.metrics._judge_engine import DATA_RULE, render
from evalframe.metrics.judge import LLM_JUDGE, _question_expr, prompts

QUICK = "--quick" in sys.argv
N = 20_000 if QUICK else 200_000
SIZE_SAMPLES = 50

PHRASE = (
    "the refund window is 30 days from delivery; items must be unused and in the original "
    'packaging. Say "return" in the app, or call us. Résumé: naïve café déjà vu 東京 ✓'
)
WORDS = PHRASE.split()


def _text(i: int, sentences: int) -> str:
    out = []
    for s in range(sentences):
        words = [WORDS[(i * 7 + s * 3 + k) % len(WORDS)] for k in range(12 + (i + s) % 9)]
        out.append(" ".join(words).capitalize() + ".")
    return "\n".join(out) if i % 3 == 0 else " ".join(out)


def _sample(i: int) -> Sample:
    turns = [
        {"role": "user" if t % 2 == 0 else "assistant", "content": _text(i + t, 2)}
        for t in range(6)
    ]
    calls: list[dict[str, str | None]] = [
        {"name": "search", "arguments": json.dumps({"q": _text(i, 1)[:40]}), "result": _text(i, 2)}
        for _ in range(3)
    ]
    return Sample(
        question=_text(i, 1), expected=_text(i + 1, 2), actual=_text(i + 2, 3),
        baseline=_text(i + 3, 3), contexts=[_text(i + k, 4) for k in range(3)], turns=turns,
        calls=calls, policy=_text(i, 2), plan=_text(i + 4, 2), role=_text(i + 5, 1),
        answer_claims=[_text(i + k, 1) for k in range(3)],
        reference_claims=[_text(i + k + 1, 1) for k in range(2)],
        steps=[_text(i + k, 1) for k in range(3)], questions=[_text(i + k, 1) for k in range(3)],
        reason=_text(i, 1),
    )  # fmt: skip


def _escapes(value: object) -> int:
    """The bytes fencing adds to the JSON values of a parsed field."""
    if isinstance(value, str):
        return len(json.dumps(value, ensure_ascii=False).encode()) - len(value.encode())
    if isinstance(value, dict):
        return sum(_escapes(v) for v in value.values())
    if isinstance(value, list):
        return sum(_escapes(v) for v in value)
    return 0


def sizes() -> None:
    rows = [_sample(i) for i in range(SIZE_SAMPLES)]
    p = Params(_text(1, 1), (_text(2, 1), _text(3, 1)), _text(4, 1), _text(5, 1), _text(6, 1),
               _text(7, 2), _text(8, 1))  # fmt: skip
    assert _check_every_prompt(rows, p)  # every prompt parses back into its fields
    frame = _frame(rows)
    totals: dict[str, list[int]] = {}
    needs = {n.column: n for m in _metrics(p) for n in _walk(m.needs())}
    needs |= {n.column: n for n in _walk(list(_dag_needs(p)))}
    rule = len(DATA_RULE.encode()) + 2  # the paragraph and its blank line
    for need in needs.values():
        base = frame
        for required in getattr(need, "requires", ()):
            base = base.with_columns(_upstream(required, rows))
        for got in _rendered(need, base):
            for text in got:
                quoting = 0
                for kind, value in parse(need.prompt.text, text).values():
                    if kind == "json":
                        quoting += _escapes(value)
                    elif kind == "lines":
                        quoting += _escapes([v for _, v in value])
                t = totals.setdefault(need.prompt.id, [0, 0, 0])
                t[0] += 1
                t[1] += len(text.encode()) - rule - quoting
                t[2] += quoting
    print(f"\n{SIZE_SAMPLES} samples; bytes per prompt, mean\n")
    print("| prompt | prompts | raw | + data rule | + quotes, escapes | overhead |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    all_raw = all_added = 0
    for pid, (n, raw, quoting) in sorted(totals.items()):
        all_raw += raw
        all_added += rule * n + quoting
        added = rule * n + quoting
        print(f"| {pid} | {n} | {raw / n:.0f} | {rule} | {quoting / n:.0f} | +{added / raw:.1%} |")
    print(f"| all | | | | | +{all_added / all_raw:.1%} |")


def timing() -> None:
    rows = [_sample(i) for i in range(100)]
    frame = pl.concat([_frame(rows)] * (N // 100))
    values = {
        "question": _question_expr(),
        "expected": pl.col(C.EXPECTED_OUTPUT).fill_null("null"),
        "actual": pl.col(C.ACTUAL_OUTPUT),
    }
    raw = render(LLM_JUDGE.template, values)
    shipped = render(LLM_JUDGE.text, {k: fenced(v) for k, v in values.items()})
    assert frame.select(shipped).to_series().equals(prompts(frame, "llm-as-judge"))
    times: dict[str, list[float]] = {"raw": [], "fenced": []}
    for _ in range(7):  # interleaved, so a busy moment costs both
        for name, expr in (("raw", raw), ("fenced", shipped)):
            started = time.perf_counter()
            frame.select(expr)
            times[name].append(time.perf_counter() - started)
    raw_s, fenced_s = min(times["raw"]), min(times["fenced"])
    print(f"\nllm-as-judge prompts for {frame.height:,} rows, best of 7\n")
    print("| rendering | seconds | per row | ratio |")
    print("| --- | ---: | ---: | ---: |")
    print(f"| raw values, no data rule | {raw_s:.3f} | {raw_s / N * 1e6:.1f} us | 1.00 |")
    print(
        f"| fenced, with the data rule (shipped) | {fenced_s:.3f} | "
        f"{fenced_s / N * 1e6:.1f} us | {fenced_s / raw_s:.2f} |"
    )


if __name__ == "__main__":
    print(f"# {machine()}")
    sizes()
    timing()
