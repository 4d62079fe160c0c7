"""The agent family: tool choice, arguments, efficiency, tool errors, goal and trajectory match.

All deterministic, all over the ``trajectory`` column with the expectations under
``metadata.trajectory`` (``core/_trajectory.py``), and vectorized the same way as the
eval-harness trajectory metrics (``metrics/trajectory.py``): a large batch by compiled passes
over the flat layout shared by the metrics of a scoring pass, a small one over the exploded
calls. A row with no trajectory is that row's error.

Expectation keys: ``expected_tools`` (the expected tool sequence; ``tools`` when absent),
``tool_arguments`` (as eval-harness's ``tool-called-with``), ``optimal_steps`` and ``goal``
(``{tool, arguments}``: the call that accomplishes the task).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import numpy.typing as npt
import polars as pl

from evalframe.core._njit import njit, worth_compiling
from evalframe.metrics import _conversation_judged as more
from evalframe.metrics import _dialogue_judged as judged
from evalframe.metrics._expectations import Expectations
from evalframe.metrics._registry import metric
from evalframe.metrics._spec import Scored
from evalframe.metrics._text import IdArray, OffsetArray
from evalframe.metrics._trajectory_pass import (
    Details,
    FlatPass,
    Lists,
    count_marked,
    distinct,
    json_values,
    top,
)
from evalframe.metrics.trajectory import (
    called_names,
    common_fast,
    is_subsequence,
    lists_of,
    multiset_common,
    numbered,
    pair_verdicts,
    per_row,
    scoring_pass,
    spec_pairs,
    subsequence_fast,
    trajectory_metric,
)

__all__ = [
    "argument_correctness",
    "goal_accuracy",
    "plan_adherence",
    "plan_quality",
    "step_efficiency",
    "task_completion",
    "tool_correctness",
    "tool_error_rate",
    "trajectory_match",
]

_NAMES = pl.List(pl.String())


def _expected_sequence(expect: Expectations) -> pl.Series:
    """``expected_tools``, else ``tools``, else ``order``; null when none is given."""
    return pl.select(
        pl.coalesce(
            expect.get_column("expected_tools"),
            expect.get_column("tools"),
            expect.get_column("order"),
        )
    ).to_series()


def _note(condition: pl.Series, text: str) -> pl.Series:
    return pl.select(pl.when(condition).then(pl.lit(text))).to_series()


def _plain(*fields: str):  # type: ignore[no-untyped-def]
    return lambda k: pl.struct(*(k.struct.field(f).alias(f) for f in fields))


@njit
def _order_kernel(
    e_ids: IdArray,
    e_off: OffsetArray,
    c_ids: IdArray,
    c_off: OffsetArray,
    positional: npt.NDArray[np.int64],
    ordered: npt.NDArray[np.int64],
) -> None:
    """Per row: positions where both sequences name the same tool, and how many expected
    tools, from the first, appear in the calls in order (taking each at its earliest)."""
    for r in range(positional.shape[0]):
        e0, e1, c0, c1 = e_off[r], e_off[r + 1], c_off[r], c_off[r + 1]
        same = 0
        for k in range(min(e1 - e0, c1 - c0)):
            if e_ids[e0 + k] == c_ids[c0 + k]:
                same += 1
        positional[r] = same
        i = e0
        for j in range(c0, c1):
            if i < e1 and c_ids[j] == e_ids[i]:
                i += 1
        ordered[r] = i - e0


# Rows up to which the order counts run as Python instead of compiling.
_ORDER_PYTHON_UP_TO = 10_000


def _order_counts(expected: pl.Series, names: pl.Series) -> tuple[pl.Series, pl.Series]:
    """``_order_kernel``'s two counts per row (a null list counts as empty)."""
    (e_ids, e_off), (c_ids, c_off) = numbered(expected, names)
    positional = np.zeros(expected.len(), dtype=np.int64)
    ordered = np.zeros(expected.len(), dtype=np.int64)
    args = (e_ids, e_off, c_ids, c_off, positional, ordered)
    if worth_compiling(expected.len(), _ORDER_PYTHON_UP_TO):
        _order_kernel(*args)
    else:
        _order_kernel.interpreted(*args)
    return pl.Series(positional), pl.Series(ordered)


@njit
def _difference(
    a_ids: IdArray,
    a_off: OffsetArray,
    b_ids: IdArray,
    b_off: OffsetArray,
    pos: npt.NDArray[np.int64],
    out: IdArray,
    out_off: OffsetArray,
    n_distinct: npt.NDArray[np.int64],
) -> None:
    """Per row, the distinct items of ``a`` not in ``b`` as Polars' ``list.set_difference``
    orders them: ``a``'s in order of first appearance, each item of ``b`` found there
    replaced by the last one (a swap-remove). ``out`` gets their ids, ``n_distinct`` the
    number of distinct items of ``a``; ``pos`` (-1 for every id) is scratch space."""
    k = 0
    for r in range(a_off.shape[0] - 1):
        start = k
        for j in range(a_off[r], a_off[r + 1]):
            if pos[a_ids[j]] < 0:
                pos[a_ids[j]] = k
                out[k] = a_ids[j]
                k += 1
        n_distinct[r] = k - start
        for i in range(b_off[r], b_off[r + 1]):
            at = pos[b_ids[i]]
            if at >= 0:
                last = out[k - 1]
                out[at] = last
                pos[last] = at
                pos[b_ids[i]] = -1
                k -= 1
        for m in range(start, k):
            pos[out[m]] = -1
        out_off[r + 1] = k


