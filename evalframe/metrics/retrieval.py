"""Retrieval-ranking metrics: hit, recall, MRR, nDCG at k, and answer
containment.

Inputs. ``actual_output`` is the ranked retrieval as JSON: a list of ids, a list of
``{"id", "text"}`` objects, or ``{"retrieved": [...]}``. ``expected_output`` is the relevant
set: a list of ids (gain 1.0 each), the same list JSON-encoded in a string, or an id -> gain
map. Duplicate retrieved ids are dropped, keeping the first (best) rank.

Retrieval data already in columns skips JSON altogether. When the evaluation frame carries

    actual_output__retrieved        List(String)  ranked ids, rank 1 first
    actual_output__retrieved_text   List(String)  optional: one text per id (for containment)
    expected_output__relevant       List(String)  relevant ids, binary gains
    expected_output__gains          Struct, Map or List(Struct{key, value}): id -> gain

those are read instead of ``actual_output`` / ``expected_output`` (``expected_output__gains``
wins over ``expected_output__relevant``). Either way the inputs are parsed once per frame,
whatever the number of retrieval metrics, into the generated columns

    actual_output__retrieval        Struct{ids, texts, hashes, error}
    expected_output__relevance      Struct{ids, gains, error}
    retrieval__ranking              Struct{ranks, terms, ideal}: the ranks (ascending) of the
                                    relevant ids retrieved, their DCG terms, the ideal terms
    retrieval__metadata_k           Struct{k}: metadata.k where it is an integer > 0

Well-formed JSON in the usual shapes is decoded by Polars; anything else (errors, odd shapes)
is parsed once per distinct string by a PHP-compatible reader, so messages match eval-harness.

The cutoff ``k`` is ``metadata.k`` when it is an integer > 0 (strings and floats are ignored),
else the metric's ``k`` parameter (default 5). MRR reads only its own optional ``k``.
"""

from __future__ import annotations

from typing import Annotated, Any, Final

import polars as pl

from evalframe.core import schema as C
from evalframe.metrics._batched import batched, sample_error
from evalframe.metrics._ranking import rank_matches
from evalframe.metrics._registry import metric
from evalframe.metrics._retrieval_input import (
    GAINS,
    PHP_WHITESPACE,
    RELEVANT_IDS,
    RETRIEVED_IDS,
    parse_relevance,
    parse_retrieval,
    relevance_from_columns,
    retrieval_from_columns,
)
from evalframe.metrics._spec import Derived, Range, Scored

__all__ = [
    "RANKING",
    "RELEVANCE",
    "RETRIEVAL",
    "answer_containment_at_k",
    "parse_relevance",
    "parse_retrieval",
    "retrieval_hit_at_k",
    "retrieval_mrr",
    "retrieval_ndcg_at_k",
    "retrieval_recall_at_k",
]

RETRIEVAL: Final = "actual_output__retrieval"
RELEVANCE: Final = "expected_output__relevance"
RANKING: Final = "retrieval__ranking"
METADATA_K: Final = "retrieval__metadata_k"


# --- derived columns: parsed once per frame, shared by every retrieval metric -------------------


def _retrieval_column(frame: pl.DataFrame) -> pl.DataFrame:
    if RETRIEVED_IDS in frame.columns:
        return retrieval_from_columns(frame)
    return parse_retrieval(frame.get_column(C.ACTUAL_OUTPUT))


def _relevance_column(frame: pl.DataFrame) -> pl.DataFrame:
    if GAINS in frame.columns or RELEVANT_IDS in frame.columns:
        return relevance_from_columns(frame)
    return parse_relevance(frame.get_column(C.EXPECTED_OUTPUT), frame.get_column(C.EXPECTED_TYPE))


def _ranking_column(frame: pl.DataFrame) -> pl.DataFrame:
    retrieval = frame.get_column(RETRIEVAL)
    relevance = frame.get_column(RELEVANCE)
    fields = {f.name for f in retrieval.dtype.fields}  # type: ignore[attr-defined]
    return rank_matches(
        retrieval.struct.field("ids"),
        relevance.struct.field("ids"),
        relevance.struct.field("gains"),
        retrieval.struct.field("hashes") if "hashes" in fields else None,
    )


