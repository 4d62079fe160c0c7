"""Whole-column kernels for the retrieval family: deduplication and rank matching.

Ids are compared through 64-bit hashes inside small per-row open-addressing tables (Numba), so
one pass over the flat id arrays serves every query of a batch. Every event a hash produces (a
duplicate, a match) is then checked on the strings themselves, and the rare row where two
different ids share a hash is recomputed by the exact per-row reference, so the results are
exact whatever the hash does.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
import polars as pl

from evalframe.core._njit import Kernel, compiling, njit, worth_compiling

__all__ = [
    "dedupe_lists",
    "may_repeat",
    "rank_matches",
    "reference_dedupe",
    "reference_ranking",
]

_F = TypeVar("_F", bound=Callable[..., Any])

I64 = npt.NDArray[np.int64]
U64 = npt.NDArray[np.uint64]
F64 = npt.NDArray[np.float64]
Bool = npt.NDArray[np.bool_]


def _hash(values: pl.Series) -> U64:
    """64-bit hashes of a flat String series (a seam the tests use to force collisions)."""
    return values.hash().to_numpy()


def _has_duplicate(hashes: U64, offsets: I64) -> Bool:
    """Per row, whether two positions share a hash (a superset of the rows with duplicates)."""
    rows = offsets.size - 1
    out = np.zeros(rows, np.bool_)
    widest = 1
    for r in range(rows):
        widest = max(widest, offsets[r + 1] - offsets[r])
    size = 8
    while size < 2 * widest:
        size *= 2
    keys = np.zeros(size, np.uint64)
    stamp = np.zeros(size, np.int64)
    for r in range(rows):
        lo, hi = offsets[r], offsets[r + 1]
        mask = 7
        while mask + 1 < 2 * (hi - lo):
            mask = 2 * mask + 1
        for p in range(lo, hi):
            h = hashes[p]
            slot = np.int64((h * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(40)) & mask
            while stamp[slot] == r + 1 and keys[slot] != h:
                slot = (slot + 1) & mask
            if stamp[slot] == r + 1:
                out[r] = True
                break
            stamp[slot] = r + 1
            keys[slot] = h
    return out


_SCAN = 8


def _match(
    ret_hashes: U64, ret_offsets: I64, rel_hashes: U64, rel_offsets: I64
) -> tuple[I64, I64, I64, Bool]:
    """Pairs (retrieved position, relevant index) whose hashes agree, in rank order, and the
    query (row) of each pair.

    Also flags rows where two relevant ids share a hash (they are distinct strings).
    """
    rows = ret_offsets.size - 1
    pos_out = np.empty(rel_hashes.size, np.int64)
    rel_out = np.empty(rel_hashes.size, np.int64)
    row_out = np.empty(rel_hashes.size, np.int64)
    clash = np.zeros(rows, np.bool_)
    widest = 1
    for r in range(rows):
        widest = max(widest, rel_offsets[r + 1] - rel_offsets[r])
    size = 8
    while size < 2 * widest:
        size *= 2
    keys = np.zeros(size, np.uint64)
    where = np.zeros(size, np.int64)
    stamp = np.zeros(size, np.int64)
    used = np.zeros(rel_hashes.size, np.bool_)
    n = 0
    for r in range(rows):
        lo, hi = rel_offsets[r], rel_offsets[r + 1]
        if hi == lo:
            continue
        mask = 7
        while mask + 1 < 2 * (hi - lo):
            mask = 2 * mask + 1
        for j in range(lo, hi):
            h = rel_hashes[j]
            slot = np.int64((h * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(40)) & mask
            while stamp[slot] == r + 1 and keys[slot] != h:
                slot = (slot + 1) & mask
            if stamp[slot] == r + 1:
                clash[r] = True
            else:
                stamp[slot] = r + 1
                keys[slot] = h
                where[slot] = j
        if hi - lo <= _SCAN:
            # a handful of relevant ids: a linear scan beats hashing into the table
            for p in range(ret_offsets[r], ret_offsets[r + 1]):
                h = ret_hashes[p]
                for j in range(lo, hi):
                    if rel_hashes[j] == h and not used[j]:
                        used[j] = True
                        pos_out[n] = p
                        rel_out[n] = j
                        row_out[n] = r
                        n += 1
                        break
            continue
        for p in range(ret_offsets[r], ret_offsets[r + 1]):
            h = ret_hashes[p]
            slot = np.int64((h * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(40)) & mask
            while stamp[slot] == r + 1 and keys[slot] != h:
                slot = (slot + 1) & mask
            if stamp[slot] == r + 1 and not used[where[slot]]:
                used[where[slot]] = True
                pos_out[n] = p
                rel_out[n] = where[slot]
                row_out[n] = r
                n += 1
    return pos_out[:n], rel_out[:n], row_out[:n], clash


def _ideal_terms(gains: F64, offsets: I64) -> F64:
    """Per row, the gains sorted in descending order, each divided by log2(position + 1)."""
    out = gains.copy()
    for r in range(offsets.size - 1):
        lo, hi = offsets[r], offsets[r + 1]
        if hi - lo > 32:
            out[lo:hi] = -np.sort(-gains[lo:hi])
        else:
            for i in range(lo + 1, hi):  # insertion sort: relevant sets are small
                g = out[i]
                j = i - 1
                while j >= lo and out[j] < g:
                    out[j + 1] = out[j]
                    j -= 1
                out[j + 1] = g
        for i in range(lo, hi):
            out[i] = out[i] / math.log2(i - lo + 2.0)
    return out


_KERNELS: dict[str, Kernel[..., Any]] = {}
# Ids up to which the kernels run interpreted instead of compiling.
_INTERPRETED_UP_TO = 20_000


def _kernel(fn: Callable[..., Any]) -> Kernel[..., Any]:
    """Compile (or load from Numba's cache) a kernel on first use, never at import."""
    name = fn.__name__
    if name not in _KERNELS:
        _KERNELS[name] = njit(fn)
    return _KERNELS[name]


def _run(fn: Callable[..., Any], size: int, *args: Any) -> Any:
    """``fn(*args)`` compiled, or interpreted when ``size`` ids are too few to pay for it."""
    kernel = _kernel(fn)
    if not worth_compiling(size, _INTERPRETED_UP_TO):
        return kernel.interpreted(*args)
    compiling("the retrieval kernels", _kernel(_has_duplicate), _kernel(_match))
    return kernel(*args)


# --- list plumbing ------------------------------------------------------------------------


def offsets_of(lists: pl.Series) -> I64:
    """Arrow-style offsets of a List series (null lists count as empty)."""
    lengths = lists.list.len().fill_null(0).to_numpy().astype(np.int64, copy=False)
    out = np.zeros(lengths.size + 1, np.int64)
    np.cumsum(lengths, out=out[1:])
    return out


def flat(lists: pl.Series) -> pl.Series:
    """The elements of a List series, in order, without placeholders for empty or null lists."""
    return lists.list.explode(empty_as_null=False, keep_nulls=False).rechunk()


def from_flat(values: pl.Series, offsets: I64, name: str = "") -> pl.Series:
    """A List series from flat values and Arrow-style offsets."""
    import pyarrow as pa

    arrow = pa.LargeListArray.from_arrays(pa.array(offsets, pa.int64()), values.to_arrow())
    return pl.Series(name, arrow)


# --- slow, obviously correct references (the fallback for hash clashes, and test oracles) --


def reference_dedupe(ids: Sequence[str]) -> list[int]:
    """Positions kept when duplicate ids are dropped, keeping each id's first (best) rank."""
    seen: set[str] = set()
    keep = []
    for i, x in enumerate(ids):
        if x not in seen:
            seen.add(x)
            keep.append(i)
    return keep


def reference_ranking(
    ids: Sequence[str], relevant: Sequence[str], gains: Sequence[float]
) -> tuple[list[int], list[float], list[float]]:
    """Ranks of the relevant ids found, their DCG terms, and the ideal DCG terms.

    ``ids`` is a deduplicated ranking (rank 1 first); ``relevant`` a list of distinct ids.
    The DCG term at rank r is gain / log2(r + 1); the ideal terms use the gains sorted in
    descending order.
    """
    gain = dict(zip(relevant, gains, strict=True))
    ranks, terms = [], []
    for i, x in enumerate(ids):
        if x in gain:
            ranks.append(i + 1)
            terms.append(gain[x] / math.log2(i + 2))
    ideal = [g / math.log2(i + 2) for i, g in enumerate(sorted(gains, reverse=True))]
    return ranks, terms, ideal


# --- the column kernels ---------------------------------------------------------------------


def may_repeat(ids: pl.Series) -> Bool:
    """Per list of ``ids``, whether two of its ids may be equal (they share a hash): every
    list that repeats an id, and rarely one that does not."""
    hashes = _hash(flat(ids))
    return _run(_has_duplicate, hashes.size, hashes, offsets_of(ids))  # type: ignore[no-any-return]


def dedupe_lists(
    ids: pl.Series, *aligned: pl.Series, with_hashes: bool = False
) -> tuple[pl.Series, ...]:
    """Drop duplicate ids from each list, keeping the first; ``aligned`` lists follow along.

    Only the rows that hold a duplicate are rebuilt. Returns the deduplicated ``ids`` and
    ``aligned`` series, with their names and lengths, and with ``with_hashes`` a last
    List(UInt64) series of the ids' hashes (for ``rank_matches``, which then hashes nothing).
    """
    offsets = offsets_of(ids)
    hashes = _hash(flat(ids))

    def done(out: tuple[pl.Series, ...], hashes: U64, offsets: I64) -> tuple[pl.Series, ...]:
        if not with_hashes:
            return out
        return (*out, from_flat(pl.Series(hashes, dtype=pl.UInt64), offsets, "hashes"))

    # hashes only nominate rows; each nominated row is deduplicated exactly by Polars
    has_dup = pl.Series(_run(_has_duplicate, hashes.size, hashes, offsets))
    if not has_dup.any():
        return done((ids, *aligned), hashes, offsets)
    rows = pl.Series(np.flatnonzero(has_dup.to_numpy()))
    sub = ids.gather(rows)
    keep = sub.list.eval(pl.int_range(pl.len()).filter(pl.element().is_first_distinct()))
    out = []
    for series in (ids, *aligned):
        fixed = series.gather(rows).list.gather(keep)
        merged = pl.concat([series.filter(~has_dup), fixed])
        order = np.argsort(
            np.concatenate([np.flatnonzero(~has_dup.to_numpy()), rows.to_numpy()]), kind="stable"
        )
        out.append(merged.gather(order).alias(series.name))
    return done(tuple(out), _hash(flat(out[0])), offsets_of(out[0]))


def rank_matches(
    ids: pl.Series, relevant: pl.Series, gains: pl.Series, hashes: pl.Series | None = None
) -> pl.DataFrame:
    """Per query: ranks of the relevant ids retrieved, their DCG terms, the ideal DCG terms.

    Args:
        ids: List(String), each list a deduplicated ranking (rank 1 first).
        relevant: List(String), each list distinct relevant ids.
        gains: List(Float64), aligned with ``relevant``.
        hashes: optional List(UInt64), the hashes of ``ids`` as ``dedupe_lists`` gives them.

    Returns:
        A frame with ``ranks`` (List(Int64), ascending), ``terms`` (List(Float64),
        gain / log2(rank + 1) aligned with ``ranks``) and ``ideal`` (List(Float64), the same
        terms for the gains sorted in descending order).
    """
    ret_offsets = offsets_of(ids)
    rel_offsets = offsets_of(relevant)
    ret_values, rel_values = flat(ids), flat(relevant)
    gain_values = flat(gains).cast(pl.Float64).to_numpy()
    rows = ret_offsets.size - 1
    ret_hashes = _hash(ret_values) if hashes is None else flat(hashes).to_numpy()
    pos, rel, match_rows, clash = _run(
        _match, ret_hashes.size, ret_hashes, ret_offsets, _hash(rel_values), rel_offsets
    )
    same = (ret_values.gather(pos) == rel_values.gather(rel)).to_numpy()
    bad = np.zeros(rows, np.bool_)
    bad[match_rows[~same]] = True
    bad |= clash
    good = ~bad[match_rows]
    pos, rel, match_rows = pos[good], rel[good], match_rows[good]
    ranks = pos - ret_offsets[match_rows] + 1
    terms = gain_values[rel] / np.log2(ranks + 1.0)

    ideal = _run(_ideal_terms, ret_hashes.size, gain_values, rel_offsets)

    counts = np.bincount(match_rows, minlength=rows)
    match_offsets = np.zeros(rows + 1, np.int64)
    np.cumsum(counts, out=match_offsets[1:])
    frame = pl.DataFrame(
        {
            "ranks": from_flat(pl.Series(ranks, dtype=pl.Int64), match_offsets),
            "terms": from_flat(pl.Series(terms, dtype=pl.Float64), match_offsets),
            "ideal": from_flat(pl.Series(ideal, dtype=pl.Float64), rel_offsets),
        }
    )
    if bad.any():
        # a genuine hash clash: redo those rows exactly
        fixes = []
        for r in np.flatnonzero(bad):
            got = reference_ranking(
                ids[int(r)].to_list(), relevant[int(r)].to_list(), gains[int(r)].to_list()
            )
            fixes.append((int(r), *got))
        fixed = pl.DataFrame(
            {
                "index": [f[0] for f in fixes],
                "ranks": pl.Series([f[1] for f in fixes], dtype=pl.List(pl.Int64)),
                "terms": pl.Series([f[2] for f in fixes], dtype=pl.List(pl.Float64)),
            },
            schema_overrides={"index": pl.UInt32},
        )
        frame = (
            frame.with_row_index()
            .join(fixed, on="index", how="left", suffix="_exact", maintain_order="left")
            .select(
                pl.coalesce("ranks_exact", "ranks").alias("ranks"),
                pl.coalesce("terms_exact", "terms").alias("terms"),
                "ideal",
            )
        )
    return frame
