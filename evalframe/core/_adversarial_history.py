"""Adversarial run history: entries, compatibility slices, the drift gate and the manifest.

An *entry* summarises one adversarial run as eval-harness's manifest does: ``run_id``,
``dataset``, ``report_schema_version``, ``started_at``, ``finished_at``,
``duration_seconds``, ``total_samples``, ``total_failures``, ``macro_f1``, per-metric
``{mean, p50, p95, pass_rate}`` and the report's ``adversarial`` block.

Two runs are *compatible* when they share the slice: the dataset name, the sorted metric
names, the adversarial ``total_samples`` and the sorted ``(category, sample_count)`` list.
The gate's baseline is the newest compatible entry with no failures; each check's drop is
``max(0, baseline - current)`` and fails when it exceeds ``max_drop + 1e-9``; a value
missing on either side fails. Without a baseline the status is ``missing-baseline``, and
``fail`` when a requested ``--regression-metric`` is missing from the current run.

The manifest file (``eval-harness.adversarial-runs.v1``) is eval-harness's JSON history:
``{schema_version, manifest, updated_at, runs}``, runs newest first. It is read and written
here, so a history kept by eval-harness carries over and back.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from evalframe.core._errors import ComparisonError
from evalframe.core._safe_write import locked, write_atomic

__all__ = [
    "AGGREGATES",
    "DROP_EPSILON",
    "MANIFEST_SCHEMA_VERSION",
    "GateCheck",
    "GateResult",
    "HistoryError",
    "Manifest",
    "baseline_for",
    "entry_from_report",
    "evaluate_gate",
    "is_recordable",
    "parse_targets",
    "record_in_manifest",
    "slice_key",
    "validate_entry",
]

MANIFEST_SCHEMA_VERSION: Final = "eval-harness.adversarial-runs.v1"
AGGREGATES: Final = ("mean", "p50", "p95", "pass_rate")
DROP_EPSILON: Final = 1e-9

HistoryError = ComparisonError
"""An adversarial history (manifest file, entry or gate option) is not usable."""


# --- entries -----------------------------------------------------------------------------------


def _aggregates(block: Mapping[str, Any] | None) -> dict[str, float | None]:
    block = block or {}
    return {a: (None if block.get(a) is None else float(block[a])) for a in AGGREGATES}


def entry_from_report(report: Mapping[str, Any]) -> dict[str, Any]:
    """The history entry of a report (``evalframe.report.v1``, or eval-harness's).

    Metric blocks keep only the four gated aggregates; a metric with no score at all keeps
    ``None`` values (such a run has failures and is never recorded).
    """
    adversarial = report.get("adversarial") or {}
    categories = []
    for cat in adversarial.get("categories") or []:
        categories.append(
            {
                "category": cat["category"],
                "label": cat["label"],
                "severity": cat.get("severity"),
                "sample_count": int(cat["sample_count"]),
                "compliance_frameworks": list(cat.get("compliance_frameworks") or []),
                "metrics": {k: _aggregates(v) for k, v in (cat.get("metrics") or {}).items()},
            }
        )
    started = float(report["started_at"])
    finished = float(report["finished_at"])
    macro = report.get("macro_f1")
    return {
        "run_id": str(report["run_id"]),
        "dataset": str(report["dataset"]),
        "report_schema_version": str(
            report.get("eval_harness_schema_version") or report.get("schema_version")
        ),
        "started_at": started,
        "finished_at": finished,
        "duration_seconds": max(0.0, finished - started),
        "total_samples": int(report["total_samples"]),
        "total_failures": int(report["total_failures"]),
        "macro_f1": None if macro is None else float(macro),
        "metrics": {k: _aggregates(v) for k, v in (report.get("metrics") or {}).items()},
        "adversarial": {
            "total_samples": int(adversarial.get("total_samples") or 0),
            "categories": categories,
            "compliance_frameworks": [
                {
                    "framework": fw["framework"],
                    "sample_count": int(fw["sample_count"]),
                    "categories": list(fw.get("categories") or []),
                }
                for fw in adversarial.get("compliance_frameworks") or []
            ],
        },
    }


def slice_key(entry: Mapping[str, Any]) -> str:
    """The compatibility slice of an entry, as one comparable string."""
    adversarial = entry.get("adversarial") or {}
    cats = sorted(
        (c["category"], c["sample_count"])
        for c in adversarial.get("categories") or []
        if isinstance(c, Mapping)
        and isinstance(c.get("category"), str)
        and isinstance(c.get("sample_count"), int)
    )
    total = adversarial.get("total_samples")
    return json.dumps(
        {
            "dataset": entry.get("dataset"),
            "metrics": sorted(entry.get("metrics") or {}),
            "total_samples": total if isinstance(total, int) else 0,
            "categories": cats,
        },
        sort_keys=True,
    )


def _newest_first(entries: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return sorted(
        (dict(e) for e in entries), key=lambda e: (-float(e["finished_at"]), str(e["run_id"]))
    )


def baseline_for(
    current: Mapping[str, Any], history: Iterable[Mapping[str, Any]]
) -> dict[str, Any] | None:
    """The newest entry of ``history`` compatible with ``current`` and free of failures."""
    key = slice_key(current)
    for entry in _newest_first(history):
        if entry["run_id"] == current["run_id"]:
            continue
        if entry.get("total_failures") == 0 and slice_key(entry) == key:
            return entry
    return None


# --- the gate ----------------------------------------------------------------------------------


def parse_targets(targets: Sequence[str]) -> list[tuple[str, str]]:
    """``metric`` or ``metric:aggregate`` -> ``(metric, aggregate)``, repeats dropped.

    Raises:
        HistoryError: an empty metric or an aggregate other than mean, p50, p95, pass_rate.
    """
    out: dict[tuple[str, str], None] = {}
    for target in targets:
        metric, sep, aggregate = target.rpartition(":")
        if not sep:
            metric, aggregate = target, "mean"
        if not metric.strip() or metric != metric.strip():
            raise HistoryError(
                f"Regression metric target '{target}' must use metric or metric:aggregate syntax."
            )
        if aggregate not in AGGREGATES:
            raise HistoryError(
                f"Regression metric target '{target}' uses unsupported aggregate '{aggregate}'. "
                f"Supported aggregates: {', '.join(AGGREGATES)}."
            )
        out[(metric, aggregate)] = None
    return list(out)


@dataclass(frozen=True, slots=True)
class GateCheck:
    """One gated value: ``status`` is pass, fail or missing-value (which fails)."""

    target: str
    baseline_score: float | None
    current_score: float | None
    drop: float | None
    max_drop: float
    status: str

    @property
    def failed(self) -> bool:
        return self.status != "pass"

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "baseline_score": self.baseline_score,
            "current_score": self.current_score,
            "drop": self.drop,
            "max_drop": self.max_drop,
            "status": self.status,
        }


@dataclass(frozen=True, slots=True)
class GateResult:
    """The drift gate's verdict: ``status`` is pass, fail or missing-baseline."""

    status: str
    current_run_id: str
    baseline_run_id: str | None
    checks: list[GateCheck] = field(default_factory=list)
    recorded: bool = False

    @property
    def failed(self) -> bool:
        return self.status == "fail"

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "current_run_id": self.current_run_id,
            "baseline_run_id": self.baseline_run_id,
            "recorded": self.recorded,
            "checks": [c.to_dict() for c in self.checks],
        }

    def to_text(self) -> str:
        """One line, as eval-harness prints it."""
        if self.status == "missing-baseline":
            return (
                "Adversarial regression gate: missing-baseline - no previous compatible clean "
                "run; this run is recorded for future comparisons when it is clean."
            )
        if not self.failed:
            max_drop = self.checks[0].max_drop if self.checks else 0.0
            return (
                f"Adversarial regression gate: pass - {len(self.checks)} check(s), max drop "
                f"{max_drop * 100:.2f} percentage points."
            )
        parts = []
        for c in self.checks:
            if not c.failed:
                continue
            if c.status == "missing-value":
                sides = [
                    s
                    for s, v in (("baseline", c.baseline_score), ("current", c.current_score))
                    if v is None
                ]
                parts.append(f"{c.target} missing from {' and '.join(sides)} run")
            else:
                parts.append(
                    f"{c.target} dropped by {(c.drop or 0.0) * 100:.2f} percentage points "
                    f"(baseline {c.baseline_score:.4f} -> current {c.current_score:.4f}, "
                    f"max {c.max_drop * 100:.2f} percentage points)"
                )
        return "Adversarial regression gate: fail - " + "; ".join(parts)


