"""Submitting work to a Dask cluster and gathering it, with one meaning for every failure.

Each task has a key of its own (``evalframe-<step>-<run id>-<index>``), so a task that Dask
reruns after losing a worker replaces its own result: nothing is counted twice. A failure
of the cluster itself (the scheduler lost, a task killing its workers repeatedly) becomes a
``ClusterError`` naming the cluster; an evalframe error raised by a task (a bad input piece)
comes through as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from evalframe.core._errors import ClusterError, EvalframeError
from evalframe.core._progress import track

__all__ = ["gather", "submit_each"]


def submit_each(
    client: Any, fn: Callable[..., Any], items: Sequence[Any], *, step: str, tag: str, **kw: Any
) -> list[Any]:
    """One task per item (``fn(item, **kw)``, or ``fn(*item, **kw)`` for a tuple), keyed by
    ``step``, ``tag`` (the run id) and the item's index; the futures."""
    futures = []
    for i, item in enumerate(items):
        args = item if isinstance(item, tuple) else (item,)
        futures.append(
            client.submit(fn, *args, key=f"evalframe-{step}-{tag}-{i:06d}", pure=False, **kw)
        )
    return futures


def gather(client: Any, futures: Sequence[Any], *, cluster: str) -> Any:
    """The futures' results, their progress shown as they finish.

    Raises:
        ClusterError: the cluster failed (nothing of the run was saved).
    """
    try:
        with track("Dask tasks", len(futures), unit="tasks") as advance:
            for future in futures:
                future.add_done_callback(lambda _: advance(1))
            return client.gather(futures)
    except EvalframeError:
        raise
    except Exception as exc:  # Dask's own failures: lost scheduler, killed workers, timeouts
        detail = str(exc).strip().rstrip(".") or "no detail"
        raise ClusterError(
            f"The Dask cluster ({cluster}) failed during the run: {type(exc).__name__}: "
            f"{detail}. Nothing was saved."
        ) from exc
