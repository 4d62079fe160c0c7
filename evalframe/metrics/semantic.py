"""Semantic metrics: cosine-embedding and bertscore-like.

Both read embedding columns that the providers fill beforehand (the enrich layer), so the
metrics themselves are pure NumPy kernels over whole columns and rescoring a stored frame
needs no model:

* ``expected_output__embedding`` / ``actual_output__embedding``: one vector per row, from
  one embedding per unique text across the whole batch (as the scoring runner fills them:
  each row's index into ``EMBEDDING_TABLE``, the unique texts' vectors);
* ``expected_output__token_embeddings`` / ``actual_output__token_embeddings``: one vector per
  token of the shared tokeniser (rouge-l's), contextual on the embedded model, else one
  embedding per unique token across the whole batch.

Each has an ``...__error`` column (the provider's message for rows it could not embed) and
an ``...__embedder`` column naming the embedder.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

import numpy as np
import numpy.typing as npt
import polars as pl

from evalframe.core import schema as C
from evalframe.core._errors import MetricError
from evalframe.core._njit import compiling, njit, worth_compiling
from evalframe.metrics._batched import batched, sample_error, type_error
from evalframe.metrics._registry import metric
from evalframe.metrics._spec import Range, Scored, format_value
from evalframe.metrics._text import tokens

if TYPE_CHECKING:
    from evalframe.metrics._spec import Need

__all__ = [
    "EMBEDDING",
    "EMBEDDING_TABLE",
    "EmbeddingColumns",
    "ListEmbeddings",
    "TextEmbeddings",
    "TokenEmbeddings",
    "TokenMode",
    "bertscore_like",
    "cosine_embedding",
    "cosine_kernel",
    "cosine_rows",
    "greedy_match",
    "table_matrix",
    "token_columns",
    "vector_table",
]

TokenMode = Literal["auto", "contextual", "static"]

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class EmbeddingColumns:
    """The enrichment columns one semantic metric reads."""

    expected: str
    actual: str
    error: str
    embedder: str


EMBEDDING = EmbeddingColumns(
    expected=f"{C.EXPECTED_OUTPUT}__embedding",
    actual=f"{C.ACTUAL_OUTPUT}__embedding",
    error=f"{C.ACTUAL_OUTPUT}__embedding__error",
    embedder=f"{C.ACTUAL_OUTPUT}__embedding__embedder",
)


def token_columns(max_tokens: int = 128, mode: TokenMode = "auto") -> EmbeddingColumns:
    """The token-vector columns for a token cap and mode (non-defaults join the names).

    Examples:
        >>> token_columns().actual
        'actual_output__token_embeddings'
        >>> token_columns(256, "static").actual
        'actual_output__token_embeddings(max_tokens=256, mode=static)'
    """
    parts = [f"max_tokens={max_tokens}"] if max_tokens != 128 else []
    if mode != "auto":
        parts.append(f"mode={format_value(mode)}")
    suffix = f"({', '.join(parts)})" if parts else ""
    actual = f"{C.ACTUAL_OUTPUT}__token_embeddings{suffix}"
    return EmbeddingColumns(
        expected=f"{C.EXPECTED_OUTPUT}__token_embeddings{suffix}",
        actual=actual,
        error=f"{actual}__error",
        embedder=f"{actual}__embedder",
    )


# --- vector columns as arrays ----------------------------------------------------------------

_F = TypeVar("_F", bound=Callable[..., Any])

# The cosine kernel's float32 sums of products run in eight lanes: lane k adds elements k,
# k + 8, k + 16, ... in order, the lanes are combined as ((0 + 1) + (2 + 3)) + ((4 + 5) +
# (6 + 7)), and the elements past the last multiple of eight are added after that. Eight
# independent sums vectorise without letting the compiler reorder them (no fast-math), so
# the results are fixed by this order alone and a NumPy path reproduces them exactly
# (``_lane_sums``); the kernel runs at the memory bandwidth as a reassociated loop did.
_LANES = 8
# Token matching's dot products are short (one per pair of tokens) and latency-bound: there
# the compiler may reassociate (NaN and infinity keep their meaning), four times faster than
# fixed lanes, and the NumPy path for small inputs agrees with it to float32 rounding.
_FASTMATH = {"reassoc", "contract"}
# Rows up to which the similarities are computed with NumPy instead of the compiled kernels:
# cosine-embedding's (one vector a side), bertscore-like's (a row's tokens against each other).
_NUMPY_UP_TO = 20_000
_GREEDY_NUMPY_UP_TO = 500
# Rows the NumPy cosine path gathers at a time (about 1.5 MB a side for 384 values a vector).
_NUMPY_SLICE = 1_024


def _lane_sums(x: F32, y: F32) -> F32:
    """Per row, the sum of ``x * y`` (``(rows, d)`` float32) in the kernels' order."""
    rows, d = x.shape
    body = d - d % _LANES
    products = (x[:, :body] * y[:, :body]).reshape(rows, body // _LANES, _LANES)
    if body:  # a cumulative sum adds in order, lane by lane
        lanes = np.cumsum(products, axis=1, dtype=np.float32)[:, -1, :]
    else:
        lanes = np.zeros((rows, _LANES), dtype=np.float32)
    l0, l1, l2, l3, l4, l5, l6, l7 = (lanes[:, k] for k in range(_LANES))
    total = ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7))
    for k in range(body, d):
        total = total + x[:, k] * y[:, k]
    return total


