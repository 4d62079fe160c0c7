"""citation-groundedness: are the required citations, and their evidence, in
the output?

Marker mode reads ``metadata.citations`` (a string or a list of strings): the score is the
fraction of markers found in the output as raw, case-sensitive substrings. Evidence mode, chosen
whenever the key ``metadata.citation_evidence`` exists, reads a list of spans
``{citation, quote | quotes}``: a span counts when its citation is present and at least one of
its quotes occurs in the output after normalisation (trim, Unicode lowercase, whitespace runs
collapsed to one space).

Details and error messages hold counts and positions only, never marker or quote text: the
evidence may be confidential, and scores travel to reports and the store.
"""

from __future__ import annotations

import json
from typing import Any, Final

import polars as pl

from evalframe.core import schema as C
from evalframe.metrics._batched import batched, sample_error
from evalframe.metrics._registry import metric
from evalframe.metrics._spec import Scored

__all__ = ["citation_groundedness"]

PHP_WHITESPACE: Final = " \t\n\r\0\x0b"
_SUFFIX = " for citation-groundedness metric."
NO_CITATIONS = "metadata.citations must contain at least one citation string" + _SUFFIX
NO_SPANS = "metadata.citation_evidence must be a non-empty list of evidence spans."

_SPAN = pl.Struct({"citation": pl.String, "quotes": pl.List(pl.String)})
_PARSED = pl.Schema(
    [
        ("metadata", pl.String()),
        ("mode", pl.String()),
        ("problem", pl.String()),
        ("markers", pl.List(pl.String)),
        ("spans", pl.List(_SPAN)),
    ]
)


def _items(value: Any) -> list[Any] | None:
    """The items of a PHP array: a JSON list's items or a JSON object's values."""
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        return list(value.values())
    return None


def _is_list(value: Any) -> bool:
    """Whether PHP sees the value as a list (a JSON array, or an object keyed 0..n-1)."""
    if isinstance(value, list):
        return True
    return isinstance(value, dict) and list(value) == [str(i) for i in range(len(value))]


def _blank(value: Any) -> bool:
    return not isinstance(value, str) or not value.strip(PHP_WHITESPACE)


def _surrogates(text: str) -> bool:
    return any("\ud800" <= ch <= "\udfff" for ch in text)


def _markers(value: Any) -> tuple[list[str], str | None]:
    items = [value] if isinstance(value, str) else (_items(value) or [])
    markers = list(
        dict.fromkeys(
            s.strip(PHP_WHITESPACE) for s in items if isinstance(s, str) and s.strip(PHP_WHITESPACE)
        )
    )
    return markers, None if markers else NO_CITATIONS


def _spans(value: Any) -> tuple[list[dict[str, Any]], str | None]:
    if not _is_list(value) or not value:
        return [], NO_SPANS
    spans = []
    for i, span in enumerate(_items(value) or []):
        at = f"metadata.citation_evidence[{i}]"
        if not isinstance(span, dict):
            return [], f"{at} must be an object with citation and quote fields."
        if _blank(span.get("citation")):
            return [], f"{at}.citation must be a non-empty string" + _SUFFIX
        quotes = []
        quote = span.get("quote")
        if quote is not None:
            if _blank(quote):
                return [], f"{at}.quote must be a non-empty string" + _SUFFIX
            quotes.append(quote)
        many = span.get("quotes")
        if many is not None:
            if not _is_list(many):
                return [], f"{at}.quotes must be a list of non-empty strings" + _SUFFIX
            for j, q in enumerate(_items(many) or []):
                if _blank(q):
                    return [], f"{at}.quotes[{j}] must be a non-empty string" + _SUFFIX
                quotes.append(q)
        if not quotes:
            return [], f"{at} must contain a non-empty quote string or quotes list."
        citation = span["citation"].strip(PHP_WHITESPACE)
        trimmed = list(dict.fromkeys(q.strip(PHP_WHITESPACE) for q in quotes))
        if _surrogates(citation) or any(_surrogates(q) for q in trimmed):
            return [], f"{at} must be valid UTF-8" + _SUFFIX
        spans.append({"citation": citation, "quotes": trimmed})
    return spans, None


def parse_citation_metadata(text: str) -> dict[str, Any]:
    """Read one metadata JSON text: its mode, problem (after ``Sample '<id>' ``), markers, spans."""
    try:
        metadata = json.loads(text)
    except ValueError:
        metadata = {}
    if not isinstance(metadata, dict):
        metadata = {}
    if "citation_evidence" in metadata:
        spans, problem = _spans(metadata["citation_evidence"])
        return {"mode": "citation_evidence", "problem": problem, "markers": None, "spans": spans}
    markers, problem = _markers(metadata.get("citations"))
    return {"mode": "citations", "problem": problem, "markers": markers, "spans": None}


def normalise_quote(text: pl.Expr) -> pl.Expr:
    """Trim (ASCII), Unicode lowercase, then collapse each run of whitespace to one space."""
    return text.str.strip_chars(PHP_WHITESPACE).str.to_lowercase().str.replace_all(r"\s+", " ")