_RETRIEVAL_COLUMN: Final = Derived(RETRIEVAL, _retrieval_column)
_RELEVANCE_COLUMN: Final = Derived(RELEVANCE, _relevance_column)
_RANKING_COLUMN: Final = Derived(RANKING, _ranking_column)


def _metadata_k(frame: pl.DataFrame) -> pl.DataFrame:
    """``metadata.k`` when it is a JSON integer > 0, else null."""
    # A JSONPath filter keeps numbers only, so "3" (a string) is ignored; the regex then
    # drops floats such as 3.0 and 1e2, and the strict cast integers beyond Int64 (PHP floats).
    # Without a "k" key (or an escape that could spell one) anywhere, no row has a k: the
    # JSONPath match costs a third of a second per million rows, the substring search little.
    if not frame.select(pl.col(C.METADATA).str.contains(r'"k"|\\u').any()).item():
        return frame.select(k=pl.repeat(None, pl.len(), dtype=pl.Int64))
    wrapped = pl.concat_str(pl.lit("["), pl.col(C.METADATA), pl.lit("]"))
    found = wrapped.str.json_path_match("$[?(@.k > 0)].k")
    return frame.select(
        k=pl.when(found.str.contains(r"^[0-9]+$")).then(found.cast(pl.Int64, strict=False))
    )


_METADATA_K_COLUMN: Final = Derived(METADATA_K, _metadata_k)


def _ranking_inputs(**_: Any) -> list[Derived]:
    return [
        _METADATA_K_COLUMN,
        _RETRIEVAL_COLUMN,
        _RELEVANCE_COLUMN,
        _RANKING_COLUMN,
    ]


def _retrieval_only(**_: Any) -> list[Derived]:
    return [_METADATA_K_COLUMN, _RETRIEVAL_COLUMN]


# --- shared expressions ---------------------------------------------------------------------


def _cutoff(k: int) -> pl.Expr:
    """``metadata.k`` when it is a JSON integer > 0, else ``k``."""
    return pl.coalesce(_field(METADATA_K, "k"), pl.lit(k, pl.Int64))


def _field(column: str, name: str) -> pl.Expr:
    return pl.col(column).struct.field(name)


def _input_error(*columns: str) -> pl.Expr:
    reason = pl.coalesce([_field(c, "error") for c in columns])
    return pl.when(reason.is_not_null()).then(sample_error("{}", reason))


def _ranked(score: pl.Expr, details: pl.Expr) -> Scored:
    error = _input_error(RETRIEVAL, RELEVANCE)
    return Scored(
        score=pl.when(error.is_null()).then(score),
        error=error,
        details=pl.when(error.is_null()).then(details),
    )


def _found(cutoff: pl.Expr) -> pl.Expr:
    """How many relevant ids rank within the cutoff (ranks are ascending)."""
    return (
        (_field(RANKING, "ranks") - cutoff).list.eval(pl.element() <= 0).list.sum().cast(pl.Int64)
    )


# --- the metrics ----------------------------------------------------------------------------


@metric("retrieval-hit-at-k", family="retrieval", derived=_ranking_inputs)
def retrieval_hit_at_k(*, k: Annotated[int, Range(ge=1)] = 5) -> Scored:
    """1.0 when any relevant id is among the top-k retrieved ids, else 0.0.

    hit@k = 1[|top-k ∩ relevant| > 0]. Ids with gain 0 (or below) in a gain map still count
    as relevant. Codomain {0, 1}; null (an error) when either input cannot be parsed.

    Examples:
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records([
        ...     {"id": "q1", "input": {"q": "Refunds?"}, "expected_output": ["d3", "d9"]},
        ...     {"id": "q2", "input": {"q": "Hours?"}, "expected_output": ["d7"]}], name="demo")
        >>> run = ef.evaluate(ds, outputs={"q1": '["d1", "d3", "d5"]', "q2": '["d1", "d2", "d3"]'},
        ...                   metrics=["retrieval-hit-at-k(k=2)"])
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        q1 1.0 {"k":2,"relevant":["d3","d9"],"top_k":["d1","d3"]}
        q2 0.0 {"k":2,"relevant":["d7"],"top_k":["d1","d2"]}
    """
    cutoff = _cutoff(k)
    first = _field(RANKING, "ranks").list.first()
    hit = (first <= cutoff).fill_null(value=False)
    return _ranked(
        hit.cast(pl.Float64),
        pl.struct(
            k=cutoff,
            relevant=_field(RELEVANCE, "ids"),
            top_k=_field(RETRIEVAL, "ids").list.head(cutoff),
        ),
    )