def _ragged(s: pl.Series) -> tuple[F32, I64, npt.NDArray[np.bool_]]:
    """A column of vectors as a flat float32 array, row offsets and validity.

    Accepts ``Array(Float, d)`` (no copy for Float32), ``List(Float)`` and all-null columns.
    """
    n = s.len()
    valid = s.is_not_null().to_numpy()
    if isinstance(s.dtype, pl.Array):
        d = int(s.dtype.size)
        # Zero-copy (and read-only) for a Float32 column without nulls: the common case.
        values = s.to_numpy().astype(np.float32, copy=False)
        lengths = np.where(valid, d, 0).astype(np.int64)
        flat = np.ascontiguousarray(values[valid] if not valid.all() else values).reshape(-1)
    elif isinstance(s.dtype, pl.List):
        lengths = s.list.len().fill_null(0).to_numpy().astype(np.int64)
        flat = (
            s.explode(empty_as_null=False, keep_nulls=False)
            .cast(pl.Float32)
            .fill_null(0.0)
            .to_numpy()
            .astype(np.float32, copy=False)
        )
    elif s.dtype == pl.Null:
        lengths = np.zeros(n, dtype=np.int64)
        flat = np.zeros(0, dtype=np.float32)
    else:
        raise MetricError(f"Column {s.name!r} must hold vectors; got {s.dtype}.")
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return flat, offsets, valid


@njit
def _cosine_kernel(
    e: Any, e_start: Any, e_len: Any, a: Any, a_start: Any, a_len: Any, out: Any
) -> None:  # pragma: no cover
    # One fused pass per row (dot product and both norms, in ``_LANES`` lanes), so each
    # vector is read once: this runs at the memory bandwidth. Row i's vectors are
    # ``e[e_start[i]:][:e_len[i]]`` and ``a[a_start[i]:][:a_len[i]]``: consecutive slices of
    # per-row columns, or rows of one table of distinct vectors read through indices. NaN
    # marks an unscorable row, -2 a size mismatch.
    for i in range(len(out)):
        s, n = e_start[i], e_len[i]
        t, m = a_start[i], a_len[i]
        if n == 0 or m == 0:
            out[i] = np.nan
            continue
        if n != m:
            out[i] = -2.0
            continue
        d0 = d1 = d2 = d3 = d4 = d5 = d6 = d7 = np.float32(0.0)
        p0 = p1 = p2 = p3 = p4 = p5 = p6 = p7 = np.float32(0.0)
        q0 = q1 = q2 = q3 = q4 = q5 = q6 = q7 = np.float32(0.0)
        body = n - n % 8
        for k in range(0, body, 8):
            x0, x1, x2, x3 = e[s + k], e[s + k + 1], e[s + k + 2], e[s + k + 3]
            x4, x5, x6, x7 = e[s + k + 4], e[s + k + 5], e[s + k + 6], e[s + k + 7]
            y0, y1, y2, y3 = a[t + k], a[t + k + 1], a[t + k + 2], a[t + k + 3]
            y4, y5, y6, y7 = a[t + k + 4], a[t + k + 5], a[t + k + 6], a[t + k + 7]
            d0 += x0 * y0
            d1 += x1 * y1
            d2 += x2 * y2
            d3 += x3 * y3
            d4 += x4 * y4
            d5 += x5 * y5
            d6 += x6 * y6
            d7 += x7 * y7
            p0 += x0 * x0
            p1 += x1 * x1
            p2 += x2 * x2
            p3 += x3 * x3
            p4 += x4 * x4
            p5 += x5 * x5
            p6 += x6 * x6
            p7 += x7 * x7
            q0 += y0 * y0
            q1 += y1 * y1
            q2 += y2 * y2
            q3 += y3 * y3
            q4 += y4 * y4
            q5 += y5 * y5
            q6 += y6 * y6
            q7 += y7 * y7
        dot = ((d0 + d1) + (d2 + d3)) + ((d4 + d5) + (d6 + d7))
        ee = ((p0 + p1) + (p2 + p3)) + ((p4 + p5) + (p6 + p7))
        aa = ((q0 + q1) + (q2 + q3)) + ((q4 + q5) + (q6 + q7))
        for k in range(body, n):
            x, y = e[s + k], a[t + k]
            dot += x * y
            ee += x * x
            aa += y * y
        if ee > 0 and aa > 0:
            out[i] = dot / np.sqrt(np.float64(ee) * np.float64(aa))
        else:
            out[i] = 0.0


