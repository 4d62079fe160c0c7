"""Lexical metrics: exact-match, contains, regex and rouge-l.

All four are network-free and exact. exact-match, contains and regex are single Polars
expressions; rouge-l tokenises in Polars and runs a bit-parallel LCS kernel over the batch.
"""

from __future__ import annotations

import re
from typing import Annotated

import polars as pl

from evalframe.core import schema as C
from evalframe.metrics import _pcre
from evalframe.metrics._batched import batched, sample_error, type_error
from evalframe.metrics._registry import metric
from evalframe.metrics._spec import Range, Scored

__all__ = ["contains", "exact_match", "regex", "rouge_l"]

_ACTUAL = pl.col(C.ACTUAL_OUTPUT)
_EXPECTED = pl.col(C.EXPECTED_OUTPUT)


@metric("exact-match", family="lexical")
def exact_match() -> Scored:
    """1.0 when the output equals the expected string byte for byte, else 0.0.

    No trimming, case folding or Unicode normalisation. Null (an error) when
    ``expected_output`` is not a string.
    """
    bad, message = type_error("exact-match")
    match = _ACTUAL == _EXPECTED
    return Scored(
        score=pl.when(bad).then(None).otherwise(match.cast(pl.Float64)),
        error=pl.when(bad).then(message),
        details=pl.struct(expected=_EXPECTED, actual=_ACTUAL, match=match),
    )


@metric("contains", family="lexical")
def contains() -> Scored:
    """1.0 when the expected string occurs in the output (case-sensitive substring), else 0.0.

    Null (an error) when ``expected_output`` is not a string or is empty; a string of only
    whitespace is allowed.
    """
    bad, message = type_error("contains")
    empty = _EXPECTED.str.len_bytes() == 0
    match = _ACTUAL.str.contains(_EXPECTED, literal=True)
    return Scored(
        score=pl.when(bad | empty).then(None).otherwise(match.cast(pl.Float64)),
        error=pl.when(bad)
        .then(message)
        .when(empty)
        .then(sample_error("expected_output must not be empty for contains metric.")),
        details=pl.struct(expected_substring=_EXPECTED, match=match),
    )


# PCRE delimiters we accept, with their closing counterpart; the body is everything up to the
# last closing delimiter, so an escaped delimiter inside the pattern is kept.
_DELIMITERS = {
    "/": "/",
    "#": "#",
    "~": "~",
    "!": "!",
    "@": "@",
    "%": "%",
    "|": "|",
    "+": "+",
    "(": ")",
    "{": "}",
    "[": "]",
    "<": ">",
}
_FLAGS = {"i": "i", "m": "m", "s": "s", "x": "x", "U": "U", "u": "", "D": "", "A": ""}


def _translate(patterns: pl.DataFrame) -> pl.DataFrame:
    """PCRE ``/body/flags`` to a Rust-regex pattern (``rust``) and a parse error (``reason``)."""
    pattern = pl.col("pattern")
    bodies, flag_sets = [], []
    for open_, close in _DELIMITERS.items():
        # Character classes, not escapes: in Rust regex \< and \> are word boundaries.
        rx = f"^[{re.escape(open_)}](?s:(.*))[{re.escape(close)}]([A-Za-z]*)$"
        bodies.append(pattern.str.extract(rx, 1))
        flag_sets.append(pattern.str.extract(rx, 2))
    body, flags = pl.coalesce(bodies), pl.coalesce(flag_sets)
    parts = patterns.with_columns(
        body=body,
        flags=flags,
        extended=flags.str.contains("x", literal=True),
        # Without m or D, PCRE's $ also matches before a final newline: rewritten for Rust.
        end_rewritten=~flags.str.contains("[mD]"),
    )
    parts = parts.hstack(_pcre.analyse(parts.select("body", "extended", "end_rewritten")))
    flags = pl.col("flags")
    unknown = flags.str.replace_all(f"[{''.join(_FLAGS)}]", "")
    inline = flags
    for flag, rust in _FLAGS.items():
        inline = inline.str.replace_all(flag, rust, literal=True)
    anchored = (
        pl.when(flags.str.contains("A", literal=True)).then(pl.lit("^(?:")).otherwise(pl.lit("(?:"))
    )
    # "A" (anchored) is not an inline flag in Rust regex: drop it and anchor the group instead.
    inline = inline.str.replace_all("A", "", literal=True)
    translated = pl.concat_str(
        pl.when(inline.str.len_bytes() > 0).then(pl.format("(?{})", inline)).otherwise(pl.lit("")),
        anchored,
        pl.col("rewritten"),
        pl.lit(")"),
    )
    construct = pl.col("construct")
    parse_error = (
        pl.when(pl.col("body").is_null())
        .then(pl.lit("the pattern must be delimited, e.g. /order #[0-9]+/i"))
        .when(unknown.str.len_bytes() > 0)
        .then(pl.format("unknown modifier '{}'", unknown.str.slice(0, 1)))
        .when(construct.is_not_null())
        .then(
            pl.format(
                "{} is not supported: the linear-time engine evalframe uses would read it "
                "differently from PCRE",
                construct,
            )
        )
    )
    return parts.select("pattern", translated.alias("rust"), parse_error.alias("reason"))


def _compile_error(pattern: str) -> str | None:
    """The engine's message when ``pattern`` does not compile, else None."""
    try:
        pl.select(pl.lit("").str.contains(pattern))
    except pl.exceptions.PolarsError as exc:
        text = str(exc).split("\n\nThis error occurred", 1)[0]
        return " ".join(text.replace("regex error: ", "", 1).split())
    return None


# Below this many rows per distinct pattern, matching row by row (each row's pattern compiled
# by Polars) beats one pass per pattern group.
_ROWS_PER_PATTERN = 64


