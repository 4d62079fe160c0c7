"""Lexical metrics: exact-match, contains, regex and the ROUGE family (rouge-1, rouge-2,
rouge-l, rouge-lsum).

All are network-free and exact. exact-match, contains and regex are single Polars
expressions; rouge-l tokenises in Polars and runs a bit-parallel LCS kernel over the batch,
rouge-1, rouge-2 and rouge-lsum small kernels over token ids (``_rouge.py``).

A sample with any-of answers (``metadata.expected_any``, see ``evalframe.core._any_of``)
scores as the best over its acceptable answers in exact-match, contains and the ROUGE
metrics: the answers are read once per frame into a generated column that they share.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Final

import polars as pl

from evalframe.core import schema as C
from evalframe.core._any_of import EXPECTED_ANY
from evalframe.metrics import _pcre
from evalframe.metrics._batched import batched, sample_error, type_error
from evalframe.metrics._registry import metric
from evalframe.metrics._spec import Derived, Range, Scored

__all__ = [
    "ANSWERS",
    "contains",
    "exact_match",
    "regex",
    "rouge_1",
    "rouge_2",
    "rouge_l",
    "rouge_lsum",
]

_ACTUAL = pl.col(C.ACTUAL_OUTPUT)
_EXPECTED = pl.col(C.EXPECTED_OUTPUT)
_IS_TEXT = pl.col(C.EXPECTED_TYPE) == "string"

ANSWERS: Final = "expected_output__answers"
"""The generated column of a row's any-of answers: ``List(String)``, null without any."""


def _answers_column(frame: pl.DataFrame) -> pl.DataFrame:
    # Without the key anywhere no row has answers: the substring search costs little, the
    # JSONPath match about a third of a second per million rows.
    if not frame.select(pl.col(C.METADATA).str.contains(f'"{EXPECTED_ANY}"|\\\\u').any()).item():
        return frame.select(answers=pl.repeat(None, pl.len(), dtype=pl.List(pl.String)))
    found = pl.col(C.METADATA).str.json_path_match(f"$.{EXPECTED_ANY}")
    return frame.select(answers=found.str.json_decode(pl.List(pl.String)))


_ANSWERS_COLUMN: Final = Derived(ANSWERS, _answers_column)


def _answers_derived(**_: Any) -> list[Derived]:
    return [_ANSWERS_COLUMN]


def _any_of() -> pl.Expr:
    return pl.col(ANSWERS).struct.field("answers")


def _acceptable() -> pl.Expr:
    """Every acceptable answer of the row: the expected string (if it is one), then the
    any-of answers; null when the row lists no any-of answers (or an empty list)."""
    answers = _any_of()
    with_expected = pl.concat_list(pl.concat_list(_EXPECTED), answers)
    return (
        pl.when(answers.is_null() | (answers.list.len() == 0))
        .then(None)
        .when(_IS_TEXT)
        .then(with_expected.list.unique(maintain_order=True))
        .otherwise(answers)
    )


def _fold(text: pl.Expr, case_sensitive: bool) -> pl.Expr:
    return text if case_sensitive else text.str.to_lowercase()


def _with_answers(plain: pl.Expr, any_of: pl.Expr) -> pl.Expr:
    """Plain rows' details as before; rows with any-of answers also list them."""
    return (
        pl.when(_acceptable().is_null())
        .then(plain.struct.json_encode())
        .otherwise(any_of.struct.json_encode())
    )


