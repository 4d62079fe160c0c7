"""Deterministic metrics: numeric-diff, list-contains and webhook.

numeric-diff is a handful of Polars string and arithmetic expressions. list-contains reads
the expected list with the JSON scanner of :mod:`evalframe.metrics.structural`, so a list
holding a number or a nested list is that sample's error rather than a coerced string, and
checks every expected string against its row's output in one vectorized pass.

webhook lets the user's own HTTP endpoint score each row, and never calls anything itself: it
declares a ``WebhookNeed``, the rows' payloads (a JSON object per row, built by Polars
expressions) and the *name* of a configured endpoint (``ef.Webhook``, or
``EVALFRAME_WEBHOOK_URL``): a URL is never taken from a metric spec or the data. The enrich
layer POSTs each distinct payload once (concurrent, retried, rate-limited, budgeted, cached),
batched when asked, and fills the need's column with each row's outcome (``{"status",
"reply"}``); the metric reads the verdict from it with expressions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any, Final, Literal

import numpy as np
import polars as pl

from evalframe.core import schema as C
from evalframe.core._contexts import CONTEXTS
from evalframe.core._errors import MetricError
from evalframe.metrics._batched import batched, sample_error
from evalframe.metrics._fence import fenced
from evalframe.metrics._json_scan import json_leaves
from evalframe.metrics._registry import metric
from evalframe.metrics._spec import Range, Scored

__all__ = [
    "NUMBER_PATTERN",
    "WebhookNeed",
    "is_verdict",
    "list_contains",
    "numeric_diff",
    "webhook",
]

NUMBER_PATTERN = (
    r"[-+]?(?:(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]+)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"
)
"""A decimal number as written in prose: sign, thousands commas, fraction, exponent.

