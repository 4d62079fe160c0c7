"""Calling a system under test: one call per (sample, repetition), bounded concurrency.

A plain callable receives the sample's ``input`` map and must return a string, or a mapping
``{"output": <string>, "contexts": [...], "trajectory": {...}, "turns": [...],
"confidence": <number>}`` that also gives the retrieved contexts, an agent's trajectory, a
conversation's turns and the system's confidence in its answer (each optional); an agent
may instead record its trajectory with ``ef.trajectory.record`` (``core/_trajectory.py``).
An exception or a malformed return is recorded against that sample (``system_error``) and
scored as that sample's error by every metric; the run goes on. Latency is measured per
call.
"""

from __future__ import annotations

import inspect
import json
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any

import polars as pl

from evalframe.core import schema as C
from evalframe.core._contexts import (
    CONTEXTS,
    Parsed,
    _BadContexts,
    contexts_columns,
    system_reply,
)
from evalframe.core._dataset_columns import lone_surrogate_in
from evalframe.core._outputs import CONFIDENCE
from evalframe.core._progress import track
from evalframe.core._rate import RateLimit
from evalframe.core._trajectory import recording
from evalframe.core._turns import AGENT_FIELDS, _LoneSurrogate, agent_column, agent_values

__all__ = ["STARTED_AT", "System", "call_system"]

System = Callable[[dict[str, Any]], Any]

STARTED_AT = "started_at"
"""The outputs column of when each call to the system began (epoch seconds)."""


_Result = tuple[str | None, str | None, float, Parsed | None, dict[str, Any]]


def _call_one(
    system: System, sample_id: str, payload: dict[str, Any], rate: RateLimit | None = None
) -> tuple[_Result, float]:
    """The call's result and when it began (epoch seconds, after any wait for a rate slot)."""
    if rate is not None:
        rate.wait()  # the latency is the call's own, not its wait for a slot
    began = time.time()
    return _call(system, sample_id, payload), began


def _call(system: System, sample_id: str, payload: dict[str, Any]) -> _Result:
    start = time.perf_counter()
    agent: dict[str, Any] = {}
    try:
        with recording() as recorder:
            result = system(payload)
            if inspect.isawaitable(result):
                import asyncio  # only for systems under test that are coroutines

                result = asyncio.run(_await(result))
        _, agent = agent_values(result, recorder, sample_id)  # parsed after every call
    except Exception as exc:  # the SUT's failure is this sample's error, not the run's
        elapsed = (time.perf_counter() - start) * 1000
        return (
            None,
            f"System under test raised {type(exc).__name__} for sample '{sample_id}': {exc}",
            elapsed,
            None,
            agent,
        )
    elapsed = (time.perf_counter() - start) * 1000
    raw = result
    try:
        result, contexts = system_reply(result)
    except _BadContexts as exc:
        return None, f"System-under-test for sample '{sample_id}' {exc}.", elapsed, None, agent
    confidence = raw.get(CONFIDENCE) if isinstance(raw, Mapping) else None
    if confidence is not None:
        if isinstance(confidence, bool) or not isinstance(confidence, int | float):
            return (
                None,
                f"System-under-test for sample '{sample_id}' returned '{CONFIDENCE}' that is "
                f"not a number; got {type(confidence).__name__}.",
                elapsed,
                None,
                agent,
            )
        agent = {**agent, CONFIDENCE: float(confidence)}
    if not isinstance(result, str):
        return (
            None,
            (
                f"System-under-test for sample '{sample_id}' must return a string; "
                f"got {type(result).__name__}."
            ),
            elapsed,
            None,
            agent,
        )
    for field, value in ((C.ACTUAL_OUTPUT, result), (CONTEXTS, contexts)):
        bad = lone_surrogate_in(value)
        if bad is not None:
            return (
                None,
                f"System-under-test for sample '{sample_id}' returned a lone surrogate {bad} "
                f"in field '{field}'; text must be valid Unicode.",
                elapsed,
                None,
                {},
            )
    return result, None, elapsed, contexts, agent


async def _await(awaitable: Any) -> Any:
    return await awaitable


