"""Scoring past one process: the kernel every engine calls, Parquet pieces, and Dask.

``dask_client`` reaches a cluster (``local:N``, a scheduler address or a client);
``parquet_pieces`` cuts Parquet inputs into pieces that workers read themselves; the tasks
in ``_kernel`` are pure functions of one part. Dask is imported only when a cluster is asked
for (``pip install ".[dask]" in a clone of evalframe``).
"""

from __future__ import annotations

from evalframe.cluster._client import INSTALL_HINT, DaskTarget, dask_client, describe
from evalframe.cluster._kernel import (
    POSITION,
    check_unique,
    evaluation_part,
    load_outputs,
    read_outputs_pieces,
    sample_ids,
    score_part,
)
from evalframe.cluster._pieces import Piece, is_parquet_source, parquet_pieces, read_piece
from evalframe.cluster._tasks import gather, submit_each

__all__ = [
    "INSTALL_HINT",
    "POSITION",
    "DaskTarget",
    "Piece",
    "check_unique",
    "dask_client",
    "describe",
    "evaluation_part",
    "gather",
    "is_parquet_source",
    "load_outputs",
    "parquet_pieces",
    "read_outputs_pieces",
    "read_piece",
    "sample_ids",
    "score_part",
    "submit_each",
]