ASCII digits only (Rust's ``\\d`` would also match other scripts' digits, which the float
parser then rejects)."""

_ACTUAL = pl.col(C.ACTUAL_OUTPUT)
_EXPECTED = pl.col(C.EXPECTED_OUTPUT)
_TYPE = pl.col(C.EXPECTED_TYPE)


def _to_float(text: pl.Expr) -> pl.Expr:
    return text.str.replace_all(",", "", literal=True).cast(pl.Float64, strict=False)


def _whole_number(text: pl.Expr) -> pl.Expr:
    """The number a whole (trimmed) string spells, or null."""
    return _to_float(text.str.extract(rf"^\s*({NUMBER_PATTERN})\s*$", 1))


@metric("numeric-diff", family="deterministic")
def numeric_diff(
    *,
    abs_tol: Annotated[float, Range(ge=0)] = 0.0,
    rel_tol: Annotated[float, Range(ge=0)] = 1e-9,
    extract: Literal["first", "last", "whole"] = "first",
) -> Scored:
    """1.0 when the number in the output is within tolerance of the expected number.

    The output's number is its first number (``extract="first"``), its last, or the whole
    trimmed output (``"whole"``); numbers may carry a sign, thousands commas, a fraction
    and an exponent (``-1,234.5e3``). The expected number is ``expected_output`` when it is
    an int or a float, or a string that is exactly one number. With a the output's number
    and e the expected one, the score is 1.0 when ``a == e`` or ``|a - e| <= max(rel_tol *
    max(|a|, |e|), abs_tol)`` (``math.isclose``), else 0.0.

    Returns:
        Float64 in {0, 1}; null (an error) when the output has no number or the expected
        output is not a number.

    Examples:
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records([
        ...     {"id": "q1", "input": {"q": "Revenue?"}, "expected_output": 1234.5},
        ...     {"id": "q2", "input": {"q": "Growth?"}, "expected_output": "0.25"}], name="demo")
        >>> run = ef.evaluate(ds, outputs={"q1": "Revenue was $1,234.50 in May.", "q2": "About 0.3"},
        ...                   metrics=["numeric-diff(abs_tol=0.01)"])
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        q1 1.0 {"actual_number":1234.5,"expected_number":1234.5,"abs_diff":0.0,"tolerance":0.01}
        q2 0.0 {"actual_number":0.3,"expected_number":0.25,"abs_diff":0.04999999999999999,"tolerance":0.01}
    """  # noqa: E501
    if extract == "whole":
        actual = _whole_number(_ACTUAL)
    elif extract == "last":
        actual = _to_float(_ACTUAL.str.extract_all(NUMBER_PATTERN).list.last())
    else:
        actual = _to_float(_ACTUAL.str.extract(f"({NUMBER_PATTERN})", 1))
    expected = (
        pl.when(_TYPE.is_in(["int", "float"]))
        .then(_EXPECTED.cast(pl.Float64, strict=False))
        .when(_TYPE == "string")
        .then(_whole_number(_EXPECTED))
    )
    diff = (actual - expected).abs()
    tolerance = pl.max_horizontal(
        rel_tol * pl.max_horizontal(actual.abs(), expected.abs()), abs_tol
    )
    close = (actual == expected) | (diff <= tolerance)
    no_expected = expected.is_null()
    no_actual = actual.is_null()
    return Scored(
        score=pl.when(no_expected | no_actual).then(None).otherwise(close.cast(pl.Float64)),
        error=pl.when(no_expected)
        .then(
            sample_error(
                "expected_output must be a number for numeric-diff metric; got {} {}.",
                _TYPE,
                _EXPECTED.str.slice(0, 40),
            )
        )
        .when(no_actual)
        .then(
            sample_error(
                f"numeric-diff metric found no number ({extract}) in actual output {{}}.",
                _ACTUAL.str.slice(0, 40),
            )
        ),
        details=pl.struct(
            actual_number=actual,
            expected_number=expected,
            abs_diff=diff,
            tolerance=tolerance,
        ),
    )


def _list_kernel(case_sensitive: bool, limit: int) -> Any:
    def kernel(frame: pl.DataFrame) -> pl.DataFrame:
        _, leaves = json_leaves(frame.get_column("expected"))
        # An empty list is the single leaf "[]" at "$"; anything below "$[n]" is nested.
        items = leaves.filter(pl.col("path") != "$").join(
            frame.select("actual").with_row_index("row").cast({"row": pl.Int64}), on="row"
        )
        value, text = pl.col("value"), pl.col("actual")
        if not case_sensitive:
            value, text = value.str.to_lowercase(), text.str.to_lowercase()
        good = (
            pl.col("path").str.contains(r"^\$\[\d+\]$")
            & (pl.col("kind") == "string")
            & (pl.col("value") != "")
        )
        per_row = (
            items.with_columns(good=good)
            .with_columns(found=pl.col("good") & text.str.contains(value, literal=True))
            .group_by("row")
            .agg(
                pl.len().alias("total"),
                pl.col("found").sum().cast(pl.Int64).alias("found"),
                (~pl.col("good")).sum().cast(pl.Int64).alias("bad"),
                pl.col("value").filter(~pl.col("found")).head(limit).alias("missing"),
            )
        )
        base = pl.DataFrame({"row": np.arange(frame.height, dtype=np.int64)})
        return (
            base.join(per_row, on="row", how="left", maintain_order="left")
            .with_columns(pl.col("total", "found", "bad").fill_null(0))
            .select("total", "found", "bad", "missing")
        )

    return kernel


@metric("list-contains", family="deterministic")
def list_contains(
    *, case_sensitive: bool = True, max_missing: Annotated[int, Range(ge=0)] = 10
) -> Scored:
    """Fraction of the expected strings that occur in the output.

    ``expected_output`` is a list of non-empty strings; each item counts when it occurs in
    the output as a substring (case-sensitive unless ``case_sensitive=False``). Repeated
    items count once each. The score is ``found / len(expected)``; the details list up to
    ``max_missing`` items not found.

    Returns:
        Float64 in [0, 1]; null (an error) when ``expected_output`` is not a non-empty list
        of non-empty strings.

    Examples:
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records([
        ...     {"id": "q1", "input": {"q": "Primary colours?"}, "expected_output": ["red", "blue", "yellow"]}],
        ...     name="demo")
        >>> run = ef.evaluate(ds, outputs={"q1": "Red, blue and green."},
        ...                   metrics=["list-contains(case_sensitive=false)"])
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        q1 0.6666666666666666 {"found":2,"total":3,"missing":["yellow"]}
    """  # noqa: E501
    k = pl.col("list-contains__kernel")
    total = k.struct.field("total")
    found = k.struct.field("found")
    bad_type = _TYPE != "list"
    empty = total == 0
    bad_items = k.struct.field("bad") > 0
    return Scored(
        score=pl.when(bad_type | empty | bad_items).then(None).otherwise(found / total),
        error=pl.when(bad_type)
        .then(
            sample_error("expected_output must be a list for list-contains metric; got {}.", _TYPE)
        )
        .when(empty)
        .then(sample_error("expected_output must not be an empty list for list-contains metric."))
        .when(bad_items)
        .then(
            sample_error(
                "expected_output must be a list of non-empty strings for list-contains metric."
            )
        ),
        details=pl.struct(found=found, total=total, missing=k.struct.field("missing")),
        prepare={
            "list-contains__kernel": batched(
                _list_kernel(case_sensitive, max_missing),
                {"expected": pl.when(_TYPE == "list").then(_EXPECTED), "actual": _ACTUAL},
                {
                    "total": pl.Int64,
                    "found": pl.Int64,
                    "bad": pl.Int64,
                    "missing": pl.List(pl.String),
                },
            )
        },
    )


# --- webhook -----------------------------------------------------------------------------------

_ENDPOINT: Final = re.compile(r"[a-z][a-z0-9_-]*")
_KEY: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NOT_VERDICTS: Final = frozenset({401, 403, 407, 408, 429})
"""4xx statuses that say the request was not served (auth, timeout, rate), not a verdict."""


def is_verdict(status: int, use_status_code: bool) -> bool:
    """Whether an HTTP status answers the question (and may be cached): a 2xx always; with
    ``use_status_code``, also a 4xx other than 401, 403, 407, 408 and 429.

    Examples:
        >>> is_verdict(200, False), is_verdict(404, False), is_verdict(404, True)
        (True, False, True)
        >>> is_verdict(401, True), is_verdict(503, True)
        (False, False)
    """
    if 200 <= status < 300:
        return True
    return use_status_code and 400 <= status < 500 and status not in _NOT_VERDICTS


def payload() -> pl.Expr:
    """Each row as the JSON object the endpoint receives: ``id``, ``input`` (the sample's
    input map), ``output``, ``expected`` (a string, or the expected value as JSON),
    ``contexts`` (the retrieved contexts, or null) and ``metadata``. Null where the row has
    no output to send."""
    expected = (
        pl.when(pl.col(C.EXPECTED_TYPE) == "string")
        .then(fenced(pl.col(C.EXPECTED_OUTPUT)))
        .otherwise(pl.coalesce(pl.col(C.EXPECTED_OUTPUT), pl.lit("null")))
    )
    contexts = pl.coalesce(pl.col(f"^{CONTEXTS}$"), pl.lit(None, pl.List(pl.String)))
    context_json = pl.coalesce(
        pl.concat_str(
            pl.lit("["), contexts.list.eval(fenced(pl.element())).list.join(","), pl.lit("]")
        ),
        pl.lit("null"),
    )
    return pl.concat_str(
        pl.lit('{"id":'),
        fenced(pl.col(C.SAMPLE_ID)),
        pl.lit(',"input":'),
        pl.coalesce(pl.col(C.INPUT), pl.lit("null")),
        pl.lit(',"output":'),
        fenced(pl.col(C.ACTUAL_OUTPUT)),
        pl.lit(',"expected":'),
        expected,
        pl.lit(',"contexts":'),
        context_json,
        pl.lit(',"metadata":'),
        pl.coalesce(pl.col(C.METADATA), pl.lit("{}")),
        pl.lit("}"),
    )


@dataclass(frozen=True, slots=True, eq=False)
class WebhookNeed:
    """Need: each row's outcome from a configured webhook endpoint.

    Attributes:
        endpoint: the endpoint's name (``default``, or ``EVALFRAME_WEBHOOK_<NAME>_URL``'s).
        batch: rows per request (1: one row per POST).
        use_status_code: the HTTP status is the verdict (decides what is cached).

    The filled column holds ``{"status": <HTTP status>, "reply": <object or null>}`` per row
    (null where no request was made) and ``<column>__error`` why a row got no answer.
    """

    endpoint: str
    batch: int = 1
    use_status_code: bool = False

    @property
    def column(self) -> str:
        mode = ", status" if self.use_status_code else ""
        return f"webhook__{self.endpoint}(batch={self.batch}{mode})"

    @property
    def error_column(self) -> str:
        return f"{self.column}__error"

    def payload(self) -> pl.Expr:
        return payload()

    def verdict(self, status: int) -> bool:
        return is_verdict(status, self.use_status_code)


def _checked(
    endpoint: str, response_key: str | None, score_key: str | None, use_status_code: bool
) -> None:
    where = "Metric 'webhook' parameter"
    if not _ENDPOINT.fullmatch(endpoint):
        raise MetricError(
            f"{where} 'endpoint' names a configured webhook (lower-case letters, digits, '_' "
            f"and '-'); got {endpoint!r}. The URL is configuration (EVALFRAME_WEBHOOK_URL, "
            "EVALFRAME_WEBHOOK_<NAME>_URL or ef.Webhook(url, name=...)), never part of a spec."
        )
    for name, key in (("response_key", response_key), ("score_key", score_key)):
        if key is not None and not _KEY.fullmatch(key):
            raise MetricError(f"{where} '{name}' must be a plain key name; got {key!r}.")
    if use_status_code and (response_key is not None or score_key is not None):
        raise MetricError(
            "Metric 'webhook' reads one answer: use_status_code=true, or response_key "
            "(optionally with score_key), or score_key alone; not several."
        )


def _needs(
    *,
    endpoint: str = "default",
    response_key: str | None = None,
    score_key: str | None = None,
    use_status_code: bool = False,
    batch: int = 1,
) -> list[WebhookNeed]:
    return [WebhookNeed(endpoint, batch, use_status_code)]


@metric("webhook", family="deterministic", threshold=1.0, needs=_needs)
def webhook(
    *,
    endpoint: str = "default",
    response_key: str | None = None,
    score_key: str | None = None,
    use_status_code: bool = False,
    batch: Annotated[int, Range(ge=1, le=10_000)] = 1,
) -> Scored:
    """A score from the user's own HTTP endpoint: each row POSTed as JSON, the verdict read back.

    The endpoint is a configured one, named by ``endpoint`` (``EVALFRAME_WEBHOOK_URL`` is
    ``default``; ``EVALFRAME_WEBHOOK_<NAME>_URL`` or ``ef.Webhook(url, name=...)`` others).
    Each row is sent as ``{"id", "input", "output", "expected", "contexts", "metadata"}``;
    with ``batch=N``, N rows go in one request as ``{"items": [...]}`` and the reply must be
    ``{"results": [...]}`` in the same order. The reply is read as harness-evals' webhook
    metric reads it:

    * ``score_key`` alone, or nothing (then ``score``): the number at that key, clamped to
      [0, 1];
    * ``response_key``: ``true`` or ``false`` at that key gives 1.0 or 0.0, unless
      ``score_key`` is also given and present (then that number);
    * ``use_status_code=true``: a 2xx status is 1.0, a 4xx 0.0 (but 401, 403, 407, 408 and
      429, which say the request was not served).

    A row whose request failed (connection, timeout, 5xx or 429 after retries, budget), a
    non-2xx reply when the status is not the verdict, or a reply without the key or with a
    value of the wrong type, is that row's error. Answers are cached by payload, so a rerun
    sends nothing new. Details: ``status``, ``verdict`` (the ``response_key`` value),
    ``raw_score`` (before clamping) and the ``endpoint``.

    Examples:
        >>> import evalframe as ef, httpx, json
        >>> def grader(request):  # stands in for the user's scoring service
        ...     row = json.loads(request.content)
        ...     return httpx.Response(200, json={"ok": row["output"] == row["expected"]})
        >>> hook = ef.Webhook("http://grader.test/score",
        ...                   transport=httpx.MockTransport(grader))
        >>> ds = ef.Dataset.from_records([
        ...     {"id": "a", "input": {"q": "2+2"}, "expected_output": "4"},
        ...     {"id": "b", "input": {"q": "3+3"}, "expected_output": "6"}], name="demo")
        >>> run = ef.evaluate(ds, outputs={"a": "4", "b": "7"},
        ...                   metrics=["webhook(response_key=ok)"],
        ...                   providers=ef.Providers(webhooks=[hook], cache=False))
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        a 1.0 {"status":200,"verdict":true,"raw_score":null,"endpoint":"default"}
        b 0.0 {"status":200,"verdict":false,"raw_score":null,"endpoint":"default"}
    """
    _checked(endpoint, response_key, score_key, use_status_code)
    need = WebhookNeed(endpoint, batch, use_status_code)
    outcome = pl.col(need.column)
    failure = pl.col(need.error_column)
    status = outcome.str.json_path_match("$.status").cast(pl.Int64, strict=False)
    reply = outcome.str.json_path_match("$.reply")
    is_object = reply.str.starts_with("{")
    ok = status.is_between(200, 299)
    label = f"webhook '{endpoint}'"
    failed = (
        pl.when(failure.is_not_null())
        .then(sample_error(f"{label} request failed: {{}}", failure))
        .when(outcome.is_null())
        .then(sample_error(f"{label}: no request was made (the row has no output)."))
    )
    if use_status_code:
        score = ok.cast(pl.Float64)
        not_verdict = ~ok & (~status.is_between(400, 499) | status.is_in(list(_NOT_VERDICTS)))
        wrong: pl.Expr = pl.when(not_verdict).then(
            sample_error(f"{label} answered HTTP {{}}, which is not a verdict.", status)
        )
        verdict = pl.lit(None, pl.Boolean)
        raw = pl.lit(None, pl.Float64)
    else:
        key = score_key or ("score" if response_key is None else None)
        flag_text = reply.str.json_path_match(f"$.{response_key}") if response_key else None
        raw_text = reply.str.json_path_match(f"$.{key}") if key else pl.lit(None, pl.String)
        raw = raw_text.cast(pl.Float64, strict=False)
        bad_number = raw_text.is_not_null() & (raw.is_null() | raw.is_nan() | raw.is_infinite())
        base = (
            pl.when(~ok)
            .then(sample_error(f"{label} answered HTTP {{}}.", status))
            .when(~is_object.fill_null(False))
            .then(sample_error(f"{label} reply is not a JSON object."))
        )
        if response_key is not None:
            assert flag_text is not None
            verdict = flag_text.replace_strict(
                {"true": True, "false": False}, default=None, return_dtype=pl.Boolean
            )
            checks = (
                base.when(flag_text.is_null())
                .then(sample_error(f"{label} reply has no '{response_key}'."))
                .when(verdict.is_null())
                .then(sample_error(f"{label} reply's '{response_key}' is not true or false."))
            )
            if score_key is not None:
                checks = checks.when(bad_number).then(
                    sample_error(f"{label} reply's '{score_key}' is not a number.")
                )
            wrong = checks
            score = pl.coalesce(raw.clip(0.0, 1.0), verdict.cast(pl.Float64))
        else:
            verdict = pl.lit(None, pl.Boolean)
            wrong = (
                base.when(raw_text.is_null())
                .then(sample_error(f"{label} reply has no '{key}'."))
                .when(bad_number)
                .then(sample_error(f"{label} reply's '{key}' is not a number."))
            )
            score = raw.clip(0.0, 1.0)
    error = pl.coalesce(failed, wrong)
    return Scored(
        score=pl.when(error.is_null()).then(score),
        error=error,
        details=pl.when(error.is_null()).then(
            pl.struct(
                status=status,
                verdict=verdict,
                raw_score=raw,
                endpoint=pl.lit(endpoint),
            )
        ),
    )