def call_system(
    frame: pl.DataFrame,
    system: System,
    *,
    repetitions: int = 1,
    concurrency: int = 8,
    progress: bool | None = None,
    rate: RateLimit | None = None,
) -> pl.DataFrame:
    """Call ``system`` for every sample and repetition; returns the outputs frame.

    ``rate`` (the run's rate limit, shared with its provider calls) spaces the calls' starts.

    Columns: sample_id, repetition, actual_output, system_error, latency_ms and
    ``started_at`` (when evalframe called the system, in epoch seconds); in repetition-major,
    dataset order.

    Examples:
        >>> import polars as pl
        >>> frame = pl.DataFrame({"sample_id": ["a"], "input": ['{"question": "2+2?"}']})
        >>> call_system(frame, lambda inp: "4").get_column("actual_output").to_list()
        ['4']
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1; got {concurrency}")
    ids = frame.get_column(C.SAMPLE_ID).to_list()
    inputs = [json.loads(text) for text in frame.get_column(C.INPUT).to_list()]
    jobs = [
        (rep, sid, inp) for rep in range(repetitions) for sid, inp in zip(ids, inputs, strict=True)
    ]
    results: list[_Result] = [(None, None, 0.0, None, {})] * len(jobs)
    began = [0.0] * len(jobs)
    with (
        track("calling the system under test", len(jobs), unit="calls", show=progress) as advance,
        ThreadPoolExecutor(max_workers=concurrency) as pool,
    ):
        futures = {
            pool.submit(_call_one, system, sid, dict(inp), rate): i
            for i, (_, sid, inp) in enumerate(jobs)
        }
        for future in as_completed(futures):
            i = futures[future]
            results[i], began[i] = future.result()
            advance()
    agents = _parse_agents(results, [sid for _, sid, _ in jobs])
    frame = pl.DataFrame(
        {
            C.SAMPLE_ID: [sid for _, sid, _ in jobs],
            C.REPETITION: [rep for rep, _, _ in jobs],
            C.ACTUAL_OUTPUT: [r[0] for r in results],
            C.SYSTEM_ERROR: [r[1] for r in results],
            "latency_ms": [r[2] for r in results],
            STARTED_AT: began,
        },
        schema={
            C.SAMPLE_ID: pl.String,
            C.REPETITION: pl.Int64,
            C.ACTUAL_OUTPUT: pl.String,
            C.SYSTEM_ERROR: pl.String,
            "latency_ms": pl.Float64,
            STARTED_AT: pl.Float64,
        },
    ).with_columns(**contexts_columns([r[3] for r in results]))
    confidences = [r[4].get(CONFIDENCE) for r in results]
    if any(c is not None for c in confidences):
        frame = frame.with_columns(pl.Series(CONFIDENCE, confidences, dtype=pl.Float64))
    return frame.with_columns(agents)


def _parse_agents(results: list[_Result], ids: list[str]) -> list[pl.Series]:
    """The ``trajectory`` and ``turns`` columns of the systems' returns (kept as given in
    ``results``), parsed at once; ``results`` are updated with the errors parsing finds.

    A field the parser refuses is its sample's error as if the system had raised it (before
    the sample's other checks); a lone surrogate in one is an error after them. Either drops
    everything the sample returned, as those checks do.
    """
    raw = [r[4] for r in results]
    columns: dict[str, pl.Series | None] = {}
    failure: dict[int, tuple[int, str]] = {}  # by row: the first error's rank and message
    for field in AGENT_FIELDS:
        values = [a[field][0] if field in a else None for a in raw]
        columns[field], errors = agent_column(
            field,
            values,
            lambda i, field=field: raw[i][field][1],  # type: ignore[misc]
        )
        for i, exc in errors.items():
            if isinstance(exc, _LoneSurrogate):
                if results[i][1] is not None:  # the sample's other checks come first
                    continue
                rank, message = (
                    3 + raw[i][field][2],
                    (
                        f"System-under-test for sample '{ids[i]}' returned a lone surrogate "
                        f"{exc.bad} in field '{field}'; text must be valid Unicode."
                    ),
                )
            else:
                rank, message = (
                    raw[i][field][2],
                    (f"System under test raised {type(exc).__name__} for sample '{ids[i]}': {exc}"),
                )
            if i not in failure or rank < failure[i][0]:
                failure[i] = (rank, message)
    for i, (_, message) in failure.items():
        results[i] = (None, message, results[i][2], None, {})
    kept = pl.Series([i not in failure for i in range(len(results))])
    return [
        pl.select(pl.when(kept).then(column)).to_series().alias(field)
        for field, column in columns.items()
        if column is not None and any(field in r[4] for r in results)
    ]
