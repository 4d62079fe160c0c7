"""Reading the RAG judge's verdicts back onto claims and context ranks, as frame queries.

The grounding reply names statements by id (``A3``, ``R1``) and passages by number (the
sample's distinct contexts, in first-seen order); these kernels join the verdicts to the
claims and to every context position (a duplicated context takes its first copy's
verdicts), and report a reply that leaves a statement or passage without a verdict, or
cites a passage that does not exist, as the row's problem. Everything is explode / join /
group-by over the whole batch: no Python loop over rows.
"""

from __future__ import annotations

import polars as pl

__all__ = ["CORRECTNESS_FIELDS", "GROUNDING_FIELDS", "correctness_kernel", "grounding_kernel"]

_BOOLS = pl.List(pl.Boolean)
_INTS = pl.List(pl.Int64)

GROUNDING_FIELDS: dict[str, pl.DataType] = {
    "answer_supported": _BOOLS,
    "answer_addresses": _BOOLS,
    "reference_supported": _BOOLS,
    "passage": _INTS,
    "relevant": _BOOLS,
    "supports_answer": _BOOLS,
    "supports_reference": _BOOLS,
    "contradicted": _BOOLS,
    "problem": pl.String(),
}

CORRECTNESS_FIELDS: dict[str, pl.DataType] = {
    "in_reference": _BOOLS,
    "in_answer": _BOOLS,
    "problem": pl.String(),
}


def _ids(f: pl.DataFrame, column: str, prefix: str) -> pl.DataFrame:
    """``(row, idx, id)`` for every item of a list column: ids ``A1``, ``A2``, ..."""
    return (
        f.select("row", idx=pl.int_ranges(0, pl.col(column).list.len(), dtype=pl.Int64))
        .explode("idx")
        .drop_nulls("idx")
        .with_columns(id=pl.format(prefix + "{}", pl.col("idx") + 1))
    )


def _verdicts(f: pl.DataFrame, field: str, key: str) -> pl.DataFrame:
    """The reply's list ``field`` as rows ``(row, <key>, ...)``, first verdict per key."""
    return (
        f.select("row", v=pl.col("value").struct.field(field))
        .explode("v")
        .drop_nulls("v")
        .unnest("v")
        .unique(subset=["row", key], keep="first", maintain_order=True)
    )


def _per_row(
    height: int, long: pl.DataFrame, order: str, fields: dict[str, pl.Expr]
) -> pl.DataFrame:
    """Lists per row (in ``order``), ``[]`` for rows without items."""
    grouped = long.sort("row", order).group_by("row", maintain_order=True).agg(**fields)
    out = (
        pl.DataFrame({"row": pl.Series(range(height), dtype=pl.UInt32)})
        .join(grouped.with_columns(pl.col("row").cast(pl.UInt32)), on="row", how="left")
        .sort("row")
    )
    return out.with_columns(pl.col(n).fill_null(pl.lit([], out.schema[n])) for n in fields)


def _first_problem(height: int, problems: list[pl.DataFrame]) -> pl.Series:
    found = [p.select(pl.col("row").cast(pl.UInt32), "problem") for p in problems if p.height]
    table = pl.DataFrame({"row": pl.Series(range(height), dtype=pl.UInt32)})
    if not found:
        return pl.Series("problem", [None] * height, dtype=pl.String)
    first = pl.concat(found).group_by("row", maintain_order=True).agg(pl.col("problem").first())
    return table.join(first, on="row", how="left").sort("row").get_column("problem")