def _set_difference(
    a: pl.Series, a_numbered: tuple[IdArray, OffsetArray], b_numbered: tuple[IdArray, OffsetArray]
) -> pl.Series:
    """``a.list.set_difference(b)`` (a null row of either gives an empty list here) from the
    two sides' shared numbering, in one compiled pass."""
    (a_ids, a_off), (b_ids, b_off) = a_numbered, b_numbered
    top = int(max(a_ids.max(initial=-1), b_ids.max(initial=-1))) + 1
    pos = np.full(top, -1, np.int64)
    out = np.zeros(a_ids.shape[0], a_ids.dtype)
    out_off = np.zeros(a.len() + 1, np.int64)
    args = (a_ids, a_off, b_ids, b_off, pos, out, out_off, np.zeros(a.len(), np.int64))
    if worth_compiling(a.len(), _ORDER_PYTHON_UP_TO):
        _difference(*args)
    else:
        _difference.interpreted(*args)
    flat = a.cast(_NAMES).explode(empty_as_null=False, keep_nulls=False).fill_null("")
    where = np.zeros(top, np.int64)  # a place of each id in a_ids (all hold the same name)
    where[a_ids] = np.arange(a_ids.shape[0], dtype=np.int64)
    rows = np.repeat(np.arange(a.len(), dtype=np.int64), np.diff(out_off))
    return lists_of(a.len(), rows, flat.gather(pl.Series(where[out[: out_off[-1]]])))


def _distinct_sides(
    expected: pl.Series, names: pl.Series
) -> tuple[dict[str, pl.Series], pl.Series, pl.Series]:
    """The tools ``unexpected`` (called, not expected) and ``not_called`` (expected, not
    called), as Polars' set operations on the two lists give them, and per row the number
    of distinct tools on both sides and on either. A null list gives null ``not_called``
    (expected) or null everything (called)."""
    e_numbered, c_numbered = numbered(expected, names)
    unexpected = _set_difference(names, c_numbered, e_numbered)
    not_called = _set_difference(expected, e_numbered, c_numbered)
    e_distinct = expected.list.n_unique()
    c_distinct = names.list.n_unique()
    null = names.is_null() | expected.is_null()
    t = pl.DataFrame(
        {
            "unexpected": unexpected,
            "not_called": not_called,
            "e": e_distinct,
            "c": c_distinct,
            "missed": not_called.list.len(),
            "null": null,
            "called": names.is_null(),
        }
    )
    common = pl.col("e") - pl.col("missed")
    out = t.select(
        unexpected=pl.when(~pl.col("called")).then("unexpected"),
        not_called=pl.when(~pl.col("null")).then("not_called"),
        common=pl.when(~pl.col("null")).then(common.cast(pl.Int64)),
        union=pl.when(~pl.col("null")).then((pl.col("c") + pl.col("missed")).cast(pl.Int64)),
    )
    sides = {"unexpected": out.get_column("unexpected"), "not_called": out.get_column("not_called")}
    return sides, out.get_column("common"), out.get_column("union")


ToolCorrectnessMode = Literal["set", "multiset", "exact", "subset", "ordered", "subsequence"]


