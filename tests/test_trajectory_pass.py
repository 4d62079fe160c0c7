"""The trajectory and agent metrics over the flat layout (``metrics/_trajectory_pass.py``)
against a slow, obvious per-episode implementation written here: every score, error and
details text, on generated episodes with hostile tool names and argument values."""

from __future__ import annotations

import json
import os
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, cast

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import evalframe as ef
from evalframe.core import _njit, _score
from evalframe.core._trajectory import parse_trajectory, trajectory_series
from evalframe.metrics import _trajectory_pass
from evalframe.metrics._arguments import loose_subset

NAMES = ["search", "book", 'qu"ote', "back\\slash", "new\nline", "\x01ctl", "ünï", "😀", "a/b"]
NAMES += ["\u2028sep", "<b>&", " pad ", "eight_by", "nine_byte", "twelve_bytes", "thirteen_byte"]
NAMES += ["search_flights_v2"]
MODES = ["set", "multiset", "exact", "subset", "ordered"]
MATCH = ["exact", "in-order", "any-order", "precision", "recall", "f1"]
METRICS = [
    "tool-called",
    "tool-not-called",
    "tool-called-with",
    "tool-call-order",
    "steps-below",
    "steps-below(max_steps=2)",
    "no-pending-approvals",
    "approval-gated",
    *(f"tool-correctness(mode={m})" for m in MODES),
    "argument-correctness",
    "step-efficiency",
    "tool-error-rate",
    "goal-accuracy",
    *(f"trajectory-match(mode={m})" for m in MATCH),
]

names = st.sampled_from(NAMES)
scalars = st.one_of(
    st.integers(-3, 3), st.sampled_from([1.0, 2.5, "1", "2.0", " 3 ", "x", True, None, "ü"])
)
values = st.one_of(
    scalars, st.lists(scalars, max_size=2), st.dictionaries(names, scalars, max_size=2)
)
arguments = st.dictionaries(st.sampled_from(["id", "q", 'k"y']), values, max_size=3)


@st.composite
def calls(draw: Any) -> Any:
    name = draw(names)
    if draw(st.booleans()):
        return name
    call: dict[str, Any] = {"name": name}
    if draw(st.booleans()):
        call["arguments"] = draw(arguments)
    if draw(st.integers(0, 4)) == 0:
        call["error"] = "timeout"
    return call


@st.composite
def trajectories(draw: Any) -> dict[str, Any] | None:
    if draw(st.integers(0, 9)) == 0:
        return None
    block: dict[str, Any] = {"tool_calls": draw(st.lists(calls(), max_size=8))}
    if draw(st.booleans()):
        block["steps"] = draw(st.integers(0, 12))
    block["approvals"] = draw(st.lists(names, max_size=3))
    block["pending_approvals"] = draw(st.integers(0, 2))
    return block


spec_entries = st.one_of(
    st.fixed_dictionaries({"tool": names, "arguments": arguments}),
    st.fixed_dictionaries({"name": names, "args": arguments}),
    st.fixed_dictionaries({"tool": names}),
    st.sampled_from(["search", 3, {"arguments": {}}, {"tool": "book", "arguments": "x"}]),
    st.just({"tool": "   ", "arguments": {}}),
)


@st.composite
def expectations(draw: Any) -> dict[str, Any]:
    block: dict[str, Any] = {}
    for key in ("tools", "forbidden_tools", "requires_approval"):
        if draw(st.booleans()):
            block[key] = draw(st.one_of(names, st.lists(names, max_size=4)))
    for key in ("order", "expected_tools"):
        if draw(st.booleans()):
            block[key] = draw(st.lists(names, max_size=4))
    if draw(st.booleans()):
        block["max_steps"] = draw(st.integers(-1, 10))
    if draw(st.booleans()):
        block["optimal_steps"] = draw(st.integers(0, 6))
    if draw(st.booleans()):
        block["tool_arguments"] = draw(st.lists(spec_entries, max_size=3))
    if draw(st.booleans()):
        block["goal"] = draw(
            st.one_of(
                names.filter(str.strip),
                st.fixed_dictionaries({"tool": names, "arguments": arguments}),
            )
        )
    return block


# --- the oracle ------------------------------------------------------------------------------


