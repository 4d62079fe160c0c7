"""promptfoo results (``promptfoo eval -o results.json`` or ``-o results.jsonl``).

Each (prompt, provider) pair is a set of outputs of its own, named from the prompt's label
and the provider's label or id; each test's assertions map to evalframe metrics with the
same meaning (``ASSERTIONS``), and each pair's verdicts are kept in the samples' metadata.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Final

from evalframe.core._errors import DatasetError
from evalframe.io._common import (
    Imported,
    Rows,
    check_type,
    load_json_source,
    source_path,
    unique_labels,
    variants,
)

__all__ = ["ASSERTIONS", "PROMPTFOO", "from_promptfoo"]

PROMPTFOO: Final = {
    "id": "id",
    "output": "actual_output",
    "expected": "expected_output",
    "expected_any": "expected_any",
    "description": "metadata.description",
    "promptfoo": "metadata.promptfoo",
    **{c: f"outputs.{c}" for c in ("latency_ms", "prompt_tokens", "completion_tokens", "cost_usd")},
}

ASSERTIONS: Final[dict[str, tuple[str, str]]] = {
    "equals": ("exact-match", "text"),
    "contains": ("contains", "text"),
    "icontains": ("contains(case_sensitive=false)", "text"),
    "contains-any": ("contains", "any"),
    "icontains-any": ("contains(case_sensitive=false)", "any"),
    "contains-all": ("list-contains(threshold=1.0)", "all"),
    "icontains-all": ("list-contains(case_sensitive=false, threshold=1.0)", "all"),
    "starts-with": ("regex", "starts"),
    "regex": ("regex", "regex"),
    "is-json": ("json-valid", "none"),
}
"""promptfoo assertion type -> (evalframe metric, how the assertion's value becomes the
sample's expected output): ``text`` the value itself, ``any`` the values as any-of answers
(``expected_any``), ``all`` the list of values, ``starts`` and ``regex`` a ``/pattern/``,
``none`` no value."""

_PCRE_SPECIAL: Final = frozenset("\\^$.|?*+()[]{}/")


def from_promptfoo(
    path: str | os.PathLike[str],
    *,
    to: str | os.PathLike[str] | None = None,
    outputs: str | os.PathLike[str] | None = None,
    mapping: Mapping[str, str] | None = None,
    name: str | None = None,
) -> Imported:
    """promptfoo results: ``promptfoo eval -o results.json`` or ``-o results.jsonl``.

    One sample per test case (``testIdx``), each of its ``vars`` an ``input.<var>``. Each
    (prompt, provider) pair's outputs are a set of their own (``Imported.variants``), in the
    order of promptfoo's columns, labelled from the prompt's label and the provider's label or
    id (``Capital-of-country--openai-gpt-4``; labels that would collide take a short hash, so
    ``openai:gpt-4`` and ``openai/gpt-4`` never overwrite each other): the first is written to
    ``outputs``, the others beside it. Assertions map to metrics as ``ASSERTIONS`` says: the
    first one with a value gives the expected output, and the mapped metrics become the
    dataset's ``metrics:`` when every test asserts the same way. Assertion types with no
    evalframe equivalent are named in ``Imported.notes``; every pair's verdicts (pass, score,
    reason, each assertion's result) stay in ``metadata.promptfoo.verdicts.<label>``.
    """
    file = source_path(path)
    where = str(file)
    results = _results(file)
    pairs: dict[tuple[str, str], list[tuple[int, dict[str, Any]]]] = {}
    column: dict[tuple[str, str], int] = {}
    for index, result in enumerate(results):
        record = f"result {index}"
        check_type(result, dict, where, record, "(the result)")
        key = (_prompt(result, where, record), _provider(result, where, record))
        test = check_type(result.get("testIdx"), int, where, record, "testIdx")
        if test is None:
            raise DatasetError(f"{where}: {record} has no testIdx (not a promptfoo result).")
        pairs.setdefault(key, []).append((test, result))
        at = check_type(result.get("promptIdx"), int, where, record, "promptIdx")
        column[key] = min(column.get(key, at or 0), at or 0)
    keys = sorted(pairs, key=lambda k: (column[k], k))
    labels = dict(zip(keys, unique_labels(list(keys)), strict=True))
    tests: dict[int, dict[str, Any]] = {}
    verdicts: dict[int, dict[str, Any]] = {}
    for key in keys:
        for test, result in sorted(pairs[key], key=lambda p: p[0]):
            tests.setdefault(test, result)
            verdicts.setdefault(test, {})[labels[key]] = _verdict(result)
    duplicates = [labels[k] for k in keys if len({t for t, _ in pairs[k]}) < len(pairs[k])]
    if duplicates:
        raise DatasetError(f"{where}: the pair {duplicates[0]} lists a test twice.")
    plans = {t: _plan(r, where, t) for t, r in tests.items()}
    groups: list[tuple[str, Rows]] = []
    for key in keys:
        rows = [
            _row(result, plans[test], verdicts[test], where, f"result for test {test}")
            for test, result in sorted(pairs[key], key=lambda p: p[0])
        ]
        groups.append((labels[key], rows))
    defaults = {
        **PROMPTFOO,
        **{c: f"input.{c[5:]}" for _, g in groups for r in g for c in r if c.startswith("vars.")},
    }
    metrics, notes = _metrics_and_notes(plans)
    return variants(
        groups or [("results", [])],
        defaults,
        mapping,
        name=name or file.stem,
        source=where,
        to=to,
        outputs=outputs,
        metrics=metrics,
        notes=notes,
    )


def _results(file: Any) -> list[Any]:
    where = str(file)
    if file.suffix.lower() == ".jsonl":
        return list(load_json_source(file, lines=True))
    doc = load_json_source(file, lines=False)
    results = doc.get("results") if isinstance(doc, dict) else None
    if isinstance(results, dict):
        results = results.get("results")
    if not isinstance(results, list):
        raise DatasetError(
            f"{where}: not promptfoo results (no results.results list; promptfoo eval -o "
            "results.json writes one, -o results.jsonl one result per line)."
        )
    return results


def _prompt(result: dict[str, Any], where: str, record: str) -> str:
    prompt = check_type(result.get("prompt"), (dict, str), where, record, "prompt")
    if isinstance(prompt, str):
        return prompt
    prompt = prompt or {}
    label = check_type(prompt.get("label"), str, where, record, "prompt.label")
    raw = check_type(prompt.get("raw"), str, where, record, "prompt.raw")
    found = label or raw or result.get("promptId")
    return str(found) if found is not None else "prompt"


def _provider(result: dict[str, Any], where: str, record: str) -> str:
    provider = check_type(result.get("provider"), (dict, str), where, record, "provider")
    if isinstance(provider, dict):
        label = check_type(provider.get("label"), str, where, record, "provider.label")
        ident = check_type(provider.get("id"), str, where, record, "provider.id")
        provider = label or ident
    if not provider:
        raise DatasetError(f"{where}: {record} field 'provider' names no provider.")
    return str(provider)


def _verdict(result: dict[str, Any]) -> dict[str, Any]:
    found = result.get("gradingResult")
    grading: dict[str, Any] = found if isinstance(found, dict) else {}
    components = [
        {
            "type": (c.get("assertion") or {}).get("type"),
            "pass": c.get("pass"),
            "score": c.get("score"),
            "reason": c.get("reason"),
        }
        for c in grading.get("componentResults") or []
        if isinstance(c, dict)
    ]
    out = {
        "success": result.get("success"),
        "score": result.get("score"),
        "reason": grading.get("reason"),
        "assertions": components,
    }
    if result.get("error"):
        out["error"] = str(result["error"])
    return {k: v for k, v in out.items() if v not in (None, [])}


def _plan(result: dict[str, Any], where: str, test: int) -> dict[str, Any]:
    """How a test's assertions map: the metrics, the expected value, what is not carried."""
    record = f"test {test}"
    case = check_type(result.get("testCase") or {}, dict, where, record, "testCase")
    asserts = check_type(case.get("assert") or [], list, where, record, "testCase.assert")
    metrics: list[str] = []
    expected: dict[str, Any] = {}
    skipped: list[str] = []
    for position, assertion in enumerate(asserts):
        check_type(assertion, dict, where, record, f"testCase.assert[{position}]")
        kind = check_type(assertion.get("type"), str, where, record, f"assert[{position}].type")
        value = assertion.get("value")
        mapped = ASSERTIONS.get(kind or "")
        if mapped is None:
            skipped.append(str(kind))
            continue
        metric, shape = mapped
        found = _expected(shape, value)
        if found is None:  # a value of a shape the metric cannot take (is-json with a schema)
            skipped.append(f"{kind} (with this value)")
            continue
        if found and expected and found != expected:
            skipped.append(f"{kind} (a second expected value)")
            continue
        expected = expected or found
        if metric not in metrics:
            metrics.append(metric)
    return {"metrics": metrics, "expected": expected, "skipped": skipped, "asserts": asserts}


def _expected(shape: str, value: Any) -> dict[str, Any] | None:
    """The sample fields an assertion's value gives (empty: none), or None if unusable."""
    if shape == "none":
        return {} if value is None else None
    if shape == "text":
        return {"expected": value} if isinstance(value, str) else None
    if shape in ("any", "all"):
        items = [v.strip() for v in value.split(",")] if isinstance(value, str) else value
        if not isinstance(items, list) or not items or not all(isinstance(v, str) for v in items):
            return None
        if shape == "all":
            return {"expected": items}
        return {"expected": items[0], "expected_any": items}
    if not isinstance(value, str):
        return None
    if shape == "starts":
        return {
            "expected": "/^" + "".join("\\" + c if c in _PCRE_SPECIAL else c for c in value) + "/"
        }
    return {"expected": "/" + value.replace("/", "\\/") + "/"}  # regex: JavaScript's source


def _row(
    result: dict[str, Any],
    plan: dict[str, Any],
    verdicts: dict[str, Any],
    where: str,
    record: str,
) -> dict[str, Any]:
    case = result.get("testCase") or {}
    variables = check_type(
        result.get("vars") or case.get("vars") or {}, dict, where, record, "vars"
    )
    response = check_type(result.get("response") or {}, dict, where, record, "response")
    usage = check_type(response.get("tokenUsage") or {}, dict, where, record, "tokenUsage")
    output = response.get("output")
    if output is None and result.get("error"):
        output = ""  # a provider error: no output; the error is in the verdicts
    row: dict[str, Any] = {f"vars.{k}": v for k, v in variables.items()}
    row.update(
        {
            "id": result.get("testIdx"),
            "output": output,
            **plan["expected"],
            "description": check_type(
                case.get("description"), str, where, record, "testCase.description"
            ),
            "promptfoo": {
                "assert": plan["asserts"] or None,
                "metrics": plan["metrics"] or None,
                "verdicts": verdicts,
            },
            "latency_ms": check_type(
                result.get("latencyMs"), (int, float), where, record, "latencyMs"
            ),
            "prompt_tokens": check_type(
                usage.get("prompt"), int, where, record, "tokenUsage.prompt"
            ),
            "completion_tokens": check_type(
                usage.get("completion"), int, where, record, "tokenUsage.completion"
            ),
            "cost_usd": check_type(result.get("cost"), (int, float), where, record, "cost"),
        }
    )
    row["promptfoo"] = {k: v for k, v in row["promptfoo"].items() if v is not None}
    return row


def _metrics_and_notes(
    plans: dict[int, dict[str, Any]],
) -> tuple[list[str] | None, tuple[str, ...]]:
    notes: list[str] = []
    skipped: dict[str, list[int]] = {}
    for test, plan in sorted(plans.items()):
        for kind in plan["skipped"]:
            skipped.setdefault(kind, []).append(test)
    if skipped:
        listed = "; ".join(f"{kind} (test {', '.join(map(str, t))})" for kind, t in skipped.items())
        notes.append(
            f"promptfoo assertions with no evalframe metric of the same meaning, not carried as "
            f"metrics: {listed}. promptfoo's verdicts on them are kept in "
            "metadata.promptfoo.verdicts."
        )
    sets = {tuple(plan["metrics"]) for plan in plans.values()}
    if len(sets) == 1:
        (only,) = sets
        return (list(only) or None), tuple(notes)
    by_set: dict[tuple[str, ...], list[int]] = {}
    for test, plan in sorted(plans.items()):
        by_set.setdefault(tuple(plan["metrics"]), []).append(test)
    listed = "; ".join(
        f"{', '.join(s) or 'none'} (test {', '.join(map(str, t))})" for s, t in by_set.items()
    )
    notes.append(
        f"The tests assert in different ways: {listed}. A dataset scores every sample with the "
        "same metrics, so none were written as its default; each sample's metrics are in "
        "metadata.promptfoo.metrics (pass -m to choose)."
    )
    return None, tuple(notes)