@metric("tool-correctness", family="agent", dimension="trajectory", derived=scoring_pass)
def tool_correctness(*, mode: ToolCorrectnessMode = "set") -> Scored:
    """The tools called against the tools expected, as sets (Jaccard) or in one of five modes.

    E is the expected tool list (``metadata.trajectory.expected_tools``, else ``tools``), C
    the names of the calls made, in order.

    * ``set`` (default): the distinct tools, the size of their intersection over their union. A missing expected tool and
      an unexpected call both cost.
    * ``multiset``: the same Jaccard counting repeats, common / (|E| + |C| - common), with
      common the tools both name, as many times as both do (harness-evals' MCP
      ``tool_selection``).
    * ``exact``: the positions where C names E's tool, over max(|E|, |C|): order and count
      must match (harness-evals' ``exact``).
    * ``subset``: the expected tools called, counting repeats, over |E|; order free, extra
      calls free (harness-evals' ``subset``).
    * ``ordered`` (or ``subsequence``): how many expected tools, from the first, the calls
      make in that order (other calls between them allowed), over |E| (harness-evals'
      ``subsequence``).

    Nothing expected and nothing called is 1.0; an empty E with calls is 0.0 in every mode.
    No expectation at all scores 1.0 with a note. Details: ``unexpected`` and ``not_called``
    (distinct tools); outside ``set`` mode also ``matched`` and ``out_of`` (the numerator and
    the denominator) and the ``called`` sequence.

    Examples:
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records([
        ...     {"id": "a", "input": {"q": "a"}, "expected_output": "",
        ...      "metadata": {"trajectory": {"expected_tools": ["search", "fetch", "answer"]}}},
        ...     {"id": "b", "input": {"q": "b"}, "expected_output": "",
        ...      "metadata": {"trajectory": {"expected_tools": ["search"]}}}], name="demo")
        >>> calls = {"a": ["search", "answer", "fetch"], "b": ["search", "search"]}
        >>> def agent(sample):
        ...     return {"output": "", "trajectory": {"tool_calls": calls[sample["q"]]}}
        >>> run = ef.evaluate(ds, system=agent, metrics=["tool-correctness(mode=ordered)"])
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        a 0.666667 {"unexpected":[],"not_called":[],"matched":2,"out_of":3,"called":["search","answer","fetch"],"note":null}
        b 1.0 {"unexpected":[],"not_called":[],"matched":1,"out_of":1,"called":["search","search"],"note":null}
    """  # noqa: E501
    mode = "ordered" if mode == "subsequence" else mode

    def kernel(frame: pl.DataFrame, expect: Expectations, calls: pl.DataFrame) -> pl.DataFrame:
        expected = _expected_sequence(expect)
        names = called_names(frame)
        note = _note(
            expected.is_null(),
            "No metadata.trajectory.expected_tools or tools: nothing to check, scored 1.0.",
        )
        sides, common, union = _distinct_sides(expected, names)
        if mode == "set":
            score = pl.select(
                pl.when(expected.is_null() | (union == 0))
                .then(1.0)
                .otherwise((common / union).round(6))
            ).to_series()
            return pl.DataFrame({"score": score, **sides, "note": note})
        safe = expected.fill_null(pl.Series([[]], dtype=_NAMES))
        n_e, n_c = safe.list.len().cast(pl.Int64), names.list.len().cast(pl.Int64)
        if mode in ("multiset", "subset"):
            matched = multiset_common(safe, names)
        else:
            positional, ordered = _order_counts(safe, names)
            matched = positional if mode == "exact" else ordered
        t = pl.DataFrame({"e": n_e, "c": n_c, "m": matched})
        out_of = _out_of(mode)
        counted = t.select(
            matched="m",
            out_of=out_of,
            score=pl.when(pl.col("e") == 0)
            .then((pl.col("c") == 0).cast(pl.Float64))
            .otherwise((pl.col("m") / out_of).round(6)),
        )
        score = pl.select(
            pl.when(expected.is_null()).then(1.0).otherwise(counted.get_column("score"))
        ).to_series()
        return pl.DataFrame(
            {
                "score": score,
                **sides,
                "matched": counted.get_column("matched"),
                "out_of": counted.get_column("out_of"),
                "called": names,
                "note": note,
            }
        )

    if mode == "set":
        output: dict[str, pl.DataType] = {
            "unexpected": _NAMES,
            "not_called": _NAMES,
            "note": pl.String(),
        }
        fields: tuple[str, ...] = ("unexpected", "not_called", "note")
    else:
        output = {
            "unexpected": _NAMES,
            "not_called": _NAMES,
            "matched": pl.Int64(),
            "out_of": pl.Int64(),
            "called": _NAMES,
            "note": pl.String(),
        }
        fields = ("unexpected", "not_called", "matched", "out_of", "called", "note")

    def fast(flat: FlatPass, expect: Expectations) -> tuple[pl.DataFrame, Details]:
        expected, names = flat.expected_sequence(), flat.calls
        unexpected, c = _difference_fast(names, expected, top(flat))
        not_called, e = _difference_fast(expected, names, top(flat))
        missed = not_called.lengths
        none = ~expected.valid
        written = Details(flat.height).names("unexpected", unexpected)
        written.names("not_called", Lists(not_called.ids, not_called.off, expected.valid))
        note = "No metadata.trajectory.expected_tools or tools: nothing to check, scored 1.0."
        if mode == "set":
            t = pl.DataFrame({"common": e - missed, "union": c + missed, "none": none})
            score = t.select(
                score=pl.when(pl.col("none") | (pl.col("union") == 0))
                .then(1.0)
                .otherwise((pl.col("common") / pl.col("union")).round(6))
            )
            return score, written.note("note", none, note)
        safe = expected.or_empty()
        if mode in ("multiset", "subset"):
            matched = common_fast(safe, names)
        else:
            positional, ordered = _order_fast(safe, names)
            matched = positional if mode == "exact" else ordered
        t = pl.DataFrame({"e": safe.lengths, "c": names.lengths, "m": matched, "none": none})
        counted = t.select(
            out_of=_out_of(mode),
            score=pl.when(pl.col("none"))
            .then(1.0)
            .when(pl.col("e") == 0)
            .then((pl.col("c") == 0).cast(pl.Float64))
            .otherwise((pl.col("m") / _out_of(mode)).round(6)),
        )
        written.integer("matched", matched)
        written.integer("out_of", counted.get_column("out_of").to_numpy())
        written.names("called", names).note("note", none, note)
        return counted.select("score"), written

    key = "" if mode == "set" else f"({mode})"
    return trajectory_metric(
        "tool-correctness",
        kernel,
        output,
        _plain(*fields),
        key=key,
        fast=fast,
        reads=("expected_tools", "tools", "order"),
    )


def _distinct_small(values: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], ...]:
    """``np.unique(values, return_inverse=True)`` of non-negative integers, by a table of
    the values seen where they are small enough for one (no sort)."""
    top = int(values.max(initial=-1)) + 1
    if top > 4 * values.shape[0] + 1024:
        return tuple(np.unique(values, return_inverse=True))
    seen = np.zeros(top, np.bool_)
    seen[values] = True
    rank = np.cumsum(seen, dtype=np.int64) - 1
    return np.flatnonzero(seen).astype(np.int64), rank[values]


def _out_of(mode: str) -> pl.Expr:
    """tool-correctness's denominator outside ``set`` mode (columns ``e``, ``c``, ``m``)."""
    return {
        "multiset": pl.col("e") + pl.col("c") - pl.col("m"),
        "exact": pl.max_horizontal("e", "c"),
    }.get(mode, pl.col("e"))