def _listed(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def _fraction(met: int, total: int) -> float:
    return 1.0 if total == 0 else round(met / total, 6)


def _note(total: int, key: str) -> str | None:
    if total:
        return None
    return f"No expectations under metadata.trajectory.{key}: nothing to check, scored 1.0."


def _subsequence(expected: list[str], called: list[str]) -> bool:
    it = iter(called)
    return all(any(c == e for c in it) for e in expected)


def _set_difference(a: list[str], b: list[str]) -> list[str]:
    """Polars' ``list.set_difference`` (the reference for the order of its result)."""
    out = pl.Series([a], dtype=pl.List(pl.String)).list.set_difference(
        pl.Series([b], dtype=pl.List(pl.String))
    )
    return list(out[0])


def _spec(entry: Any) -> tuple[str, dict[str, Any]] | None:
    if not isinstance(entry, dict):
        return None
    name = next((entry[k] for k in ("name", "tool") if entry.get(k) is not None), None)
    args = next((entry[k] for k in ("arguments", "args") if entry.get(k) is not None), {})
    if not isinstance(name, str) or not name.strip() or not isinstance(args, dict):
        return None
    return name, args


def oracle(metric: str, sid: str, expect: dict[str, Any], traj: dict[str, Any] | None) -> Any:
    """(score, error, details) of one episode, computed the obvious way."""
    name = metric.split("(", maxsplit=1)[0]
    mode = metric.split("=")[1].rstrip(")") if "=" in metric else None
    if traj is None:
        return (
            None,
            (
                f"Metric '{name}' needs a trajectory for sample '{sid}' and none was recorded. "
                "Record one with ef.trajectory.record(...) in the system under test, return "
                '{"output": ..., "trajectory": {...}} from it, or add a trajectory block to the '
                "saved outputs."
            ),
            None,
        )
    calls = [{"name": c} if isinstance(c, str) else c for c in traj["tool_calls"]]
    called = [c["name"] for c in calls]
    steps = traj.get("steps", len(calls))
    specs = [s for s in map(_spec, expect.get("tool_arguments", [])) if s is not None]
    skipped = len(expect.get("tool_arguments", [])) - len(specs)
    sequence = next((expect[k] for k in ("expected_tools", "tools", "order") if k in expect), None)
    if sequence is not None:
        sequence = _listed(sequence)

    def args_of(call: dict[str, Any]) -> dict[str, Any]:
        return call.get("arguments") or {}

    if name == "tool-called":
        wanted = _listed(expect.get("tools", []))
        missed = [t for t in wanted if t not in called]
        met, total = len(wanted) - len(missed), len(wanted)
        details = {"met": met, "total": total, "not_called": missed, "note": _note(total, "tools")}
        return _fraction(met, total), None, details
    if name == "tool-not-called":
        forbidden = _listed(expect.get("forbidden_tools", []))
        found = [t for t in forbidden if t in called]
        total = len(forbidden)
        note = _note(total, "forbidden_tools")
        details = {"met": total - len(found), "total": total, "called": found, "note": note}
        return _fraction(total - len(found), total), None, details
    if name == "tool-called-with":
        ok = [any(c["name"] == n and loose_subset(a, args_of(c)) for c in calls) for n, a in specs]
        unmatched = [n for (n, _), good in zip(specs, ok, strict=True) if not good]
        met, total = sum(ok), len(specs)
        note = _note(total, "tool_arguments")
        details = {"met": met, "total": total, "unmatched": unmatched, "skipped": skipped}
        return _fraction(met, total), None, {**details, "note": note}
    if name == "tool-call-order":
        order = expect.get("order")
        note = None if order else _note(0, "order")
        details = {"expected": order, "called": called, "note": note}
        return float(_subsequence(order or [], called)), None, details
    if name == "steps-below":
        limit = expect.get("max_steps", 2 if "max_steps=2" in metric else None)
        if limit is None:
            note = "No step limit (metadata.trajectory.max_steps or max_steps=): scored 1.0."
            return 1.0, None, {"steps": steps, "max_steps": None, "over_by": None, "note": note}
        over = max(steps - limit, 0)
        note = "A step limit below 1 is no limit: scored 1.0." if limit < 1 else None
        score = 1.0 if limit < 1 else float(steps <= limit)
        return score, None, {"steps": steps, "max_steps": limit, "over_by": over, "note": note}
    if name == "no-pending-approvals":
        pending = traj["pending_approvals"]
        return float(pending == 0), None, {"pending_approvals": pending}
    if name == "approval-gated":
        wanted = _listed(expect.get("requires_approval", []))
        missed = [a for a in wanted if a not in traj["approvals"]]
        met, total = len(wanted) - len(missed), len(wanted)
        note = _note(total, "requires_approval")
        return (
            _fraction(met, total),
            None,
            {"met": met, "total": total, "not_approved": missed, "note": note},
        )
    if name == "tool-correctness":
        mode = mode or "set"
        e = sequence or []
        note = None
        if sequence is None:
            note = "No metadata.trajectory.expected_tools or tools: nothing to check, scored 1.0."
        not_called = None if sequence is None else _set_difference(e, called)
        details: dict[str, Any] = {
            "unexpected": _set_difference(called, e),
            "not_called": not_called,
        }
        if mode == "set":
            union = len(set(called) | set(e))
            common = len(set(called) & set(e))
            score = 1.0 if sequence is None or union == 0 else round(common / union, 6)
            return score, None, {**details, "note": note}
        if mode in ("multiset", "subset"):
            matched = sum((Counter(e) & Counter(called)).values())
        elif mode == "exact":
            matched = sum(a == b for a, b in zip(e, called, strict=False))
        else:
            it, matched = iter(called), 0
            for x in e:
                if not any(c == x for c in it):
                    break
                matched += 1
        out_of = {"multiset": len(e) + len(called) - matched, "exact": max(len(e), len(called))}
        out = out_of.get(mode, len(e))
        if sequence is None:
            score = 1.0
        elif not e:
            score = float(not called)
        else:
            score = round(matched / out, 6)
        details |= {"matched": matched, "out_of": out, "called": called, "note": note}
        return score, None, details
    if name == "argument-correctness":
        graded = [c for c in calls if any(c["name"] == n for n, _ in specs)]
        right = [
            c
            for c in graded
            if any(c["name"] == n and loose_subset(a, args_of(c)) for n, a in specs)
        ]
        total, met = len(graded), len(right)
        note = None
        if not total:
            note = "No call to a tool listed in metadata.trajectory.tool_arguments: scored 1.0."
        return _fraction(met, total), None, {"met": met, "total": total, "note": note}
    if name == "step-efficiency":
        optimal = expect.get("optimal_steps", None if sequence is None else len(sequence))
        if optimal is None:
            return (
                None,
                (
                    f"Sample '{sid}' has no optimal step count for step-efficiency metric: set "
                    "metadata.trajectory.optimal_steps or expected_tools."
                ),
                None,
            )
        score = 1.0 if steps == 0 else round(min(1.0, optimal / steps), 6)
        return score, None, {"steps": steps, "optimal_steps": optimal}
    if name == "tool-error-rate":
        failed = [c["name"] for c in calls if c.get("error")]
        n = len(calls)
        details = {
            "calls": n,
            "failed": len(failed),
            "error_rate": round(len(failed) / n, 6) if n else None,
            "failing_tools": list(dict.fromkeys(failed)),
            "note": None if n else "No tool calls: scored 1.0.",
        }
        return (round(1 - len(failed) / n, 6) if n else 1.0), None, details
    if name == "goal-accuracy":
        goal = expect.get("goal")
        if goal is None:
            return (
                None,
                f"Sample '{sid}' has no metadata.trajectory.goal for goal-accuracy metric.",
                None,
            )
        g_name, g_args = _spec({"tool": goal} if isinstance(goal, str) else goal) or ("", {})
        ok = any(
            c["name"] == g_name and not c.get("error") and loose_subset(g_args, args_of(c))
            for c in calls
        )
        return float(ok), None, {"goal_tool": g_name}
    if name == "trajectory-match":
        if sequence is None:
            return (
                None,
                (
                    f"Sample '{sid}' has no metadata.trajectory.expected_tools for "
                    "trajectory-match metric."
                ),
                None,
            )
        mode = mode or "exact"
        common = sum((Counter(sequence) & Counter(called)).values())
        p = common / len(called) if called else float(not sequence)
        r = common / len(sequence) if sequence else 1.0
        score = {
            "exact": float(called == sequence),
            "in-order": float(_subsequence(sequence, called)),
            "any-order": float(Counter(called) == Counter(sequence)),
            "precision": round(p, 6),
            "recall": round(r, 6),
            "f1": round(0.0 if p + r == 0 else 2 * p * r / (p + r), 6),
        }[mode]
        return score, None, {"expected": sequence, "called": called, "common": common}
    raise AssertionError(metric)


# --- the comparison ------------------------------------------------------------------------


@contextmanager
def kernels(mode: str) -> Iterator[None]:
    """Every kernel compiled (and passes split in two halves from 2 rows, the metrics scored
    on two threads, repeated details texts looked for past the first 2 rows only while they
    pay) or interpreted."""
    before = os.environ.get("EVALFRAME_KERNELS"), _njit.HALVES_FROM, _score._CONCURRENT_FROM
    trial = _trajectory_pass.HASH_TRIAL
    os.environ["EVALFRAME_KERNELS"] = mode
    _njit.HALVES_FROM = 2 if mode == "compiled" else before[1]
    _score._CONCURRENT_FROM = 1 if mode == "compiled" else before[2]
    _trajectory_pass.HASH_TRIAL = 2 if mode == "compiled" else trial
    try:
        yield
    finally:
        _njit.HALVES_FROM = before[1]
        _score._CONCURRENT_FROM = before[2]
        _trajectory_pass.HASH_TRIAL = trial
        if before[0] is None:
            del os.environ["EVALFRAME_KERNELS"]
        else:
            os.environ["EVALFRAME_KERNELS"] = before[0]


def scores(episodes: list[tuple[dict[str, Any], dict[str, Any] | None]], mode: str) -> pl.DataFrame:
    ids = [f"s{i}" for i in range(len(episodes))]
    ds = ef.Dataset.from_records(
        [
            {"id": sid, "input": {}, "expected_output": "x", "metadata": {"trajectory": e}}
            for sid, (e, _) in zip(ids, episodes, strict=True)
        ],
        name="pass",
    )
    trajectories = [None if t is None else parse_trajectory(t, "test") for _, t in episodes]
    outputs = pl.DataFrame({"sample_id": ids, "actual_output": ["x"] * len(ids)}).with_columns(
        trajectory_series(trajectories)
    )
    with kernels(mode):
        return ef.evaluate(ds, outputs=outputs, metrics=METRICS).scores


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(expectations(), trajectories()), min_size=1, max_size=12))
def test_flat_pass_matches_the_per_episode_oracle(episodes: Any) -> None:
    fast = scores(episodes, "compiled")  # every batch takes the flat layout
    for row in fast.iter_rows(named=True):
        i = int(row["sample_id"][1:])
        expect, traj = episodes[i]
        score, error, details = oracle(row["metric"], row["sample_id"], expect, traj)
        assert (row["score"], row["error"]) == (score, error), (row["metric"], expect, traj)
        if details is None:
            assert row["details"] is None
        else:
            text = json.dumps(details, ensure_ascii=False, separators=(",", ":"))
            assert row["details"] == text, (row["metric"], expect, traj)
    slow = scores(episodes, "interpreted")  # the column-by-column path
    assert fast.drop("run_id").equals(slow.drop("run_id"))


