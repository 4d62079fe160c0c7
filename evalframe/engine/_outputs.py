"""The saved outputs ``evaluate`` is given, read into one frame (in process or on a cluster)."""

from __future__ import annotations

import os
from collections.abc import Mapping

import polars as pl

from evalframe.core import schema as C
from evalframe.core._errors import DatasetError
from evalframe.core._outputs import read_outputs
from evalframe.core._turns import typed_agent_frame

__all__ = ["as_outputs"]


def as_outputs(outputs: str | os.PathLike[str] | pl.DataFrame | Mapping[str, str]) -> pl.DataFrame:
    """The saved outputs ``evaluate`` is given, as a frame: a frame (checked for its columns),
    a mapping of sample id to output text, a file, or a directory, glob or URL of Parquet
    files (read piece by piece)."""
    if isinstance(outputs, pl.DataFrame):
        missing = {C.SAMPLE_ID, C.ACTUAL_OUTPUT} - set(outputs.columns)
        if missing:
            raise DatasetError(f"Outputs frame is missing column(s): {', '.join(sorted(missing))}.")
        return typed_agent_frame(outputs, "Outputs frame")
    if isinstance(outputs, Mapping):
        bad = [k for k, v in outputs.items() if not isinstance(v, str)]
        if bad:
            raise DatasetError(
                f"Saved output for sample '{bad[0]}' must be a string; "
                f"got {type(outputs[bad[0]]).__name__}."
            )
        return pl.DataFrame(
            {C.SAMPLE_ID: list(outputs), C.ACTUAL_OUTPUT: list(outputs.values())},
            schema={C.SAMPLE_ID: pl.String, C.ACTUAL_OUTPUT: pl.String},
        )
    from evalframe.cluster import is_parquet_source, read_outputs_pieces

    if is_parquet_source(outputs):  # a directory, glob or URL of Parquet files
        return read_outputs_pieces(os.fspath(outputs))
    return read_outputs(outputs)