def _difference_fast(a: Lists, b: Lists, top: int) -> tuple[Lists, npt.NDArray[np.int64]]:
    """``_set_difference`` over the flat layout: ``a``'s distinct names not in ``b``, and
    the number of ``a``'s distinct names."""
    n = a.valid.shape[0]
    out = np.zeros(a.ids.shape[0], np.int32)
    out_off = np.zeros(n + 1, np.int64)
    count = np.zeros(n, np.int64)
    _difference(a.ids, a.off, b.ids, b.off, np.full(top, -1, np.int64), out, out_off, count)
    return Lists(out[: out_off[-1]], out_off, np.ones(n, np.bool_)), count


def _order_fast(expected: Lists, names: Lists) -> tuple[npt.NDArray[np.int64], ...]:
    """``_order_kernel``'s two counts per row over the flat layout."""
    n = expected.valid.shape[0]
    positional, ordered = np.zeros(n, np.int64), np.zeros(n, np.int64)
    _order_kernel(expected.ids, expected.off, names.ids, names.off, positional, ordered)
    return positional, ordered


@metric(
    "argument-correctness",
    family="agent",
    dimension="trajectory",
    derived=scoring_pass,
    needs=lambda *, judge=False: more.agent_judged_needs("argument-correctness") if judge else [],
)
def argument_correctness(*, judge: bool = False) -> Scored:
    """The fraction of calls to specified tools whose arguments match the specification.

    A call counts when ``metadata.trajectory.tool_arguments`` has an entry for its tool;
    it is correct when its arguments contain one such entry's arguments (the subset match
    with loose numbers of ``tool-called-with``). Unlike ``tool-called-with``, which asks
    whether each expected call happened, this grades every call the agent made. No call to
    a specified tool scores 1.0 with a note.

    ``judge=true`` is harness-evals' judged variant: a judge model says of every tool call
    whether its arguments are correct for the task (prompt ``agent.argument-correctness``,
    one call per distinct episode, no specification needed); the score is the share it
    finds correct, no calls 1.0 with a note. Details: the verdicts, the number of calls,
    the prompt key.

    Examples:
        >>> import evalframe as ef
        >>> def judge(prompt):  # a scripted judge: the second call is judged wrong
        ...     return {"verdicts": [{"call": 1, "ok": True, "reason": "r"},
        ...                          {"call": 2, "ok": "refund" not in prompt, "reason": "r"}]}
        >>> calls = {"a": [{"name": "get_order", "arguments": {"id": 41}},
        ...                {"name": "refund", "arguments": {"order": 41}}],
        ...          "b": [{"name": "get_order", "arguments": {"id": 41}},
        ...                {"name": "get_order", "arguments": {"id": 41}}]}
        >>> ds = ef.Dataset.from_records([{"id": k, "input": {"k": k}, "expected_output": ""}
        ...                               for k in calls], name="demo")
        >>> run = ef.evaluate(
        ...     ds, system=lambda s: {"output": "", "trajectory": {"tool_calls": calls[s["k"]]}},
        ...     metrics=["argument-correctness(judge=true)"],
        ...     providers=ef.Providers(judge=ef.testing.ScriptedJudge(judge), cache=False))
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        a 0.5 {"verdicts":[{"call":1,"ok":true,"reason":"r"},{"call":2,"ok":false,"reason":"r"}],"calls":2,"note":null,"prompt":"agent.argument-correctness@v1"}
        b 1.0 {"verdicts":[{"call":1,"ok":true,"reason":"r"},{"call":2,"ok":true,"reason":"r"}],"calls":2,"note":null,"prompt":"agent.argument-correctness@v1"}
    """  # noqa: E501
    if judge:
        return more.agent_judged("argument-correctness")

    def kernel(frame: pl.DataFrame, expect: Expectations, calls: pl.DataFrame) -> pl.DataFrame:
        _, _, c, ok = spec_pairs(expect.get_column("tool_arguments"), calls)
        graded = np.zeros(calls.height, np.bool_)
        graded[c] = True
        right = np.zeros(calls.height, np.bool_)
        right[c[ok]] = True
        rows = calls.get_column("row").to_numpy()
        counts = pl.DataFrame(
            {
                "total": np.bincount(rows[graded], minlength=frame.height).astype(np.int64),
                "met": np.bincount(rows[right], minlength=frame.height).astype(np.int64),
            }
        )
        return counts.select(
            score=pl.when(pl.col("total") == 0)
            .then(1.0)
            .otherwise((pl.col("met") / pl.col("total")).round(6)),
            met="met",
            total="total",
            note=pl.when(pl.col("total") == 0).then(pl.lit(_NO_SPECIFIED_CALL)),
        )

    def fast(flat: FlatPass, expect: Expectations) -> tuple[pl.DataFrame, Details]:
        _, c, ok = flat.spec_verdicts()
        graded = np.zeros(flat.call_names.shape[0], np.bool_)
        graded[c] = True
        right = np.zeros(flat.call_names.shape[0], np.bool_)
        right[c[ok]] = True
        total = count_marked(graded, flat.call_off)
        met = count_marked(right, flat.call_off)
        score = pl.DataFrame({"met": met, "total": total}).select(
            score=pl.when(pl.col("total") == 0)
            .then(1.0)
            .otherwise((pl.col("met") / pl.col("total")).round(6))
        )
        written = Details(flat.height).integer("met", met).integer("total", total)
        return score, written.note("note", total == 0, _NO_SPECIFIED_CALL)

    return trajectory_metric(
        "argument-correctness",
        kernel,
        {"met": pl.Int64, "total": pl.Int64, "note": pl.String},
        _plain("met", "total", "note"),
        fast=fast,
        reads=("tool_arguments",),
    )


