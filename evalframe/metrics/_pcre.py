"""PCRE bodies read token by token, as Polars expressions: what Rust's regex would misread.

The ``regex`` metric runs PCRE-style patterns on Rust's ``regex`` crate (through Polars). Most
syntax means the same in both; some is accepted by both with different meanings (``a++`` is
possessive in PCRE and ``(a+)+`` in Rust; ``[a&&b]`` is three characters in PCRE and an
intersection in Rust; ``\\v`` is any vertical space in PCRE and only U+000B in Rust), and some
PCRE syntax Rust lacks. Both kinds are found here, and named, on the patterns' tokens: one
``str.extract_all`` per column, exploded to one token per row so every rule is one vectorized
expression; a few constructs are rewritten instead:

* ``$`` (without the ``m`` or ``D`` modifiers) and ``\\Z`` match at the end *or before a final
  newline* in PCRE; Rust's ``$`` only at the end. Both become ``(?:\\n?\\z)``, which consumes
  that newline, so they must end their branch (nothing but ``)``, ``|`` or another end
  assertion may follow).
* POSIX classes inside brackets are ASCII in Rust and Unicode in PCRE's ``/u`` mode (which
  evalframe always uses): ``[[:alpha:]]`` becomes ``[[\\p{L}]]``.
"""

from __future__ import annotations

from typing import Final

import polars as pl

__all__ = ["analyse"]

_CLASS_ITEM: Final = (
    r"\[:\^?[A-Za-z]*:\]|\[\.[^\]]*\.\]|\[=[^\]]*=\]|\\Q(?s:.*?)(?:\\E|\z)|\\(?s:.)|[^\]]"
)
_TOKEN: Final = "|".join(
    [
        r"\\Q(?s:.*?)(?:\\E|\z)",  # \Q...\E quoting
        r"\\[pPxoNgkb]\{[^}]*\}",  # braced escapes: \p{L}, \x{41}, \g{1}, \b{start}
        r"\\[gk](?:<[^>]*>|'[^']*'|[+-]?[0-9]+)",  # \g1, \k<name>
        r"\\[pP][^{]",  # \pL
        r"\\c(?s:.)",  # control characters
        r"\\(?s:.)",  # any other escape
        rf"\[\^?\]?(?:{_CLASS_ITEM})*\]",  # a character class, as PCRE delimits it
        r"\(\*[^)]*\)",  # (*VERB)
        r"\(\?(?:#[^)]*\)|P?<[=!]?|P[=>]|'|[^A-Za-z^:)\-]|[A-Za-z^\-]*[:)])",  # group openers
        r"\{[0-9,\s]*\}",  # braces that may be a quantifier
        r"(?s:.)",
    ]
)
# In extended mode (x), "#" starts a comment that runs to the end of the line.
_TOKEN_X: Final = r"\#[^\n]*|\s+|" + _TOKEN

_QUANTIFIER: Final = r"^(?:[*+?]|\{[0-9]+(?:,[0-9]*)?\})$"
_END: Final = "(?:\n?\\z)"

# PCRE /u (UTF + UCP) meanings of POSIX classes, as Rust nested classes.
_POSIX: Final = {
    "alpha": r"\p{L}",
    "alnum": r"\p{L}\p{N}",
    "digit": r"\p{Nd}",
    "lower": r"\p{Ll}",
    "upper": r"\p{Lu}",
    "space": r"\p{Z}\t\n\x0B\f\r",
    "word": r"\p{L}\p{N}_",
    "cntrl": r"\p{Cc}",
    "xdigit": r"0-9A-Fa-f",
    "ascii": r"\x00-\x7F",
}


_DOLLAR_FOLLOWED: Final = (
    "$ followed by more pattern (PCRE's $ also matches before a final newline)"
)
_KNOWN_POSIX: Final = r"\[:\^?(?:" + "|".join(_POSIX) + r"):\]"


