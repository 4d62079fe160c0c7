"""Canonical column names and dtypes, shared by files, frames, the store and the CLI.

A dataset frame has one row per sample::

    sample_id        Utf8         unique, non-empty
    input            Utf8         the input map as compact JSON (always a JSON object)
    expected_output  Utf8         the expected value: the text itself when it is a string,
                                  otherwise its compact JSON encoding
    expected_type    Utf8         "string", "int", "float", "bool", "null", "list" or "map":
                                  with ``expected_output`` it recovers the value losslessly
    metadata         Utf8         the metadata map as compact JSON (``{}`` when absent)
    tags             List(Utf8)   normalised ``metadata.tags``: trimmed, non-empty, unique
    row_hash         Utf8         content hash of input and expected output (ignores id)

An outputs frame has ``sample_id`` and ``actual_output`` (Utf8), and may carry the
operational columns ``latency_ms``, ``prompt_tokens``, ``completion_tokens``, ``cost_usd``
and ``retries``.

A run's provider usage (``Run.usage``) has one row per provider call, in ``USAGE_SCHEMA``.

Columns that evalframe generates use a double underscore (``actual_output__embedding``)
so they never collide with users' columns.
"""

from __future__ import annotations

from typing import Final, Literal

import polars as pl

__all__ = [
    "ACTUAL_OUTPUT",
    "DATASET_SCHEMA",
    "ERROR",
    "EXPECTED_OUTPUT",
    "EXPECTED_TYPE",
    "INPUT",
    "METADATA",
    "METRIC",
    "OPERATIONAL_COLUMNS",
    "REPETITION",
    "ROW_HASH",
    "RUN_ID",
    "SAMPLE_ID",
    "SCORE",
    "SCORES_SCHEMA",
    "SYSTEM_ERROR",
    "TAGS",
    "USAGE_SCHEMA",
    "ExpectedType",
    "expected_text",
    "metadata_field",
]

SAMPLE_ID: Final = "sample_id"
INPUT: Final = "input"
EXPECTED_OUTPUT: Final = "expected_output"
EXPECTED_TYPE: Final = "expected_type"
METADATA: Final = "metadata"
TAGS: Final = "tags"
ROW_HASH: Final = "row_hash"
ACTUAL_OUTPUT: Final = "actual_output"
SYSTEM_ERROR: Final = "system_error"
RUN_ID: Final = "run_id"
REPETITION: Final = "repetition"
METRIC: Final = "metric"
SCORE: Final = "score"
ERROR: Final = "error"

ExpectedType = Literal["string", "int", "float", "bool", "null", "list", "map"]

DATASET_SCHEMA: Final = pl.Schema(
    {
        SAMPLE_ID: pl.String(),
        INPUT: pl.String(),
        EXPECTED_OUTPUT: pl.String(),
        EXPECTED_TYPE: pl.String(),
        METADATA: pl.String(),
        TAGS: pl.List(pl.String()),
        ROW_HASH: pl.String(),
    }
)

OPERATIONAL_COLUMNS: Final = pl.Schema(
    {
        "latency_ms": pl.Float64(),
        "prompt_tokens": pl.Int64(),
        "completion_tokens": pl.Int64(),
        "cost_usd": pl.Float64(),
        "retries": pl.Int64(),
    }
)

SCORES_SCHEMA: Final = pl.Schema(
    {
        RUN_ID: pl.String(),
        SAMPLE_ID: pl.String(),
        REPETITION: pl.Int64(),
        METRIC: pl.String(),
        SCORE: pl.Float64(),
        "passed": pl.Boolean(),
        ERROR: pl.String(),
        "details": pl.String(),
    }
)

USAGE_SCHEMA: Final = pl.Schema(
    {
        "kind": pl.String(),
        "provider": pl.String(),
        "model": pl.String(),
        "prompt_tokens": pl.Int64(),
        "completion_tokens": pl.Int64(),
        "total_tokens": pl.Int64(),
        "cost_usd": pl.Float64(),
        "cost_source": pl.String(),
        "latency_ms": pl.Float64(),
        "attempts": pl.Int64(),
        "items": pl.Int64(),
        "error": pl.String(),
        "derived": pl.List(pl.String()),
        "started_at": pl.Float64(),
    }
)
"""Provider usage, one row per call. ``kind`` is ``embeddings`` or ``judge``; ``cost_source``
is ``reported``, ``derived``, ``free`` or ``unpriced``. ``derived`` names the figures
evalframe computed itself rather than read from the provider's reply: ``cost_usd`` priced
from the price table (or zero for a local model), and ``latency_ms``, which evalframe always
measures. ``started_at`` is when the call began, in epoch seconds."""


def expected_text() -> pl.Expr:
    """The expected output as text where it is a string, null otherwise."""
    return (
        pl.when(pl.col(EXPECTED_TYPE) == "string")
        .then(pl.col(EXPECTED_OUTPUT))
        .otherwise(pl.lit(None, pl.String))
    )


def metadata_field(path: str) -> pl.Expr:
    """A metadata field as its JSON text (``None`` when absent), e.g. ``metadata_field("k")``.

    Strings come back unquoted, as Polars' ``json_path_match`` gives them; decode the
    rest with ``str.json_decode`` into the dtype the metric expects.
    """
    return pl.col(METADATA).str.json_path_match(f"$.{path}")
