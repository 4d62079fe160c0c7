"""Production capture, scoring, drift and promotion (``ef.online``).

The serving path calls ``capture(...)``: a sampling check and a put on a bounded queue, so
it costs microseconds and never raises into the caller (a full queue drops the capture and
counts it). A background thread redacts, hashes and writes the captures to the store in
batches. ``score_pending`` (``evalframe online score``) scores them later with the judge,
``status`` checks the latest window's pass rate for a drop, ``trend`` gives it per day, and
``promote`` (``evalframe promote-online``) turns failing captures into dataset samples.
"""

from __future__ import annotations

import atexit
import contextlib
import datetime as dt
import hashlib
import json
import os
import queue
import random
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import polars as pl

from evalframe.core import schema as C
from evalframe.core._canon import row_hash, to_json_value
from evalframe.core._dataset import Dataset
from evalframe.core._dataset_columns import lone_surrogate_in
from evalframe.core._errors import EvalframeError, StoreBusyError
from evalframe.core._limits import checked, parsed
from evalframe.core._online import DEFAULTS, OnlineStatus
from evalframe.core._promotion_file import (
    SAMPLE_DEPTH,
    Skipped,
    dataset_records,
    fit_problem,
    value_depth,
)

if TYPE_CHECKING:
    from evalframe.providers import JudgeClient, Providers
    from evalframe.store import Store

# The serving path imports this module: the store, the engine and the providers load only
# when a capture is written or scored (on the writer thread, or in the scoring commands).


def _as_store(store: Store | str | os.PathLike[str]) -> Store:
    from evalframe.store import as_store

    return as_store(store)


def _open_store(path: str, timeout: float) -> Store:
    from evalframe.store import Store

    return Store(path, timeout=timeout)


__all__ = [
    "DEFAULTS",
    "OnlineStatus",
    "capture",
    "close",
    "configure",
    "flush",
    "promote",
    "score_pending",
    "stats",
    "status",
    "trend",
]

STORE_ENV: Final = "EVALFRAME_ONLINE_STORE"
RATE_ENV: Final = "EVALFRAME_ONLINE_SAMPLING_RATE"
MAX_QUEUE: Final = 1_000_000
PROMOTED_TAG: Final = "promoted-from-production"
EXIT_FLUSH_SECONDS: Final = 10.0
"""How long a process exiting waits for its queued captures to be written."""

Redactor = Callable[[str], str]


_BUSY_RETRY_MAX: Final = 1.0
"""The longest pause, in seconds, between two attempts to write to a store another process
holds (the batch waits in memory meanwhile)."""
_WRITE_TIMEOUT: Final = 1.0
"""How long one write attempt waits for the store before the writer pauses and tries again."""


def _too_deep(value: object) -> bool:
    """Whether ``value`` nests deeper than a sample's input or expected output may (one level
    below a sample, itself at most ``SAMPLE_DEPTH`` levels deep in its file)."""
    return value_depth(value) > SAMPLE_DEPTH - 1