def test_hand_built_columns_with_nulls_take_the_column_by_column_path() -> None:
    """Nulls a parsed trajectory never holds (no call list, a call without a name, no steps,
    a null approval) leave the flat layout out; the scores are the column-by-column path's."""
    from evalframe.core._trajectory import TRAJECTORY
    from evalframe.metrics._expectations import Expectations
    from evalframe.metrics._trajectory_pass import flat_pass

    call = {"name": "search", "arguments": '{"id":1}', "result": None, "error": None}
    call |= {"latency_ms": None, "tokens": None}
    regular = {"tool_calls": [call], "steps": 1, "finish_reason": None, "approvals": ["a"]}
    regular["pending_approvals"] = 0
    odd = [
        {**regular, "tool_calls": None},
        {**regular, "tool_calls": [{**call, "name": None}]},
        {**regular, "steps": None},
        {**regular, "approvals": ["a", None]},
    ]
    meta = json.dumps({"trajectory": {"tools": ["search"], "expected_tools": ["search"]}})
    for row in odd:
        rows = [regular, row, None]
        traj = pl.Series("trajectory", rows, dtype=TRAJECTORY)
        ids = pl.Series([f"s{i}" for i in range(len(rows))])
        with kernels("compiled"):
            expect = Expectations(pl.Series([meta] * len(rows)), ids)
            assert flat_pass(traj, expect) is None
            first = Expectations(pl.Series([meta]), ids.head(1))
            assert flat_pass(traj.head(1), first) is not None  # the regular row alone
        frame = pl.DataFrame(
            {"sample_id": ids, "actual_output": "x", "metadata": meta, "trajectory": traj}
        )
        metrics = ef.metrics.resolve(METRICS)
        with kernels("compiled"):
            fast = ef.score(frame, metrics)
        with kernels("interpreted"):
            slow = ef.score(frame, metrics)
        assert fast.equals(slow)