_NO_SPECIFIED_CALL = "No call to a tool listed in metadata.trajectory.tool_arguments: scored 1.0."


@metric(
    "step-efficiency",
    family="agent",
    dimension="trajectory",
    derived=scoring_pass,
    needs=lambda *, judge=False: more.agent_judged_needs("step-efficiency") if judge else [],
)
def step_efficiency(*, judge: bool = False) -> Scored:
    """``min(1, optimal / steps)``: how close the agent came to the shortest path.

    ``optimal`` is ``metadata.trajectory.optimal_steps``, else the length of the expected
    tool sequence (``expected_tools``, ``tools`` or ``order``). Zero steps score 1.0. A row
    with neither is that row's error.

    ``judge=true`` is harness-evals' judged variant, for episodes without a known optimum:
    a judge model says of every tool call whether it was necessary (prompt
    ``agent.step-efficiency``; a repeated, speculative or redundant call is not); the score
    is the share of necessary calls, no calls 1.0 with a note.

    Examples:
        >>> import evalframe as ef
        >>> def judge(prompt):  # a scripted judge: the second call is judged wrong
        ...     return {"verdicts": [{"call": 1, "ok": True, "reason": "r"},
        ...                          {"call": 2, "ok": "refund" not in prompt, "reason": "r"}]}
        >>> calls = {"a": [{"name": "get_order", "arguments": {"id": 41}},
        ...                {"name": "refund", "arguments": {"order": 41}}],
        ...          "b": [{"name": "get_order", "arguments": {"id": 41}},
        ...                {"name": "get_order", "arguments": {"id": 41}}]}
        >>> ds = ef.Dataset.from_records([{"id": k, "input": {"k": k}, "expected_output": ""}
        ...                               for k in calls], name="demo")
        >>> run = ef.evaluate(
        ...     ds, system=lambda s: {"output": "", "trajectory": {"tool_calls": calls[s["k"]]}},
        ...     metrics=["step-efficiency(judge=true)"],
        ...     providers=ef.Providers(judge=ef.testing.ScriptedJudge(judge), cache=False))
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        a 0.5 {"verdicts":[{"call":1,"ok":true,"reason":"r"},{"call":2,"ok":false,"reason":"r"}],"calls":2,"note":null,"prompt":"agent.step-efficiency@v1"}
        b 1.0 {"verdicts":[{"call":1,"ok":true,"reason":"r"},{"call":2,"ok":true,"reason":"r"}],"calls":2,"note":null,"prompt":"agent.step-efficiency@v1"}
    """  # noqa: E501
    if judge:
        return more.agent_judged("step-efficiency")

    def kernel(frame: pl.DataFrame, expect: Expectations, calls: pl.DataFrame) -> pl.DataFrame:
        optimal = pl.select(
            pl.coalesce(expect.get_column("optimal_steps"), _expected_sequence(expect).list.len())
        ).to_series()
        steps = frame.get_column("traj").struct.field("steps")
        out = pl.DataFrame({"steps": steps, "optimal": optimal})
        return out.select(
            score=pl.when(pl.col("steps") == 0)
            .then(1.0)
            .otherwise((pl.col("optimal") / pl.col("steps")).clip(upper_bound=1.0).round(6)),
            steps="steps",
            optimal_steps="optimal",
            has_optimal=pl.col("optimal").is_not_null(),
        )

    def fast(flat: FlatPass, expect: Expectations) -> tuple[pl.DataFrame, Details]:
        given = expect.get_column("optimal_steps")
        expected = flat.expected_sequence()
        length = pl.Series(expected.lengths).set(pl.Series(~expected.valid), None)
        optimal = pl.select(pl.coalesce(given, length)).to_series()
        out = pl.DataFrame({"steps": flat.steps, "optimal": optimal}).select(
            score=pl.when(pl.col("steps") == 0)
            .then(1.0)
            .otherwise((pl.col("optimal") / pl.col("steps")).clip(upper_bound=1.0).round(6)),
            has_optimal=pl.col("optimal").is_not_null(),
        )
        written = Details(flat.height).integer("steps", flat.steps)
        written.integer("optimal_steps", optimal.fill_null(0).to_numpy(), optimal.is_not_null())
        return out, written

    return trajectory_metric(
        "step-efficiency",
        kernel,
        {"steps": pl.Int64, "optimal_steps": pl.Int64, "has_optimal": pl.Boolean},
        _plain("steps", "optimal_steps"),
        required=(
            "has_optimal",
            "has no optimal step count for step-efficiency metric: set "
            "metadata.trajectory.optimal_steps or expected_tools.",
        ),
        fast=fast,
        reads=("optimal_steps", "expected_tools", "tools", "order"),
    )


