"""A run store for the viewer's tests: three runs of the support example (the second and
third change a few answers), a baseline, a run of hostile strings, online scores and an
adversarial history entry."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path

import polars as pl

import evalframe as ef

EXAMPLES = Path(ef.__file__).parent / "examples"
METRICS = ["exact-match", "contains", "rouge-l"]

# Strings that would run script if any page wrote them as markup.
PROBES = (
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(2)>',
    "</script><script>alert(3)</script>",
    "<!-- <b>4</b>",
    "' onmouseover='alert(5)",
)
HOSTILE = " ".join(PROBES)


@dataclass(frozen=True)
class ViewStore:
    path: Path
    runs: list[str]  # the three support runs, oldest first
    hostile: str  # the run made of probes
    hostile_sample: str


def build(folder: Path) -> ViewStore:
    db = folder / "view.duckdb"
    saved = json.loads((EXAMPLES / "support.outputs.json").read_text("utf-8"))["outputs"]
    changes = [
        {},
        {"refund-window": "a month", "warranty": "2 years"},
        {"refund-window": "30 days, no questions", "shipping-time": "it takes a while"},
    ]
    runs = []
    for i, change in enumerate(changes):
        run = ef.evaluate(
            EXAMPLES / "support.yaml",
            outputs={**saved, **change},
            metrics=METRICS,
            labels={"team": "search", "attempt": str(i)},
            name=f"support v{i}",
            progress=False,
            store=db,
        )
        runs.append(run.run_id)
    with ef.Store(db) as store:
        store.promote_baseline(runs[0], name="support-main")
    sample = f"id {PROBES[1]}"
    hostile = ef.Dataset.from_records(
        [
            {
                "id": sample,
                "input": {"question": HOSTILE},
                "expected_output": f"expected {PROBES[0]}",
                "metadata": {"tags": [PROBES[2]], "note": HOSTILE},
            },
            {"id": "plain", "input": {"question": "q"}, "expected_output": "a"},
        ],
        name=f"data {PROBES[0]}",
    )
    run = ef.evaluate(
        hostile,
        outputs={sample: f"actual {HOSTILE}", "plain": "b"},
        metrics=METRICS,
        labels={PROBES[3]: PROBES[4]},
        name=f"run {PROBES[1]}",
        progress=False,
        store=db,
    )
    with ef.Store(db) as store:
        store.save_labels(
            [{"run_id": run.run_id, "sample_id": sample, "metric": "rouge-l", "label": "fail",
              "note": HOSTILE}]
        )  # fmt: skip
        _online(store)
        _adversarial(store, runs[0])
    return ViewStore(db, runs, run.run_id, sample)


def _online(store: ef.Store) -> None:
    from evalframe.store._online import CAPTURE_SCHEMA, SCORE_SCHEMA, insert_captures, record_scores

    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    n = 6
    captures = pl.DataFrame(
        {
            "capture_id": [f"c{i}" for i in range(n)],
            "dataset": ["support.live"] * n,
            "sample_id": [f"s{i}" for i in range(n)],
            "row_hash": [f"h{i}" for i in range(n)],
            "captured_at": [now - dt.timedelta(days=i) for i in range(n)],
            "input": ['{"question": "q"}'] * n,
            "expected_output": [None] * n,
            "actual_output": [f"answer {PROBES[0]}"] * n,
            "retained": [True] * n,
            "redactor": [None] * n,
            "scored": [False] * n,
        },
        schema=CAPTURE_SCHEMA,
    )
    insert_captures(store, captures)
    scores = pl.DataFrame(
        {
            "capture_id": [f"c{i}" for i in range(n)],
            "dataset": ["support.live"] * n,
            "sample_id": [f"s{i}" for i in range(n)],
            "metric": ["llm-as-judge"] * n,
            "score": [0.9, 0.8, 0.2, 0.95, 0.6, 0.75],
            "passed": [True, True, False, True, False, True],
            "threshold": [0.7] * n,
            "error": [None] * n,
            "judge_model": ["stub"] * n,
            "details": ['{"reason": "ok"}'] * n,
            "judged_at": [now - dt.timedelta(days=i) for i in range(n)],
        },
        schema=SCORE_SCHEMA,
    )
    record_scores(store, scores)


def _adversarial(store: ef.Store, run_id: str) -> None:
    from evalframe.core._adversarial_history import entry_from_report
    from evalframe.store._adversarial import record

    entry = entry_from_report(store.load(run_id).report(samples=False))
    record(store, {**entry, "dataset": "adversarial.security.v1"})