def _cosine_numpy(
    e: F32, e_start: I64, e_len: I64, a: F32, a_start: I64, a_len: I64, out: F64
) -> None:
    """``_cosine_kernel`` for a few rows, with NumPy: the same sums, so the same results."""
    same = (e_len == a_len) & (e_len > 0)
    out[:] = np.where(same, 0.0, np.where((e_len == 0) | (a_len == 0), np.nan, -2.0))
    for d in np.unique(e_len[same]).tolist():  # one pass per vector size (one, as a rule)
        matching = np.flatnonzero(same & (e_len == d))
        # A slice of rows at a time: the gathered vectors and their products are temporary
        # copies, so their memory stays that of one slice whatever the number of rows.
        for start in range(0, len(matching), _NUMPY_SLICE):
            rows = matching[start : start + _NUMPY_SLICE]
            x = e[e_start[rows][:, None] + np.arange(d)]
            y = a[a_start[rows][:, None] + np.arange(d)]
            dot, ee, aa = _lane_sums(x, y), _lane_sums(x, x), _lane_sums(y, y)
            with np.errstate(divide="ignore", invalid="ignore"):
                value = dot / np.sqrt(ee.astype(np.float64) * aa.astype(np.float64))
            out[rows] = np.where((ee > 0) & (aa > 0), value, 0.0)


def _cosine(e: F32, e_start: I64, e_len: I64, a: F32, a_start: I64, a_len: I64) -> pl.DataFrame:
    """The cosine of every row's two vectors (see ``_cosine_kernel``), as ``cosine_rows``
    returns it."""
    out = np.empty(len(e_start), dtype=np.float64)
    if worth_compiling(len(out), _NUMPY_UP_TO):
        compiling("the cosine similarity kernel", _cosine_kernel)
        _cosine_kernel(e, e_start, e_len, a, a_start, a_len, out)
    else:
        _cosine_numpy(e, e_start, e_len, a, a_start, a_len, out)
    return pl.DataFrame(
        {
            "cosine": pl.Series(np.where(out == -2.0, np.nan, out)).fill_nan(None),
            "expected_dim": pl.Series(e_len).cast(pl.Int64),
            "actual_dim": pl.Series(a_len).cast(pl.Int64),
        }
    )


def cosine_rows(expected: pl.Series, actual: pl.Series) -> pl.DataFrame:
    """Row-wise cosine similarity of two vector columns (the cosine-embedding kernel).

    Returns:
        ``cosine`` (raw, may be negative; 0.0 when either vector is zero; null when either
        is missing or the sizes differ), ``expected_dim`` and ``actual_dim``.

    Examples:
        >>> import polars as pl
        >>> e = pl.Series([[1.0, 0.0], [1.0, 0.0], [0.0, 0.0]])
        >>> a = pl.Series([[1.0, 1.0], [-1.0, 0.0], [1.0, 0.0]])
        >>> cosine_rows(e, a)["cosine"].round(6).to_list()
        [0.707107, -1.0, 0.0]
    """
    e, e_off, _ = _ragged(expected)
    a, a_off, _ = _ragged(actual)
    return _cosine(e, e_off[:-1], np.diff(e_off), a, a_off[:-1], np.diff(a_off))