def _escape_rule(tok: pl.Expr) -> pl.Expr:
    """The message for an escape or group opener Rust does not read as PCRE does."""
    rules: list[tuple[str, str]] = [
        (r"^\\[QE]", r"\Q...\E quoting"),
        (r"^\\K$", r"\K (resetting the match start)"),
        (r"^\\G$", r"\G (the end of the previous match)"),
        (r"^\\[hH]$", r"\h and \H (horizontal space)"),
        (r"^\\[vV]$", r"\v and \V (PCRE: any vertical space; Rust: U+000B only)"),
        (r"^\\R$", r"\R (any newline sequence)"),
        (r"^\\X$", r"\X (an extended grapheme cluster)"),
        (r"^\\[NC]", r"\N and \C"),
        (r"^\\[uUlL]", r"\u, \U, \l and \L (not PCRE escapes; Rust reads \u as a code point)"),
        (r"^\\[<>]$", r"\< and \> (literal in PCRE, word boundaries in Rust)"),
        (r"^\\b\{", r"\b{...} (a Rust-only word boundary)"),
        (r"^\\0|^\\o\{", r"an octal escape (\0, \012, \o{...})"),
        (r"^\\[1-9]|^\\[gk]", r"a backreference or octal escape (\1, \101, \g{1}, \k<n>)"),
        (r"^\\e$|^\\c", r"\e and \cX (control characters)"),
        (r"^\\[pP]\{\^", r"a negated property \p{^...} (write \P{...})"),
        (
            r"^\\[pP]\{(?:[^}]*[^A-Za-z_}][^}]*|[a-z][^}]*)\}$",
            r"a Unicode property PCRE does not spell so (use \p{L}, \p{Lu}, \p{Greek})",
        ),
        (r"^\(\?>", "an atomic group (?>...)"),
        (r"^\(\?\|", "a branch reset group (?|...)"),
        (r"^\(\?\($", "a conditional group (?(...)...)"),
        (r"^\(\?(?:R\)|[+\-]?[0-9]|&|P>)", "recursion or a subroutine call ((?R), (?1), (?&name))"),
        (r"^\(\?P=", "a backreference (?P=name)"),
        (r"^\(\?(?:[=!]|<[=!])", "look-around ((?=...), (?!...), (?<=...), (?<!...))"),
        (r"^\(\?#", "a comment group (?#...)"),
        (r"^\(\?'", "a named group spelt (?'name'...) (write (?<name>...))"),
        (r"^\(\*", "a verb (*...)"),
        (r"^\{.*\s.*\}$", "a brace quantifier with spaces ({ 1 }: literal in PCRE)"),
    ]
    out = pl.lit(None, pl.String)
    for pattern, message in reversed(rules):
        out = pl.when(tok.str.contains(pattern)).then(pl.lit(message)).otherwise(out)
    # An inline x could be scoped to a group, so the whitespace it drops is not known here.
    flags = tok.str.contains(r"^\(\?[A-Za-z^\-]*[:)]$") & tok.str.contains(r"[^imsU\-:)(?]")
    message = "an inline flag other than i, m, s, U (use the x modifier for extended mode)"
    return pl.coalesce(out, pl.when(flags).then(pl.lit(message)))