def _value(entry: Mapping[str, Any], metric: str, aggregate: str) -> float | None:
    block = (entry.get("metrics") or {}).get(metric)
    if not isinstance(block, Mapping):
        return None
    value = block.get(aggregate)
    return None if value is None else float(value)


def _check(target: str, before: float | None, after: float | None, max_drop: float) -> GateCheck:
    if before is None or after is None:
        return GateCheck(target, before, after, None, max_drop, "missing-value")
    drop = max(0.0, before - after)
    status = "fail" if drop > max_drop + DROP_EPSILON else "pass"
    return GateCheck(target, before, after, drop, max_drop, status)


def evaluate_gate(
    current: Mapping[str, Any],
    history: Iterable[Mapping[str, Any]],
    *,
    max_drop: float = 0.05,
    targets: Sequence[str] = (),
) -> GateResult:
    """Gate ``current`` against the newest compatible clean entry of ``history``.

    Args:
        current: the current run's entry.
        history: earlier entries (any order; incompatible and failing ones are skipped).
        max_drop: the largest allowed drop, as a ratio in [0, 1] (5 points is 0.05).
        targets: extra ``metric[:aggregate]`` checks beside ``macro_f1``.

    Raises:
        HistoryError: ``max_drop`` outside [0, 1], or a malformed target.
    """
    if not (isinstance(max_drop, int | float) and math.isfinite(max_drop) and 0 <= max_drop <= 1):
        raise HistoryError(
            "The regression max drop must be a finite percentage in [0, 100]; got "
            f"{max_drop * 100 if isinstance(max_drop, int | float) else max_drop!r}."
        )
    parsed = parse_targets(targets)
    baseline = baseline_for(current, history)
    run_id = str(current["run_id"])
    if baseline is None:
        missing = [
            _check(f"metrics.{m}.{a}", None, None, max_drop)
            for m, a in parsed
            if _value(current, m, a) is None
        ]
        return GateResult("fail" if missing else "missing-baseline", run_id, None, missing)
    checks = [_check("macro_f1", baseline.get("macro_f1"), current.get("macro_f1"), max_drop)]
    for m, a in parsed:
        checks.append(
            _check(f"metrics.{m}.{a}", _value(baseline, m, a), _value(current, m, a), max_drop)
        )
    status = "fail" if any(c.failed for c in checks) else "pass"
    return GateResult(status, run_id, str(baseline["run_id"]), checks)