@dataclass
class _Capturer:
    """The queue and its writer thread (one per process)."""

    store: str
    sampling_rate: float
    retention: bool
    redactor: Redactor | None
    redactor_name: str | None
    queue_size: int
    flush_seconds: float
    batch_size: int = 500
    counts: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(
            (
                "captured",
                "sampled_out",
                "dropped",
                "written",
                "redaction_failed",
                "invalid",
                "write_failed",
            ),
            0,
        )
    )

    def __post_init__(self) -> None:
        self.queue: queue.Queue[tuple[Any, ...]] = queue.Queue()
        self.lock = threading.Condition()  # guards counts and pending
        # Offered and not yet written (or dropped by the writer), queued or in the batch the
        # writer holds: at most queue_size, the bound on what waits in memory.
        self.pending = 0
        self.stop = threading.Event()  # write what is queued, then end
        self.abandon = threading.Event()  # end now: count what is left as write_failed
        self.thread = threading.Thread(target=self._run, name="evalframe-online", daemon=True)
        self.thread.start()

    # --- the serving path -----------------------------------------------------------------

    def count(self, key: str, n: int = 1) -> None:
        with self.lock:
            self.counts[key] += n

    def offer(self, item: tuple[Any, ...]) -> bool:
        if self.sampling_rate < 1.0 and random.random() >= self.sampling_rate:
            self.count("sampled_out")
            return False
        with self.lock:
            if self.pending >= self.queue_size:
                self.counts["dropped"] += 1
                return False
            self.queue.put_nowait(item)
            self.pending += 1
            self.counts["captured"] += 1
        return True

    def wait(self, timeout: float | None) -> bool:
        with self.lock:
            return self.lock.wait_for(lambda: self.pending == 0, timeout)

    # --- the writer thread ----------------------------------------------------------------

    def _run(self) -> None:
        while not self.stop.is_set() or not self.queue.empty():
            batch = []
            try:
                batch.append(self.queue.get(timeout=self.flush_seconds))
                while len(batch) < self.batch_size:
                    batch.append(self.queue.get_nowait())
            except queue.Empty:
                pass
            if batch:
                try:
                    rows = [] if self.abandon.is_set() else [r for r in map(self._row, batch) if r]
                    if self.abandon.is_set():
                        self.count("write_failed", len(batch))
                    elif rows:
                        self._store(rows)
                except Exception:  # the writer thread must outlive anything  # pragma: no cover
                    self.count("write_failed", len(batch))
                with self.lock:
                    self.pending -= len(batch)
                    self.lock.notify_all()

    def _redact(self, value: Any) -> Any:
        if self.redactor is None:
            return value
        if isinstance(value, str):
            return self.redactor(value)
        if isinstance(value, Mapping):
            return {self._redact(str(k)): self._redact(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self._redact(v) for v in value]
        return value

    def _row(self, item: tuple[Any, ...]) -> dict[str, Any] | None:
        """The store row of one capture, or None (counted) when it cannot be one: whatever
        goes wrong with one capture drops that capture alone."""
        try:
            return self._checked_row(item)
        except _Redaction:
            self.count("redaction_failed")
        except Exception:  # a value no store row can hold, a __str__ that raises, ...
            self.count("invalid")
        return None

    def _checked_row(self, item: tuple[Any, ...]) -> dict[str, Any]:
        dataset, sample_id, input_, actual, expected, at = item
        input_value = to_json_value(input_, "input")
        expected_value = to_json_value(expected, "expected") if expected is not None else None
        if _too_deep(input_value) or _too_deep(expected_value):
            raise ValueError("nested past the dataset reader's limit")
        text = {"dataset": str(dataset), "sample_id": str(sample_id), "actual_output": str(actual)}
        try:  # every string, map keys included; a failing redactor drops the row
            input_value = self._redact(input_value)
            expected_value = self._redact(expected_value)
            text["actual_output"] = self._redact(text["actual_output"])
        except Exception as exc:
            raise _Redaction from exc
        text["input"] = json.dumps(input_value, ensure_ascii=False)
        text["expected_output"] = json.dumps(expected_value, ensure_ascii=False)
        if any(lone_surrogate_in(value) is not None for value in text.values()):
            raise ValueError("no UTF-8 text can hold a lone surrogate")
        return {
            "capture_id": uuid.uuid4().hex[:16],
            "dataset": text["dataset"],
            "sample_id": text["sample_id"],
            "input": text["input"],
            "expected_output": text["expected_output"],
            "actual_output": text["actual_output"],
            "row_hash": row_hash(input_value, expected_value),
            "captured_at": dt.datetime.fromtimestamp(at, dt.UTC).replace(tzinfo=None),
            "retained": self.retention,
            "redactor": self.redactor_name,
            "scored": False,
        }

    def _store(self, rows: list[dict[str, Any]]) -> None:
        """Write ``rows``, counting them written or failed. A batch the store refuses is
        split until the rows it refuses are found and counted alone, unless its first, last
        and middle rows each fail alone too (a store that takes nothing: all are counted)."""
        if self._insert(rows):
            return
        if len(rows) == 1 or self.abandon.is_set():
            self.count("write_failed", len(rows))
            return
        first, last = self._insert(rows[:1]), self._insert(rows[-1:])
        middle = rows[1:-1]
        if not first and not last and middle:
            mid = len(middle) // 2
            if not self._insert(middle[mid : mid + 1]):
                self.count("write_failed", len(rows))
                return
            middle = middle[:mid] + middle[mid + 1 :]
        half = len(middle) // 2
        for part in (middle[:half], middle[half:]):
            if part:
                self._store(part)
        self.count("write_failed", (not first) + (not last))

    def _insert(self, rows: list[dict[str, Any]]) -> bool:
        """One write of ``rows``: True when they are counted (written, or write_failed once
        the capturer is abandoned while another process holds the store), False when the
        store refused them. While another process holds the store, wait and try again: the
        queue keeps filling meanwhile, up to its bound."""
        pause = 0.05
        while True:
            try:
                from evalframe.store import _online as table

                frame = pl.DataFrame(rows, schema=table.CAPTURE_SCHEMA)
                with _open_store(self.store, _WRITE_TIMEOUT) as store:
                    table.insert_captures(store, frame)
            except StoreBusyError:
                if self.abandon.is_set():
                    self.count("write_failed", len(rows))
                    return True
                time.sleep(pause * (0.5 + random.random()))
                pause = min(pause * 2, _BUSY_RETRY_MAX)
                continue
            except Exception:
                return False
            self.count("written", len(rows))
            return True

    def close(self, timeout: float | None) -> None:
        """Write what is queued for up to ``timeout`` seconds, then count the rest as
        write_failed and wait for the thread to end: it must not be inside DuckDB when the
        interpreter shuts down (a thread stopped there aborts the process)."""
        self.stop.set()
        self.thread.join(timeout)
        if self.thread.is_alive():
            self.abandon.set()
            self.thread.join(_WRITE_TIMEOUT + 5.0)


class _Redaction(Exception):  # noqa: N818  # a private signal, never raised out of the module
    """The redactor raised on a capture."""


_LOCK = threading.Lock()


class _Current:
    capturer: _Capturer | None = None
    retiring: list[_Capturer] = []  # noqa: RUF012  # replaced capturers still writing


_CURRENT = _Current()  # the process's capturer, replaced under _LOCK


def configure(
    *,
    store: str | os.PathLike[str] | None = None,
    sampling_rate: float | None = None,
    retention: bool = False,
    redactor: Redactor | None = None,
    require_redactor: bool = True,
    queue_size: int = 10_000,
    flush_seconds: float = 1.0,
) -> None:
    """Turn capture on (it is off until configured, or until ``EVALFRAME_ONLINE_STORE`` is set).

    Args:
        store: the run store captures go to (default ``$EVALFRAME_ONLINE_STORE``).
        sampling_rate: the share of calls captured, uniform at random, from 0.0 to 1.0
            (default ``$EVALFRAME_ONLINE_SAMPLING_RATE``, else 0.0; 1.0 captures all).
        retention: keep the text after scoring (needed by ``promote``). Without it, text is
            kept only until the capture is scored.
        redactor: text -> text, applied to every string (map keys included) before anything
            is written; a capture whose redaction raises is dropped.
        require_redactor: with retention on, refuse to start without a redactor.
        queue_size: captures waiting in memory to be written, at most (1 to 1,000,000),
            the batch being written included; more are dropped and counted in ``stats()``.
            While another process holds the store, captures wait here.
        flush_seconds: how long the writer waits to fill a batch.

    Raises:
        EvalframeError: no store, retention without a redactor, a bad limit, or a store
            that cannot be opened (one another process holds is fine: captures wait).
    """
    _configure(
        store=store, sampling_rate=sampling_rate, retention=retention, redactor=redactor,
        require_redactor=require_redactor, queue_size=queue_size, flush_seconds=flush_seconds,
        check_store=True,
    )  # fmt: skip


def _configure(
    *,
    store: str | os.PathLike[str] | None,
    sampling_rate: float | None,
    retention: bool,
    redactor: Redactor | None,
    require_redactor: bool,
    queue_size: int,
    flush_seconds: float,
    check_store: bool,
) -> None:
    target = store if store is not None else os.environ.get(STORE_ENV)
    if not target:
        raise EvalframeError(f"Online capture needs a store: configure(store=...) or ${STORE_ENV}.")
    try:
        if sampling_rate is not None:
            rate = checked(sampling_rate, "sampling_rate")
        else:
            text = os.environ.get(RATE_ENV, "").strip()
            rate = parsed(text, "sampling_rate", RATE_ENV) if text else 0.0
    except ValueError as exc:
        raise EvalframeError(str(exc)) from None
    if retention and redactor is None and require_redactor:
        raise EvalframeError(
            "Retention keeps production text: bind a redactor (configure(redactor=...)), or "
            "pass require_redactor=False to keep it unredacted."
        )
    if (
        isinstance(queue_size, bool)
        or not isinstance(queue_size, int)
        or not (1 <= queue_size <= MAX_QUEUE)
    ):
        raise EvalframeError(f"queue_size must be between 1 and {MAX_QUEUE:,}; got {queue_size!r}.")
    if not (isinstance(flush_seconds, int | float) and 0 < flush_seconds <= 3600):
        raise EvalframeError(f"flush_seconds must be in (0, 3600]; got {flush_seconds!r}.")
    if check_store:
        # Create or migrate the file now, not on the first write, so a path that cannot be
        # a store fails here; a store another process holds is the writer's to wait for.
        with contextlib.suppress(StoreBusyError):
            _open_store(str(target), 0).close()
    with _LOCK:
        if _CURRENT.capturer is not None:  # it drains on its own thread; nobody waits for it
            _CURRENT.capturer.stop.set()
            _CURRENT.retiring.append(_CURRENT.capturer)
        _CURRENT.capturer = _Capturer(
            store=str(target),
            sampling_rate=rate,
            retention=retention,
            redactor=redactor,
            redactor_name=getattr(redactor, "__name__", type(redactor).__name__)
            if redactor is not None
            else None,
            queue_size=queue_size,
            flush_seconds=flush_seconds,
        )


def capture(dataset: str, sample_id: str, input: Any, actual: str, expected: Any = None) -> bool:
    """Offer one production interaction for scoring later; never raises, never blocks.

    Returns whether it was queued (False when capture is off, sampled out or the queue is
    full). Validation, redaction and the write happen on a background thread; the store is
    never touched on the caller's thread, even by the first call configuring capture from
    ``EVALFRAME_ONLINE_STORE``.

    Examples:
        >>> import evalframe as ef
        >>> ef.online.capture("faq", "req-1", {"question": "hi"}, "hello")  # off by default
        False
    """
    try:
        capturer = _CURRENT.capturer
        if capturer is None:
            if not os.environ.get(STORE_ENV):
                return False
            with _LOCK:
                configured = _CURRENT.capturer is not None
            if not configured:
                _configure(
                    store=None, sampling_rate=None, retention=False, redactor=None,
                    require_redactor=True, queue_size=10_000, flush_seconds=1.0,
                    check_store=False,
                )  # fmt: skip
            capturer = _CURRENT.capturer
        assert capturer is not None
        return capturer.offer((dataset, sample_id, input, actual, expected, time.time()))
    except Exception:  # the serving path must never fail because of evaluation
        return False


def flush(timeout: float | None = 30.0) -> bool:
    """Wait until every queued capture is written (or ``timeout`` seconds pass)."""
    capturer = _CURRENT.capturer
    return True if capturer is None else capturer.wait(timeout)


def stats() -> dict[str, int]:
    """Counters since ``configure``: captured, sampled_out, dropped, written,
    redaction_failed, invalid, write_failed."""
    capturer = _CURRENT.capturer
    if capturer is None:
        return {}
    with capturer.lock:
        return dict(capturer.counts)


def close(timeout: float | None = 30.0) -> dict[str, int]:
    """Write what is queued (waiting up to ``timeout`` seconds in all) and stop capturing.

    Returns:
        The final counters (as ``stats()``; captures still queued when the time ran out are
        counted as write_failed), or an empty dict when capture was off.
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    with _LOCK:
        capturers = [*_CURRENT.retiring, *([_CURRENT.capturer] if _CURRENT.capturer else [])]
        _CURRENT.capturer = None
        _CURRENT.retiring = []
    final: dict[str, int] = {}
    for capturer in capturers:
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        capturer.close(left)
        with capturer.lock:
            for key, value in capturer.counts.items():
                final[key] = final.get(key, 0) + value
    return final


def _close_at_exit() -> None:
    close(EXIT_FLUSH_SECONDS)


# The queue drains when the main thread ends, before the interpreter's exit hooks: DuckDB
# registers one (on import) after which it refuses the writes, whatever the import order.
# This is the hook concurrent.futures joins its workers with; plain atexit where it is absent.
try:
    threading._register_atexit(_close_at_exit)  # type: ignore[attr-defined]
except (AttributeError, RuntimeError):  # pragma: no cover - another Python
    atexit.register(_close_at_exit)


# --- scoring, drift and trend ----------------------------------------------------------------


def score_pending(
    store: Store | str | os.PathLike[str],
    *,
    dataset: str | None = None,
    metric: str = DEFAULTS["metric"],  # type: ignore[assignment]
    pass_threshold: float = DEFAULTS["pass_threshold"],  # type: ignore[assignment]
    limit: int | None = None,
    providers: Providers | JudgeClient | None = None,
) -> pl.DataFrame:
    """Score the captures not scored yet, with ``metric``; returns the scores stored.

    Each capture is scored as a sample without metadata (so metrics that need metadata,
    such as refusal-quality, report an error). ``passed`` is ``score >= pass_threshold``
    (0.7 by default, as eval-harness's online monitor; ``score <= pass_threshold`` for a
    lower-is-better metric), null where scoring failed.
    """
    from evalframe.engine._evaluate import evaluate
    from evalframe.store import _online as table

    target = _as_store(store)
    waiting = table.pending(target, dataset, limit)
    if waiting.height == 0:
        return pl.DataFrame(schema=table.SCORE_SCHEMA)
    from evalframe.providers import Providers

    context = Providers.coerce(providers)
    records = [
        {
            "id": r["capture_id"],
            "input": json.loads(r["input"]),
            "expected_output": json.loads(r["expected_output"]),
        }
        for r in waiting.select("capture_id", "input", "expected_output").iter_rows(named=True)
    ]  # the pending captures, once each
    run = evaluate(
        Dataset.from_records(records, name="online"),
        outputs=dict(zip(waiting["capture_id"], waiting["actual_output"], strict=True)),
        metrics=[metric],
        providers=context,
        progress=False,
        strict=False,  # a capture that cannot be scored is recorded, never an abort
    )
    # The judge's model is recorded only on captures a judge scored: a metric that asks no
    # judge (or a judge call that failed) leaves it null, whatever judge is configured.
    model: str | None = None
    if _asks_judge(run.metrics[0]):
        try:
            model = context.require_judge().model
        except EvalframeError:
            model = None
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    scored = (
        run.scores.select(
            pl.col(C.SAMPLE_ID).alias("capture_id"), C.METRIC, C.SCORE, C.ERROR, "details"
        )
        .join(waiting.select("capture_id", "dataset", "sample_id"), on="capture_id")
        .with_columns(
            pl.when(pl.col(C.SCORE).is_not_null())
            .then(
                pl.col(C.SCORE) >= pass_threshold
                if run.metrics[0].higher_is_better
                else pl.col(C.SCORE) <= pass_threshold
            )
            .alias("passed"),
            pl.lit(pass_threshold, pl.Float64).alias("threshold"),
            pl.when(pl.col(C.SCORE).is_not_null())
            .then(pl.lit(model, pl.String))
            .alias("judge_model"),
            pl.lit(now, pl.Datetime("us")).alias("judged_at"),
        )
    )
    table.record_scores(target, scored)
    return scored.select(list(table.SCORE_SCHEMA))


def status(
    store: Store | str | os.PathLike[str],
    dataset: str,
    *,
    window: int = DEFAULTS["window"],  # type: ignore[assignment]
    min_samples: int = DEFAULTS["min_samples"],  # type: ignore[assignment]
    threshold: float = DEFAULTS["alert_threshold"],  # type: ignore[assignment]
) -> OnlineStatus:
    """The pass rate over the latest ``window`` scored captures of ``dataset``."""
    from evalframe.store import _online as table

    latest = table.scores(_as_store(store), dataset).filter(pl.col("passed").is_not_null())
    latest = latest.head(window)
    rate = float(latest.get_column("passed").mean()) if latest.height else None  # type: ignore[arg-type]
    return OnlineStatus(dataset, window, min_samples, threshold, latest.height, rate)


def trend(store: Store | str | os.PathLike[str], dataset: str, *, days: int = 30) -> pl.DataFrame:
    """Per calendar day (UTC) of judging, oldest first: date, pass_rate, total, passed."""
    if not 1 <= days <= 365:
        raise EvalframeError(f"days must be between 1 and 365; got {days}.")
    since = dt.datetime.now(dt.UTC).replace(tzinfo=None) - dt.timedelta(days=days)
    from evalframe.store import _online as table

    rows = table.scores(_as_store(store), dataset).filter(
        pl.col("passed").is_not_null() & (pl.col("judged_at") >= since)
    )
    return (
        rows.group_by(pl.col("judged_at").dt.date().alias("date"))
        .agg(
            pl.col("passed").mean().alias("pass_rate"),
            pl.len().cast(pl.Int64).alias("total"),
            pl.col("passed").sum().cast(pl.Int64).alias("passed"),
        )
        .sort("date")
    )


# --- promotion ------------------------------------------------------------------------------


def _asks_judge(metric: Any) -> bool:
    """Whether ``metric`` is scored by a judge (its needs, or theirs, ask one)."""
    from evalframe.metrics._judge_engine import JudgeNeed
    from evalframe.metrics.judge import JudgeReplies

    pending = list(metric.needs())
    while pending:
        need = pending.pop()
        if isinstance(need, JudgeReplies | JudgeNeed):
            return True
        pending += list(getattr(need, "requires", ()))
    return False


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


@dataclass(frozen=True)
class Candidates:
    """What ``promote`` found: the merge target's samples, the promoted ones, the counts and
    the captures that would not load as samples."""

    name: str
    metrics: list[str] | None
    existing: list[dict[str, Any]]
    promoted: list[dict[str, Any]]
    counts: dict[str, int]
    unloadable: list[Skipped]

    @property
    def document(self) -> dict[str, Any]:
        """The dataset document: name, metrics (when known), then every sample."""
        document: dict[str, Any] = {"name": self.name}
        if self.metrics:
            document["metrics"] = self.metrics
        document["samples"] = self.existing + self.promoted
        return document


def _merge_samples(merge: Path) -> tuple[Dataset, dict[str, Any], list[dict[str, Any]]]:
    """The merge target read as a dataset, its YAML document (if any) and its samples as
    they are written in it (a YAML file's as parsed, any other's as records)."""
    from evalframe.core._dataset import read_dataset
    from evalframe.core._yaml import parse_yaml

    target = read_dataset(merge)  # a corrupt target stops here, with its own message
    if merge.suffix.lower() in (".yaml", ".yml"):
        raw = parse_yaml(merge.read_bytes().decode("utf-8-sig"))
        if isinstance(raw, dict) and isinstance(raw.get("samples"), list | dict):
            samples = raw["samples"]
            return target, raw, list(samples.values() if isinstance(samples, dict) else samples)
    return target, {"name": target.name}, dataset_records(target)


def candidates(
    store: Store | str | os.PathLike[str],
    dataset: str,
    *,
    all_rows: bool = False,
    max_score: float | None = None,
    since_days: int | None = None,
    limit: int = DEFAULTS["limit"],  # type: ignore[assignment]
    merge: str | os.PathLike[str] | None = None,
    name: str | None = None,
    metrics: list[str] | None = None,
    allow_unredacted: bool = False,
) -> Candidates:
    """``promote``'s work, with the merge target's and the promoted samples kept apart."""
    existing: list[dict[str, Any]] = []
    document_name, document_metrics = name or f"{dataset}.online", metrics
    known: set[str] = set()
    known_ids: set[str] = set()
    if merge is not None and Path(merge).exists():
        target, raw, existing = _merge_samples(Path(merge))
        document_name = name or str(raw.get("name") or target.name)
        document_metrics = metrics or (list(target.metrics) or None)
        known = set(target.get_column(C.ROW_HASH).to_list())
        known_ids = set(target.get_column(C.SAMPLE_ID).to_list())
    from evalframe.store import _online as table

    rows = table.scores(_as_store(store), dataset)
    if not all_rows:
        rows = rows.filter(pl.col("passed").not_())
    if max_score is not None:
        rows = rows.filter(pl.col(C.SCORE) <= max_score)
    if since_days is not None:
        since = dt.datetime.now(dt.UTC).replace(tzinfo=None) - dt.timedelta(days=since_days)
        rows = rows.filter(pl.col("judged_at") >= since)
    rows = rows.sort([C.SCORE, "judged_at"], descending=[False, True], nulls_last=True)
    counts = {"promoted": 0, "not_retained": 0, "unredacted": 0, "duplicate": 0}
    promoted: list[dict[str, Any]] = []
    unloadable: list[Skipped] = []
    for r in rows.iter_rows(named=True):  # at most a few hundred candidates
        if len(promoted) >= limit:
            break
        if not r["retained"] or r["input"] is None:
            counts["not_retained"] += 1
            continue
        if r["redactor"] is None and not allow_unredacted:
            counts["unredacted"] += 1
            continue
        sample_id = f"online-{_short_hash(r['row_hash'])}"
        if r["row_hash"] in known or sample_id in known_ids:
            counts["duplicate"] += 1
            continue
        meta = {
            "tags": [PROMOTED_TAG],
            "source": "online",
            "online_sample_id": r["sample_id"],
            "online_score": None if r["score"] is None else round(r["score"], 4),
            "online_metric": r["metric"],
            "judge_model": r["judge_model"],
            "judged_at": r["judged_at"].replace(tzinfo=dt.UTC).isoformat().replace("+00:00", "Z"),
            "redactor": r["redactor"],
        }
        record = {
            "id": sample_id,
            "input": json.loads(r["input"]),
            "expected_output": json.loads(r["expected_output"]),
            "metadata": {k: v for k, v in meta.items() if v is not None},
        }
        problem = fit_problem(record)
        if problem is not None:  # it would make the dataset unreadable: named, never written
            counts["unloadable"] = counts.get("unloadable", 0) + 1
            unloadable.append(Skipped(f"{sample_id} (capture {r['sample_id']})", problem))
            continue
        known.add(r["row_hash"])
        known_ids.add(sample_id)
        promoted.append(record)
    counts["promoted"] = len(promoted)
    return Candidates(document_name, document_metrics, existing, promoted, counts, unloadable)


def promote(
    store: Store | str | os.PathLike[str],
    dataset: str,
    *,
    all_rows: bool = False,
    max_score: float | None = None,
    since_days: int | None = None,
    limit: int = DEFAULTS["limit"],  # type: ignore[assignment]
    merge: str | os.PathLike[str] | None = None,
    name: str | None = None,
    metrics: list[str] | None = None,
    allow_unredacted: bool = False,
) -> tuple[dict[str, Any], dict[str, int]]:
    """Production captures as dataset samples: failing ones worst first, then newest.

    Only retained captures can be promoted, and only redacted ones unless
    ``allow_unredacted``; a capture whose row hash (or sample id) is already in the merge
    target, or earlier in the batch, is skipped. So is one the dataset reader would refuse
    as a sample (nested past its depth limit, say), counted as ``unloadable``: the document
    always loads. Each promoted sample has id ``online-<hash>`` and a metadata block naming
    where it came from. ``evalframe promote-online`` writes the document by the rules of
    promotion files (see the production monitoring guide).

    Returns:
        The dataset document (the merge target's samples first, unchanged, then the promoted
        ones) and counts of what was promoted and skipped, by reason (``not_retained``,
        ``unredacted``, ``duplicate``, and ``unloadable`` when a capture would not load).

    Raises:
        DatasetError: the merge target is not a readable dataset.
    """
    found = candidates(
        store, dataset, all_rows=all_rows, max_score=max_score, since_days=since_days,
        limit=limit, merge=merge, name=name, metrics=metrics, allow_unredacted=allow_unredacted,
    )  # fmt: skip
    return found.document, found.counts
