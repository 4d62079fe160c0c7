"""What a request may ask for: its query parameters, checked and typed.

Every filter reaches SQL as a bound parameter; only the names of columns and clauses come
from this module's own constants. A value out of range, of the wrong kind or naming
nothing the store holds is a ``RequestError`` (400), which the API and the pages show as a
message.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from evalframe.core._errors import ViewRequestError as RequestError

__all__ = [
    "MAX_COMPARED",
    "MAX_PAGE",
    "STATUSES",
    "CompareQuery",
    "ExecutionQuery",
    "Page",
    "RequestError",
    "RunQuery",
    "TrendQuery",
    "integer",
    "label_pointer",
    "page_of",
]

MAX_PAGE: Final = 500
"""Rows one page may hold."""
MAX_COMPARED: Final = 10
"""Runs one comparison may hold."""
STATUSES: Final = ("pass", "fail", "error")
ROW_FILTERS: Final = ("regressed", "differs")
TREND_VALUES: Final = ("mean", "pass_rate", "p50", "p95")
_MAX_TEXT: Final = 1_000


@dataclass(frozen=True, slots=True)
class Page:
    """``limit`` rows from ``offset``."""

    limit: int
    offset: int


def _text(params: Mapping[str, str], name: str) -> str | None:
    value = params.get(name)
    if value is None or not value.strip():
        return None
    if len(value) > _MAX_TEXT:
        raise RequestError(400, f"Parameter {name!r} is longer than {_MAX_TEXT:,} characters.")
    return value.strip()


def integer(params: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    """The integer parameter ``name`` (``default`` when absent), from ``low`` to ``high``."""
    raw = params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise RequestError(400, f"Parameter {name!r} must be an integer; got {raw!r}.") from None
    if not low <= value <= high:
        raise RequestError(400, f"Parameter {name!r} must be from {low} to {high:,}; got {value}.")
    return value


def page_of(params: Mapping[str, str], default: int = 50) -> Page:
    """``limit`` (1 to ``MAX_PAGE``) and ``offset`` (from 0)."""
    return Page(
        integer(params, "limit", default, 1, MAX_PAGE),
        integer(params, "offset", 0, 0, 10**12),
    )


def _date(params: Mapping[str, str], name: str, *, end: bool = False) -> dt.datetime | None:
    raw = _text(params, name)
    if raw is None:
        return None
    try:
        if len(raw) == 10:  # a day: the whole of it
            day = dt.date.fromisoformat(raw)
            start = dt.datetime(day.year, day.month, day.day)
            return start + dt.timedelta(days=1) if end else start
        value = dt.datetime.fromisoformat(raw)
    except ValueError:
        raise RequestError(
            400, f"Parameter {name!r} must be a date (YYYY-MM-DD) or an ISO time; got {raw!r}."
        ) from None
    if value.tzinfo is not None:  # the store keeps UTC without a zone
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    return value


def label_pointer(label: str) -> tuple[str, str | None]:
    """A label filter ``KEY=VALUE`` (or ``KEY``) as a JSON pointer into ``runs.labels`` and
    the value wanted (None: any).

    Examples:
        >>> label_pointer("team=search/ranking")
        ('/team', 'search/ranking')
        >>> label_pointer("a/b~c")
        ('/a~1b~0c', None)
    """
    key, sep, value = label.partition("=")
    key = key.strip()
    if not key:
        raise RequestError(400, f"A label filter is KEY=VALUE or KEY; got {label!r}.")
    return "/" + key.replace("~", "~0").replace("/", "~1"), value.strip() if sep else None


@dataclass(frozen=True, slots=True)
class RunQuery:
    """The runs listing's filters: ``dataset`` (exact), ``name`` (part of it, any case),
    ``label`` (``KEY=VALUE`` or ``KEY``), ``since`` and ``until`` (dates or ISO times)."""

    dataset: str | None
    name: str | None
    label: str | None
    since: dt.datetime | None
    until: dt.datetime | None
    page: Page

    @classmethod
    def parse(cls, params: Mapping[str, str]) -> RunQuery:
        label = _text(params, "label")
        if label is not None:
            label_pointer(label)
        return cls(
            dataset=_text(params, "dataset"),
            name=_text(params, "name"),
            label=label,
            since=_date(params, "since"),
            until=_date(params, "until", end=True),
            page=page_of(params),
        )


@dataclass(frozen=True, slots=True)
class ExecutionQuery:
    """The explorer's filters: ``q`` (text in the id, input, expected or actual output, any
    case), ``metric`` (one of the run's), ``cohort`` (a tag, or ``(untagged)``) and
    ``status`` (pass, fail or error: of ``metric`` when given, else of any metric)."""

    q: str | None
    metric: str | None
    cohort: str | None
    status: str | None
    page: Page

    @classmethod
    def parse(cls, params: Mapping[str, str], metrics: list[str]) -> ExecutionQuery:
        metric = _text(params, "metric")
        if metric is not None and metric not in metrics:
            raise RequestError(
                400, f"Unknown metric {metric!r}: this run has {', '.join(metrics)}."
            )
        status = _text(params, "status")
        if status is not None and status not in STATUSES:
            raise RequestError(
                400, f"Parameter 'status' must be one of {', '.join(STATUSES)}; got {status!r}."
            )
        q = _text(params, "q")
        return cls(
            q=q.lower() if q is not None else None,
            metric=metric,
            cohort=_text(params, "cohort"),
            status=status,
            page=page_of(params),
        )

    @property
    def filtered(self) -> bool:
        return any(v is not None for v in (self.q, self.metric, self.cohort, self.status))


@dataclass(frozen=True, slots=True)
class CompareQuery:
    """A comparison: 2 to ``MAX_COMPARED`` run references (the first is the reference), and
    the row matrix's filter (``regressed`` or ``differs``) and page."""

    runs: tuple[str, ...]
    rows: str | None
    page: Page

    @classmethod
    def parse(cls, params: Mapping[str, str], runs: list[str]) -> CompareQuery:
        refs = [r.strip() for part in runs for r in part.split(",") if r.strip()]
        if not 2 <= len(refs) <= MAX_COMPARED:
            raise RequestError(
                400,
                f"Compare 2 to {MAX_COMPARED} runs (runs=a,b,c); got {len(refs)}.",
            )
        if len(set(refs)) != len(refs):
            raise RequestError(400, "A run is named twice in 'runs'.")
        rows = _text(params, "rows")
        if rows is not None and rows not in ROW_FILTERS:
            raise RequestError(
                400, f"Parameter 'rows' must be one of {', '.join(ROW_FILTERS)}; got {rows!r}."
            )
        return cls(runs=tuple(refs), rows=rows, page=page_of(params))


@dataclass(frozen=True, slots=True)
class TrendQuery:
    """A trend: the runs of ``dataset`` (or those carrying ``label``), ``metric`` (default:
    every metric), the ``value`` drawn, the newest ``last`` runs, and a gate floor to mark."""

    dataset: str | None
    label: str | None
    metric: str | None
    value: str
    last: int
    floor: float | None

    @classmethod
    def parse(cls, params: Mapping[str, str]) -> TrendQuery:
        dataset, label = _text(params, "dataset"), _text(params, "label")
        if dataset is None and label is None:
            raise RequestError(400, "A trend needs dataset=NAME or label=KEY=VALUE.")
        if label is not None:
            label_pointer(label)
        value = _text(params, "value") or "mean"
        if value not in TREND_VALUES:
            raise RequestError(
                400, f"Parameter 'value' must be one of {', '.join(TREND_VALUES)}; got {value!r}."
            )
        floor = None
        raw = _text(params, "floor")
        if raw is not None:
            try:
                floor = float(raw)
            except ValueError:
                floor = -1.0
            if not 0.0 <= floor <= 1.0:
                raise RequestError(
                    400, f"Parameter 'floor' must be a number in [0, 1]; got {raw!r}."
                )
        return cls(
            dataset=dataset,
            label=label,
            metric=_text(params, "metric"),
            value=value,
            last=integer(params, "last", 100, 1, 10_000),
            floor=floor,
        )