@metric("tool-error-rate", family="agent", dimension="trajectory", derived=scoring_pass)
def tool_error_rate() -> Scored:
    """``1 - failed / calls``: the share of tool calls that did not fail.

    A call failed when its ``error`` is set. The details carry ``error_rate`` itself and the
    failing tools; no calls score 1.0 with a note. Higher is better, like every score.

    Examples:
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records([{"id": "a", "input": {"q": "a"}, "expected_output": ""}],
        ...                              name="demo")
        >>> def agent(sample):
        ...     calls = [{"name": "search"}, {"name": "fetch", "error": "timeout"}, {"name": "fetch"}]
        ...     return {"output": "", "trajectory": {"tool_calls": calls}}
        >>> run = ef.evaluate(ds, system=agent, metrics=["tool-error-rate"])
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        a 0.666667 {"calls":3,"failed":1,"error_rate":0.333333,"failing_tools":["fetch"],"note":null}
    """  # noqa: E501

    def kernel(frame: pl.DataFrame, expect: Expectations, calls: pl.DataFrame) -> pl.DataFrame:
        failed = calls.filter(pl.col("error").is_not_null())
        counts = calls.group_by("row").agg(calls=pl.len().cast(pl.Int64))
        fails = failed.group_by("row").agg(
            failed=pl.len().cast(pl.Int64), failing_tools=pl.col("name").unique(maintain_order=True)
        )
        rows = per_row(
            frame.height, counts.join(fails, on="row", how="left"), {"calls": 0, "failed": 0}
        )
        rate = pl.col("failed") / pl.col("calls")
        return rows.select(
            score=pl.when(pl.col("calls") == 0).then(1.0).otherwise((1.0 - rate).round(6)),
            calls="calls",
            failed="failed",
            error_rate=pl.when(pl.col("calls") > 0).then(rate.round(6)),
            failing_tools=pl.col("failing_tools").fill_null(pl.lit([], _NAMES)),
            note=pl.when(pl.col("calls") == 0).then(pl.lit("No tool calls: scored 1.0.")),
        )

    def fast(flat: FlatPass, expect: Expectations) -> tuple[pl.DataFrame, Details]:
        calls = flat.calls.lengths
        failed = count_marked(flat.call_failed, flat.call_off)
        failing = distinct(flat.calls.or_empty(), top(flat), flat.call_failed)
        t = pl.DataFrame({"calls": calls, "failed": failed})
        rate = pl.col("failed") / pl.col("calls")
        score = t.select(
            score=pl.when(pl.col("calls") == 0).then(1.0).otherwise((1.0 - rate).round(6))
        )
        # The rate's text as Polars writes the float, once per distinct (failed, calls).
        some = calls > 0
        pair = failed * (int(calls.max(initial=0)) + 1) + calls
        distinct_pairs, choice = _distinct_small(pair[some])
        at = np.full(flat.height, -1, np.int64)
        at[some] = choice
        first = np.zeros(distinct_pairs.shape[0], np.int64)
        first[choice] = np.flatnonzero(some)
        texts = json_values(t[first].select(a=rate.round(6)))
        written = Details(flat.height).integer("calls", calls).integer("failed", failed)
        written.text("error_rate", at, texts.to_list())
        written.names("failing_tools", failing)
        return score, written.note("note", calls == 0, "No tool calls: scored 1.0.")

    return trajectory_metric(
        "tool-error-rate",
        kernel,
        {
            "calls": pl.Int64,
            "failed": pl.Int64,
            "error_rate": pl.Float64,
            "failing_tools": _NAMES,
            "note": pl.String,
        },
        _plain("calls", "failed", "error_rate", "failing_tools", "note"),
        fast=fast,
    )


@metric(
    "goal-accuracy", family="agent", dimension="trajectory", threshold=1.0, derived=scoring_pass
)
def goal_accuracy() -> Scored:
    """1.0 when the agent made the goal call: ``metadata.trajectory.goal`` without an error.

    The goal is ``{tool, arguments}`` (or just a tool name): some call must have that tool
    name, arguments containing the goal's (subset match, loose numbers) and no ``error``.
    A row without a goal is that row's error.

    Examples:
        >>> import evalframe as ef
        >>> goal = {"tool": "book", "arguments": {"city": "Oslo"}}
        >>> ds = ef.Dataset.from_records([
        ...     {"id": k, "input": {"q": k}, "expected_output": "", "metadata": {"trajectory": {"goal": goal}}}
        ...     for k in ("a", "b")], name="demo")
        >>> calls = {"a": [{"name": "book", "arguments": {"city": "Oslo", "nights": 2}}],
        ...          "b": [{"name": "book", "arguments": {"city": "Oslo"}, "error": "sold out"}]}
        >>> def agent(sample):
        ...     return {"output": "", "trajectory": {"tool_calls": calls[sample["q"]]}}
        >>> run = ef.evaluate(ds, system=agent, metrics=["goal-accuracy"])
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        a 1.0 {"goal_tool":"book"}
        b 0.0 {"goal_tool":"book"}
    """  # noqa: E501

    def kernel(frame: pl.DataFrame, expect: Expectations, calls: pl.DataFrame) -> pl.DataFrame:
        goal = expect.get_column("goal")
        goals = (
            pl.DataFrame({"goal": goal})
            .with_row_index("row")
            .with_columns(pl.col("row").cast(pl.Int64))
            .filter(pl.col("goal").is_not_null())
            .unnest("goal")
        )
        usable = calls.get_column("error").is_null()
        s, _, ok = pair_verdicts(goals, calls, frame.height, usable)
        reached = np.zeros(frame.height, np.bool_)
        reached[goals.get_column("row").to_numpy()[s[ok]]] = True
        rows = pl.DataFrame({"ok": reached})
        return pl.DataFrame(
            {
                "score": rows.get_column("ok").cast(pl.Float64),
                "goal_tool": goal.struct.field("name"),
                "has_goal": goal.is_not_null(),
            }
        )

    def fast(flat: FlatPass, expect: Expectations) -> tuple[pl.DataFrame, Details]:
        s, _, ok = flat.goal_verdicts()
        reached = np.zeros(flat.height, np.bool_)
        reached[np.flatnonzero(flat.goal_valid)[s[ok]]] = True
        out = pl.DataFrame({"score": reached.astype(np.float64), "has_goal": flat.goal_valid})
        return out, Details(flat.height).name("goal_tool", flat.goal_names)

    return trajectory_metric(
        "goal-accuracy",
        kernel,
        {"goal_tool": pl.String, "has_goal": pl.Boolean},
        _plain("goal_tool"),
        required=("has_goal", "has no metadata.trajectory.goal for goal-accuracy metric."),
        fast=fast,
        reads=("goal",),
    )


