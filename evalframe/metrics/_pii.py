"""The built-in PII and secret detector behind ``pii-leak``: whole-column regexes and checksums.

``detect(texts)`` finds entities in a String Series and returns one row per entity: the row
it came from, its type and its span (``start``, ``end``, character offsets as Python's
``str`` slicing counts them). It never returns the matched values.

How it works, all as Polars operations over whole columns:

1. One combined regex (every entity type's candidate pattern, in priority order, as one
   alternation) keeps only the rows with a candidate (``str.contains``).
2. On those rows, ``str.extract_all`` gives the candidates and ``str.replace_all`` plus
   ``str.split`` the text between them; their character lengths, summed in order, are the
   spans. (Both scan leftmost-first without overlaps, so they see the same candidates.)
3. Each candidate is classified by the first type whose pattern matches it whole, and
   checked by that type's rule: the Luhn checksum for payment cards, ISO 13616 mod-97 for
   IBANs, the SSA's area/group/serial rules for US SSNs, the HMRC prefix rules for UK NINOs,
   the mod-23 check letter for Spanish DNI/NIE numbers, octet ranges for IPv4, group rules
   for IPv6, digit counts for phone numbers, Shannon entropy for unprefixed secrets.
   Candidates that fail their check are dropped (a 16-digit number failing Luhn is not a
   card).

The types (``ENTITY_TYPES``) and their rules are documented in ``docs/metrics/safety.md``.
"""

from __future__ import annotations

import math
from typing import Final

import polars as pl

__all__ = ["ENTITY_SCHEMA", "ENTITY_TYPES", "detect"]

_SENTINEL: Final = "\x00"
_SENTINEL_STANDIN: Final = "\x01"

# Candidate patterns (Rust regex syntax), highest priority first. At a given start the first
# alternative that matches wins, so specific shapes come before looser ones.
_PATTERNS: Final[dict[str, str]] = {
    "PRIVATE_KEY": (
        r"-----BEGIN (?:RSA |EC |DSA |OPENSSH |PGP |ENCRYPTED )?PRIVATE KEY(?: BLOCK)?-----"
    ),
    "API_KEY": (
        r"\b(?:"
        r"(?:AKIA|ASIA)[0-9A-Z]{16}"  # AWS access key id
        r"|gh[pousr]_[A-Za-z0-9]{36,255}"  # GitHub tokens
        r"|github_pat_[A-Za-z0-9_]{22,255}"  # GitHub fine-grained token
        r"|xox[abposr]-[A-Za-z0-9-]{10,250}"  # Slack
        r"|[sr]k_(?:live|test)_[A-Za-z0-9]{16,247}"  # Stripe
        r"|sk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,250}"  # OpenAI, Anthropic
        r"|AIza[0-9A-Za-z_-]{35}"  # Google API key
        r"|glpat-[A-Za-z0-9_-]{20}"  # GitLab
        r"|eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"  # JWT
        r")"
    ),
    "EMAIL": r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*\.[A-Za-z]{2,24}\b",
    "IBAN": r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b",
    "UK_NINO": r"\b[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?\d{2} ?\d{2} ?\d{2} ?[A-D]\b",
    "ES_DNI": r"\b(?:\d{8}|[XYZ]\d{7})-?[A-Z]\b",
    "US_SSN": r"\b\d{3}-\d{2}-\d{4}\b",
    "CREDIT_CARD": r"\b\d(?:[ -]?\d){12,18}\b",
    "IPV4": r"\b\d{1,3}(?:\.\d{1,3}){3,}\b",
    "IPV6": r"\b[0-9A-Fa-f]{1,4}(?::[0-9A-Fa-f]{0,4}){2,7}",
    "PHONE": r"\+\d{1,3}[ .-]?(?:\(\d{1,4}\)[ .-]?)?\d{1,4}(?:[ .-]?\d{2,4}){1,4}\b"
    r"|(?:\(\d{3}\)|\b\d{3})[ .-]?\d{3}[ .-]\d{4}\b",
    "SECRET": r"\b[A-Za-z0-9+/_-]{20,}={0,2}",
}

ENTITY_TYPES: Final = tuple(_PATTERNS)
"""Every entity type the built-in detector reports, highest priority first."""

ENTITY_SCHEMA: Final = pl.Struct({"type": pl.String, "start": pl.Int64, "end": pl.Int64})
"""One detected entity: its type and its ``[start, end)`` character span."""

_COMBINED: Final = "|".join(f"(?:{p})" for p in _PATTERNS.values())

# 10**k mod 97, for the IBAN checksum as a weighted sum (an IBAN has at most 68 digits).
_POW10_MOD97: Final = {k: pow(10, k, 97) for k in range(80)}
_IBAN_VALUE: Final = {
    **{str(d): d for d in range(10)},
    **{chr(ord("A") + i): 10 + i for i in range(26)},
}
_DNI_LETTERS: Final = "TRWAGMYFPDXBNJZSQVHLCKE"
_NINO_BAD_PREFIXES: Final = ("BG", "GB", "NK", "KN", "TN", "NT", "ZZ")