@metric("exact-match", family="lexical", derived=_answers_derived)
def exact_match(*, case_sensitive: bool = True) -> Scored:
    """1.0 when the output equals the expected string byte for byte, else 0.0.

    No trimming or Unicode normalisation; ``case_sensitive=False`` lowercases both sides
    first. With any-of answers (``expected_any``), 1.0 when the output equals any acceptable
    answer. Null (an error) when ``expected_output`` is not a string and the sample lists no
    answers.

    Examples:
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records([
        ...     {"id": "q1", "input": {"q": "Capital of France?"}, "expected_output": "Paris"},
        ...     {"id": "q2", "input": {"q": "Capital of Italy?"}, "expected_output": "Rome"}], name="demo")
        >>> run = ef.evaluate(ds, outputs={"q1": "Paris", "q2": "rome"}, metrics=["exact-match"])
        >>> run.scores.select("sample_id", "score").rows()
        [('q1', 1.0), ('q2', 0.0)]
        >>> ef.evaluate(ds, outputs={"q1": "Paris", "q2": "rome"},
        ...             metrics=["exact-match(case_sensitive=false)"]).scores.get_column("score").to_list()
        [1.0, 1.0]
    """  # noqa: E501
    bad, message = type_error("exact-match")
    answers = _acceptable()
    bad = bad & answers.is_null()
    actual = _fold(_ACTUAL, case_sensitive)
    plain = actual == _fold(_EXPECTED, case_sensitive)
    folded = answers if case_sensitive else answers.list.eval(pl.element().str.to_lowercase())
    found = folded.list.contains(actual)
    match = pl.when(answers.is_null()).then(plain).otherwise(found)
    return Scored(
        score=pl.when(bad).then(None).otherwise(match.cast(pl.Float64)),
        error=pl.when(bad).then(message),
        details=_with_answers(
            pl.struct(expected=_EXPECTED, actual=_ACTUAL, match=match),
            pl.struct(expected_any=answers, actual=_ACTUAL, match=match),
        ),
    )


def _contains_kernel(case_sensitive: bool) -> Any:
    def kernel(frame: pl.DataFrame) -> pl.DataFrame:
        out = {"match": pl.Boolean, "empty": pl.Boolean, "matched": pl.String}
        if frame.get_column("answers").null_count() == frame.height:
            return pl.DataFrame(schema=out).clear(frame.height)
        pairs = (
            frame.with_row_index("row").explode("answers").filter(pl.col("answers").is_not_null())
        )
        text, answer = pl.col("actual"), pl.col("answers")
        if not case_sensitive:
            text, answer = text.str.to_lowercase(), answer.str.to_lowercase()
        per_row = (
            pairs.with_columns(hit=text.str.contains(answer, literal=True))
            .group_by("row")
            .agg(
                pl.col("hit").any().alias("match"),
                (pl.col("answers") == "").any().alias("empty"),
                pl.col("answers").filter(pl.col("hit")).first().alias("matched"),
            )
        )
        rows = frame.with_row_index("row").select("row")
        joined = rows.join(per_row, on="row", how="left", maintain_order="left")
        return joined.select(pl.col("match"), pl.col("empty").cast(pl.Int64), pl.col("matched"))

    return kernel


