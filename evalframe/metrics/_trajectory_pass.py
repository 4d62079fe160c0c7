"""The trajectory and agent metrics of one scoring pass over flat buffers, details as JSON text.

A large batch's trajectories (tool calls, approvals, steps) and decoded expectations are laid
out once per scoring pass as flat arrays (:class:`FlatPass`; the trajectories' side beside
the decoding of the expectations, on a second thread): every name they hold, called or
expected, numbered in one id space, the arguments as the bytes of their JSON texts. Each
metric then runs compiled passes over those arrays for its counts and lists, and
:func:`details_text` writes its details as the JSON text Polars' ``struct.json_encode`` gives
the same struct (strings escaped by Polars itself, once per distinct name; from 20,000 rows
in two halves on two threads; a row whose fields repeat an earlier row's shares its text),
so no metric builds a struct column. The scores are computed
from the counts by the same Polars expressions as the column-by-column path, so they are the
same floats.

Batches this layout does not cover (a few rows, where compiling does not pay; a hand-built
trajectory column with nulls where a parsed one never has them) take each metric's
column-by-column path; ``tests/test_trajectory_pass.py`` holds both to a per-episode oracle.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Sequence
from typing import Any, Final, TypeVar, cast

import numpy as np
import numpy.typing as npt
import polars as pl

from evalframe.core._arrow_text import (
    fits_views,
    put_view,
    string_array,
    strings_array,
    text_buffers,
    views_array,
)
from evalframe.core._expectations_compiled import LIST_FIELDS
from evalframe.core._json._text import WORD_SLACK, copy_words
from evalframe.core._njit import (
    compiling,
    halves,
    in_halves,
    njit,
    side_by_side,
    worth_compiling,
)
from evalframe.core._pages import small_pages
from evalframe.metrics._arguments import _subset, judge_pairs
from evalframe.metrics._expectations import Expectations
from evalframe.metrics._ranking import offsets_of
from evalframe.metrics._text import IdArray, OffsetArray, _Interner

__all__ = ["Details", "FlatPass", "count_marked", "details_text", "flat_pass"]

_T = TypeVar("_T")

ROWS_FROM: Final = 10_000
"""Batches of more rows take the flat layout and its compiled passes."""

_I64_MIN: Final = -(2**63)


def _fields_json(texts: pl.Series) -> pl.Series:
    """Each string as Polars' JSON encoder writes it (quoted and escaped)."""
    return json_values(pl.DataFrame({"a": texts}))


@functools.lru_cache(maxsize=256)
def _notes_json(texts: tuple[str, ...]) -> list[str]:
    """``_fields_json`` of a metric's few fixed notes, once per process (each scoring pass
    writes the same ones)."""
    return cast(list[str], _fields_json(pl.Series(list(texts), dtype=pl.String)).to_list())


def json_values(frame: pl.DataFrame) -> pl.Series:
    """The values of ``frame``'s one column ``a`` as Polars' JSON encoder writes them."""
    encoded = frame.select(pl.struct("a").struct.json_encode()).to_series()
    return encoded.str.strip_prefix('{"a":').str.strip_suffix("}")


class Lists:
    """Lists of numbered names: row ``r`` is ``ids[off[r]:off[r + 1]]``, null where not
    ``valid``."""

    __slots__ = ("ids", "off", "valid")

    def __init__(self, ids: IdArray, off: OffsetArray, valid: npt.NDArray[np.bool_]) -> None:
        self.ids, self.off, self.valid = ids, off, valid

    @property
    def lengths(self) -> npt.NDArray[np.int64]:
        return np.diff(self.off)

    def coalesce(self, *others: Lists) -> Lists:
        """Per row, the first of ``self, *others`` that is not null (null if none is)."""
        sources = (self, *others)
        choice = np.full(self.valid.shape[0], -1, np.int64)
        for k in range(len(sources) - 1, -1, -1):  # one step per source, not per row
            choice[sources[k].valid] = k
        lengths = np.zeros(choice.shape[0], np.int64)
        starts = np.zeros(choice.shape[0], np.int64)
        base = 0
        for k, s in enumerate(sources):
            pick = choice == k
            lengths[pick] = s.lengths[pick]
            starts[pick] = s.off[:-1][pick] + base
            base += s.ids.shape[0]
        off = np.zeros(choice.shape[0] + 1, np.int64)
        np.cumsum(lengths, out=off[1:])
        every = np.concatenate([s.ids for s in sources])
        at = np.repeat(starts - off[:-1], lengths) + np.arange(off[-1], dtype=np.int64)
        return Lists(every[at].astype(np.int32), off, choice >= 0)

    def or_empty(self) -> Lists:
        """The same lists, a null one read as empty."""
        return Lists(self.ids, self.off, np.ones(self.valid.shape[0], np.bool_))