@metric("retrieval-recall-at-k", family="retrieval", derived=_ranking_inputs)
def retrieval_recall_at_k(*, k: Annotated[int, Range(ge=1)] = 5) -> Scored:
    """The fraction of the relevant ids found in the top-k retrieved ids.

    recall@k = |top-k ∩ relevant| / |relevant|, in [0, 1]. Null (an error) when either input
    cannot be parsed; an empty relevant set is an error, never 0/0.

    Examples:
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records([
        ...     {"id": "q1", "input": {"q": "Refunds?"}, "expected_output": ["d3", "d9"]}], name="demo")
        >>> run = ef.evaluate(ds, outputs={"q1": '["d1", "d3", "d5", "d9"]'},
        ...                   metrics=["retrieval-recall-at-k(k=3)"])
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        q1 0.5 {"k":3,"relevant_count":2,"found":1,"top_k":["d1","d3","d5"]}
    """  # noqa: E501
    cutoff = _cutoff(k)
    found = _found(cutoff)
    relevant = _field(RELEVANCE, "ids").list.len()
    return _ranked(
        (found / relevant).clip(0.0, 1.0),
        pl.struct(
            k=cutoff,
            relevant_count=relevant.cast(pl.Int64),
            found=found,
            top_k=_field(RETRIEVAL, "ids").list.head(cutoff),
        ),
    )


@metric("retrieval-mrr", family="retrieval", derived=_ranking_inputs)
def retrieval_mrr(*, k: Annotated[int | None, Range(ge=1)] = None) -> Scored:
    """Reciprocal rank of the first relevant id, over the whole ranking or its top k.

    RR = 1 / rank of the first retrieved id in the relevant set, 0.0 when none is retrieved;
    with ``k`` (MRR@k), 0.0 also when that rank is beyond k. In [0, 1]. The default searches
    the whole ranking, and ``metadata.k`` never applies to MRR. Dataset-level MRR is the
    mean of this column. Null (an error) when either input cannot be parsed.

    Examples:
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records([
        ...     {"id": "q1", "input": {"q": "Refunds?"}, "expected_output": ["d3", "d9"]},
        ...     {"id": "q2", "input": {"q": "Hours?"}, "expected_output": ["d7"]}], name="demo")
        >>> run = ef.evaluate(ds, outputs={"q1": '["d1", "d3", "d9"]', "q2": '["d1", "d2"]'},
        ...                   metrics=["retrieval-mrr"])
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        q1 0.5 {"first_relevant_rank":2}
        q2 0.0 {"first_relevant_rank":null}
    """
    first = _field(RANKING, "ranks").list.first()
    within = first if k is None else pl.when(first <= k).then(first)
    details = pl.struct(first_relevant_rank=first)
    if k is not None:
        details = pl.struct(k=pl.lit(k, pl.Int64), first_relevant_rank=first)
    return _ranked((1.0 / within.cast(pl.Float64)).fill_null(0.0), details)


@metric("retrieval-ndcg-at-k", family="retrieval", derived=_ranking_inputs)
def retrieval_ndcg_at_k(*, k: Annotated[int, Range(ge=1)] = 5) -> Scored:
    """Normalised discounted cumulative gain at k, with linear gains and a log2 discount.

    DCG@k = Σ_{i ≤ k} gain(id_i) / log2(i + 1) over the top-k ranks (irrelevant ids gain 0);
    IDCG@k is the same sum over the relevant gains sorted in descending order and truncated
    at k. nDCG@k = clamp(DCG@k / IDCG@k, 0, 1), and 0.0 when IDCG@k ≤ 0. Gains are the map's
    values, or 1.0 for an id list (the gain is linear, not 2^g - 1). Null (an error) when
    either input cannot be parsed.

    Examples:
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records([
        ...     {"id": "q1", "input": {"q": "Refunds?"}, "expected_output": {"d3": 2, "d9": 1}}], name="demo")
        >>> run = ef.evaluate(ds, outputs={"q1": '["d9", "d1", "d3"]'}, metrics=["retrieval-ndcg-at-k(k=3)"])
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        q1 0.7601875334318685 {"k":3,"dcg":2.0,"idcg":2.6309297535714578}
    """  # noqa: E501
    cutoff = _cutoff(k)
    # + 0.0 turns the empty sum (-0.0) into 0.0
    dcg = _field(RANKING, "terms").list.head(_found(cutoff)).list.sum() + 0.0
    idcg = _field(RANKING, "ideal").list.head(cutoff).list.sum()
    score = pl.when(idcg > 0).then((dcg / idcg).clip(0.0, 1.0)).otherwise(0.0)
    return _ranked(score, pl.struct(k=cutoff, dcg=dcg, idcg=idcg))


