"""The scoring kernel and the steps around it, as pure functions a worker runs on one part.

Every engine scores with the same function: the runner ``core._score.score`` over an
evaluation frame, after the provider-filled columns were joined on (``score_part``). The
in-process engine calls it on the whole frame (or on each streamed chunk); a Dask worker
calls it on its part. Nothing here keeps state between calls, so a rerun task computes the
same part again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import polars as pl

from evalframe.cluster._pieces import Piece, read_piece
from evalframe.core import schema as C
from evalframe.core._outputs import attach_baseline, duplicate_output, outputs_from_table
from evalframe.core._score import score

if TYPE_CHECKING:
    from evalframe.metrics._spec import Metric

__all__ = [
    "POSITION",
    "check_unique",
    "evaluation_part",
    "load_outputs",
    "read_outputs_pieces",
    "sample_ids",
    "score_part",
]

# A dataset row's position, carried through a part so the client restores the in-process order.
POSITION = "__evalframe_position"


def load_outputs(piece: Piece) -> pl.DataFrame:
    """Saved outputs from one Parquet piece, checked as ``read_outputs`` checks a file."""
    return outputs_from_table(read_piece(piece), piece.where())


def read_outputs_pieces(source: str) -> pl.DataFrame:
    """Saved outputs from a partitioned Parquet source, read here piece by piece (the
    in-process engine's reading of what Dask workers read in parallel)."""
    from evalframe.cluster._pieces import parquet_pieces

    parts = [load_outputs(p) for p in parquet_pieces(source, rows_per_piece=1_000_000)]
    outputs = pl.concat(parts, how="diagonal_relaxed")
    check_unique(outputs.get_column(C.SAMPLE_ID), source)
    return outputs


def check_unique(ids: pl.Series, source: str) -> None:
    """Each sample's output once across the pieces of ``source``.

    Raises:
        DatasetError: an id appears twice (the first one is named).
    """
    repeated = ids.filter(ids.is_duplicated())
    if repeated.len():
        raise duplicate_output(source, repeated[0])


def sample_ids(outputs: pl.DataFrame) -> pl.Series:
    """The piece's sample ids (all the client needs to check coverage)."""
    return outputs.get_column(C.SAMPLE_ID)


def evaluation_part(
    outputs: pl.DataFrame,
    base: pl.DataFrame,
    repetitions: int,
    baselines: Mapping[str, pl.DataFrame],
) -> pl.DataFrame:
    """The evaluation frame of one part: its outputs, once per repetition, joined with the
    dataset rows (``base``, with their ``POSITION``) and any stored baseline outputs."""
    produced = pl.concat(
        [outputs.with_columns(pl.lit(r, pl.Int64).alias(C.REPETITION)) for r in range(repetitions)]
    )
    frame = produced.join(base, on=C.SAMPLE_ID, how="inner", maintain_order="left")
    for baseline, stored in baselines.items():
        frame = attach_baseline(frame, baseline, stored)
    return frame


def score_part(
    frame: pl.DataFrame,
    filled: pl.DataFrame | None = None,
    *,
    metrics: Sequence[Metric],
    run_id: str,
    unavailable: Mapping[str, str] | None = None,
) -> pl.DataFrame:
    """The long scores of one part: ``filled`` (provider columns, row-aligned) joined on,
    then the one runner. ``POSITION`` rides along when present."""
    if filled is not None and filled.width:
        frame = pl.concat([frame, filled], how="horizontal")
    scores = score(
        frame.drop(POSITION, strict=False), metrics, run_id=run_id, unavailable=unavailable
    )
    if POSITION not in frame.columns:
        return scores
    positions = frame.select(C.SAMPLE_ID, C.REPETITION, POSITION).unique(
        [C.SAMPLE_ID, C.REPETITION]
    )
    return scores.join(positions, on=[C.SAMPLE_ID, C.REPETITION], how="left", maintain_order="left")