def _empty_pass(n: int) -> _trajectory_pass.FlatPass:
    """The flat layout of ``n`` rows without calls or expectations (kernels compiled)."""
    from evalframe.core._trajectory import TRAJECTORY
    from evalframe.metrics._expectations import Expectations

    regular = {"tool_calls": [], "steps": 0, "finish_reason": None, "approvals": []}
    traj = pl.Series("trajectory", [{**regular, "pending_approvals": 0}] * n, dtype=TRAJECTORY)
    flat = _trajectory_pass.flat_pass(
        traj, Expectations(pl.Series(["{}"] * n), pl.Series(["s"] * n))
    )
    assert flat is not None
    return flat


def test_a_repeated_details_text_is_kept_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows whose details texts are equal share one copy of the bytes (each half of the rows
    its own); the texts read back as written, also where the column is built from each
    text's place instead of the views (a buffer past 2 GiB)."""
    from evalframe.metrics._trajectory_pass import Details, details_text

    n = 40
    with kernels("compiled"):
        flat = _empty_pass(n)
        values = [7] * 30 + list(range(1_000_000_000_000, 1_000_000_000_010))
        texts = details_text(Details(n).integer("a_long_enough_key", values), flat)
        monkeypatch.setattr(_trajectory_pass, "fits_views", lambda size: False)
        placed = details_text(Details(n).integer("a_long_enough_key", values), flat)
    assert texts.to_list() == [f'{{"a_long_enough_key":{v}}}' for v in values]
    assert placed.to_list() == texts.to_list()
    views = texts.to_arrow(compat_level=pl.CompatLevel.newest()).buffers()[1]
    where = np.frombuffer(views, np.int32).reshape(n, 4)[:, 3]  # each text's place
    assert len(set(where[:30].tolist())) == 2  # the 30 equal texts: one copy per half
    assert len(set(where.tolist())) == 12