@metric("trajectory-match", family="agent", dimension="trajectory", derived=scoring_pass)
def trajectory_match(
    *, mode: Literal["exact", "in-order", "any-order", "precision", "recall", "f1"] = "exact"
) -> Scored:
    """The called tool sequence against ``metadata.trajectory.expected_tools``.

    ``exact``: 1.0 when the sequences are equal. ``in-order``: 1.0 when the expected tools
    appear in that order, other calls allowed between them (a subsequence). ``any-order``:
    1.0 when the same tools are called the same number of times, in any order.
    ``precision``, ``recall`` and ``f1`` give partial credit from the common tools counted
    with multiplicity: common / called, common / expected, and their harmonic mean. No
    expected sequence (``expected_tools``, else ``tools``, else ``order``) is that row's
    error.

    Examples:
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records([
        ...     {"id": "a", "input": {"q": "a"}, "expected_output": "",
        ...      "metadata": {"trajectory": {"expected_tools": ["search", "book"]}}}], name="demo")
        >>> def agent(sample):
        ...     return {"output": "", "trajectory": {"tool_calls": ["search", "weather", "book"]}}
        >>> for mode in ("exact", "in-order", "f1"):
        ...     run = ef.evaluate(ds, system=agent, metrics=[f"trajectory-match(mode={mode})"])
        ...     print(mode, *run.scores.select("score", "details").row(0))
        exact 0.0 {"expected":["search","book"],"called":["search","weather","book"],"common":2}
        in-order 1.0 {"expected":["search","book"],"called":["search","weather","book"],"common":2}
        f1 0.8 {"expected":["search","book"],"called":["search","weather","book"],"common":2}
    """

    def kernel(frame: pl.DataFrame, expect: Expectations, calls: pl.DataFrame) -> pl.DataFrame:
        expected = _expected_sequence(expect)
        names = called_names(frame)
        safe = expected.fill_null(pl.Series([[]], dtype=_NAMES))
        n_expected = safe.list.len().cast(pl.Int64)
        n_called = names.list.len().cast(pl.Int64)
        common = multiset_common(safe, names)
        t = pl.DataFrame({"e": n_expected, "c": n_called, "m": common})
        if mode == "exact":
            score = (names == safe).cast(pl.Float64)
        elif mode == "in-order":
            score = is_subsequence(safe, names).cast(pl.Float64)
        elif mode == "any-order":
            score = t.select(
                ((pl.col("m") == pl.col("e")) & (pl.col("m") == pl.col("c"))).cast(pl.Float64)
            ).to_series()
        else:
            score = t.select(_partial_match(mode)).to_series()
        return pl.DataFrame(
            {
                "score": score,
                "expected": expected,
                "called": names,
                "common": common,
                "has_expected": expected.is_not_null(),
            }
        )

    def fast(flat: FlatPass, expect: Expectations) -> tuple[pl.DataFrame, Details]:
        expected, names = flat.expected_sequence(), flat.calls
        safe = expected.or_empty()
        common = flat.kept("trajectory-match common", lambda: common_fast(safe, names))
        n_e, n_c = safe.lengths, names.lengths
        if mode == "exact":
            positional, _ = _order_fast(safe, names)
            score = pl.Series((n_e == n_c) & (positional == n_e)).cast(pl.Float64)
        elif mode == "in-order":
            score = pl.Series(subsequence_fast(safe, names)).cast(pl.Float64)
        elif mode == "any-order":
            score = pl.Series((common == n_e) & (common == n_c)).cast(pl.Float64)
        else:
            t = pl.DataFrame({"e": n_e, "c": n_c, "m": common})
            score = t.select(_partial_match(mode)).to_series()
        written = Details(flat.height, alike="trajectory-match")  # the same in every mode
        written.names("expected", expected).names("called", names).integer("common", common)
        out = pl.DataFrame({"score": score, "has_expected": expected.valid})
        return out, written

    return trajectory_metric(
        "trajectory-match",
        kernel,
        {"expected": _NAMES, "called": _NAMES, "common": pl.Int64, "has_expected": pl.Boolean},
        _plain("expected", "called", "common"),
        key=f"({mode})",
        required=(
            "has_expected",
            "has no metadata.trajectory.expected_tools for trajectory-match metric.",
        ),
        fast=fast,
        reads=("expected_tools", "tools", "order"),
    )