def _digits(expr: pl.Expr) -> pl.Expr:
    """The candidate's decimal digits as a list of integers."""
    return expr.str.replace_all(r"\D", "").str.split("").list.eval(pl.element().cast(pl.Int64))


def _luhn(expr: pl.Expr) -> pl.Expr:
    """Luhn checksum: from the right, double every second digit (minus 9 above 9); sum % 10 == 0."""
    doubled = pl.element() * 2
    weighted = (
        pl.when(pl.int_range(pl.len()) % 2 == 1)
        .then(pl.when(doubled > 9).then(doubled - 9).otherwise(doubled))
        .otherwise(pl.element())
    )
    return _digits(expr).list.reverse().list.eval(weighted).list.sum() % 10 == 0


def _iban_ok(expr: pl.Expr) -> pl.Expr:
    """ISO 13616: move the first four characters to the end, letters to 10..35; mod 97 == 1.

    The number is read as the weighted sum of each character's value times ``10**k`` (k
    being the count of decimal digits after it), taken mod 97 term by term.
    """
    compact = expr.str.replace_all(" ", "")
    moved = pl.concat_str(compact.str.slice(4), compact.str.slice(0, 4))
    values = moved.str.split("").list.eval(
        pl.element().replace_strict(_IBAN_VALUE, return_dtype=pl.Int64)
    )
    term = pl.element().struct.field("v") * pl.element().struct.field("w")
    weighted = values.list.eval(
        pl.struct(
            v=pl.element(),
            w=(
                (pl.when(pl.element() >= 10).then(2).otherwise(1)).cum_sum(reverse=True)
                - pl.when(pl.element() >= 10).then(2).otherwise(1)
            ).replace_strict(_POW10_MOD97, return_dtype=pl.Int64),
        )
    )
    total = weighted.list.eval(term).list.sum()
    length = compact.str.len_chars()
    return (total % 97 == 1) & length.is_between(15, 34)


def _ssn_ok(expr: pl.Expr) -> pl.Expr:
    """SSA rules: area not 000, 666 or 900-999; group not 00; serial not 0000."""
    area = expr.str.slice(0, 3).cast(pl.Int64)
    group = expr.str.slice(4, 2)
    serial = expr.str.slice(7, 4)
    return (
        (area != 0)
        & (area != 666)
        & (area < 900)
        & (group != "00")
        & (serial != "0000")
        & ~expr.is_in(["078-05-1120", "219-09-9999"])  # published in advertising
    )


def _nino_ok(expr: pl.Expr) -> pl.Expr:
    """HMRC format (letters checked by the pattern) minus the prefixes never issued."""
    return ~expr.str.slice(0, 2).is_in(list(_NINO_BAD_PREFIXES))


def _dni_ok(expr: pl.Expr) -> pl.Expr:
    """Spanish DNI/NIE: the letter is ``TRWAGMYFPDXBNJZSQVHLCKE[number % 23]``.

    For a NIE the leading X, Y or Z counts as 0, 1 or 2.
    """
    compact = expr.str.replace_all("-", "")
    number = (
        compact.str.slice(0, compact.str.len_chars() - 1)
        .str.replace("^X", "0")
        .str.replace("^Y", "1")
        .str.replace("^Z", "2")
        .cast(pl.Int64)
    )
    letter = compact.str.slice(-1)
    expected = (number % 23).replace_strict(dict(enumerate(_DNI_LETTERS)), return_dtype=pl.String)
    return letter == expected


def _ipv4_ok(expr: pl.Expr) -> pl.Expr:
    """Exactly four dotted parts, each 0-255 without a leading zero."""
    parts = expr.str.split(".")
    good_part = pl.element().cast(pl.Int64).le(255) & (
        (pl.element().str.len_chars() == 1) | ~pl.element().str.starts_with("0")
    )
    return (parts.list.len() == 4) & parts.list.eval(good_part).list.all()


def _ipv6_ok(expr: pl.Expr) -> pl.Expr:
    """Eight groups, or at most seven around one ``::``; a digit in it; no MAC or clock times.

    A candidate with ``::`` needs at least two non-empty groups and a decimal digit, so
    ``std::vector`` or ``dead::beef`` in code do not count.
    """
    groups = expr.str.split(":")
    nonempty = groups.list.eval(pl.element().str.len_chars() > 0).list.sum()
    compressed = expr.str.count_matches("::", literal=True)
    has_digit = expr.str.contains(r"\d")
    no_triple = ~expr.str.contains(":::", literal=True)
    full = (compressed == 0) & (groups.list.len() == 8) & (nonempty == 8)
    short = (compressed == 1) & nonempty.is_between(2, 7) & has_digit
    return no_triple & (full | short)


def _phone_ok(expr: pl.Expr) -> pl.Expr:
    """International (``+``): 8 to 15 digits (E.164); North American: area and exchange 2-9."""
    digits = expr.str.replace_all(r"\D", "")
    n = digits.str.len_chars()
    international = expr.str.starts_with("+") & n.is_between(8, 15)
    nanp = (
        ~expr.str.starts_with("+")
        & (n == 10)
        & digits.str.slice(0, 1).is_in(list("23456789"))
        & digits.str.slice(3, 1).is_in(list("23456789"))
    )
    return international | nanp