def is_recordable(
    entry: Mapping[str, Any], gate: GateResult | None, targets: Sequence[str] = ()
) -> bool:
    """Whether a run may join the history: no failures, a gate that did not fail, and every
    requested aggregate present (so a broken run never becomes a baseline)."""
    if entry.get("total_failures") != 0 or entry.get("macro_f1") is None:
        return False
    if gate is not None and gate.failed:
        return False
    if any(_value(entry, m, a) is None for m, a in parse_targets(targets)):
        return False
    return all(v is not None for block in entry["metrics"].values() for v in block.values())


# --- validation ----------------------------------------------------------------------------


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _need(cond: bool, message: str) -> None:
    if not cond:
        raise HistoryError(f"Adversarial run manifest {message}")


def _is_name(value: Any) -> bool:
    return isinstance(value, str) and value != "" and value == value.strip()


def _check_metric_map(metrics: Any, where: str) -> None:
    _need(isinstance(metrics, dict), f"{where} metrics must be an object.")
    for name, block in metrics.items():
        _need(_is_name(name), f"{where} metric names must be non-empty trimmed strings.")
        _need(isinstance(block, dict), f"metric '{name}' aggregate must be an object.")
        for a in AGGREGATES:
            _need(a in block, f"metric '{name}' is missing aggregate field '{a}'.")
            v = block[a]
            _need(
                _is_number(v) and 0.0 <= float(v) <= 1.0,
                f"metric '{name}' aggregate '{a}' must be a number in [0, 1].",
            )


