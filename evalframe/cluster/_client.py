"""Reaching a Dask cluster: an existing ``distributed.Client``, a scheduler address, or
``local:N`` (a LocalCluster of N worker processes that evalframe starts and stops).

Dask is an optional extra; it is imported here, and only when a cluster is asked for.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final

from evalframe.core._errors import ClusterError

__all__ = ["INSTALL_HINT", "MAX_LOCAL_WORKERS", "DaskTarget", "dask_client", "describe"]

INSTALL_HINT: Final = (
    'Running on Dask needs the dask extra: pip install ".[dask]" in a clone of evalframe'
)

# A local cluster is one machine's processes; more workers than this is a typo, not a plan.
MAX_LOCAL_WORKERS: Final = 256

DaskTarget = Any  # a distributed.Client, "tcp://host:port", or "local:N"

_LOCAL = re.compile(r"local:(\d+)")


def _distributed() -> Any:
    try:
        import distributed
    except ImportError as exc:
        raise ClusterError(INSTALL_HINT) from exc
    return distributed


def describe(target: DaskTarget) -> str:
    """How ``target`` is named in messages: the address, ``local:N`` or the client's scheduler."""
    if isinstance(target, str):
        return target
    info = getattr(getattr(target, "scheduler", None), "address", None)
    return str(info or type(target).__name__)


@contextmanager
def dask_client(target: DaskTarget) -> Iterator[Any]:
    """A connected ``distributed.Client`` for ``target``; a cluster started here is stopped
    on exit.

    Args:
        target: a ``distributed.Client`` (used as it is, left open), a scheduler address
            such as ``tcp://10.0.0.5:8786``, or ``local:N``: a LocalCluster of N worker
            processes (one thread each) on 127.0.0.1, from 1 to ``MAX_LOCAL_WORKERS``.

    Raises:
        ClusterError: Dask is not installed, the address is malformed, or no scheduler
            answered there.
    """
    if not isinstance(target, str):
        if not hasattr(target, "submit") or not hasattr(target, "gather"):
            raise ClusterError(
                "dask= takes a distributed.Client, a scheduler address such as "
                f"tcp://host:8786, or local:N; got {type(target).__name__}."
            )
        yield target
        return
    distributed = _distributed()
    local = _LOCAL.fullmatch(target.strip())
    if local:
        n = int(local.group(1))
        if not 1 <= n <= MAX_LOCAL_WORKERS:
            raise ClusterError(
                f"--dask {target}: a local cluster takes 1 to {MAX_LOCAL_WORKERS} workers."
            )
        try:
            cluster = distributed.LocalCluster(
                n_workers=n,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address=":0",  # any free port: never collide with a running cluster
            )
        except Exception as exc:  # Dask reports a failed start as a bare RuntimeError
            raise ClusterError(
                f"--dask {target}: the local cluster failed to start: {exc}"
            ) from exc
        try:
            with distributed.Client(cluster) as client:
                yield client
        finally:
            cluster.close()
        return
    if target.startswith("local"):
        raise ClusterError(f"--dask {target!r}: write local:N, N the number of worker processes.")
    if "://" not in target and not re.fullmatch(r"[\w.\-]+:\d+", target):
        raise ClusterError(
            f"--dask {target!r} is not a scheduler address: write tcp://host:port "
            "(or host:port), or local:N."
        )
    try:
        client = distributed.Client(target, timeout="10s")
    except (OSError, TimeoutError) as exc:
        raise ClusterError(
            f"No Dask scheduler answered at {target}: {type(exc).__name__}: {exc}"
        ) from exc
    with client:
        yield client