def normalise_span(text: pl.Expr, *, case_sensitive: bool) -> pl.Expr:
    """Collapse Unicode whitespace runs to one space, trim, and lowercase unless asked not to."""
    out = text.str.replace_all(r"\s+", " ").str.strip_chars(PHP_WHITESPACE)
    return out if case_sensitive else out.str.to_lowercase()


def _containment_kernel(frame: pl.DataFrame) -> pl.DataFrame:
    """First 1-based rank in ``texts`` (already top-k and normalised) that contains ``needle``."""
    rows = frame.with_row_index("row")
    exploded = rows.select(
        "row",
        "needle",
        text="texts",
        rank=pl.int_ranges(1, pl.col("texts").list.len().fill_null(0) + 1),
    ).explode("text", "rank", empty_as_null=False, keep_nulls=False)
    found = (
        exploded.filter(
            (pl.col("text").str.len_bytes() > 0)
            & pl.col("text").str.contains(pl.col("needle"), literal=True)
        )
        .group_by("row")
        .agg(pl.col("rank").min().alias("matched_rank"))
    )
    return rows.join(found, on="row", how="left", maintain_order="left").select(
        pl.col("matched_rank").cast(pl.Int64)
    )


@metric("answer-containment-at-k", family="retrieval", derived=_retrieval_only)
def answer_containment_at_k(
    *, k: Annotated[int, Range(ge=1)] = 5, case_sensitive: bool = False
) -> Scored:
    """1.0 when a top-k retrieved text contains the expected answer span, else 0.0.

    Both sides are normalised alike (Unicode whitespace runs collapsed to one space, trimmed,
    lowercased unless ``case_sensitive``); empty texts are skipped. A bare id list carries no
    text, so it always scores 0.0. Codomain {0, 1}; null (an error) when the retrieval cannot
    be parsed or ``expected_output`` is not a string that is non-empty after trimming.

    Examples:
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records([
        ...     {"id": "q1", "input": {"q": "Return window?"}, "expected_output": "30 days"}], name="demo")
        >>> retrieved = '[{"id": "d1", "text": "Shipping is free."}, {"id": "d2", "text": "Returns: 30  Days."}]'
        >>> run = ef.evaluate(ds, outputs={"q1": retrieved}, metrics=["answer-containment-at-k(k=2)"])
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        q1 1.0 {"k":2,"expected_span":"30 days","matched_rank":2}
    """  # noqa: E501
    cutoff = _cutoff(k)
    expected = C.expected_text()
    bad_expected = expected.is_null() | (expected.str.strip_chars(PHP_WHITESPACE) == "")
    texts = _field(RETRIEVAL, "texts").list.head(cutoff)
    kernel = batched(
        _containment_kernel,
        {
            "texts": texts.list.eval(normalise_span(pl.element(), case_sensitive=case_sensitive)),
            "needle": normalise_span(expected.fill_null(""), case_sensitive=case_sensitive),
        },
        {"matched_rank": pl.Int64},
    )
    matched = pl.col("answer-containment-at-k__kernel").struct.field("matched_rank")
    error = pl.coalesce(
        _input_error(RETRIEVAL),
        pl.when(bad_expected).then(
            sample_error(
                "expected_output must be a non-empty string (the answer span) for "
                "answer-containment-at-k metric."
            )
        ),
    )
    return Scored(
        score=pl.when(error.is_null()).then(matched.is_not_null().cast(pl.Float64)),
        error=error,
        details=pl.when(error.is_null()).then(
            pl.struct(k=cutoff, expected_span=expected, matched_rank=matched)
        ),
        prepare={"answer-containment-at-k__kernel": kernel},
    )