def _partial_match(mode: str) -> pl.Expr:
    """trajectory-match's ``precision``, ``recall`` or ``f1`` from the counts ``e``
    (expected), ``c`` (called) and ``m`` (common)."""
    p = (
        pl.when(pl.col("c") == 0)
        .then(pl.when(pl.col("e") == 0).then(1.0).otherwise(0.0))
        .otherwise(pl.col("m") / pl.col("c"))
    )
    r = pl.when(pl.col("e") == 0).then(1.0).otherwise(pl.col("m") / pl.col("e"))
    f = pl.when(p + r == 0).then(0.0).otherwise(2 * p * r / (p + r))
    return {"precision": p, "recall": r, "f1": f}[mode].round(6)


# --- judge-backed (the shared judge engine; prompts in metrics/_dialogue_judged.py) -------


@metric(
    "task-completion",
    family="agent",
    dimension="trajectory",
    needs=lambda: judged.dialogue_needs("task-completion"),
)
def task_completion() -> Scored:
    """Did the agent accomplish the task in its input, judging its tool calls and answer?

    One judge call per distinct episode (prompt ``agent.task-completion``): the judge states
    the task and the outcome the agent reached, then labels it complete (1.0), partial (0.5)
    or incomplete (0.0). Details: task, outcome, verdict, reason, prompt key. A row without a
    recorded trajectory is that row's error.

    Examples:
        >>> import evalframe as ef
        >>> def judge(prompt):
        ...     return {"task": "Book a room in Oslo", "outcome": "Searched, never booked",
        ...             "verdict": "partial", "reason": "No booking call."}
        >>> ds = ef.Dataset.from_records([{"id": "a", "input": {"q": "Book a room in Oslo"},
        ...                                "expected_output": ""}], name="demo")
        >>> def agent(sample):
        ...     return {"output": "Here are three hotels.", "trajectory": {"tool_calls": ["search"]}}
        >>> run = ef.evaluate(ds, system=agent, metrics=["task-completion"],
        ...                   providers=ef.Providers(judge=ef.testing.ScriptedJudge(judge), cache=False))
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        a 0.5 {"task":"Book a room in Oslo","outcome":"Searched, never booked","verdict":"partial","reason":"No booking call.","prompt":"agent.task-completion@v2"}
    """  # noqa: E501
    return judged.dialogue_scored("task-completion")


@metric(
    "plan-adherence",
    family="agent",
    dimension="trajectory",
    needs=lambda: judged.dialogue_needs("plan-adherence"),
)
def plan_adherence() -> Scored:
    """The share of the plan's steps the agent's actions carried out as planned.

    The plan is ``metadata.plan`` (text, or a list of steps) when the sample has one, else the
    plan the agent stated, as the judge reads it (prompt ``agent.plan-adherence``). Details:
    each step with ``followed``, the reason and the prompt key. No plan found is the row's
    error.

    Examples:
        >>> import evalframe as ef
        >>> def judge(prompt):
        ...     return {"plan": [{"step": "search hotels", "followed": True},
        ...                      {"step": "book the cheapest", "followed": False}], "reason": "r"}
        >>> ds = ef.Dataset.from_records([{"id": "a", "input": {"q": "Book a room in Oslo"},
        ...     "expected_output": "", "metadata": {"plan": ["search hotels", "book the cheapest"]}}],
        ...     name="demo")
        >>> def agent(sample):
        ...     return {"output": "Here are three hotels.", "trajectory": {"tool_calls": ["search"]}}
        >>> run = ef.evaluate(ds, system=agent, metrics=["plan-adherence"],
        ...                   providers=ef.Providers(judge=ef.testing.ScriptedJudge(judge), cache=False))
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        a 0.5 {"plan":[{"step":"search hotels","followed":true},{"step":"book the cheapest","followed":false}],"reason":"r","prompt":"agent.plan-adherence@v2"}
    """  # noqa: E501
    return judged.dialogue_scored("plan-adherence")


@metric(
    "plan-quality",
    family="agent",
    dimension="trajectory",
    needs=lambda: judged.dialogue_needs("plan-quality"),
)
def plan_quality() -> Scored:
    """How good the plan is for the task: the mean of complete, logical and efficient.

    The plan as for ``plan-adherence``, judged on its own merits (prompt ``agent.plan-quality``).
    Details: the plan's steps, the three checks, the reason and the prompt key.

    Examples:
        >>> import evalframe as ef
        >>> def judge(prompt):
        ...     return {"plan": ["search hotels", "book the cheapest"], "complete": True,
        ...             "logical": True, "efficient": False, "reason": "Searches twice."}
        >>> ds = ef.Dataset.from_records([{"id": "a", "input": {"q": "Book a room in Oslo"},
        ...     "expected_output": "", "metadata": {"plan": ["search hotels", "book the cheapest"]}}],
        ...     name="demo")
        >>> def agent(sample):
        ...     return {"output": "Booked.", "trajectory": {"tool_calls": ["search", "search", "book"]}}
        >>> run = ef.evaluate(ds, system=agent, metrics=["plan-quality"],
        ...                   providers=ef.Providers(judge=ef.testing.ScriptedJudge(judge), cache=False))
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        a 0.666667 {"plan":["search hotels","book the cheapest"],"complete":true,"logical":true,"efficient":false,"reason":"Searches twice.","prompt":"agent.plan-quality@v2"}
    """  # noqa: E501
    return judged.dialogue_scored("plan-quality")
