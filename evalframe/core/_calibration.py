"""Judge calibration: human-labelled cases, and how far a judge agrees with them.

A case file (``eval-harness.calibration.v1``, YAML or JSON) lists cases with an ``id``, an
``input`` map, the ``expected`` and ``actual`` answers and the ``human_verdict`` (pass or
fail). evalframe adds, all optional: a top-level ``metric`` (the judge-backed metric to
calibrate, default ``llm-as-judge``) and ``grades`` (levels of graded labels, default 5);
per case ``tags`` (per-cohort agreement), ``metadata`` (what the metric reads, e.g.
``refusal_expected``) and ``human_score`` (a graded label in [0, 1], for weighted kappa).

``agreement(...)`` turns the judge's scores on the cases into a ``Calibration``: the
eval-harness statistics (percent agreement, confusion, Spearman length bias, the
self-preference check) and Cohen's kappa with its interval, weighted kappa and per-cohort
agreement. A statistic that is undefined for the cases (no scored case, a judge or labels
with one value, answers of one length) is null with the reason, in ``undefined``, where
eval-harness wrote 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from evalframe.core._agreement import (
    NO_CASE,
    Confusion,
    Kappa,
    cohen_kappa,
    confusion,
    constant_reason,
    percent_agreement,
    spearman,
    weighted_kappa,
)
from evalframe.core._errors import DatasetError, YamlLimitError
from evalframe.core._formats import load_json, read_text, yaml_limit_error

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "CALIBRATION_SCHEMA",
    "REPORT_SCHEMA",
    "Calibration",
    "CalibrationCase",
    "CalibrationCases",
    "agreement",
    "read_cases",
]

CALIBRATION_SCHEMA: Final = "eval-harness.calibration.v1"
REPORT_SCHEMA: Final = "eval-harness.calibration.report.v1"
VERDICTS: Final = ("pass", "fail")
MAX_CASES: Final = 100_000
MAX_GRADES: Final = 101


@dataclass(frozen=True, slots=True)
class CalibrationCase:
    """One human-labelled case."""

    id: str
    input: dict[str, Any]
    expected: str
    actual: str
    human_verdict: str
    tags: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)
    human_score: float | None = None


@dataclass(frozen=True, slots=True)
class CalibrationCases:
    """A case file: its cases, the metric to calibrate and the number of grades."""

    name: str
    cases: tuple[CalibrationCase, ...]
    metric: str = "llm-as-judge"
    grades: int = 5
    path: str | None = None


def _case(raw: object, index: int, where: str) -> CalibrationCase:
    if not isinstance(raw, dict):
        raise DatasetError(f"{where}: Calibration case at index {index} must be a map.")
    cid = raw.get("id")
    if not isinstance(cid, str) or cid == "":
        raise DatasetError(
            f"{where}: Calibration case at index {index} field 'id' must be a non-empty string."
        )

    def bad(name: str, expected: str) -> DatasetError:
        return DatasetError(
            f"{where}: Calibration case '{cid}' (index {index}) field '{name}' must be {expected}."
        )

    if not isinstance(raw.get("input"), dict):
        raise bad("input", "a map")
    for name in ("expected", "actual"):
        if not isinstance(raw.get(name), str):
            raise bad(name, "a string")
    if raw.get("human_verdict") not in VERDICTS:
        raise bad("human_verdict", "one of: pass, fail")
    tags = raw.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise bad("tags", "a list of strings")
    metadata = raw.get("metadata", {})
    if not isinstance(metadata, dict):
        raise bad("metadata", "a map")
    score = raw.get("human_score")
    if score is not None and (
        isinstance(score, bool)
        or not isinstance(score, int | float)
        or not math.isfinite(score)
        or not 0.0 <= score <= 1.0
    ):
        raise bad("human_score", "a number in [0, 1]")
    return CalibrationCase(
        id=cid,
        input=raw["input"],
        expected=raw["expected"],
        actual=raw["actual"],
        human_verdict=raw["human_verdict"],
        tags=tuple(tags),
        metadata=metadata,
        human_score=None if score is None else float(score),
    )


def read_cases(path: str | Path) -> CalibrationCases:
    """Read and check a calibration case file (YAML or JSON).

    Raises:
        DatasetError: a message naming the file, the case (id and index) and the field.
    """
    from evalframe.core._yaml import parse_yaml

    file = Path(path)
    where = str(file)
    text = read_text(file, where, "Calibration file")
    try:
        if file.suffix.lower() == ".json":
            document = load_json(text, where, "Calibration JSON")
        else:
            document = parse_yaml(text)
    except YamlLimitError as exc:
        raise yaml_limit_error(exc, where, "Calibration file") from exc
    except DatasetError:
        raise
    except ValueError as exc:  # JSON and YAML syntax errors
        raise DatasetError(f"{where}: Calibration file is not valid: {exc}") from exc
    if not isinstance(document, dict):
        raise DatasetError(f"{where}: Calibration file must be a map with a 'cases' list.")
    version = document.get("schema_version", CALIBRATION_SCHEMA)
    if version != CALIBRATION_SCHEMA:
        raise DatasetError(
            f"{where}: schema_version must be {CALIBRATION_SCHEMA!r}; got {version!r}."
        )
    cases = document.get("cases")
    if not isinstance(cases, list) or not cases:
        raise DatasetError(f"{where}: 'cases' must be a non-empty list.")
    if len(cases) > MAX_CASES:
        raise DatasetError(f"{where}: at most {MAX_CASES:,} cases; got {len(cases):,}.")
    parsed = tuple(_case(raw, i, where) for i, raw in enumerate(cases))
    seen: set[str] = set()
    for i, case in enumerate(parsed):
        if case.id in seen:
            raise DatasetError(f"{where}: Calibration case '{case.id}' (index {i}) repeats an id.")
        seen.add(case.id)
    metric = document.get("metric", "llm-as-judge")
    if not isinstance(metric, str) or not metric:
        raise DatasetError(f"{where}: 'metric' must be a metric spec string.")
    grades = document.get("grades", 5)
    if isinstance(grades, bool) or not isinstance(grades, int) or not 2 <= grades <= MAX_GRADES:
        raise DatasetError(f"{where}: 'grades' must be an integer from 2 to {MAX_GRADES}.")
    name = document.get("name", file.stem)
    return CalibrationCases(name=str(name), cases=parsed, metric=metric, grades=grades, path=where)


@dataclass(frozen=True)
class Calibration:
    """How far a judge agrees with human labels, and whether that is good enough.

    ``passed`` is eval-harness's gate: agreement at least ``min_agreement``, no
    self-preference violation, and no case the judge failed to score.
    """

    name: str
    metric: str
    judge_model: str | None
    model_under_test: str | None
    case_count: int
    scored_count: int
    verdict_pass_threshold: float
    agreement_rate: float | None
    confusion: Confusion
    length_bias_correlation: float | None
    length_bias_warn: float
    self_preference_violation: bool
    kappa: Kappa
    weighted_kappa: float | None
    grades: int
    cohorts: list[dict[str, Any]]
    errors: list[dict[str, str]]
    min_agreement: float
    cases: list[dict[str, Any]]
    undefined: dict[str, str] = field(default_factory=dict)

    @property
    def length_bias_warning(self) -> bool:
        rho = self.length_bias_correlation
        return rho is not None and abs(rho) >= self.length_bias_warn

    @property
    def passed(self) -> bool:
        return (
            self.agreement_rate is not None
            and self.agreement_rate >= self.min_agreement
            and not self.self_preference_violation
            and not self.errors
        )

    def to_dict(self) -> dict[str, Any]:
        """eval-harness's report document; evalframe's additions sit beside its keys."""
        return {
            "schema_version": REPORT_SCHEMA,
            "data": {
                "agreement_rate": self.agreement_rate,
                "case_count": self.case_count,
                "verdict_pass_threshold": self.verdict_pass_threshold,
                "confusion": self.confusion.as_dict(),
                "length_bias_correlation": self.length_bias_correlation,
                "self_preference_violation": self.self_preference_violation,
                "scored_count": self.scored_count,
                "name": self.name,
                "metric": self.metric,
                "judge_model": self.judge_model,
                "model_under_test": self.model_under_test,
                "min_agreement": self.min_agreement,
                "passed": self.passed,
                "length_bias_warning": self.length_bias_warning,
                "cohen_kappa": self.kappa.as_dict(),
                "weighted_kappa": self.weighted_kappa,
                "grades": self.grades,
                "cohorts": self.cohorts,
                "errors": self.errors,
                "undefined": self.undefined,
            },
        }


def _grade(values: npt.NDArray[np.float64], grades: int) -> npt.NDArray[np.int64]:
    import numpy as np

    out: npt.NDArray[np.int64] = np.rint(np.clip(values, 0.0, 1.0) * (grades - 1)).astype(np.int64)
    return out


def _verdict(score: float | None, threshold: float, higher_is_better: bool = True) -> str | None:
    if score is None:
        return None
    good = score >= threshold if higher_is_better else score <= threshold
    return "pass" if good else "fail"


def agreement(
    cases: CalibrationCases,
    scores: list[float | None],
    errors: list[str | None],
    *,
    threshold: float = 0.5,
    min_agreement: float = 0.8,
    length_bias_warn: float = 0.4,
    judge_model: str | None = None,
    model_under_test: str | None = None,
    require_distinct_models: bool = True,
    higher_is_better: bool = True,
) -> Calibration:
    """Agreement statistics of judge ``scores`` (aligned with ``cases.cases``).

    A case the judge could not score (``errors``) is listed and left out of the statistics.
    The judge's verdict is pass at or above ``threshold``, or at or below it for a
    lower-is-better metric (``higher_is_better=False``).
    """
    import numpy as np

    ok = [s is not None and e is None for s, e in zip(scores, errors, strict=True)]
    kept = [c for c, good in zip(cases.cases, ok, strict=True) if good]
    judge_scores = np.array([s for s, good in zip(scores, ok, strict=True) if good], np.float64)
    human = np.array([c.human_verdict == "pass" for c in kept], dtype=bool)
    judge = judge_scores >= threshold if higher_is_better else judge_scores <= threshold
    lengths = np.array([len(c.actual) for c in kept], dtype=np.float64)
    kappa = cohen_kappa(human.astype(np.int64), judge.astype(np.int64), 2)
    rate = percent_agreement(human, judge)
    bias = spearman(lengths, judge_scores, ("answer length", "judge score"))
    undefined = {"agreement_rate": NO_CASE} if rate is None else {}
    if kappa.reason is not None:
        undefined["cohen_kappa"] = kappa.reason
    if bias.reason is not None:
        undefined["length_bias_correlation"] = bias.reason
    graded = [c.human_score for c in kept]
    weighted = None
    if kept and all(g is not None for g in graded):
        human_grades = _grade(np.array(graded, np.float64), cases.grades)
        judge_grades = _grade(judge_scores, cases.grades)
        weighted = weighted_kappa(human_grades, judge_grades, cases.grades)
        why = constant_reason(human_grades, judge_grades, "grade")
        if why is not None:
            undefined["weighted_kappa"] = why
    cohorts = []
    for tag in sorted({t for c in kept for t in c.tags}):  # a few tags
        mask = np.array([tag in c.tags for c in kept], dtype=bool)
        k = cohen_kappa(human[mask].astype(np.int64), judge[mask].astype(np.int64), 2)
        cohorts.append(
            {
                "cohort": tag,
                "case_count": int(mask.sum()),
                "agreement_rate": percent_agreement(human[mask], judge[mask]),
                "cohen_kappa": k.kappa,
                "cohen_kappa_reason": k.reason,
            }
        )
    violation = bool(
        require_distinct_models
        and judge_model is not None
        and model_under_test is not None
        and judge_model == model_under_test
    )
    return Calibration(
        name=cases.name,
        metric=cases.metric,
        judge_model=judge_model,
        model_under_test=model_under_test,
        case_count=len(cases.cases),
        scored_count=len(kept),
        verdict_pass_threshold=threshold,
        agreement_rate=rate,
        confusion=confusion(human, judge),
        length_bias_correlation=bias.rho,
        length_bias_warn=length_bias_warn,
        self_preference_violation=violation,
        kappa=kappa,
        weighted_kappa=weighted,
        grades=cases.grades,
        cohorts=cohorts,
        errors=[
            {"id": c.id, "error": e or "no score"}
            for c, s, e, good in zip(cases.cases, scores, errors, ok, strict=True)
            if not good
        ],
        min_agreement=min_agreement,
        cases=[
            {
                "id": c.id,
                "human_verdict": c.human_verdict,
                "judge_score": s,
                "judge_verdict": _verdict(s, threshold, higher_is_better) if good else None,
            }
            for c, s, good in zip(cases.cases, scores, ok, strict=True)
        ],
        undefined=undefined,
    )