def validate_entry(entry: Any, index: int = 0) -> dict[str, Any]:
    """Check one manifest entry's fields and types; returns it as a dict.

    Raises:
        HistoryError: naming the entry and the field.
    """
    where = f"run at index {index}"
    _need(isinstance(entry, dict), f"{where} must be an object.")
    for key in ("run_id", "dataset", "report_schema_version"):
        _need(_is_name(entry.get(key)), f"{where} field '{key}' must be a non-empty string.")
    for key in ("started_at", "finished_at", "duration_seconds", "macro_f1"):
        v = entry.get(key)
        _need(_is_number(v) and v >= 0, f"{where} field '{key}' must be a non-negative number.")
    _need(entry["macro_f1"] <= 1.0, f"{where} field 'macro_f1' must be in [0, 1].")
    _need(entry["finished_at"] >= entry["started_at"], f"{where} finishes before it starts.")
    for key in ("total_samples", "total_failures"):
        v = entry.get(key)
        _need(
            isinstance(v, int) and not isinstance(v, bool) and v >= 0,
            f"{where} field '{key}' must be a non-negative integer.",
        )
    _check_metric_map(entry.get("metrics"), where)
    adv = entry.get("adversarial")
    _need(isinstance(adv, dict), f"{where} field 'adversarial' must be an object.")
    total = adv.get("total_samples")
    _need(
        isinstance(total, int) and not isinstance(total, bool) and total >= 0,
        f"{where} adversarial.total_samples must be a non-negative integer.",
    )
    for key in ("categories", "compliance_frameworks"):
        _need(isinstance(adv.get(key), list), f"{where} adversarial.{key} must be a list.")
    for i, cat in enumerate(adv["categories"]):
        w = f"{where} adversarial.categories[{i}]"
        _need(isinstance(cat, dict), f"{w} must be an object.")
        _need(_is_name(cat.get("category")), f"{w}.category must be a non-empty string.")
        _need(_is_name(cat.get("label")), f"{w}.label must be a non-empty string.")
        _need(
            cat.get("severity") is None or _is_name(cat.get("severity")),
            f"{w}.severity must be null or a non-empty string.",
        )
        _need(
            isinstance(cat.get("sample_count"), int) and cat["sample_count"] >= 0,
            f"{w}.sample_count must be a non-negative integer.",
        )
        _need(
            isinstance(cat.get("compliance_frameworks"), list)
            and all(_is_name(f) for f in cat["compliance_frameworks"]),
            f"{w}.compliance_frameworks must be a list of non-empty strings.",
        )
        _check_metric_map(cat.get("metrics"), w)
    return dict(entry)


# --- the manifest file -------------------------------------------------------------------------