def _parse(metadata: pl.Series) -> pl.DataFrame:
    """Parse each distinct metadata text once (metadata is per sample configuration)."""
    distinct = metadata.unique().drop_nulls()
    parsed = []
    for text in distinct:
        if "citation" in text:
            parsed.append({"metadata": text, **parse_citation_metadata(text)})
        else:
            parsed.append(
                {
                    "metadata": text,
                    "mode": "citations",
                    "problem": NO_CITATIONS,
                    "markers": None,
                    "spans": None,
                }
            )
    return pl.DataFrame(parsed, schema=_PARSED)


def _kernel(frame: pl.DataFrame) -> pl.DataFrame:
    rows = frame.with_row_index("row").with_columns(pl.col("metadata").fill_null("{}"))
    rows = rows.join(
        _parse(rows.get_column("metadata")), on="metadata", how="left", maintain_order="left"
    )
    markers = (
        rows.select("row", "actual", marker="markers")
        .explode("marker", empty_as_null=False, keep_nulls=False)
        .group_by("row")
        .agg(
            pl.len().alias("required"),
            pl.col("actual").str.contains(pl.col("marker"), literal=True).sum().alias("matched"),
        )
    )
    spans = (
        rows.select("row", "actual", span="spans")
        .with_columns(span_index=pl.int_ranges(pl.col("span").list.len().fill_null(0)))
        .explode("span", "span_index", empty_as_null=False, keep_nulls=False)
        .unnest("span")
        .with_columns(
            cited=pl.col("actual").str.contains(pl.col("citation"), literal=True),
            haystack=normalise_quote(pl.col("actual")),
        )
        .explode("quotes", empty_as_null=False, keep_nulls=False)
        .with_columns(
            quoted=pl.col("haystack").str.contains(normalise_quote(pl.col("quotes")), literal=True)
        )
        .group_by("row", "span_index")
        .agg(pl.col("cited").first(), pl.col("quoted").any())
        .group_by("row")
        .agg(
            pl.len().alias("spans_required"),
            (pl.col("cited") & pl.col("quoted")).sum().alias("spans_matched"),
            (~pl.col("cited")).sum().alias("missing_citation"),
            (~pl.col("quoted")).sum().alias("missing_quote"),
        )
    )
    joined = rows.join(markers, on="row", how="left", maintain_order="left").join(
        spans, on="row", how="left", maintain_order="left"
    )
    evidence = pl.col("mode") == "citation_evidence"
    return joined.select(
        "mode",
        "problem",
        required=pl.when(evidence).then("spans_required").otherwise("required"),
        matched=pl.when(evidence).then("spans_matched").otherwise("matched"),
        missing_citation=pl.when(evidence)
        .then("missing_citation")
        .otherwise(pl.col("required") - pl.col("matched")),
        missing_quote=pl.when(evidence).then("missing_quote"),
    )


@metric("citation-groundedness", family="citation", dimension="groundedness")
def citation_groundedness() -> Scored:
    """The fraction of required citations (marker mode) or evidence spans found in the output.

    Marker mode: score = |markers present| / |markers|, a marker being present when it occurs
    as a raw, case-sensitive substring. Evidence mode: score = |spans matched| / |spans|, a span
    matching when its citation is present and any of its quotes occurs in the normalised
    output. ``expected_output`` is ignored. Codomain [0, 1]; null (an error) when the metadata
    lists no usable citation, or an evidence span is malformed.

    Examples:
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records([
        ...     {"id": "q1", "input": {"q": "Return window?"}, "expected_output": "",
        ...      "metadata": {"citations": ["[1]", "[2]"]}}], name="demo")
        >>> run = ef.evaluate(ds, outputs={"q1": "Returns are accepted within 30 days [1]."},
        ...                   metrics=["citation-groundedness"])
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        q1 0.5 {"mode":"citations","required_citation_count":2,"matched_citation_count":1,"missing_citation_count":1}
    """  # noqa: E501
    k = pl.col("citation-groundedness__counts")
    mode, problem = k.struct.field("mode"), k.struct.field("problem")
    required, matched = k.struct.field("required"), k.struct.field("matched")
    missing_citation = k.struct.field("missing_citation")
    markers = pl.struct(
        mode=mode,
        required_citation_count=required,
        matched_citation_count=matched,
        missing_citation_count=missing_citation,
    ).struct.json_encode()
    evidence = pl.struct(
        mode=mode,
        required_evidence_count=required,
        matched_evidence_count=matched,
        missing_citation_count=missing_citation,
        missing_quote_count=k.struct.field("missing_quote"),
    ).struct.json_encode()
    error = pl.when(problem.is_not_null()).then(sample_error("{}", problem))
    return Scored(
        score=pl.when(error.is_null()).then(matched.cast(pl.Float64) / required),
        error=error,
        details=pl.when(error.is_null()).then(
            pl.when(mode == "citations").then(markers).otherwise(evidence)
        ),
        prepare={
            "citation-groundedness__counts": batched(
                _kernel,
                {"metadata": pl.col(C.METADATA), "actual": pl.col(C.ACTUAL_OUTPUT)},
                {
                    "mode": pl.String,
                    "problem": pl.String,
                    "required": pl.Int64,
                    "matched": pl.Int64,
                    "missing_citation": pl.Int64,
                    "missing_quote": pl.Int64,
                },
            )
        },
    )