class Texts:
    """JSON texts as bytes: item ``i`` is ``data[off[i]:off[i + 1]]`` (none where not
    ``valid``), and the Series they came from."""

    __slots__ = ("data", "off", "series", "valid")

    def __init__(self, series: pl.Series) -> None:
        self.series = series
        self.data, self.off, self.valid = text_buffers(series)


class FlatPass:
    """The calls, trajectories and expectations of one batch as flat arrays (see the module).

    Built by :func:`flat_pass` only for batches it covers; every field is read from the
    trajectory column and from ``Expectations``, so a metric sees the values its
    column-by-column path sees.
    """

    # Laid out by the expectations' side, on the thread that numbers their names.
    spec_off: OffsetArray
    spec_valid: npt.NDArray[np.bool_]
    spec_args: Texts
    goal_valid: npt.NDArray[np.bool_]
    goal_args: Texts

    def __init__(self, traj: pl.Series, expect: Expectations) -> None:
        n = traj.len()
        self.height = n
        self.missing = traj.is_null().to_numpy()
        # The trajectories' side and the expectations' side (which decodes the metadata
        # first) side by side, each numbering its own names; then one id space for both.
        (numbers, (self.call_names, approvals)), (theirs, pieces) = side_by_side(
            n, lambda: self._trajectories(traj), lambda: self._expectations(expect)
        )
        to_ours = numbers.intern_flat(theirs.pool, theirs.id_start[: theirs.n_ids + 1])
        *lists, spec_names, goal_names = (to_ours[p] for p in pieces)
        distinct = string_array(numbers.id_start[: numbers.n_ids + 1], numbers.pool)
        self.names_json = _fields_json(pl.Series(distinct))
        self.names_bytes = _bytes_of(self.names_json)  # with WORD_SLACK bytes after
        self.approvals = Lists(approvals, *self._approvals)
        self.lists = {
            f: Lists(ids, off, valid)
            for ids, (f, (off, valid)) in zip(lists, self._lists.items(), strict=True)
        }
        self.spec_names = spec_names
        self.goal_names = np.where(self.goal_valid, goal_names, -1)
        self.calls = Lists(self.call_names, self.call_off, ~self.missing)
        self._kept: dict[str, tuple[threading.Lock, list[Any]]] = {}
        self._lock = threading.Lock()

    def _trajectories(self, traj: pl.Series) -> tuple[_Interner, tuple[IdArray, IdArray]]:
        """The calls' and approvals' side: their arrays, and their names numbered."""
        n = self.height
        absent = int(self.missing.sum())
        calls = traj.struct.field("tool_calls")
        steps = traj.struct.field("steps")
        approvals = traj.struct.field("approvals")
        if any(s.null_count() > absent for s in (calls, steps, approvals)):
            raise _NotCoveredError
        lengths = calls.list.len().fill_null(0).to_numpy().astype(np.int64)
        self.call_off = np.zeros(n + 1, np.int64)
        np.cumsum(lengths, out=self.call_off[1:])
        exploded = calls.explode(empty_as_null=False, keep_nulls=False)
        if exploded.null_count():
            raise _NotCoveredError
        flat = exploded.struct.unnest()
        approved = _flat(approvals)
        if flat.get_column("name").null_count() or approved.null_count():
            raise _NotCoveredError
        self.call_failed = flat.get_column("error").is_not_null().to_numpy()
        self.call_args = flat.get_column("arguments")  # read only where a pair needs them
        self.steps = steps.fill_null(0).to_numpy().astype(np.int64)
        if (self.steps == _I64_MIN).any():
            raise _NotCoveredError
        self.pending = traj.struct.field("pending_approvals").fill_null(0).to_numpy()
        self._approvals = (offsets_of(approvals), approvals.is_not_null().to_numpy())
        numbers = _Interner()
        names = [numbers.intern_strings(_strings(p)) for p in (flat.get_column("name"), approved)]
        return numbers, (names[0], names[1])

    def _expectations(self, expect: Expectations) -> tuple[_Interner, list[IdArray]]:
        """The expectations' side: the argument specs, the goals and the expected lists, and
        their names numbered (each list field's, then the specs', then the goals').

        The metadata is decoded first; then the names are numbered in two groups side by
        side, the second group's numbered after the first's (the same ids as in one pass)."""
        specs = expect.get_column("tool_arguments")
        goal = expect.get_column("goal")
        columns = {f: expect.get_column(f) for f in LIST_FIELDS}
        fields = list(columns)
        half = (len(fields) + 1) // 2

        def listed(chosen: list[str]) -> tuple[_Interner, list[IdArray]]:
            numbers = _Interner()
            return numbers, [numbers.intern_strings(_strings(_flat(columns[f]))) for f in chosen]

        def rest() -> tuple[_Interner, list[IdArray]]:
            numbers, ids = listed(fields[half:])
            spec_flat = specs.explode(empty_as_null=False, keep_nulls=False).struct.unnest()
            self.spec_off = offsets_of(specs)
            self.spec_valid = specs.is_not_null().to_numpy()
            self.spec_args = Texts(spec_flat.get_column("arguments"))
            self.goal_valid = goal.is_not_null().to_numpy()
            self.goal_args = Texts(goal.struct.field("arguments"))
            ids.append(numbers.intern_strings(_strings(spec_flat.get_column("name"))))
            ids.append(numbers.intern_strings(_strings(goal.struct.field("name").fill_null(""))))
            return numbers, ids

        (numbers, first), (others, then) = side_by_side(
            self.height, lambda: listed(fields[:half]), rest
        )
        to_ours = numbers.intern_flat(others.pool, others.id_start[: others.n_ids + 1])
        self._lists = {f: (offsets_of(s), s.is_not_null().to_numpy()) for f, s in columns.items()}
        return numbers, [*first, *(to_ours[p] for p in then)]

    def kept(self, key: str, make: Callable[[], _T]) -> _T:
        """``make()``, made once per pass for all the metrics that ask by ``key`` (say, the
        details text several metrics write alike). A metric waits only for the thread making
        the same key, never for one making another."""
        with self._lock:
            lock, made = self._kept.setdefault(key, (threading.Lock(), []))
        with lock:
            if not made:
                made.append(make())
            return cast(_T, made[0])

    def expected_sequence(self) -> Lists:
        """``expected_tools``, else ``tools``, else ``order``; null where none is given."""
        lists = self.lists
        return self.kept(
            "expected sequence",
            lambda: lists["expected_tools"].coalesce(lists["tools"], lists["order"]),
        )

    def spec_verdicts(
        self,
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
        """Each (spec, call) pair of a row whose names are equal, and whether the call's
        arguments contain the spec's (``loose_subset``); kept for the pass's other metrics."""
        return self._pairs("specs")

    def goal_verdicts(
        self,
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
        """The same for each row's goal and its calls that did not fail."""
        return self._pairs("goal")

    def _pairs(
        self, which: str
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
        return self.kept(f"pairs {which}", lambda: self._paired(which))

    def _paired(
        self, which: str
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
        if which == "specs":
            rows = np.repeat(np.arange(self.height, dtype=np.int64), np.diff(self.spec_off))
            names, texts = self.spec_names, self.spec_args
            usable = np.ones(self.call_names.shape[0], np.bool_)
        else:
            rows = np.flatnonzero(self.goal_valid).astype(np.int64)
            names, texts = self.goal_names[rows], self.goal_args
            usable = ~self.call_failed
        return _verdicts(
            rows, names.astype(np.int64), texts, rows if which == "goal" else None, self, usable
        )


def _flat(lists: pl.Series) -> pl.Series:
    return lists.explode(empty_as_null=False, keep_nulls=False)


def _strings(names: pl.Series) -> pl.Series:
    """A column of names as strings (a Categorical one too), for ``_Interner.intern_strings``."""
    return names.cast(pl.String)


@njit
def name_pairs_kernel(
    s_row: npt.NDArray[np.int64],
    s_name: npt.NDArray[np.int64],
    c_off: npt.NDArray[np.int64],
    c_name: npt.NDArray[np.int32] | npt.NDArray[np.int64],
    c_ok: npt.NDArray[np.bool_],
    out_s: npt.NDArray[np.int64],
    out_c: npt.NDArray[np.int64],
) -> int:
    """Write each (spec, call) pair of one row and one name (calls not ``c_ok`` left out) to
    ``out_s`` and ``out_c`` as far as they have room; the number of pairs. Shared by the
    column-by-column path (Int64 names) and the flat layout (Int32 names)."""
    n = 0
    for k in range(s_row.shape[0]):
        r = s_row[k]
        for j in range(c_off[r], c_off[r + 1]):
            if c_name[j] == s_name[k] and c_ok[j]:
                if n < out_s.shape[0]:
                    out_s[n] = k
                    out_c[n] = j
                n += 1
    return n


@njit
def _pair_subsets(
    e: Any, e_off: Any, e_valid: Any, e_at: Any, a: Any, a_off: Any, a_valid: Any,
    out_s: Any, out: Any, lo: int, hi: int,
) -> None:  # fmt: skip
    """``loose_subset`` of pairs ``lo`` to ``hi``'s texts (pair ``i``: spec
    ``e_at[out_s[i]]``, call text ``i``): yes, no, or unknown (-1, for Python to judge)."""
    stack = np.empty(64, np.int64)
    for i in range(lo, hi):
        s, c = e_at[out_s[i]], i
        e_lo, e_hi = e_off[s], e_off[s + 1]
        a_lo, a_hi = a_off[c], a_off[c + 1]
        if not e_valid[s]:
            e_hi = e_lo
        if not a_valid[c]:
            a_hi = a_lo
        out[i] = _subset(e, e_lo, e_hi, a, a_lo, a_hi, stack)


def _verdicts(
    s_row: npt.NDArray[np.int64],
    s_name: npt.NDArray[np.int64],
    texts: Texts,
    text_at: npt.NDArray[np.int64] | None,
    flat: FlatPass,
    usable: npt.NDArray[np.bool_],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    at = np.arange(s_row.shape[0], dtype=np.int64) if text_at is None else text_at
    # Room for every call of a spec's row (written only as far as there are pairs): one pass.
    room = int(np.diff(flat.call_off)[s_row].sum())
    out_s, out_c = np.empty(room, np.int64), np.empty(room, np.int64)
    n = name_pairs_kernel(s_row, s_name, flat.call_off, flat.call_names, usable, out_s, out_c)
    out_s, out_c = out_s[:n].copy(), out_c[:n].copy()
    compiling("the tool arguments matcher", _pair_subsets)
    verdicts = np.zeros(n, np.int8)
    args = Texts(flat.call_args.gather(pl.Series(out_c)))  # the paired calls', in pair order
    in_halves(
        lambda lo, hi: _pair_subsets(
            texts.data, texts.off, texts.valid, at, args.data, args.off, args.valid,
            out_s, verdicts, lo, hi,
        ),
        n,
        alone=True,
    )  # fmt: skip
    unknown = np.flatnonzero(verdicts < 0)
    if unknown.size:
        expected = texts.series.gather(pl.Series(at[out_s[unknown]]))
        actual = args.series.gather(pl.Series(unknown))
        verdicts[unknown] = judge_pairs(expected, actual)
    return out_s, out_c, verdicts.astype(np.bool_)


class _NotCoveredError(Exception):
    """A batch the flat layout does not cover."""


def flat_pass(traj: pl.Series, expect: Expectations) -> FlatPass | None:
    """The flat layout of a batch, or None where it does not cover the batch: a small one,
    or a hand-built trajectory column with nulls where a parsed one has none."""
    if not worth_compiling(traj.len(), ROWS_FROM):
        return None
    compiling("the trajectory metrics' passes", _write, _present, _distinct_in_order, _count_marked)
    try:
        return FlatPass(traj, expect)
    except _NotCoveredError:
        return None


# --- details as JSON text ---------------------------------------------------------------------

_INT, _LIST, _RAW, _NAME = 0, 1, 2, 3
_LIST_SLOTS: Final = 3


class Details:
    """The fields of one metric's details, in order, written by :func:`details_text`.

    ``integer`` (null where not ``valid``), ``names`` (numbered lists, strings from the
    pass's names), ``text`` (one of a few fixed texts per row, or null: ``choice`` indexes
    ``texts``, -1 for null) and ``name`` (one numbered name per row, -1 for null). Metrics
    whose details are the same for every row give them the same ``alike`` key, and the
    text is written once per pass for all of them.
    """

    def __init__(self, height: int, *, alike: str = "") -> None:
        self.height = height
        self.alike = alike
        self.keys: list[str] = []
        self.kinds: list[int] = []
        self.slots: list[int] = []
        self.ints: list[npt.NDArray[np.int64]] = []
        self.ints_ok: list[npt.NDArray[np.bool_]] = []
        self.lists: list[Lists] = []
        self.texts: list[str] = []

    def integer(self, key: str, values: Any, valid: Any = None) -> Details:
        values = np.asarray(values, np.int64)
        ok = np.ones(self.height, np.bool_) if valid is None else np.asarray(valid, np.bool_)
        if (values[ok] == _I64_MIN).any():
            raise OverflowError(key)  # the one integer written as it is not; never parsed
        return self._add(key, _INT, len(self.ints), self.ints, values, self.ints_ok, ok)

    def names(self, key: str, lists: Lists) -> Details:
        return self._add(key, _LIST, len(self.lists), self.lists, lists)

    def name(self, key: str, ids: Any) -> Details:
        values = np.asarray(ids, np.int64)
        return self._add(key, _NAME, len(self.ints), self.ints, values, self.ints_ok, values >= 0)

    def text(self, key: str, choice: Any, texts: Sequence[str]) -> Details:
        """One of ``texts`` (JSON values, written as they are) per row, by ``choice``."""
        base = len(self.texts)
        self.texts.extend(texts)
        values = np.asarray(choice, np.int64)
        values = np.where(values >= 0, values + base, -1)
        return self._add(key, _RAW, len(self.ints), self.ints, values, self.ints_ok, values >= 0)

    def note(self, key: str, when: Any, *texts: str) -> Details:
        """A string (``texts[0]``) where ``when``, else null; with several texts, ``when``
        is each row's index into them (-1 for null)."""
        choice = np.asarray(when)
        if choice.dtype == np.bool_:
            choice = np.where(choice, 0, -1)
        return self.text(key, choice, _notes_json(texts))

    def _add(self, key: str, kind: int, slot: int, into: list[Any], *values: Any) -> Details:
        self.keys.append(key)
        self.kinds.append(kind)
        self.slots.append(slot)
        if kind == _LIST:
            into.append(values[0])
        else:
            self.ints.append(values[0])
            self.ints_ok.append(values[2])
        return self


def _bytes_of(series: pl.Series) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
    """The strings' bytes end to end, ``WORD_SLACK`` zero bytes after (for ``copy_words``),
    and their offsets."""
    data, off, _ = text_buffers(series)
    padded = np.zeros(int(off[-1] - off[0]) + WORD_SLACK, np.uint8)
    padded[: padded.size - WORD_SLACK] = data[off[0] : off[-1]]
    return padded, off - off[0]


def details_text(details: Details, flat: FlatPass) -> pl.Series:
    """The details of every row as one JSON text each (``struct.json_encode``'s)."""
    if details.alike:
        return flat.kept(f"details {details.alike}", lambda: _details_text(details, flat))
    return _details_text(details, flat)


def _details_text(details: Details, flat: FlatPass) -> pl.Series:
    n = details.height
    heads = [("{" if k == 0 else ",") + f'"{key}":' for k, key in enumerate(details.keys)]
    head_data, head_off = _bytes_of(pl.Series(heads, dtype=pl.String))  # plain keys
    raw_data, raw_off = _bytes_of(pl.Series(details.texts or [""], dtype=pl.String))
    dict_data, dict_off = flat.names_bytes
    ints = _rows(details.ints, max(len(details.ints), 1), n, np.int64)
    ints_ok = _rows(details.ints_ok, max(len(details.ints_ok), 1), n, np.bool_)
    if len(details.lists) > _LIST_SLOTS:
        raise ValueError("at most three lists of names in one metric's details")
    no_list = Lists(np.zeros(0, np.int32), np.zeros(n + 1, np.int64), np.zeros(n, np.bool_))
    lists = [*details.lists, *[no_list] * (_LIST_SLOTS - len(details.lists))]
    name_len = np.diff(dict_off)
    l_ids = tuple(np.require(x.ids, np.int32, ["C", "W"]) for x in lists)  # one array type
    l_off = _rows([x.off for x in details.lists], _LIST_SLOTS, n + 1, np.int64)
    l_valid = _rows([x.valid for x in details.lists], _LIST_SLOTS, n, np.bool_)
    kinds = np.array(details.kinds, np.int64)
    slots = np.array(details.slots, np.int64)
    raw_len = int(np.diff(raw_off).max(initial=0))
    args = (
        head_data, head_off, kinds, slots, ints, ints_ok, l_ids, l_off, l_valid,
        dict_data, dict_off, raw_data, raw_off,
    )  # fmt: skip

    def room(r0: int, r1: int) -> int:
        """Room for the longest text each field can take, so one pass writes them all."""
        rows = r1 - r0
        room = rows * (int(head_off[-1]) + 1)
        for f, kind in enumerate(details.kinds):
            if kind == _LIST:
                s = details.slots[f]
                a, b = int(l_off[s, r0]), int(l_off[s, r1])
                room += _name_bytes(lists[s].ids, a, b, name_len) + (b - a) + 4 * rows
            elif kind == _NAME:
                room += rows * (int(name_len.max(initial=0)) + 4)
            else:
                room += rows * ((raw_len if kind == _RAW else 20) + 4)
        return room

    # One buffer for every part, each writing its own stretch (with the slack its last word
    # may spill into), so the column is one chunk Polars never has to copy into one; each
    # part writes its rows' Arrow views too.
    # Details several metrics share are written in halves even while other metrics run: the
    # metrics that share them wait for them.
    alone = not details.alike
    cuts = halves(n, alone=alone)
    starts = np.cumsum([0, *(room(a, b) + WORD_SLACK for a, b in cuts)])
    out = small_pages(int(starts[-1]), np.uint8)
    views = small_pages(16 * n, np.uint8)
    # Each row's text at out[lo:lo + length], kept only where the views cannot say where
    # (a buffer past 2 GiB; else the views are all the column needs).
    spans = not fits_views(int(starts[-1]))
    lo = np.zeros(n if spans else 1, np.int64)
    length = np.zeros(n if spans else 1, np.int64)

    def part(r0: int, r1: int) -> None:
        k = [a for a, _ in cuts].index(r0)
        rows = slice(r0, r1) if spans else slice(0, 1)
        _write(
            *args, r0, r1 - r0, out[starts[k] : starts[k + 1]], lo[rows], length[rows],
            spans, views[16 * r0 : 16 * r1], starts[k], _slots(r1 - r0), HASH_TRIAL,
        )  # fmt: skip
        if spans:
            lo[r0:r1] += starts[k]

    in_halves(part, n, alone=alone)
    if not spans:
        return pl.Series("details", views_array(views, out))
    return pl.Series("details", strings_array(lo, length, out, copy=False))


def _rows(arrays: list[Any], count: int, length: int, dtype: type) -> Any:
    """``arrays`` as the first rows of a ``(count, length)`` array; the rest left unset
    (fields the writer never reads), so that their memory is never touched."""
    out: npt.NDArray[Any] = np.empty((count, length), dtype)
    for k, a in enumerate(arrays):
        out[k] = a
    return out


def _slots(rows: int) -> npt.NDArray[np.int32]:
    """The table :func:`_write` finds repeated rows in: a power of two, at least twice the
    rows up to ``_SLOTS``, zeroed (an empty slot)."""
    return np.zeros(min(1 << max(rows * 2 - 1, 1).bit_length(), _SLOTS), np.int32)


_SLOTS: Final = 1 << 15
"""The most slots of that table (128 KiB): half full, it takes no more rows."""


@njit
def _put_int(out: Any, at: int, value: int, digits: Any) -> int:
    if value < 0:
        out[at] = 45  # '-'
        at += 1
        value = -value
    n = 0
    while True:
        digits[n] = 48 + value % 10
        n += 1
        value //= 10
        if value == 0:
            break
    for k in range(n):
        out[at + k] = digits[n - 1 - k]
    return at + n


@njit
def _write(
    head: Any, head_off: Any, kinds: Any, slots: Any, ints: Any, ints_ok: Any, l_ids: Any,
    l_off: Any, l_valid: Any, names: Any, names_off: Any, raw: Any, raw_off: Any, r0: int,
    rows: int, out: Any, lo: Any, length: Any, spans: bool, views: Any, base: int,
    table: Any, trial: int,
) -> None:  # fmt: skip
    """The details of ``rows`` rows from ``r0`` into ``out``, with their Arrow ``views``
    (``out`` lying at ``base`` in the views' buffer) and, with ``spans``, each row's text at
    ``out[lo:lo + length]``; list slot ``s`` of row ``r`` is ``l_ids[s][l_off[s,
    r]:l_off[s, r + 1]]``, written as a JSON array of the names' texts (``null`` where not
    ``l_valid``). Every byte buffer it copies from, and ``out``, has ``WORD_SLACK`` bytes to
    spare (``copy_words``).

    A row whose fields are those of an earlier one of these rows is not written again: it
    points at the first copy of their text. Such rows are found by a hash of the fields in
    ``table`` (:func:`_slots`); where the first ``trial`` rows repeat little (fewer than one
    in ``_REPEATS_WORTH``), or the table is half full, the rest are written as they come."""
    null = np.zeros(4 + WORD_SLACK, np.uint8)
    null[:4] = np.array([110, 117, 108, 108], np.uint8)
    digits = np.empty(24, np.uint8)
    mask = table.shape[0] - 1
    hashing = True
    repeats = kept = 0
    at = 0
    for k in range(rows):
        r = r0 + k
        first = k
        if hashing:
            slot = _row_hash(kinds, slots, ints, ints_ok, l_ids, l_off, l_valid, r) & mask
            while table[slot] != 0:
                seen = table[slot] - 1
                if _same_row(kinds, slots, ints, ints_ok, l_ids, l_off, l_valid, r0 + seen, r):
                    first = seen
                    repeats += 1
                    break
                slot = (slot + 1) & mask
            if first == k:
                table[slot] = k + 1
                kept += 1
            hashing = (k < trial or repeats * _REPEATS_WORTH > k) and 2 * kept < table.shape[0]
        if first < k:
            for j in range(16):  # the same text: the same view
                views[16 * k + j] = views[16 * first + j]
            if spans:
                lo[k], length[k] = lo[first], length[first]
        else:
            start = at
            for f in range(kinds.shape[0]):
                at = copy_words(head, head_off[f], head_off[f + 1], out, at)
                kind, s = kinds[f], slots[f]
                if kind == _LIST:
                    if not l_valid[s, r]:
                        at = copy_words(null, 0, 4, out, at)
                        continue
                    ids = l_ids[s]
                    out[at] = 91  # '['
                    at += 1
                    a, b = l_off[s, r], l_off[s, r + 1]
                    for i in range(a, b):
                        if i > a:
                            out[at] = 44  # ','
                            at += 1
                        t = ids[i]
                        at = copy_words(names, names_off[t], names_off[t + 1], out, at)
                    out[at] = 93  # ']'
                    at += 1
                elif not ints_ok[s, r]:
                    at = copy_words(null, 0, 4, out, at)
                elif kind == _INT:
                    at = _put_int(out, at, ints[s, r], digits)
                elif kind == _NAME:
                    t = ints[s, r]
                    at = copy_words(names, names_off[t], names_off[t + 1], out, at)
                else:
                    t = ints[s, r]
                    at = copy_words(raw, raw_off[t], raw_off[t + 1], out, at)
            out[at] = 125  # '}'
            at += 1
            put_view(views, k, out, start, at - start, base + start)
            if spans:
                lo[k], length[k] = start, at - start


@njit(borrows=True)
def _row_hash(
    kinds: Any, slots: Any, ints: Any, ints_ok: Any, l_ids: Any, l_off: Any, l_valid: Any, r: int
) -> int:
    """A hash of the fields of row ``r`` of :func:`_write`'s input."""
    h = np.uint64(0x9E3779B97F4A7C15)
    for f in range(kinds.shape[0]):
        s = slots[f]
        if kinds[f] == _LIST:
            if not l_valid[s, r]:
                h = _mix(h, np.uint64(0xFFFFFFFF))
                continue
            ids = l_ids[s]
            a, b = l_off[s, r], l_off[s, r + 1]
            h = _mix(h, np.uint64(b - a))
            for i in range(a, b):
                h = _mix(h, np.uint64(ids[i]))
        elif ints_ok[s, r]:
            h = _mix(h, np.uint64(ints[s, r]))
        else:
            h = _mix(h, np.uint64(0xFFFFFFFF))
    return int(h >> np.uint64(1))


@njit(borrows=True)
def _mix(h: Any, value: Any) -> Any:
    h = (h ^ value) * np.uint64(0xFF51AFD7ED558CCD)
    return h ^ (h >> np.uint64(32))


@njit(borrows=True)
def _same_row(
    kinds: Any, slots: Any, ints: Any, ints_ok: Any, l_ids: Any, l_off: Any, l_valid: Any,
    p: int, r: int,
) -> bool:  # fmt: skip
    """Whether rows ``p`` and ``r`` of :func:`_write`'s input have the same fields."""
    for f in range(kinds.shape[0]):
        s = slots[f]
        if kinds[f] == _LIST:
            if l_valid[s, p] != l_valid[s, r]:
                return False
            ids = l_ids[s]
            a, b = l_off[s, p], l_off[s, r]
            n = l_off[s, p + 1] - a
            if l_valid[s, r] and n != l_off[s, r + 1] - b:
                return False
            for i in range(n if l_valid[s, r] else 0):
                if ids[a + i] != ids[b + i]:
                    return False
        elif ints_ok[s, p] != ints_ok[s, r] or (ints_ok[s, r] and ints[s, p] != ints[s, r]):
            return False
    return True


HASH_TRIAL = 4096
"""Rows of a part looked up in any case; after them, only while repeats have paid."""
_REPEATS_WORTH: Final = 4


# --- per-row passes over numbered names ------------------------------------------------------


@njit
def _present(
    e_ids: Any, e_off: Any, c_ids: Any, c_off: Any, seen: Any, keep: bool, met: Any,
    out: Any, out_off: Any,
) -> None:  # fmt: skip
    """Per row: how many expected entries are among the calls (``met``), and the entries
    that are not (``keep`` False) or that are (True), in order, into ``out``/``out_off``."""
    k = 0
    for r in range(met.shape[0]):
        for j in range(c_off[r], c_off[r + 1]):
            seen[c_ids[j]] = True
        m = 0
        for i in range(e_off[r], e_off[r + 1]):
            hit = seen[e_ids[i]]
            m += hit
            if hit == keep:
                out[k] = e_ids[i]
                k += 1
        for j in range(c_off[r], c_off[r + 1]):
            seen[c_ids[j]] = False
        met[r] = m
        out_off[r + 1] = k


def present(expected: Lists, called: Lists, top: int, *, keep: bool) -> tuple[Any, Lists]:
    """``_present``: per row the entries met, and the list of those missed (or found)."""
    n = expected.off.shape[0] - 1
    met = np.zeros(n, np.int64)
    out = np.zeros(expected.ids.shape[0], np.int32)
    out_off = np.zeros(n + 1, np.int64)
    _present(
        expected.ids, expected.off, called.ids, called.off, np.zeros(top, np.bool_), keep, met,
        out, out_off,
    )  # fmt: skip
    return met, Lists(out[: out_off[-1]], out_off, np.ones(n, np.bool_))


@njit
def _distinct_in_order(
    ids: Any, off: Any, keep: Any, seen: Any, out: Any, out_off: Any, count: Any
) -> None:
    """Per row: its distinct ids (those ``keep`` marks) in order of first appearance."""
    k = 0
    for r in range(off.shape[0] - 1):
        start = k
        for j in range(off[r], off[r + 1]):
            if keep[j] and not seen[ids[j]]:
                seen[ids[j]] = True
                out[k] = ids[j]
                k += 1
        for m in range(start, k):
            seen[out[m]] = False
        count[r] = k - start
        out_off[r + 1] = k


def distinct(lists: Lists, top: int, keep: npt.NDArray[np.bool_] | None = None) -> Lists:
    """Each row's distinct names (``keep``: which items count), in order of first appearance."""
    n = lists.off.shape[0] - 1
    out = np.zeros(lists.ids.shape[0], np.int32)
    out_off = np.zeros(n + 1, np.int64)
    count = np.zeros(n, np.int64)
    mask = np.ones(lists.ids.shape[0], np.bool_) if keep is None else keep
    _distinct_in_order(lists.ids, lists.off, mask, np.zeros(top, np.bool_), out, out_off, count)
    return Lists(out[: out_off[-1]], out_off, lists.valid)


def names_of(flat: FlatPass, rows: npt.NDArray[np.int64], ids: npt.NDArray[Any]) -> Lists:
    """``ids`` (each in ``rows``, in order) as one list per row."""
    off = np.searchsorted(rows, np.arange(flat.height + 1), side="left").astype(np.int64)
    return Lists(np.asarray(ids, np.int32), off, np.ones(flat.height, np.bool_))


def count_marked(marks: npt.NDArray[np.bool_], off: OffsetArray) -> npt.NDArray[np.int64]:
    """How many items each row marks: row ``r``'s items are ``marks[off[r]:off[r + 1]]``."""
    out = np.zeros(off.shape[0] - 1, np.int64)
    _count_marked(marks, off, out)
    return out


@njit(borrows=True)
def _count_marked(marks: Any, off: Any, out: Any) -> None:
    for r in range(out.shape[0]):
        n = 0
        for i in range(off[r], off[r + 1]):
            n += marks[i]
        out[r] = n


@njit(borrows=True)
def _name_bytes(ids: Any, lo: int, hi: int, name_len: Any) -> int:
    """The bytes of the names ``ids[lo:hi]`` (``name_len`` per id) together."""
    n = 0
    for i in range(lo, hi):
        n += name_len[ids[i]]
    return n


def top(flat: FlatPass) -> int:
    """One more than the largest name id of the pass."""
    return int(flat.names_json.len())