# --- one vector per distinct text ----------------------------------------------------------------

# How the scoring runner (``ef.score``, ``evaluate``, rescoring) holds the text embeddings it
# fills: each distinct text's vector once, in this column, and in ``EMBEDDING.expected`` and
# ``EMBEDDING.actual`` each row's Int32 index into it (null: no vector) instead of the row's
# vectors, so memory grows with the distinct texts, 4 bytes a row beside them, where the
# gathered ``Array(Float32, d)`` columns took 2 x d x 4 bytes a row (3 KB at d = 384).
# Row j of the column (``List(Array(Float32, d))``, as many rows as the frame) holds the
# vectors of distinct texts 2j and 2j + 1: two texts a row always suffice, and its values,
# read in order, are the table. ``evalframe.enrich.fill`` gathers the documented columns
# unless asked for this form.
EMBEDDING_TABLE = f"{C.ACTUAL_OUTPUT}__embedding__table"
_PER_ROW = 2


def vector_table(matrix: F32, height: int) -> pl.Series:
    """``matrix`` (one row per distinct text) as the ``EMBEDDING_TABLE`` column of a frame
    of ``height`` rows (``height * 2`` vectors at most).

    Examples:
        >>> import numpy as np
        >>> t = vector_table(np.arange(6, dtype=np.float32).reshape(3, 2), 2)
        >>> t.to_list()
        [[[0.0, 1.0], [2.0, 3.0]], [[4.0, 5.0]]]
        >>> table_matrix(t).tolist()
        [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
    """
    import pyarrow as pa

    if matrix.shape[1] == 0:  # no text has a vector (every row's index is null)
        matrix = np.zeros((0, 1), dtype=np.float32)
    rows, d = matrix.shape
    if rows > _PER_ROW * height:
        raise MetricError(f"{rows} vectors do not fit a table of {height} rows.")
    flat = np.ascontiguousarray(matrix, dtype=np.float32).reshape(-1)
    values = pa.FixedSizeListArray.from_arrays(pa.array(flat), d)
    offsets = np.minimum(np.arange(height + 1, dtype=np.int64) * _PER_ROW, rows)
    return pl.Series(EMBEDDING_TABLE, pa.LargeListArray.from_arrays(pa.array(offsets), values))


def table_matrix(table: pl.Series) -> F32:
    """The ``(distinct texts, d)`` float32 matrix an ``EMBEDDING_TABLE`` column holds (no
    copy when it is one chunk)."""
    inner = table.dtype.inner if isinstance(table.dtype, pl.List) else None
    if not isinstance(inner, pl.Array):
        raise MetricError(f"Column {table.name!r} must hold lists of vectors; got {table.dtype}.")
    d = int(inner.size)
    listed = table.to_arrow()
    vectors = listed.flatten()  # the values the rows hold, in order
    floats = vectors.flatten().to_numpy(zero_copy_only=False)
    return np.asarray(floats, dtype=np.float32).reshape(-1, d)


def _cosine_batch(f: pl.DataFrame) -> pl.DataFrame:
    e, a = f.get_column("e"), f.get_column("a")
    if "t" not in f.columns or not (e.dtype.is_integer() and a.dtype.is_integer()):
        return cosine_rows(e, a)
    matrix = table_matrix(f.get_column("t"))
    d = matrix.shape[1]
    flat = matrix.reshape(-1)

    def side(idx: pl.Series) -> tuple[I64, I64]:
        rows = idx.cast(pl.Int64).fill_null(-1).to_numpy()
        if rows.size and int(rows.max()) >= len(matrix):
            raise MetricError(
                f"Column {idx.name!r} indexes vector {int(rows.max())} of a table of {len(matrix)}."
            )
        return rows * d, np.where(rows >= 0, d, 0).astype(np.int64)

    (e_start, e_len), (a_start, a_len) = side(e), side(a)
    return _cosine(flat, e_start, e_len, flat, a_start, a_len)


def cosine_kernel() -> pl.Expr:
    """The ``cosine``, ``expected_dim`` and ``actual_dim`` of each row's text embeddings
    (``EMBEDDING``), as a struct: from the vector columns, or through the runner's indices
    into ``EMBEDDING_TABLE``.

    Reads whole columns at once (not elementwise: the indices refer to the whole table).
    """
    return batched(
        _cosine_batch,
        {"e": pl.col(EMBEDDING.expected), "a": pl.col(EMBEDDING.actual)},
        {"cosine": pl.Float64, "expected_dim": pl.Int64, "actual_dim": pl.Int64},
        optional={"t": EMBEDDING_TABLE},
    )