def _statement_flags(
    f: pl.DataFrame, column: str, prefix: str, verdicts: pl.DataFrame, key: str
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Claims joined to their verdicts, and a problem per claim the reply left out."""
    ids = _ids(f, column, prefix).join(
        f.select("row", sent=pl.col("value").is_not_null()), on="row", how="left"
    )
    joined = ids.join(verdicts, left_on=["row", "id"], right_on=["row", key], how="left")
    missing = joined.filter(pl.col("sent") & pl.col(verdicts.columns[2]).is_null()).select(
        "row", problem=pl.format("judge reply gives no verdict for statement {}.", pl.col("id"))
    )
    return joined, missing


def grounding_kernel(f: pl.DataFrame) -> pl.DataFrame:
    """Per row, the grounding verdicts on the answer claims (``a``), reference claims
    (``r``) and context positions (``ctx``), from the decoded reply ``value``.

    A row without a reply (nothing sent, or an error) gets every claim unsupported and
    every position irrelevant and uncontradicted.
    """
    f = f.with_row_index("row")
    height = f.height
    st = _verdicts(f, "statements", "statement")
    st = st.select("row", "statement", "supported_by", "contradicted_by", "addresses_question")
    a, a_missing = _statement_flags(f, "a", "A", st, "statement")
    r, r_missing = _statement_flags(f, "r", "R", st, "statement")

    positions = (
        f.select("row", text=pl.col("ctx"))
        .with_columns(pos=pl.int_ranges(0, pl.col("text").list.len(), dtype=pl.Int64))
        .explode("text", "pos")
        .drop_nulls("pos")
    )
    distinct = (
        positions.unique(subset=["row", "text"], keep="first", maintain_order=True)
        .sort("row", "pos")
        .with_columns(passage=pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over("row"))
        .select("row", "text", "passage")
    )
    n_passages = distinct.group_by("row").agg(n=pl.len())
    positions = positions.join(distinct, on=["row", "text"], how="left").join(
        f.select("row", sent=pl.col("value").is_not_null()), on="row", how="left"
    )
    pv = _verdicts(f, "passages", "passage").select("row", "passage", "relevant")
    positions = positions.join(pv, on=["row", "passage"], how="left")
    passage_missing = (
        positions.filter(pl.col("sent") & pl.col("relevant").is_null())
        .unique(subset=["row", "passage"], keep="first", maintain_order=True)
        .select(
            "row",
            problem=pl.format("judge reply gives no verdict for passage {}.", pl.col("passage")),
        )
    )

    def cited(claims: pl.DataFrame, field: str) -> pl.DataFrame:
        return (
            claims.select("row", p=pl.col(field))
            .explode("p")
            .drop_nulls("p")
            .join(n_passages, on="row", how="left")
            .with_columns(pl.col("n").fill_null(0))
        )

    cites = [cited(a, "supported_by"), cited(a, "contradicted_by"), cited(r, "supported_by")]
    bad_cite = [
        c.filter((pl.col("p") < 1) | (pl.col("p") > pl.col("n"))).select(
            "row",
            problem=pl.format(
                "judge reply cites passage {}; the sample has {} distinct passages.",
                pl.col("p"),
                pl.col("n"),
            ),
        )
        for c in cites
    ]

    def marks(c: pl.DataFrame, name: str) -> pl.DataFrame:
        return c.select("row", passage="p").unique().with_columns(pl.lit(True).alias(name))

    positions = (
        positions.join(marks(cites[0], "supports_answer"), on=["row", "passage"], how="left")
        .join(marks(cites[1], "contradicted"), on=["row", "passage"], how="left")
        .join(marks(cites[2], "supports_reference"), on=["row", "passage"], how="left")
    )
    ok = pl.col("sent")
    per_position = _per_row(
        height,
        positions,
        "pos",
        {
            "passage": pl.col("passage"),
            "relevant": (ok & pl.col("relevant").fill_null(False)),
            "supports_answer": (ok & pl.col("supports_answer").fill_null(False)),
            "supports_reference": (ok & pl.col("supports_reference").fill_null(False)),
            "contradicted": (ok & pl.col("contradicted").fill_null(False)),
        },
    )
    supported = ok & (pl.col("supported_by").list.len().fill_null(0) > 0)
    answer = _per_row(
        height,
        a,
        "idx",
        {
            "answer_supported": supported,
            "answer_addresses": ok & pl.col("addresses_question").fill_null(False),
        },
    )
    reference = _per_row(height, r, "idx", {"reference_supported": supported})
    problem = _first_problem(height, [a_missing, r_missing, passage_missing, *bad_cite])
    return pl.concat(
        [answer.drop("row"), reference.drop("row"), per_position.drop("row")], how="horizontal"
    ).with_columns(problem=problem)


def correctness_kernel(f: pl.DataFrame) -> pl.DataFrame:
    """Per row, ``in_reference`` for each answer claim and ``in_answer`` for each
    reference claim, from the decoded correctness reply ``value``."""
    f = f.with_row_index("row")
    height = f.height
    av = _verdicts(f, "answer", "statement").select("row", "statement", "in_reference")
    rv = _verdicts(f, "reference", "statement").select("row", "statement", "in_answer")
    a, a_missing = _statement_flags(f, "a", "A", av, "statement")
    r, r_missing = _statement_flags(f, "r", "R", rv, "statement")
    ok = pl.col("sent")
    answer = _per_row(
        height, a, "idx", {"in_reference": ok & pl.col("in_reference").fill_null(False)}
    )
    reference = _per_row(height, r, "idx", {"in_answer": ok & pl.col("in_answer").fill_null(False)})
    return pl.concat([answer.drop("row"), reference.drop("row")], how="horizontal").with_columns(
        problem=_first_problem(height, [a_missing, r_missing])
    )