def test_shared_parts_are_made_once_each_under_their_own_lock() -> None:
    """``FlatPass.kept`` makes a part once for every thread asking for it, and a thread
    making one part never waits for another thread making a different one: here part "a" is
    only finished once part "b" has been made on another thread."""
    from concurrent.futures import ThreadPoolExecutor

    with kernels("compiled"):
        flat = _empty_pass(4)
    made: list[str] = []
    b_made = threading.Event()

    def make_a() -> str:
        made.append("a")
        assert b_made.wait(timeout=60), "part a's maker waited for part b's"
        return "A"

    def make_b() -> str:
        made.append("b")
        b_made.set()
        return "B"

    with ThreadPoolExecutor(4) as pool:
        a = [pool.submit(flat.kept, "a", make_a) for _ in range(2)]
        while "a" not in made:
            threading.Event().wait(0.001)
        b = [pool.submit(flat.kept, "b", make_b) for _ in range(2)]
        assert [f.result() for f in a + b] == ["A", "A", "B", "B"]
    assert sorted(made) == ["a", "b"]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.text(max_size=20), max_size=30), min_size=1, max_size=3),
    st.integers(0, 3),
)
def test_names_numbered_from_arrow_views_as_from_their_bytes(
    chunks: list[list[str]], skip: int
) -> None:
    """``intern_strings`` reads each name from its Arrow view (or a long one from its data
    buffer, of several) and numbers it as ``intern_flat`` does from the column's bytes,
    sharing one id space with names numbered either way."""
    from evalframe.core._arrow_text import text_buffers
    from evalframe.metrics._text import _Interner

    strings = pl.concat([pl.Series(c, dtype=pl.String) for c in chunks], rechunk=False)
    strings = strings.slice(min(skip, strings.len()))  # an Arrow offset
    before = pl.Series(["search", "x" * 13, ""])
    views, flat = _Interner(), _Interner()
    for s in (before, strings):
        with kernels("compiled"):
            got = views.intern_strings(s)
        want = flat.intern_flat(*text_buffers(s)[:2])
        assert got.tolist() == want.tolist()
    assert views.n_ids == flat.n_ids


