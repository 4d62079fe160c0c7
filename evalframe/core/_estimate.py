"""Estimates that stay valid when the judge is imperfect: prediction-powered inference.

A judge scores every row of a run; people label a small random subset. The judge-only mean
is precise but biased by the judge's errors; the human-only mean is unbiased but wide. The
prediction-powered estimate (Angelopoulos et al., 2023) adds the judge's mean over every row
to the mean human-minus-judge correction over the labelled rows:

    estimate = mean_N(f) + mean_n(y - f)
    variance = var_N(f) / N + var_n(y - f) / n

so it is unbiased whatever the judge's bias, and narrower than the human-only interval
whenever the judge tracks the humans. With ``strata=K`` the rows are cut into K equal-width
bins of judge score and the same estimate is taken per bin and weighted by the bin's share
of rows: required when the labelled rows were chosen by ``suggest_labels`` (which labels
more where the judge disagrees more), and never wider in expectation otherwise.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import polars as pl

from evalframe.core import schema as C
from evalframe.core._agreement import Z95
from evalframe.core._errors import DatasetError, MetricError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from evalframe.core._run import Run

__all__ = [
    "MAX_STRATA",
    "METHODS",
    "Estimate",
    "Labels",
    "estimate",
    "ppi",
    "read_labels",
    "suggest_labels",
]

METHODS: Final = ("prediction-powered", "judge-only", "human-only")
MAX_STRATA: Final = 20

_WORDS: Final = {"pass": 1.0, "fail": 0.0, "true": 1.0, "false": 0.0}

Labels = pl.DataFrame | Mapping[str, Any] | str | os.PathLike[str]

_ESTIMATE_SCHEMA: Final = {
    "cohort": pl.String,
    "quantity": pl.String,
    "method": pl.String,
    "estimate": pl.Float64,
    "low": pl.Float64,
    "high": pl.Float64,
    "n_judged": pl.Int64,
    "n_labelled": pl.Int64,
    "reason": pl.String,
}


# --- the statistics ----------------------------------------------------------------------------


Result = tuple[float | None, float | None, float | None, str | None]


def _mean_interval(values: npt.NDArray[np.float64], rows: str) -> Result:
    """The mean and its 95% normal interval, and why either is undefined (``rows`` names
    what the values are): no value, one value (no spread to measure), or every value equal
    (an interval of zero width would claim certainty no sample gives)."""
    n = len(values)
    if n == 0:
        return None, None, None, f"undefined: no {rows} row"
    mean = float(values.mean())
    if n == 1:
        return mean, None, None, f"undefined: one {rows} row gives no interval"
    variance = float(values.var(ddof=1))
    if variance == 0.0:
        return mean, None, None, f"undefined: every {rows} row has the same value"
    half = Z95 * math.sqrt(variance / n)
    return mean, mean - half, mean + half, None


def ppi(
    judged: npt.NDArray[np.float64],
    labelled_judge: npt.NDArray[np.float64],
    labels: npt.NDArray[np.float64],
    *,
    strata: npt.NDArray[np.int64] | None = None,
    labelled_strata: npt.NDArray[np.int64] | None = None,
) -> tuple[float, float, float] | None:
    """The prediction-powered estimate of the labels' mean and its 95% interval.

    Args:
        judged: the judge's value on every row (N).
        labelled_judge: the judge's value on the labelled rows (n, a subset of the N).
        labels: the human value on those rows, aligned with ``labelled_judge``.
        strata, labelled_strata: optional bin of each row and each labelled row; the
            estimate is then the row-weighted sum of per-bin estimates.

    Returns:
        ``(estimate, low, high)``, or ``None`` with fewer than two labelled rows (in any
        non-empty bin, when stratified).

    Examples:
        >>> import numpy as np
        >>> f = np.array([0.9, 0.8, 0.7, 0.9, 0.6, 0.8])
        >>> est, low, high = ppi(f, f[:3], np.array([1.0, 0.0, 1.0]))
        >>> round(est, 4)
        0.65
    """
    import numpy as np

    if strata is None or labelled_strata is None:
        strata = np.zeros(len(judged), dtype=np.int64)
        labelled_strata = np.zeros(len(labels), dtype=np.int64)
    total, variance, n_all = 0.0, 0.0, len(judged)
    if n_all == 0:
        return None
    for h in np.unique(strata):  # a handful of bins, not rows
        f = judged[strata == h]
        mask = labelled_strata == h
        delta = labels[mask] - labelled_judge[mask]
        if len(delta) < 2:
            return None
        weight = len(f) / n_all
        total += weight * (float(f.mean()) + float(delta.mean()))
        f_var = float(f.var(ddof=1)) if len(f) > 1 else 0.0
        variance += weight**2 * (f_var / len(f) + float(delta.var(ddof=1)) / len(delta))
    half = Z95 * math.sqrt(variance)
    return total, total - half, total + half


def bins(scores: npt.NDArray[np.float64], strata: int) -> npt.NDArray[np.int64]:
    """Equal-width bins of [0, 1]: ``min(floor(score * strata), strata - 1)``."""
    import numpy as np

    out: npt.NDArray[np.int64] = np.minimum(
        np.floor(np.clip(scores, 0.0, 1.0) * strata), strata - 1
    ).astype(np.int64)
    return out


# --- labels ------------------------------------------------------------------------------------


def _label_value(value: Any, where: str) -> float:
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float) and math.isfinite(value) and 0.0 <= value <= 1.0:
        return float(value)
    word = value.strip().lower() if isinstance(value, str) else None
    if word in _WORDS:
        return _WORDS[word]
    raise DatasetError(
        f"{where}: a label must be pass, fail, true, false or a number in [0, 1]; got {value!r}."
    )


_LABELS_SHAPE: Final = (
    "expected a CSV, JSONL or Parquet file with sample_id (or id) and label columns, or JSON "
    "(an object of sample id to label, or a list of {sample_id, label} objects)"
)


def _label_file(path: Path) -> tuple[list[Any], list[Any]]:
    """The sample ids and raw labels in a labels file, in file order.

    Raises:
        DatasetError: naming the file and what was expected: missing or unreadable, empty,
            not UTF-8 (CSV, JSON, JSONL), not parseable, nested too deeply, or the wrong shape.
    """
    from evalframe.core._formats import decode_utf8, load_json, read_bytes

    where = str(path)
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".json", ".jsonl", ".parquet"):
        raise DatasetError(f"{where}: labels must be .csv, .json, .jsonl or .parquet.")
    data = read_bytes(path, where, "Labels")
    if not data.strip():
        raise DatasetError(f"{where}: the labels file is empty; {_LABELS_SHAPE}.")
    if suffix == ".parquet":
        return _label_columns(_read_frame(pl.read_parquet, data, where, "Parquet"), where)
    text = decode_utf8(data, where, "Labels file")
    if suffix == ".csv":
        frame = _read_frame(lambda d: pl.read_csv(d, infer_schema_length=0), data, where, "CSV")
        return _label_columns(frame, where)
    try:
        if suffix == ".json":
            value = load_json(text, where, "Labels JSON", lines=False)
            if isinstance(value, dict):
                return list(value), list(value.values())
            if not isinstance(value, list):
                raise DatasetError(f"{where}: labels JSON holds a {_kind(value)}; {_LABELS_SHAPE}.")
            records, at = value, "item"
        else:
            records, at = [], "line"
            for number, line in enumerate(text.split("\n"), start=1):
                if line.strip():
                    try:
                        records.append(load_json(line, where, "Labels JSONL", rescan=text))
                    except ValueError as exc:
                        if isinstance(exc, DatasetError):
                            raise
                        raise DatasetError(
                            f"{where}: labels JSONL line {number} is not valid JSON: {exc}."
                        ) from exc
    except DatasetError:
        raise
    except ValueError as exc:
        raise DatasetError(f"{where}: labels JSON is not valid JSON: {exc}.") from exc
    return _label_records(records, where, at)


def _kind(value: Any) -> str:
    names = {dict: "map", list: "list", str: "string", int: "number", float: "number"}
    return names.get(type(value), "null" if value is None else type(value).__name__)


def _read_frame(read: Any, data: bytes, where: str, kind: str) -> pl.DataFrame:
    import io

    try:
        frame: pl.DataFrame = read(io.BytesIO(data))
    except (pl.exceptions.PolarsError, OSError, ValueError) as exc:
        problem = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DatasetError(
            f"{where}: the labels file is not a readable {kind} file ({problem}); {_LABELS_SHAPE}."
        ) from exc
    return frame


def _label_columns(frame: pl.DataFrame, where: str) -> tuple[list[Any], list[Any]]:
    if "sample_id" not in frame.columns and "id" in frame.columns:
        frame = frame.rename({"id": "sample_id"})
    missing = [c for c in ("sample_id", "label") if c not in frame.columns]
    if missing:
        raise DatasetError(
            f"{where}: missing column(s) {', '.join(missing)}; it has "
            f"{', '.join(frame.columns) or 'none'}; {_LABELS_SHAPE}."
        )
    return frame.get_column("sample_id").to_list(), frame.get_column("label").to_list()


def _label_records(records: list[Any], where: str, at: str) -> tuple[list[Any], list[Any]]:
    ids: list[Any] = []
    values: list[Any] = []
    for index, record in enumerate(records, start=1 if at == "line" else 0):
        if not isinstance(record, dict):
            raise DatasetError(
                f"{where}: labels {at} {index} is a {_kind(record)}, not an object with "
                "sample_id and label; " + _LABELS_SHAPE + "."
            )
        sample_id = record.get("sample_id", record.get("id"))
        if "label" not in record:
            raise DatasetError(f"{where}: labels {at} {index} has no 'label'; {_LABELS_SHAPE}.")
        ids.append(sample_id)
        values.append(record["label"])
    return ids, values


def _sample_ids(ids: list[Any], source: str) -> list[str]:
    """The ids as text: strings and integers; a missing or blank one is an error."""
    out = []
    for index, value in enumerate(ids):
        if isinstance(value, bool) or not isinstance(value, str | int) or not str(value).strip():
            raise DatasetError(
                f"{source}: label {index + 1} has no sample id (got {value!r}); each label "
                "needs a non-empty sample_id."
            )
        out.append(str(value))
    return out


def read_labels(labels: Labels) -> pl.DataFrame:
    """Human labels as a frame of ``sample_id`` and ``label`` (a float in [0, 1]).

    Accepts a frame or mapping of sample id to label, or a file: CSV, JSONL or Parquet with
    ``sample_id`` (or ``id``) and ``label`` columns, or JSON (an object of id to label, or a
    list of ``{"sample_id": ..., "label": ...}``). Labels are ``pass``/``fail``, booleans or
    numbers in [0, 1]; a repeated or missing sample id, and a file holding no label, are
    errors naming the file.

    Raises:
        DatasetError: naming the file (or ``labels``), the label and what was expected.

    Examples:
        >>> read_labels({"a": "pass", "b": 0.25}).to_dicts()
        [{'sample_id': 'a', 'label': 1.0}, {'sample_id': 'b', 'label': 0.25}]
    """
    source = "labels"
    if isinstance(labels, str | os.PathLike):
        source = str(labels)
        raw_ids, values = _label_file(Path(labels))
    elif isinstance(labels, Mapping):
        raw_ids, values = list(labels), list(labels.values())
    else:
        raw_ids, values = _label_columns(labels, source)
    if not raw_ids:
        raise DatasetError(f"{source}: no labels; {_LABELS_SHAPE}, with at least one label.")
    ids = _sample_ids(raw_ids, source)
    parsed = []
    for sid, raw in zip(ids, values, strict=True):  # one per label, a few hundred
        value = raw
        if isinstance(raw, str) and raw.strip().lower() not in _WORDS:
            with contextlib.suppress(ValueError):
                value = float(raw)
        parsed.append(_label_value(value, f"{source}: sample {sid!r} field 'label'"))
    out = pl.DataFrame(
        {"sample_id": ids, "label": parsed}, schema={"sample_id": pl.String, "label": pl.Float64}
    )
    dup = out.filter(pl.col("sample_id").is_duplicated()).get_column("sample_id")
    if dup.len():
        raise DatasetError(f"{source}: sample {dup[0]!r} is labelled more than once.")
    return out


# --- over a run --------------------------------------------------------------------------------


def _judge_rows(run: Run | pl.DataFrame, metric: str) -> tuple[pl.DataFrame, float, bool]:
    """Per sample: the judge's mean score, mean pass, and cohorts; the pass threshold, and
    whether higher scores are better."""
    higher = True
    if isinstance(run, pl.DataFrame):
        scores, tags, threshold = run, None, None
    else:
        scores, tags = run.scores, run.frame.select(C.SAMPLE_ID, C.TAGS).unique(C.SAMPLE_ID)
        found = next((m for m in run.metrics if m.id == metric), None)
        threshold = found.threshold if found is not None else None
        higher = found.higher_is_better if found is not None else True
    available = scores.get_column(C.METRIC).unique().to_list()
    if metric not in available:
        raise MetricError(
            f"The run has no scores for {metric!r}; it has: {', '.join(sorted(available))}."
        )
    rows = (
        scores.filter((pl.col(C.METRIC) == metric) & pl.col(C.ERROR).is_null())
        .group_by(C.SAMPLE_ID, maintain_order=True)
        .agg(
            pl.col(C.SCORE).mean().alias("f"),
            pl.col("passed").cast(pl.Float64).mean().alias("f_pass"),
        )
    )
    if threshold is None:
        threshold = 0.5
    if tags is not None:
        rows = rows.join(tags, on=C.SAMPLE_ID, how="left")
    else:
        rows = rows.with_columns(pl.lit([], pl.List(pl.String)).alias(C.TAGS))
    return rows, float(threshold), higher


@dataclass(frozen=True)
class Estimate:
    """A metric's mean and pass-rate by three methods, overall and per cohort.

    ``frame`` holds one row per (cohort, quantity, method): ``cohort`` (null for the
    whole run), ``quantity`` (``mean`` or ``pass_rate``), ``method`` (``prediction-powered``,
    ``judge-only``, ``human-only``), ``estimate``, ``low``, ``high`` (95%), ``n_judged`` and
    ``n_labelled``. An interval needs at least two labelled rows (per bin when stratified)
    and some spread among them: otherwise ``low`` and ``high`` are null (with the estimate
    too when it cannot be formed) and ``reason`` says why; it is null for a defined row.
    """

    metric: str
    threshold: float
    strata: int
    frame: pl.DataFrame
    unmatched_labels: int

    def get(
        self, quantity: str = "mean", method: str = "prediction-powered", cohort: str | None = None
    ) -> tuple[float | None, float | None, float | None]:
        """``(estimate, low, high)`` of one row of ``frame``.

        Examples:
            >>> import polars as pl
            >>> scores = pl.DataFrame({"sample_id": ["a", "b", "c"], "metric": ["j"] * 3,
            ...     "score": [0.9, 0.2, 0.8], "passed": [True, False, True],
            ...     "error": [None, None, None]})
            >>> est = estimate(scores, labels={"a": 1.0, "b": 0.0, "c": 1.0}, metric="j")
            >>> [round(v, 3) for v in est.get("mean", "human-only")]
            [0.667, 0.013, 1.32]
        """
        cohort_match = pl.col("cohort").is_null() if cohort is None else pl.col("cohort") == cohort
        row = self.frame.filter(
            cohort_match & (pl.col("quantity") == quantity) & (pl.col("method") == method)
        )
        if row.height == 0:
            raise KeyError((quantity, method, cohort))
        return row.row(0)[3:6]

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": "evalframe.estimate.v1",
            "metric": self.metric,
            "threshold": self.threshold,
            "strata": self.strata,
            "unmatched_labels": self.unmatched_labels,
            "estimates": self.frame.to_dicts(),
        }


def _estimates(
    rows: pl.DataFrame,
    labelled: pl.DataFrame,
    threshold: float,
    strata: int,
    cohort: str | None,
    higher_is_better: bool = True,
) -> list[dict[str, Any]]:
    import numpy as np

    out = []
    labels = labelled.get_column("label").to_numpy()
    human_pass = labels >= threshold if higher_is_better else labels <= threshold
    for quantity, f_col, y in (("mean", "f", labels), ("pass_rate", "f_pass", human_pass * 1.0)):
        f_all = rows.get_column(f_col).to_numpy().astype(np.float64)
        f_lab = labelled.get_column(f_col).to_numpy().astype(np.float64)
        cut = None
        if strata > 1:
            cut = (
                bins(rows.get_column("f").to_numpy(), strata),
                bins(labelled.get_column("f").to_numpy(), strata),
            )
        powered = ppi(
            f_all,
            f_lab,
            y.astype(np.float64),
            strata=cut[0] if cut else None,
            labelled_strata=cut[1] if cut else None,
        )
        if powered is None:
            within = " in a judge-score bin" if strata > 1 else ""
            ppi_result: Result = (
                None,
                None,
                None,
                f"undefined: fewer than two labelled rows{within}",
            )
        elif powered[1] == powered[2]:
            ppi_result = (
                powered[0], None, None,
                "undefined: the judge's scores and their corrections have no spread",
            )  # fmt: skip
        else:
            ppi_result = (*powered, None)
        for method, result in (
            ("prediction-powered", ppi_result),
            ("judge-only", _mean_interval(f_all, "judged")),
            ("human-only", _mean_interval(y.astype(np.float64), "labelled")),
        ):
            value, low, high, reason = result
            out.append(
                {
                    "cohort": cohort,
                    "quantity": quantity,
                    "method": method,
                    "estimate": value,
                    "low": low,
                    "high": high,
                    "n_judged": rows.height,
                    "n_labelled": labelled.height,
                    "reason": reason,
                }
            )
    return out


def estimate(
    run: Run | pl.DataFrame,
    *,
    labels: Labels,
    metric: str,
    strata: int = 1,
    cohorts: bool = True,
) -> Estimate:
    """The prediction-powered estimate of a judged metric's mean and pass-rate.

    Args:
        run: a ``Run`` (or its long scores frame) where ``metric`` scored every row.
        labels: human labels on a random subset of its samples (see ``read_labels``): a
            number in [0, 1] is the human's score, pass/fail a 1/0 score. A sample's label
            passes when it reaches the metric's threshold.
        metric: the judged metric's id, e.g. ``"llm-as-judge"``.
        strata: 1 for labels drawn uniformly at random; the number of judge-score bins
            (as ``suggest_labels`` used) for labels it chose. At most 20.
        cohorts: also estimate per tag.

    Returns:
        An ``Estimate``: beside the prediction-powered figure, the judge-only figure (every
        row, the judge's bias included) and the human-only one (labelled rows only).

    Raises:
        DatasetError: a malformed label, or labels naming no scored sample.
        MetricError: ``metric`` was not scored in the run.

    Examples:
        >>> import polars as pl
        >>> scores = pl.DataFrame({"sample_id": list("abcdef"), "metric": ["j"] * 6,
        ...     "score": [0.9, 0.8, 0.7, 0.9, 0.6, 0.8], "passed": [True] * 6,
        ...     "error": [None] * 6})
        >>> est = estimate(scores, labels={"a": 1, "b": 0, "c": 1}, metric="j")
        >>> round(est.get("mean")[0], 4)
        0.65
    """
    if not 1 <= strata <= MAX_STRATA:
        raise MetricError(f"strata must be between 1 and {MAX_STRATA}; got {strata}.")
    rows, threshold, higher = _judge_rows(run, metric)
    table = read_labels(labels)
    labelled = rows.join(table, on=C.SAMPLE_ID, how="inner")
    unmatched = table.height - labelled.height
    if labelled.height == 0:
        raise DatasetError(
            f"None of the {table.height} labels names a sample {metric!r} scored without error."
        )
    results = _estimates(rows, labelled, threshold, strata, None, higher)
    if cohorts:
        for tag in sorted(rows.get_column(C.TAGS).explode().drop_nulls().unique().to_list()):
            in_cohort = pl.col(C.TAGS).list.contains(pl.lit(tag))
            results += _estimates(
                rows.filter(in_cohort), labelled.filter(in_cohort), threshold, strata, tag, higher
            )
    return Estimate(
        metric=metric,
        threshold=threshold,
        strata=strata,
        frame=pl.DataFrame(results, schema=_ESTIMATE_SCHEMA),
        unmatched_labels=unmatched,
    )


def suggest_labels(
    run: Run | pl.DataFrame,
    *,
    metric: str,
    n: int,
    labels: Labels | None = None,
    strata: int = 5,
    seed: int = 0,
) -> pl.DataFrame:
    """Which ``n`` unlabelled samples to label next to narrow the estimate's interval most.

    The rows are cut into ``strata`` equal-width bins of judge score. Labels go to bins in
    proportion to the bin's share of rows times the spread of the human-minus-judge
    correction seen in it so far (0.5, the largest a [0, 1] value can have, for a bin with
    fewer than two labels): Neyman allocation, the split that minimises the stratified
    estimate's variance. Every non-empty bin gets at least two labels where it has the rows;
    within a bin the rows are drawn at random (``seed``). Estimate afterwards with the same
    ``strata``.

    Returns:
        ``sample_id``, ``stratum`` (its bin), ``judge_score``, in bin order.
    """
    import numpy as np

    if n < 1:
        raise MetricError(f"n must be at least 1; got {n}.")
    if not 1 <= strata <= MAX_STRATA:
        raise MetricError(f"strata must be between 1 and {MAX_STRATA}; got {strata}.")
    rows, _, _ = _judge_rows(run, metric)
    rows = rows.with_columns(
        pl.Series("stratum", bins(rows.get_column("f").to_numpy(), strata), pl.Int64)
    )
    table = (
        read_labels(labels)
        if labels is not None
        else pl.DataFrame(schema={"sample_id": pl.String, "label": pl.Float64})
    )
    rows = rows.join(table, on=C.SAMPLE_ID, how="left")
    per = (
        rows.group_by("stratum")
        .agg(
            pl.len().alias("size"),
            pl.col("label").is_not_null().sum().alias("have"),
            (pl.col("label") - pl.col("f")).drop_nulls().std().alias("spread"),
        )
        .sort("stratum")
    )
    size = per.get_column("size").to_numpy().astype(np.float64)
    have = per.get_column("have").to_numpy().astype(np.int64)
    spread = per.get_column("spread").fill_null(0.5).to_numpy()
    spread = np.where(have >= 2, np.maximum(spread, 1e-3), 0.5)
    room = size.astype(np.int64) - have
    n = min(n, int(room.sum()))
    ideal = (have.sum() + n) * size * spread / float((size * spread).sum())
    give = np.minimum(np.maximum(2 - have, 0), room)  # two labels per bin first
    if give.sum() > n:  # not enough for every bin: the largest bins first
        floor, give = give, np.zeros_like(give)
        for h in np.argsort(-size, kind="stable"):  # bins, not rows
            give[h] = min(floor[h], n - give.sum())
    want = np.clip(ideal - have - give, 0.0, room - give)
    left = n - int(give.sum())
    if left > 0 and want.sum() > 0:
        share = want * left / want.sum()
        give += np.minimum(np.floor(share).astype(np.int64), room - give)
        for h in np.argsort(-(share - np.floor(share)), kind="stable"):
            if give.sum() >= n:
                break
            if give[h] < room[h]:
                give[h] += 1
    for h in np.argsort(-size, kind="stable"):  # rows the ideal split could not place
        give[h] += min(room[h] - give[h], n - int(give.sum()))
    rng = np.random.default_rng(seed)
    picks = []
    unlabelled = rows.filter(pl.col("label").is_null())
    for h, k in zip(per.get_column("stratum").to_list(), give.tolist(), strict=True):
        if k == 0:
            continue
        candidates = unlabelled.filter(pl.col("stratum") == h)
        chosen = rng.choice(candidates.height, size=k, replace=False)
        picks.append(candidates[np.sort(chosen)])
    if not picks:
        return pl.DataFrame(
            schema={"sample_id": pl.String, "stratum": pl.Int64, "judge_score": pl.Float64}
        )
    return pl.concat(picks).select(C.SAMPLE_ID, "stratum", pl.col("f").alias("judge_score"))