def _class_parts(tok: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """Whether a token is a character class, and its body without POSIX items and escapes."""
    is_class = tok.str.starts_with("[") & tok.str.ends_with("]") & (tok.str.len_chars() > 1)
    bare = tok.str.slice(1).str.replace(r"^\^?\]?", "").str.replace(r"\]$", "")
    bare = bare.str.replace_all(r"\[:\^?[A-Za-z]*:\]|\\Q(?s:.*?)(?:\\E|\z)|\\(?s:.)", "")
    return is_class, bare


def _class_rule(tok: pl.Expr) -> pl.Expr:
    """The message for a character class Rust does not read as PCRE does."""
    is_class, bare = _class_parts(tok)
    unknown = tok.str.replace_all(_KNOWN_POSIX, "").str.contains(r"\[:\^?[A-Za-z]*:\]")
    # Drop the escapes Rust reads as PCRE does, pairwise from the left, then look for the rest.
    odd_escape = tok.str.replace_all(r"\\[^vVhHuUlLRXNCKGEQ]", "").str.contains(
        r"\\[vVhHuUlLRXNCKGEQ]"
    )
    return (
        pl.when(~is_class)
        .then(pl.lit(None, pl.String))
        .when(tok.str.contains(r"^\[([:.=])\^?[A-Za-z]*([:.=])\]$"))
        .then(pl.lit("a POSIX class outside brackets ([:alpha:] is an error in PCRE)"))
        .when(bare.str.contains(r"&&|--|~~"))
        .then(pl.lit("&&, -- or ~~ in a character class (set operations in Rust)"))
        .when(bare.str.contains("[", literal=True))
        .then(pl.lit("a [ inside a character class (a nested class in Rust)"))
        .when(tok.str.contains(r"\[[.=]"))
        .then(pl.lit("a collating element [.a.] or [=a=]"))
        .when(unknown)
        .then(pl.lit("the POSIX classes [:graph:], [:print:], [:punct:] and [:blank:]"))
        .when(odd_escape)
        .then(pl.lit(r"\v, \h, \u, \R, \Q and similar escapes inside a character class"))
    )


def analyse(frame: pl.DataFrame) -> pl.DataFrame:
    """Check and rewrite PCRE pattern bodies for Rust's regex engine.

    Args:
        frame: ``body`` (the pattern between its delimiters), ``extended`` (the x modifier)
            and ``end_rewritten`` (neither the m nor the D modifier), one row per distinct
            pattern.

    Returns:
        Row-aligned ``rewritten`` (the body in Rust's syntax) and ``construct`` (the first
        construct Rust would read differently, named, or null).
    """
    t, row = pl.col("tok"), pl.col("row")
    body = pl.col("body")
    indexed = frame.with_row_index("row")
    long = (
        indexed.select(
            "row",
            "extended",
            "end_rewritten",
            tok=pl.when(pl.col("extended"))
            .then(body.str.extract_all(_TOKEN_X))
            .otherwise(body.str.extract_all(_TOKEN)),
        )
        .explode("tok")
        .drop_nulls("tok")
        # In extended mode whitespace and comments mean nothing to either engine: drop them.
        .filter(~(pl.col("extended") & t.str.contains(r"^(?:\s+|#.*)$")))
        .with_row_index("i")
    )

    # Tokens of one pattern are contiguous: shifts, masked at pattern boundaries.
    def same(k: int) -> pl.Expr:
        return (row.shift(k) == row).fill_null(value=False)

    def quant(k: int) -> pl.Expr:
        return pl.col("q").shift(k).fill_null(value=False) & same(k) if k else pl.col("q")

    def mark(k: int) -> pl.Expr:
        return pl.col("qm").shift(k).fill_null(value=False) & same(k) if k else pl.col("qm")

    def lazy(k: int) -> pl.Expr:  # a "?" making the quantifier before it lazy
        return mark(k) & quant(k + 1) & ~(mark(k + 1) & quant(k + 2))

    # Running sums per pattern without a window: whole-column sums, less each row's offset.
    first = (row != row.shift(1)).fill_null(value=True)
    last = (row != row.shift(-1)).fill_null(value=True)
    opens = t.str.starts_with("(") & ~t.str.contains(r"^\((?:\*|\?#|\?[A-Za-z^\-]*\))")
    step = opens.cast(pl.Int64) - (t == ")").cast(pl.Int64)
    depth = step.cum_sum() - pl.when(first).then(step.cum_sum() - step).forward_fill()
    consumes = (~t.is_in([")", "$", "\\Z", "\\z"])).cast(pl.Int64)
    later = consumes.cum_sum(reverse=True) - consumes
    consumed_after = later - pl.when(last).then(later).backward_fill()
    next_bar = same(-1) & (t.shift(-1) == "|").fill_null(value=False)
    # The end rewrite consumes a final newline, so it is exact only when nothing after it can
    # consume a character: only ")" and end assertions follow it, or "|" at the top level.
    end_ok = (consumed_after == 0) | ((depth == 0) & next_bar)
    ends = (t == "\\Z") | (pl.col("end_rewritten") & (t == "$"))
    long = long.with_columns(q=t.str.contains(_QUANTIFIER), qm=t == "?").with_columns(
        stacked=quant(0) & quant(1) & ~lazy(0),
        end_bad=ends & ~end_ok,
        prev=pl.when(same(1)).then(t.shift(1)),
        special=t.str.contains(r"^[\\({]"),
        is_class=t.str.starts_with("[") & t.str.ends_with("]") & (t.str.len_chars() > 1),
        inline_m=t.str.contains(r"^\(\?[A-Za-z\-]*m[A-Za-z\-]*[:)]$"),
        dollar=t == "$",
        out=pl.when(ends).then(pl.lit(_END)).otherwise(t),
    )
    # The costly per-token rules run only on the tokens they can concern.
    prev = pl.col("prev").fill_null("")
    near = (
        long.filter(pl.col("stacked") | pl.col("end_bad"))
        .rechunk()
        .select(
            "i",
            message=pl.coalesce(
                pl.when(pl.col("end_bad") & (t == "\\Z")).then(
                    pl.lit(r"\Z followed by more pattern")
                ),
                pl.when(pl.col("end_bad")).then(pl.lit(_DOLLAR_FOLLOWED)),
                pl.when(t == "+").then(
                    pl.concat_str(pl.lit("a possessive quantifier ("), prev, pl.lit("+)"))
                ),
                pl.concat_str(pl.lit("a quantifier after a quantifier ("), prev, t, pl.lit(")")),
            ),
        )
    )
    escapes = long.filter("special").select("i", message=_escape_rule(t))
    _, bare = _class_parts(t)
    posix = t
    for name, members in _POSIX.items():
        posix = posix.str.replace_all(f"[:{name}:]", f"[{members}]", literal=True)
        posix = posix.str.replace_all(f"[:^{name}:]", f"[^{members}]", literal=True)
    classes = long.filter("is_class").select(
        "i",
        message=_class_rule(t),
        class_space=pl.col("extended") & bare.str.contains(r"\s"),
        posix=posix,
    )
    messages = pl.concat([near, escapes, classes.select("i", "message")]).drop_nulls("message")
    long = long.join(
        classes.select("i", "posix", "class_space"), on="i", how="left", maintain_order="left"
    ).join(
        messages.group_by("i").agg(pl.col("message").first()),
        on="i",
        how="left",
        maintain_order="left",
    )
    rows = long.group_by("row").agg(
        pl.coalesce("posix", "out").str.join(""),
        pl.col("message").sort_by("i").drop_nulls().first(),
        pl.col("inline_m").any() & pl.col("dollar").any(),
        pl.col("class_space").any(),
    )
    return (
        indexed.select("row")
        .join(rows, on="row", how="left", maintain_order="left")
        .select(
            pl.col("posix").fill_null("").alias("rewritten"),
            pl.coalesce(
                "message",
                pl.when("inline_m").then(pl.lit("$ under an inline (?m) flag")),
                pl.when("class_space").then(
                    pl.lit("whitespace inside a character class in extended mode (x)")
                ),
            ).alias("construct"),
        )
    )