@metric("contains", family="lexical", derived=_answers_derived)
def contains(*, case_sensitive: bool = True) -> Scored:
    """1.0 when the expected string occurs in the output (a substring), else 0.0.

    Case-sensitive unless ``case_sensitive=False``, which lowercases both sides first. With
    any-of answers (``expected_any``), 1.0 when any acceptable answer occurs in the output.
    Null (an error) when ``expected_output`` is not a string and the sample lists no
    answers, or when an expected string is empty; a string of only whitespace is allowed.

    Examples:
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records([
        ...     {"id": "q1", "input": {"q": "Capital of France?"}, "expected_output": "Paris"},
        ...     {"id": "q2", "input": {"q": "Capital of Italy?"}, "expected_output": "Rome"}], name="demo")
        >>> run = ef.evaluate(ds, outputs={"q1": "It is Paris.", "q2": "Milan, I think."},
        ...                   metrics=["contains"])
        >>> run.scores.select("sample_id", "score").rows()
        [('q1', 1.0), ('q2', 0.0)]
    """  # noqa: E501
    bad, message = type_error("contains")
    answers = _acceptable()
    bad = bad & answers.is_null()
    empty = _EXPECTED.str.len_bytes() == 0
    plain = _fold(_ACTUAL, case_sensitive).str.contains(
        _fold(_EXPECTED, case_sensitive), literal=True
    )
    k = pl.col("contains__kernel")
    any_empty = k.struct.field("empty")
    plain_row = answers.is_null()
    match = pl.when(plain_row).then(plain).otherwise(k.struct.field("match"))
    empty_error = sample_error("expected_output must not be empty for contains metric.")
    answer_error = sample_error(
        "an acceptable answer (expected_output or an expected_any item) is empty; contains "
        "metric needs non-empty answers."
    )
    failed = pl.when(plain_row).then(empty).otherwise(any_empty)
    return Scored(
        score=pl.when(bad | failed).then(None).otherwise(match.cast(pl.Float64)),
        error=pl.when(bad)
        .then(message)
        .when(plain_row & empty)
        .then(empty_error)
        .when(failed)
        .then(answer_error),
        details=_with_answers(
            pl.struct(expected_substring=_EXPECTED, match=match),
            pl.struct(expected_any=answers, matched=k.struct.field("matched"), match=match),
        ),
        prepare={
            "contains__kernel": batched(
                _contains_kernel(case_sensitive),
                {"actual": _ACTUAL, "answers": answers},
                {"match": pl.Boolean, "empty": pl.Boolean, "matched": pl.String},
            )
        },
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

    Examples:
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records([
        ...     {"id": "q1", "input": {"q": "Order id?"}, "expected_output": "/ord-[0-9]{4}/i"},
        ...     {"id": "q2", "input": {"q": "Order id?"}, "expected_output": "/^ord-[0-9]{4}$/"}], name="demo")
        >>> run = ef.evaluate(ds, outputs={"q1": "Your order is ORD-1234.", "q2": "ord-12"},
        ...                   metrics=["regex"])
        >>> run.scores.select("sample_id", "score").rows()
        [('q1', 1.0), ('q2', 0.0)]
    """  # noqa: E501
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


_ROUGE_FIELDS: Final = {
    "expected_tokens": pl.Int64,
    "actual_tokens": pl.Int64,
    "lcs_tokens": pl.Int64,
    "precision": pl.Float64,
    "recall": pl.Float64,
    "score": pl.Float64,
    "over_cap": pl.String,
}


def _best_pair(
    columns: Callable[[pl.Series, pl.Series], pl.DataFrame],
    fields: Mapping[str, pl.DataType | type[pl.DataType]],
) -> pl.Expr:
    """``columns(expected, actual)`` per row, over any-of answers the best-scoring pair."""

    def kernel(frame: pl.DataFrame) -> pl.DataFrame:
        expected, actual = frame.get_column("expected"), frame.get_column("actual")
        answers = frame.get_column("answers")
        if answers.null_count() == frame.height:
            return columns(expected, actual).with_columns(best=pl.lit(None, pl.String))
        # One pair per acceptable answer (a plain row is its one expected text); a row keeps
        # its best pair, or its first pair over the token cap (never silently skipped).
        pairs = (
            frame.with_row_index("row")
            .with_columns(
                answers=pl.when(pl.col("answers").is_null())
                .then(pl.concat_list("expected"))
                .otherwise("answers")
            )
            .explode("answers")
        )
        scored = columns(pairs.get_column("answers"), pairs.get_column("actual")).with_columns(
            row=pairs.get_column("row"), best=pairs.get_column("answers")
        )
        best = scored.sort(
            [pl.col("row"), pl.col("over_cap").is_null(), pl.col("score")],
            descending=[False, False, True],
            nulls_last=True,
            maintain_order=True,
        ).unique(subset="row", keep="first", maintain_order=True)
        return best.with_columns(
            best=pl.when(answers.gather(best.get_column("row")).is_not_null()).then("best")
        ).drop("row")

    return batched(
        kernel,
        {"expected": C.expected_text(), "actual": _ACTUAL, "answers": _acceptable()},
        {**fields, "best": pl.String},
    )


def _rouge_kernel(beta: float, max_tokens: int) -> pl.Expr:
    from evalframe.metrics._lcs import rouge_l as rouge_l_columns

    return _best_pair(
        lambda e, a: rouge_l_columns(e, a, beta=beta, max_tokens=max_tokens), _ROUGE_FIELDS
    )


def _cap_error(name: str, max_tokens: int, k: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """The field over the token cap (or null) and the row's message about it."""
    over = k.struct.field("over_cap")
    count = (
        pl.when(over == "expected_output")
        .then(k.struct.field("expected_tokens"))
        .otherwise(k.struct.field("actual_tokens"))
    )
    message = sample_error(
        f"{{}} has {{}} tokens; {name} metric supports at most {max_tokens} tokens per field.",
        over,
        count,
    )
    return over, message


@metric("rouge-l", family="lexical", derived=_answers_derived)
def rouge_l(
    *,
    beta: Annotated[float, Range(gt=0, le=1e6)] = 1.0,
    max_tokens: Annotated[int, Range(ge=1)] = 1024,
) -> Scored:
    """ROUGE-L: the LCS F-measure over lowercased Unicode letter/number tokens.

    With LCS the longest common token subsequence, P = LCS/|actual| and R = LCS/|expected|,
    the score is (1+β²)PR / (R + β²P) (β = 1 gives F1). Both sides empty score 1.0, one side
    empty 0.0. A field with more than ``max_tokens`` tokens is that sample's error. With
    any-of answers (``expected_any``), the best score over the acceptable answers.

    Examples:
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records([
        ...     {"id": "q1", "input": {"q": "Where?"}, "expected_output": "the cat sat on the mat"},
        ...     {"id": "q2", "input": {"q": "Who?"}, "expected_output": "a dog"}], name="demo")
        >>> run = ef.evaluate(ds, outputs={"q1": "the cat lay on the mat", "q2": "no idea"},
        ...                   metrics=["rouge-l"])
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        q1 0.8333333333333334 {"lcs_tokens":5,"precision":0.8333333333333334,"recall":0.8333333333333334,"raw_score":0.8333333333333334,"clamped_score":0.8333333333333334}
        q2 0.0 {"lcs_tokens":0,"precision":0.0,"recall":0.0,"raw_score":0.0,"clamped_score":0.0}
    """  # noqa: E501
    bad, message = type_error("rouge-l")
    bad = bad & _acceptable().is_null()
    k = pl.col("rouge-l__kernel")
    over, cap_error = _cap_error("rouge-l", max_tokens, k)
    score = k.struct.field("score")
    return Scored(
        score=pl.when(bad).then(None).otherwise(score),
        error=pl.when(bad).then(message).when(over.is_not_null()).then(cap_error),
        details=_with_answers(
            pl.struct(
                lcs_tokens=k.struct.field("lcs_tokens"),
                precision=k.struct.field("precision"),
                recall=k.struct.field("recall"),
                raw_score=score,
                clamped_score=score,
            ),
            pl.struct(
                best_answer=k.struct.field("best"),
                lcs_tokens=k.struct.field("lcs_tokens"),
                precision=k.struct.field("precision"),
                recall=k.struct.field("recall"),
                raw_score=score,
                clamped_score=score,
            ),
        ),
        prepare={"rouge-l__kernel": _rouge_kernel(beta, max_tokens)},
    )


def _rouge_family(
    name: str,
    compute: Callable[[pl.Series, pl.Series], pl.DataFrame],
    units: str,
    max_tokens: int,
) -> Scored:
    """Score, error and details of rouge-1, rouge-2 or rouge-lsum (``_rouge.ROUGE_FIELDS``)."""
    from evalframe.metrics._rouge import ROUGE_FIELDS

    bad, message = type_error(name)
    bad = bad & _acceptable().is_null()
    column = f"{name}__kernel"
    k = pl.col(column)
    over, cap_error = _cap_error(name, max_tokens, k)
    score = k.struct.field("score")
    plain = [
        k.struct.field("matches").alias(units),
        *(k.struct.field(f) for f in ("expected_units", "actual_units", "precision", "recall")),
    ]
    return Scored(
        score=pl.when(bad).then(None).otherwise(score),
        error=pl.when(bad).then(message).when(over.is_not_null()).then(cap_error),
        details=_with_answers(
            pl.struct(plain), pl.struct(k.struct.field("best").alias("best_answer"), *plain)
        ),
        prepare={column: _best_pair(compute, ROUGE_FIELDS)},
    )


_BETA = Annotated[float, Range(gt=0, le=1e6)]
_MAX_TOKENS = Annotated[int, Range(ge=1)]


def _rouge_n(n: int, beta: float, max_tokens: int) -> Scored:
    from evalframe.metrics._rouge import rouge_n

    return _rouge_family(
        f"rouge-{n}",
        lambda e, a: rouge_n(e, a, n=n, beta=beta, max_tokens=max_tokens),
        "overlap",
        max_tokens,
    )


@metric("rouge-1", family="lexical", derived=_answers_derived)
def rouge_1(*, beta: _BETA = 1.0, max_tokens: _MAX_TOKENS = 1024) -> Scored:
    """ROUGE-1: the F-measure of the tokens the output shares with the expected text.

    Tokens as for rouge-l. With ``overlap`` the shared tokens counted with multiplicity
    (``sum over tokens t of min(count_expected(t), count_actual(t))``), P = overlap /
    |actual| and R = overlap / |expected|, the score is (1+β²)PR / (R + β²P). Both sides
    empty score 1.0, one side empty 0.0. Agrees with Google's ``rouge-score`` ``rouge1`` on
    ASCII text without stemming. A field with more than ``max_tokens`` tokens is that
    sample's error; with any-of answers, the best over the acceptable answers.

    Examples:
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records([
        ...     {"id": "q1", "input": {"q": "Where?"}, "expected_output": "the cat sat on the mat"},
        ...     {"id": "q2", "input": {"q": "Who?"}, "expected_output": "a dog"}], name="demo")
        >>> run = ef.evaluate(ds, outputs={"q1": "the cat on the mat", "q2": "no idea"},
        ...                   metrics=["rouge-1"])
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        q1 0.9090909090909091 {"overlap":5,"expected_units":6,"actual_units":5,"precision":1.0,"recall":0.8333333333333334}
        q2 0.0 {"overlap":0,"expected_units":2,"actual_units":2,"precision":0.0,"recall":0.0}
    """  # noqa: E501
    return _rouge_n(1, beta, max_tokens)


@metric("rouge-2", family="lexical", derived=_answers_derived)
def rouge_2(*, beta: _BETA = 1.0, max_tokens: _MAX_TOKENS = 1024) -> Scored:
    """ROUGE-2: the F-measure of the token bigrams the output shares with the expected text.

    As rouge-1 over adjacent token pairs: P = overlap / max(actual bigrams, 1), R = overlap
    / max(expected bigrams, 1), so a one-token text (no bigram) scores 0.0 against any
    other non-empty text, as in ``rouge-score``'s ``rouge2``; both sides empty score 1.0.

    Examples:
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records([
        ...     {"id": "q1", "input": {"q": "Where?"}, "expected_output": "the cat sat on the mat"},
        ...     {"id": "q2", "input": {"q": "Who?"}, "expected_output": "a dog"}], name="demo")
        >>> run = ef.evaluate(ds, outputs={"q1": "the cat on the mat", "q2": "a dog"},
        ...                   metrics=["rouge-2"])
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        q1 0.6666666666666665 {"overlap":3,"expected_units":5,"actual_units":4,"precision":0.75,"recall":0.6}
        q2 1.0 {"overlap":1,"expected_units":1,"actual_units":1,"precision":1.0,"recall":1.0}
    """  # noqa: E501
    return _rouge_n(2, beta, max_tokens)


@metric("rouge-lsum", family="lexical", derived=_answers_derived)
def rouge_lsum(*, beta: _BETA = 1.0, max_tokens: _MAX_TOKENS = 1024) -> Scored:
    r"""ROUGE-Lsum: the summary-level LCS F-measure, sentences split at line feeds.

    Both texts are split into sentences at line feeds (empty lines dropped). For each
    expected sentence, the union of the tokens its longest common subsequence with every
    output sentence covers; each covered token is a hit while both texts have an unused
    occurrence of it. P = hits / |actual|, R = hits / |expected|, the score their
    F-measure as for rouge-l (which it equals on one-line texts). Agrees with
    ``rouge-score``'s ``rougeLsum`` (newline-split sentences) on ASCII text.

    Examples:
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records([
        ...     {"id": "q1", "input": {"q": "Sum up"}, "expected_output": "the cat sat\non the mat"},
        ...     {"id": "q2", "input": {"q": "Sum up"}, "expected_output": "rain today"}], name="demo")
        >>> run = ef.evaluate(ds, outputs={"q1": "the cat\nsat on a mat", "q2": "sun"},
        ...                   metrics=["rouge-lsum"])
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        q1 0.8333333333333334 {"lcs_hits":5,"expected_units":6,"actual_units":6,"precision":0.8333333333333334,"recall":0.8333333333333334}
        q2 0.0 {"lcs_hits":0,"expected_units":2,"actual_units":1,"precision":0.0,"recall":0.0}
    """  # noqa: E501
    from evalframe.metrics._rouge import rouge_lsum as lsum

    return _rouge_family(
        "rouge-lsum",
        lambda e, a: lsum(e, a, beta=beta, max_tokens=max_tokens),
        "lcs_hits",
        max_tokens,
    )
