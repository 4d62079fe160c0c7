"""The run's rate limit (``--rate-limit N --rate-window-seconds W``): one sliding window for
the system under test's calls and the providers' requests, retries included."""

from __future__ import annotations

import itertools
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import STUB_API_KEY
from hypothesis import given, settings
from hypothesis import strategies as st
from openai_stub import StubOpenAI

import evalframe as ef
from evalframe.cli import cli
from evalframe.core._rate import RateLimit
from evalframe.providers import OpenAIJudge, Providers


def most_in_a_window(starts: list[float], window: float) -> int:
    """The most starts in any half-open window ``[t, t + window)``: the plain definition."""
    starts = sorted(starts)
    return max((sum(1 for s in starts if t <= s < t + window) for t in starts), default=0)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 5),
    st.floats(0.5, 10.0),
    st.lists(st.floats(0.0, 30.0), min_size=1, max_size=40),
)
def test_reservations_never_put_more_than_n_starts_in_a_window(
    limit: int, window: float, arrivals: list[float]
) -> None:
    now = [0.0]
    rate = RateLimit(limit, window, clock=lambda: now[0], sleep=lambda s: None)
    reserved = []
    for t in sorted(arrivals):
        now[0] = t
        start = rate.reserve()
        assert start >= t  # never before the caller asked
        reserved.append(start)
    assert most_in_a_window(reserved, window) <= limit
    # and no caller waits longer than the window makes it: its start is the earliest allowed
    for k, start in enumerate(reserved):
        earliest = sorted(arrivals)[k]
        if k >= limit:
            earliest = max(earliest, reserved[k - limit] + window)
        assert start == earliest


def test_a_thread_sleeps_until_its_slot_and_an_async_caller_awaits_it() -> None:
    import asyncio

    now = [100.0]
    slept: list[float] = []
    rate = RateLimit(2, 5.0, clock=lambda: now[0], sleep=slept.append)
    rate.wait()
    rate.wait()
    rate.wait()  # the third in the window waits the window out
    assert slept == [5.0]
    real = RateLimit(1, 0.05)
    asyncio.run(real.wait_async())
    before = time.monotonic()
    asyncio.run(real.wait_async())
    assert time.monotonic() - before >= 0.04  # it waited for the window (a lower bound)