def _views_into(texts: list[str], picked: list[int]) -> pl.Series:
    """The strings ``texts[i]`` for ``i`` in ``picked`` as an Arrow string-view column whose
    one data buffer holds every text of ``texts`` end to end (as the names of a
    trajectory's calls share theirs with the arguments)."""
    import pyarrow as pa

    data = b"".join(t.encode() for t in texts)
    starts = np.cumsum([0, *(len(t.encode()) for t in texts)])
    views = bytearray()
    for i in picked:
        raw = texts[i].encode()
        if len(raw) <= 12:
            views += len(raw).to_bytes(4, "little") + raw.ljust(12, b"\0")
        else:
            at = int(starts[i]).to_bytes(4, "little")
            views += len(raw).to_bytes(4, "little") + raw[:4] + bytes(4) + at
    array = pa.Array.from_buffers(
        pa.string_view(), len(picked), [None, pa.py_buffer(bytes(views)), pa.py_buffer(data)]
    )
    return cast(pl.Series, pl.from_arrow(array))


@pytest.mark.parametrize("last", ["arguments", "name"])
def test_names_numbered_in_the_buffer_they_share_with_the_arguments(
    monkeypatch: pytest.MonkeyPatch, last: str
) -> None:
    """Names that share one data buffer with other texts (the calls' names with their
    arguments) are read in place by ``intern_strings``, without copying that buffer, and
    numbered as ``intern_flat`` numbers them; the buffer is copied only where a long name
    ends too near its end for whole words to be read."""
    from evalframe.core._arrow_text import text_buffers
    from evalframe.metrics import _text

    names = ["search_documents", "get", "lookup_customer_record", "x" * 40, "é" * 9]
    texts, picked = [], []
    for k in range(300):
        picked.append(len(texts))
        texts.append(names[k % len(names)])
        texts.append(json.dumps({"query": "w" * (k % 37)}))
    if last == "name":  # no argument after the last name: no word to spare
        texts.pop()
    strings = _views_into(texts, picked)
    assert strings.to_list() == [texts[i] for i in picked]
    want = _text._Interner().intern_flat(*text_buffers(strings)[:2])
    copied: list[int] = []
    padded = _text._padded
    monkeypatch.setattr(_text, "_padded", lambda parts: copied.append(1) or padded(parts))
    with kernels("compiled"):
        got = _text._Interner().intern_strings(strings)
    assert got.tolist() == want.tolist()
    assert len(set(got.tolist())) == len(names)
    assert copied == ([] if last == "arguments" else [1])


def test_passes_split_for_a_lone_metric_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pass that splits only when ``alone`` keeps to its thread while the runner scores
    several metrics at once on its pool, and splits (two threads, Polars' count) otherwise;
    ``side_by_side`` and plain halves split either way."""
    monkeypatch.setattr(_njit, "threads", lambda: 2)
    n = _njit.HALVES_FROM
    assert _njit.halves(n, alone=True) == [(0, n // 2), (n // 2, n)]
    seen: list[str] = []

    def part(a: int, b: int) -> int:
        seen.append(threading.current_thread().name)
        return b - a

    with _njit.sharing_cores():
        assert _njit.halves(n, alone=True) == [(0, n)]
        assert _njit.in_halves(part, n, alone=True) == [n]
        assert len(_njit.halves(n)) == 2
        assert _njit.side_by_side(n, threading.current_thread, threading.current_thread)[0] != (
            threading.current_thread()
        )
    assert seen == [threading.current_thread().name]
    assert _njit.in_halves(part, n, alone=True) == [n // 2, n - n // 2]
    assert len(set(seen)) == 2