def _regex_kernel(frame: pl.DataFrame) -> pl.DataFrame:
    """Match outputs against per-row patterns, translating and compiling each distinct one once.

    Datasets repeat patterns (a handful of shapes across many rows), so the work is done per
    distinct pattern: translation and the compile check on the unique values, then one
    vectorized ``str.contains`` per pattern group. When nearly every row has its own pattern,
    rows are matched directly instead.
    """
    patterns = _translate(frame.select(pl.col("pattern").unique().drop_nulls()))
    compiles = pl.lit("").str.contains(pl.col("rust"), strict=False).is_not_null()
    patterns = patterns.with_columns(
        pl.when(pl.col("reason").is_null() & ~compiles)
        .then(pl.lit(""))
        .otherwise("reason")
        .alias("reason")
    )
    broken = patterns.filter(pl.col("reason") == "").get_column("rust").to_list()
    messages = {p: _compile_error(p) for p in broken}  # distinct invalid patterns, not rows
    patterns = patterns.with_columns(
        pl.when(pl.col("reason") == "")
        .then(pl.col("rust").replace_strict(messages, default=None, return_dtype=pl.String))
        .otherwise("reason")
        .alias("reason")
    )
    rows = frame.join(patterns, on="pattern", how="left", maintain_order="left")
    rust = pl.when(pl.col("reason").is_null()).then(pl.col("rust"))
    n_patterns = rows.select(rust.n_unique()).item()
    if rows.height >= _ROWS_PER_PATTERN * n_patterns:
        match = pl.col("actual").str.contains(rust.first()).over(rust)
    else:
        match = pl.col("actual").str.contains(rust, strict=False)
    return rows.select(match.alias("match"), "reason")


@metric("regex", family="lexical")
def regex() -> Scored:
    """1.0 when the expected ``/pattern/flags`` matches anywhere in the output, else 0.0.

    Patterns run on a linear-time engine (Rust ``regex``, through Polars), so no pattern can
    hang a run. Flags ``i``, ``m``, ``s``, ``x``, ``U`` and ``A`` are honoured; ``u`` and ``D``
    are accepted as no-ops (matching is always in PCRE's Unicode mode). Constructs Rust's
    engine lacks or reads differently from PCRE (backreferences, look-around, possessive
    quantifiers, atomic groups, ``\\K``, ``\\v``, set operations in classes, ...) are that
    sample's error, naming the construct; ``$`` and ``\\Z`` keep PCRE's meaning (also before a
    final newline) and POSIX classes in brackets their Unicode one.
    """
    bad, message = type_error("regex")
    k = pl.col("regex__kernel")
    match, reason = k.struct.field("match"), k.struct.field("reason")
    failed = sample_error(
        "regex metric could not evaluate expected_output against actual output. PCRE error: {}.",
        reason,
    )
    return Scored(
        score=pl.when(bad | reason.is_not_null()).then(None).otherwise(match.cast(pl.Float64)),
        error=pl.when(bad).then(message).when(reason.is_not_null()).then(failed),
        details=pl.struct(pattern=_EXPECTED, match=match),
        prepare={
            "regex__kernel": batched(
                _regex_kernel,
                {"pattern": C.expected_text(), "actual": _ACTUAL},
                {"match": pl.Boolean, "reason": pl.String},
            )
        },
    )


def _rouge_kernel(beta: float, max_tokens: int) -> pl.Expr:
    from evalframe.metrics._lcs import rouge_l as rouge_l_columns

    def kernel(frame: pl.DataFrame) -> pl.DataFrame:
        return rouge_l_columns(
            frame.get_column("expected"),
            frame.get_column("actual"),
            beta=beta,
            max_tokens=max_tokens,
        )

    return batched(
        kernel,
        {"expected": C.expected_text(), "actual": _ACTUAL},
        {
            "expected_tokens": pl.Int64,
            "actual_tokens": pl.Int64,
            "lcs_tokens": pl.Int64,
            "precision": pl.Float64,
            "recall": pl.Float64,
            "score": pl.Float64,
            "over_cap": pl.String,
        },
    )


@metric("rouge-l", family="lexical")
def rouge_l(
    *,
    beta: Annotated[float, Range(gt=0, le=1e6)] = 1.0,
    max_tokens: Annotated[int, Range(ge=1)] = 1024,
) -> Scored:
    """ROUGE-L: the LCS F-measure over lowercased Unicode letter/number tokens.

    With LCS the longest common token subsequence, P = LCS/|actual| and R = LCS/|expected|,
    the score is (1+β²)PR / (R + β²P) (β = 1 gives F1). Both sides empty score 1.0, one side
    empty 0.0. A field with more than ``max_tokens`` tokens is that sample's error.
    """
    bad, message = type_error("rouge-l")
    k = pl.col("rouge-l__kernel")
    over = k.struct.field("over_cap")
    count = (
        pl.when(over == "expected_output")
        .then(k.struct.field("expected_tokens"))
        .otherwise(k.struct.field("actual_tokens"))
    )
    cap_error = sample_error(
        f"{{}} has {{}} tokens; rouge-l metric supports at most {max_tokens} tokens per field.",
        over,
        count,
    )
    score = k.struct.field("score")
    return Scored(
        score=pl.when(bad).then(None).otherwise(score),
        error=pl.when(bad).then(message).when(over.is_not_null()).then(cap_error),
        details=pl.struct(
            lcs_tokens=k.struct.field("lcs_tokens"),
            precision=k.struct.field("precision"),
            recall=k.struct.field("recall"),
            raw_score=score,
            clamped_score=score,
        ),
        prepare={"rouge-l__kernel": _rouge_kernel(beta, max_tokens)},
    )