@dataclass
class Manifest:
    """An ``eval-harness.adversarial-runs.v1`` document: ``name`` and ``runs`` newest first."""

    name: str
    runs: list[dict[str, Any]]
    updated_at: float

    @classmethod
    def from_json(cls, payload: Any) -> Manifest:
        """Validate a parsed manifest document.

        Raises:
            HistoryError: a wrong schema version, field type, entry or repeated run id.
        """
        _need(isinstance(payload, dict), "must be a JSON object.")
        version, name = payload.get("schema_version"), payload.get("manifest")
        _need(
            isinstance(version, str) and isinstance(name, str),
            "requires string schema_version and manifest fields.",
        )
        _need(
            version == MANIFEST_SCHEMA_VERSION,
            f"'{name}' uses unsupported schema version '{version}'. Supported version: "
            f"{MANIFEST_SCHEMA_VERSION}.",
        )
        _need(_is_name(name), "name must be a non-empty string.")
        _need(_is_number(payload.get("updated_at")), "field 'updated_at' must be numeric.")
        runs = payload.get("runs")
        _need(isinstance(runs, list), "field 'runs' must be a list.")
        entries = [validate_entry(e, i) for i, e in enumerate(runs)]
        seen: set[str] = set()
        for e in entries:
            _need(e["run_id"] not in seen, f"'{name}' contains duplicate run_id '{e['run_id']}'.")
            seen.add(e["run_id"])
        return cls(name, _newest_first(entries), float(payload["updated_at"]))

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": MANIFEST_SCHEMA_VERSION,
            "manifest": self.name,
            "updated_at": self.updated_at,
            "runs": [dict(e) for e in self.runs],
        }

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, name: str) -> Manifest:
        """The manifest at ``path``, or an empty one named ``name`` when there is no file.

        Raises:
            HistoryError: the file is not a valid manifest, or belongs to another dataset.
        """
        file = Path(path)
        if not file.exists():
            return cls(name, [], time.time())
        try:
            payload = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise HistoryError(
                f"Adversarial run manifest {file} is not readable JSON: {exc}"
            ) from exc
        manifest = cls.from_json(payload)
        if manifest.name != name:
            raise HistoryError(
                f"Adversarial run manifest '{file}' belongs to manifest '{manifest.name}', "
                f"not '{name}'."
            )
        return manifest

    def record(self, entry: Mapping[str, Any], *, retain: int = 10) -> Manifest:
        """A manifest with ``entry`` added (replacing one with its run id), then trimmed to
        the newest ``retain`` runs plus the newest clean run of every slice."""
        if retain < 1:
            raise HistoryError("Adversarial run manifest retention must keep at least one run.")
        runs = _newest_first(
            [dict(entry), *(e for e in self.runs if e["run_id"] != entry["run_id"])]
        )
        kept = runs[:retain]
        ids = {e["run_id"] for e in kept}
        clean = {slice_key(e) for e in kept if e["total_failures"] == 0}
        for e in runs:
            if e["total_failures"] != 0:
                continue
            key = slice_key(e)
            if key not in clean and e["run_id"] not in ids:
                kept.append(e)
                ids.add(e["run_id"])
            clean.add(key)
        return Manifest(self.name, _newest_first(kept), time.time())

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the manifest under the file's lock, through a temporary file flushed to disk
        and an atomic rename (a reader never sees half a manifest)."""
        with locked(path, "Adversarial run manifest"):
            self._write(path)

    def _write(self, path: str | os.PathLike[str]) -> None:
        text = json.dumps(self.to_json(), indent=2, ensure_ascii=False) + "\n"
        write_atomic(path, text.encode("utf-8"))


def record_in_manifest(
    path: str | os.PathLike[str], entry: Mapping[str, Any], *, name: str, retain: int = 10
) -> Manifest:
    """Add ``entry`` to the manifest file at ``path`` (created when missing): read, recorded
    and written under the file's lock, so runs recording at once each find their entry in
    it afterwards.

    Raises:
        HistoryError: the file is not a valid manifest, or belongs to another dataset.
    """
    with locked(path, "Adversarial run manifest"):
        manifest = Manifest.load(path, name=name).record(entry, retain=retain)
        manifest._write(path)
    return manifest