@pytest.mark.parametrize(
    ("limit", "window", "message"),
    [
        (0, 60.0, "rate_limit must be a whole number from 1 to 1,000,000; got 0"),
        (True, 60.0, "rate_limit must be a whole number from 1 to 1,000,000; got True"),
        (2.5, 60.0, "rate_limit must be a whole number from 1 to 1,000,000; got 2.5"),
        (10**30, 60.0, "rate_limit must be a whole number from 1 to 1,000,000; got 1000"),
        (1, 0.0, "rate_window_seconds must be a number of seconds more than 0, at most 86,400"),
        (1, -1.0, "rate_window_seconds must be a number of seconds more than 0"),
        (1, float("inf"), "rate_window_seconds must be a number of seconds more than 0"),
        (1, float("nan"), "rate_window_seconds must be a number of seconds more than 0"),
        (1, 1e300, "rate_window_seconds must be a number of seconds more than 0"),
    ],
)
def test_bad_limits_are_refused(limit: Any, window: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RateLimit(limit, window)


class Recording(RateLimit):
    """A real rate limit that keeps every reserved start (on the monotonic clock)."""

    def __init__(self, limit: int, window: float) -> None:
        super().__init__(limit, window)
        self.reserved: list[float] = []
        self._guard = threading.Lock()

    def reserve(self) -> float:
        start = super().reserve()
        with self._guard:
            self.reserved.append(start)
        return start


def dataset(n: int) -> ef.Dataset:
    records = [
        {"id": f"s{i}", "input": {"question": f"q{i}"}, "expected_output": f"a{i}"}
        for i in range(n)
    ]
    return ef.Dataset.from_records(records, name="rate")


def test_one_window_spans_the_system_and_the_judge_with_retries_counted(
    openai_stub: StubOpenAI,
) -> None:
    called: list[float] = []
    served: list[float] = []
    lock = threading.Lock()

    def system(inp: dict[str, Any]) -> str:
        with lock:
            called.append(time.monotonic())
        return "a" + inp["question"][1:]

    def verdict(prompt: str) -> str:
        with lock:
            served.append(time.monotonic())
        return json.dumps({"score": 1.0, "reason": "ok"})

    openai_stub.verdict = verdict
    openai_stub.fail("chat", ("status", 429, {"Retry-After": "0"}))
    judge = OpenAIJudge(
        "stub-judge", base_url=openai_stub.url, api_key=STUB_API_KEY, backoff=0.001, retries=2
    )
    providers = Providers(embeddings="hashing", judge=judge, cache=False)
    rate = Recording(3, 0.25)
    providers.ledger.rate = rate  # evaluate shares the providers' window with the system
    run = ef.evaluate(
        dataset(6),
        system=system,
        metrics=["exact-match", "llm-as-judge"],
        providers=providers,
        concurrency=4,
    )
    assert run.scores.get_column("error").null_count() == run.scores.height
    requests = len(openai_stub.calls("/chat/completions"))
    assert requests == 7  # six prompts and one retry after the 429
    assert len(rate.reserved) == len(called) + requests == 13
    assert most_in_a_window(rate.reserved, 0.25) <= 3
    # every call and request started no earlier than a slot was reserved for it
    actual = sorted(called + served)
    assert all(a >= r for a, r in zip(actual, sorted(rate.reserved), strict=False))


def test_evaluate_rate_limit_builds_one_window_for_the_run() -> None:
    called: list[float] = []
    lock = threading.Lock()

    def system(inp: dict[str, Any]) -> str:
        with lock:
            called.append(time.monotonic())
        return "x"

    run = ef.evaluate(
        dataset(7),
        system=system,
        metrics=["exact-match"],
        rate_limit=2,
        rate_window_seconds=0.2,
        concurrency=7,
    )
    assert run.frame.height == 7
    called.sort()
    # slots k and k+2 are a window apart, and no call starts before its slot
    assert called[-1] - called[0] >= 3 * 0.2 - 0.01
    with pytest.raises(ValueError, match="rate_limit must be a whole number from 1 to 1,000,000"):
        ef.evaluate(dataset(1), system=system, metrics=["exact-match"], rate_limit=0)


def test_the_cli_takes_the_limit_and_refuses_a_window_without_one(tmp_path: Path) -> None:
    data = tmp_path / "d.yaml"
    data.write_text(
        "name: rate\nmetrics: [exact-match]\nsamples:\n"
        + "".join(f"  - id: s{i}\n    input: {{q: x}}\n    expected_output: x\n" for i in range(4)),
        encoding="utf-8",
    )
    (tmp_path / "rate_sut.py").write_text(
        "import time\nCALLS = []\n"
        "def answer(inp):\n    CALLS.append(time.monotonic())\n    return 'x'\n",
        encoding="utf-8",
    )
    import sys

    sys.path.insert(0, str(tmp_path))
    try:
        args = ["run", str(data), "--system", "rate_sut:answer", "--format", "json"]
        result = CliRunner().invoke(
            cli, [*args, "--rate-limit", "1", "--rate-window-seconds", "0.3"]
        )
        assert result.exit_code == 0, result.output
        import rate_sut

        calls = sorted(rate_sut.CALLS)
        assert len(calls) == 4
        # The limiter spaces its grants 0.3 s apart; a call may start a little after its grant
        # on a loaded machine, so the gaps seen inside the system are allowed 0.1 s of that.
        # Unlimited, the four calls would start within milliseconds of each other.
        assert all(b - a >= 0.3 - 0.1 for a, b in itertools.pairwise(calls))
        refused = CliRunner().invoke(cli, [*args, "--rate-window-seconds", "5"])
        assert refused.exit_code == 2
        assert "--rate-window-seconds needs --rate-limit" in refused.output
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("rate_sut", None)