@dataclass(frozen=True, slots=True)
class TextEmbeddings:
    """Need: ``expected_output__embedding`` and ``actual_output__embedding`` from the run's
    embedder, one vector per unique text."""

    @property
    def column(self) -> str:
        return EMBEDDING.actual


@dataclass(frozen=True, slots=True)
class ListEmbeddings:
    """Need: per row, the vector of one ``anchor`` text and of each text in ``items`` (a
    ``List(String)``), from the run's embedder, one vector per distinct text.

    Fills ``embed__<name>`` (a struct of ``anchor``: ``Array(Float32, d)`` and ``items``:
    ``List(Array(Float32, d))``) and ``embed__<name>__error``. ``requires`` are judge stages
    the expressions read (their replies are filled first).
    """

    name: str
    anchor: pl.Expr
    items: pl.Expr
    requires: tuple[Any, ...] = ()

    @property
    def column(self) -> str:
        return f"embed__{self.name}"


@dataclass(frozen=True, slots=True)
class TokenEmbeddings:
    """Need: token vectors of both outputs for bertscore-like (reference tokeniser, capped).

    Rows with an empty side or over the cap are not embedded (the metric scores or rejects
    them without vectors).
    """

    max_tokens: int = 128
    mode: TokenMode = "auto"

    @property
    def columns(self) -> EmbeddingColumns:
        return token_columns(self.max_tokens, self.mode)

    @property
    def column(self) -> str:
        return self.columns.actual


def _cosine_needs() -> list[Need]:
    return [TextEmbeddings()]


@metric("cosine-embedding", family="semantic", dimension="correctness", needs=_cosine_needs)
def cosine_embedding() -> Scored:
    """Cosine similarity of the expected and actual outputs' embeddings, clamped to [0, 1].

    ``clamp(e·a / (|e| |a|), 0, 1)``: a negative cosine scores 0.0 (no ``(c+1)/2``
    rescaling) and a zero vector gives 0.0. Every unique text in the batch is embedded once.
    Null (an error) when ``expected_output`` is not a string, when the provider could not
    embed a text, or when the two vectors differ in size.

    Examples:
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records([
        ...     {"id": "q1", "input": {"q": "Capital?"}, "expected_output": "Paris is the capital"},
        ...     {"id": "q2", "input": {"q": "Capital?"}, "expected_output": "Paris is the capital"}],
        ...     name="demo")
        >>> providers = ef.Providers(embeddings="hashing", cache=False)  # offline; use a real model
        >>> run = ef.evaluate(ds, outputs={"q1": "the capital is Paris", "q2": "Berlin"},
        ...                   metrics=["cosine-embedding"], providers=providers)
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        q1 0.9583333681027136 {"expected_dim":512,"actual_dim":512,"cosine_similarity":0.9583333681027136,"clamped_score":0.9583333681027136,"embedder":"hashing:hashing-v1-512-c35-b"}
        q2 0.0 {"expected_dim":512,"actual_dim":512,"cosine_similarity":0.0,"clamped_score":0.0,"embedder":"hashing:hashing-v1-512-c35-b"}
    """  # noqa: E501
    cols = EMBEDDING
    bad, message = type_error("cosine-embedding")
    k = pl.col("cosine-embedding__kernel")
    cos = k.struct.field("cosine")
    e_dim, a_dim = k.struct.field("expected_dim"), k.struct.field("actual_dim")
    provider_error = pl.col(cols.error)
    mismatch = (e_dim > 0) & (a_dim > 0) & (e_dim != a_dim)
    clamped = cos.clip(0.0, 1.0)
    return Scored(
        score=pl.when(bad | provider_error.is_not_null() | mismatch).then(None).otherwise(clamped),
        error=pl.when(bad)
        .then(message)
        .when(provider_error.is_not_null())
        .then(provider_error)
        .when(mismatch)
        .then(
            pl.format(
                "Cannot compute cosine similarity on vectors of different dimensionality "
                "({} vs {}).",
                e_dim,
                a_dim,
            )
        ),
        details=pl.struct(
            expected_dim=e_dim,
            actual_dim=a_dim,
            cosine_similarity=cos,
            clamped_score=clamped,
            embedder=pl.col(cols.embedder),
        ),
        prepare={"cosine-embedding__kernel": cosine_kernel()},
    )