def _card_ok(expr: pl.Expr) -> pl.Expr:
    """13 to 19 digits, a major network's first digit (2-6), and the Luhn checksum."""
    digits = expr.str.replace_all(r"\D", "")
    return (
        digits.str.len_chars().is_between(13, 19)
        & digits.str.slice(0, 1).is_in(list("23456"))
        & _luhn(expr)
    )


def _secret_ok(expr: pl.Expr, min_entropy: float) -> pl.Expr:
    """Letters and digits mixed, not hexadecimal only, Shannon entropy >= ``min_entropy``."""
    entropy = (
        expr.str.split("").list.eval(pl.element().unique_counts().entropy(base=2.0)).list.first()
    )
    return (
        expr.str.contains("[A-Za-z]")
        & expr.str.contains("[0-9]")
        & ~expr.str.contains(r"^[0-9a-fA-F-]+$")
        & (entropy >= min_entropy)
    )


def _valid(type_: pl.Expr, value: pl.Expr, min_entropy: float) -> pl.Expr:
    checks = {
        "IBAN": _iban_ok(value),
        "UK_NINO": _nino_ok(value),
        "ES_DNI": _dni_ok(value),
        "US_SSN": _ssn_ok(value),
        "CREDIT_CARD": _card_ok(value),
        "IPV4": _ipv4_ok(value),
        "IPV6": _ipv6_ok(value),
        "PHONE": _phone_ok(value),
        "SECRET": _secret_ok(value, min_entropy),
    }
    out = pl.lit(True)
    for name, ok in checks.items():
        out = pl.when(type_ == name).then(ok.fill_null(False)).otherwise(out)
    return out


def _classify(value: pl.Expr) -> pl.Expr:
    out = pl.lit(None, pl.String)
    for name in reversed(ENTITY_TYPES):
        out = (
            pl.when(value.str.contains(f"^(?:{_PATTERNS[name]})$"))
            .then(pl.lit(name))
            .otherwise(out)
        )
    return out


def detect(
    texts: pl.Series,
    *,
    entities: tuple[str, ...] = ENTITY_TYPES,
    min_entropy: float = 4.0,
) -> pl.DataFrame:
    """Entities found in ``texts``: one row each, ``row`` (UInt32), ``type``, ``start``, ``end``.

    ``row`` indexes ``texts``; spans are character offsets. Null texts have none. Rows come
    out in text order, and in span order within a text.

    Examples:
        >>> import polars as pl
        >>> detect(pl.Series(["mail jo@example.com", "card 4111 1111 1111 1112"]))
        shape: (1, 4)
        ┌─────┬───────┬───────┬─────┐
        │ row ┆ type  ┆ start ┆ end │
        │ --- ┆ ---   ┆ ---   ┆ --- │
        │ u32 ┆ str   ┆ i64   ┆ i64 │
        ╞═════╪═══════╪═══════╪═════╡
        │ 0   ┆ EMAIL ┆ 5     ┆ 19  │
        └─────┴───────┴───────┴─────┘
    """
    empty = pl.DataFrame(
        schema={"row": pl.UInt32, "type": pl.String, "start": pl.Int64, "end": pl.Int64}
    )
    if not math.isfinite(min_entropy):
        raise ValueError(f"min_entropy must be a finite number; got {min_entropy}.")
    frame = pl.DataFrame({"text": texts.cast(pl.String)}).with_row_index("row")
    hits = frame.filter(pl.col("text").str.contains(_COMBINED).fill_null(False))
    if hits.height == 0:
        return empty
    # The sentinel marks where candidates were; a text's own sentinels become another
    # single character first, so lengths (and candidates) are unchanged.
    text = pl.col("text").str.replace_all(_SENTINEL, _SENTINEL_STANDIN, literal=True)
    pieces = hits.select(
        "row",
        found=text.str.extract_all(_COMBINED),
        gaps=text.str.replace_all(_COMBINED, _SENTINEL).str.split(_SENTINEL),
    )
    found = pieces.select("row", "found").explode("found")
    # Each text has one more gap than candidates: drop the last one of every text.
    gaps = (
        pieces.select("row", gaps=pl.col("gaps").list.head(pl.col("gaps").list.len() - 1))
        .explode("gaps")
        .select(gap=pl.col("gaps").str.len_chars().cast(pl.Int64))
    )
    flat = pl.concat([found, gaps], how="horizontal").with_columns(
        length=pl.col("found").str.len_chars().cast(pl.Int64)
    )
    spans = flat.with_columns(
        start=(pl.col("gap").cum_sum() + pl.col("length").cum_sum() - pl.col("length")).over("row"),
    ).with_columns(end=pl.col("start") + pl.col("length"), type=_classify(pl.col("found")))
    kept = spans.filter(
        pl.col("type").is_in(list(entities)) & _valid(pl.col("type"), pl.col("found"), min_entropy)
    )
    return kept.select("row", "type", "start", "end") if kept.height else empty