# --- bertscore-like -----------------------------------------------------------------------------


@njit(fastmath=_FASTMATH)
def _dot(u: Any, i: int, v: Any, j: int) -> Any:  # pragma: no cover - compiled
    acc = np.float32(0.0)
    for k in range(u.shape[1]):
        acc += u[i, k] * v[j, k]
    return acc


@njit(fastmath=_FASTMATH)
def _greedy_kernel(
    e: Any, e_off: Any, a: Any, a_off: Any, precision: Any, recall: Any
) -> None:  # pragma: no cover - compiled
    # Squared norms use the very same dot product as the similarities, so a token compared
    # with an identical one gives dot / sqrt(dot * dot) = 1 exactly.
    e_sq = np.empty(len(e))
    for x in range(len(e)):
        e_sq[x] = _dot(e, x, e, x)
    a_sq = np.empty(len(a))
    for y in range(len(a)):
        a_sq[y] = _dot(a, y, a, y)
    widest = 1
    for i in range(len(a_off) - 1):
        widest = max(widest, a_off[i + 1] - a_off[i])
    best_a = np.zeros(widest)
    for i in range(len(precision)):
        s, m = e_off[i], e_off[i + 1] - e_off[i]
        t, n = a_off[i], a_off[i + 1] - a_off[i]
        if m == 0 or n == 0:
            precision[i] = np.nan
            recall[i] = np.nan
            continue
        best_a[:n] = 0.0
        recall_sum = 0.0
        for x in range(s, s + m):
            best_e = 0.0  # the running best starts at 0: clamping happens before the max
            for y in range(n):
                norms = e_sq[x] * a_sq[t + y]
                c = 0.0
                if norms > 0.0:
                    c = min(1.0, np.float64(_dot(e, x, a, t + y)) / np.sqrt(norms))
                best_e = max(best_e, c)
                best_a[y] = max(best_a[y], c)
            recall_sum += best_e
        recall[i] = recall_sum / m
        precision[i] = best_a[:n].sum() / n


def greedy_match(
    expected: F32,
    e_offsets: I64,
    actual: F32,
    a_offsets: I64,
) -> tuple[F64, F64]:
    """Greedy token matching for many rows at once: BERTScore-style precision and recall.

    ``expected`` and ``actual`` are ``(tokens, d)`` matrices of every row's token vectors,
    row ``i`` owning ``expected[e_offsets[i]:e_offsets[i + 1]]``. Per row, with cosine
    similarities clamped to [0, 1] before the max (the running best starts at 0; a zero
    vector matches nothing):

    * recall = mean over expected tokens of the best match among actual tokens;
    * precision = mean over actual tokens of the best match among expected tokens.

    One compiled pass over the whole batch (identical tokens score exactly 1).
    It does not call BLAS: many small products are where threaded BLAS spends its time
    waking threads (here, two OpenBLAS threads made the batched-matmul version of this
    kernel 19 times slower under load), and each similarity matrix is only tokens x tokens.

    Returns:
        ``(precision, recall)``, NaN for rows with no expected or no actual token.
    """
    n_rows = len(e_offsets) - 1
    precision = np.full(n_rows, np.nan)
    recall = np.full(n_rows, np.nan)
    d = expected.shape[1] if expected.ndim == 2 else 0
    if n_rows == 0 or d == 0 or len(actual) == 0:
        return precision, recall
    e = np.ascontiguousarray(expected, dtype=np.float32)
    a = np.ascontiguousarray(actual, dtype=np.float32)
    if worth_compiling(n_rows, _GREEDY_NUMPY_UP_TO):
        compiling("the token matching kernel", _greedy_kernel)
        _greedy_kernel(e, e_offsets, a, a_offsets, precision, recall)
    else:
        _greedy_numpy(e, e_offsets, a, a_offsets, precision, recall)
    return precision, recall


def _greedy_numpy(e: F32, e_off: I64, a: F32, a_off: I64, precision: F64, recall: F64) -> None:
    """``_greedy_kernel`` for a few rows: each row's similarity matrix with NumPy (its sums
    in ``_lane_sums``' order, where the kernel may reassociate: the same values to float32
    rounding), the maxima and means as the kernel takes them."""
    for i in range(len(precision)):  # a small input's rows (``_GREEDY_NUMPY_UP_TO``)
        x, y = e[e_off[i] : e_off[i + 1]], a[a_off[i] : a_off[i + 1]]
        m, n = len(x), len(y)
        if m == 0 or n == 0:
            continue  # NaN already
        x_sq = _lane_sums(x, x).astype(np.float64)
        y_sq = _lane_sums(y, y).astype(np.float64)
        pairs = np.broadcast_to(x[:, None, :], (m, n, x.shape[1])).reshape(m * n, -1)
        dots = _lane_sums(pairs, np.tile(y, (m, 1))).reshape(m, n).astype(np.float64)
        norms = x_sq[:, None] * y_sq[None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            # fmin/fmax: a NaN never wins, as with the kernel's min() and max()
            c = np.where(norms > 0.0, np.fmin(1.0, dots / np.sqrt(norms)), 0.0)
        best_x = np.fmax(c.max(axis=1, initial=0.0), 0.0)  # the running best starts at 0
        best_y = np.fmax(c.max(axis=0, initial=0.0), 0.0)
        # cumulative sums add in order, as the kernel's loops do
        recall[i] = np.cumsum(best_x)[-1] / m
        precision[i] = np.cumsum(best_y)[-1] / n


def _token_vectors(s: pl.Series) -> tuple[F32, I64, int]:
    """A ``List(Array(Float, d))`` column as a ``(tokens, d)`` matrix and row offsets."""
    n = s.len()
    lengths = (
        s.list.len().fill_null(0).to_numpy().astype(np.int64)
        if isinstance(s.dtype, pl.List)
        else np.zeros(n, dtype=np.int64)
    )
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if not isinstance(s.dtype, pl.List) or offsets[-1] == 0:
        inner = s.dtype.inner if isinstance(s.dtype, pl.List) else None
        d = int(inner.size) if isinstance(inner, pl.Array) else 0
        return np.zeros((0, d), dtype=np.float32), offsets, d
    flat = s.explode(empty_as_null=False, keep_nulls=False)
    if isinstance(flat.dtype, pl.List):
        widths = flat.list.len().unique().drop_nulls()
        if widths.len() != 1:
            raise MetricError(
                f"Column {s.name!r} must hold token vectors of one size; got sizes "
                f"{sorted(widths.to_list())}."
            )
        flat = flat.cast(pl.Array(pl.Float32, int(widths[0])))
    if not isinstance(flat.dtype, pl.Array):
        raise MetricError(f"Column {s.name!r} must hold lists of vectors; got {s.dtype}.")
    matrix = np.nan_to_num(flat.to_numpy()).astype(np.float32, copy=False)
    return matrix, offsets, int(flat.dtype.size)


def _greedy_columns(f: pl.DataFrame) -> pl.DataFrame:
    e, e_off, de = _token_vectors(f.get_column("e"))
    a, a_off, da = _token_vectors(f.get_column("a"))
    n = f.height
    if de and da and de != da:
        message = (
            "Cannot compute cosine similarity on vectors of different dimensionality "
            f"({de} vs {da})."
        )
        return pl.DataFrame(
            {
                "precision": pl.Series([None] * n, dtype=pl.Float64),
                "recall": pl.Series([None] * n, dtype=pl.Float64),
                "problem": pl.Series([message] * n, dtype=pl.String),
            }
        )
    if (e.size and de == 0) or (a.size and da == 0):
        message = "BERTScore-like embeddings must be non-empty vectors."
        return pl.DataFrame(
            {
                "precision": pl.Series([None] * n, dtype=pl.Float64),
                "recall": pl.Series([None] * n, dtype=pl.Float64),
                "problem": pl.Series([message] * n, dtype=pl.String),
            }
        )
    precision, recall = greedy_match(e, e_off, a, a_off)
    return pl.DataFrame(
        {
            "precision": pl.Series(precision).fill_nan(None),
            "recall": pl.Series(recall).fill_nan(None),
            "problem": pl.Series([None] * n, dtype=pl.String),
        }
    )


def _bertscore_needs(*, max_tokens: int, mode: TokenMode) -> list[Need]:
    return [TokenEmbeddings(max_tokens=max_tokens, mode=mode)]


@metric("bertscore-like", family="semantic", dimension="correctness", needs=_bertscore_needs)
def bertscore_like(
    *, max_tokens: Annotated[int, Range(ge=1, le=4096)] = 128, mode: TokenMode = "auto"
) -> Scored:
    """Greedy token matching on embeddings: F1 of BERTScore-style precision and recall.

    Both outputs are tokenised with the shared tokeniser (rouge-l's) and capped at
    ``max_tokens`` tokens per field. Recall is the mean, over expected token occurrences, of
    the best cosine (clamped to [0, 1]) to any actual token; precision the same the other way;
    the score is ``2PR / (P + R)`` (0 when both are 0), clamped to [0, 1]. Both sides empty
    score 1.0 and exactly one empty 0.0, with no embedding.

    ``mode`` picks the token vectors: ``contextual`` (each token in its sentence, on the
    embedded model), ``static`` (each unique token embedded alone, as eval-harness does, once
    per batch) or ``auto`` (contextual where the embedder supports it).

    ``max_tokens`` is at most 4096: the greedy match holds a tokens-by-tokens similarity
    matrix per pair. Null (an error) when ``expected_output`` is not a string, a field has
    more than ``max_tokens`` tokens, or the provider could not embed a text.

    Examples:
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records([
        ...     {"id": "q1", "input": {"q": "Capital?"}, "expected_output": "Paris is the capital"}],
        ...     name="demo")
        >>> providers = ef.Providers(embeddings="hashing", cache=False)  # offline; use a real model
        >>> run = ef.evaluate(ds, outputs={"q1": "the capital is Paris"},
        ...                   metrics=["bertscore-like(mode=static)"], providers=providers)
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        q1 1.0 {"expected_tokens":4,"actual_tokens":4,"embedded_tokens":4,"precision":1.0,"recall":1.0,"raw_score":1.0,"clamped_score":1.0,"embedder":"hashing:hashing-v1-512-c35-b (static)"}
    """  # noqa: E501
    cols = token_columns(max_tokens, mode)
    bad, message = type_error("bertscore-like")
    te, ta = tokens(pl.col(C.EXPECTED_OUTPUT)), tokens(pl.col(C.ACTUAL_OUTPUT))
    ne, na = te.list.len(), ta.list.len()
    cap = pl.lit(max_tokens)
    limit = "has {} tokens; bertscore-like metric supports at most {} tokens per field."
    over_e, over_a = ne > max_tokens, na > max_tokens
    both_empty = (ne == 0) & (na == 0)
    one_empty = (ne == 0) != (na == 0)
    k = pl.col("bertscore-like__kernel")
    p, r = k.struct.field("precision"), k.struct.field("recall")
    problem = pl.coalesce(pl.col(cols.error), k.struct.field("problem"))
    f1 = pl.when(p + r > 0).then(2 * p * r / (p + r)).when(p.is_not_null()).then(0.0)
    edge = both_empty | one_empty
    raw = pl.when(both_empty).then(1.0).when(one_empty).then(0.0).otherwise(f1)
    p_out = pl.when(both_empty).then(1.0).when(one_empty).then(0.0).otherwise(p)
    r_out = pl.when(both_empty).then(1.0).when(one_empty).then(0.0).otherwise(r)
    stop = bad | over_e | over_a
    clamped = raw.clip(0.0, 1.0)
    return Scored(
        score=pl.when(stop | (~edge & problem.is_not_null())).then(None).otherwise(clamped),
        error=pl.when(bad)
        .then(message)
        .when(over_e)
        .then(sample_error(f"{C.EXPECTED_OUTPUT} {limit}", ne, cap))
        .when(over_a)
        .then(sample_error(f"{C.ACTUAL_OUTPUT} {limit}", na, cap))
        .when(~edge & problem.is_not_null())
        .then(problem),
        details=pl.struct(
            expected_tokens=ne,
            actual_tokens=na,
            embedded_tokens=pl.when(edge).then(0).otherwise(pl.concat_list(te, ta).list.n_unique()),
            precision=p_out,
            recall=r_out,
            raw_score=raw,
            clamped_score=clamped,
            embedder=pl.when(edge).then(None).otherwise(pl.col(cols.embedder)),
        ),
        prepare={
            "bertscore-like__kernel": batched(
                _greedy_columns,
                {"e": pl.col(cols.expected), "a": pl.col(cols.actual)},
                {"precision": pl.Float64, "recall": pl.Float64, "problem": pl.String},
            )
        },
    )
