"""Numba kernels compiled on first use, so ``import evalframe`` does not import numba.

``njit`` is the one decorator every compiled kernel uses. It returns a stand-in; the first
call imports numba and compiles the function (``nogil``, cached on disk where a cache
directory is writable). Numba can only call another kernel from a kernel when it sees the
real dispatcher, so the function numba compiles is a copy whose globals hold the dispatchers
of the stand-ins it reads (compiled first); the module keeps its stand-ins. A numba object a
kernel needs (an intrinsic, say) is named with ``numba_object("numba.module", "name")`` and
imported the same way, when the first kernel that reads it compiles.

Compiling costs seconds per kernel family the first time in an environment (later runs load
it from the cache), which a small input never pays back. So a call site may run a kernel
*interpreted*, its own Python source without numba, when its input is small
(``kernel.interpreted(...)``, with :func:`worth_compiling` deciding): the same code, so the
same results, which the property tests check over generated inputs. Kernels it calls run
interpreted too. Three things keep the two alike: byte buffers go in as ``bytes`` (whose
items are Python ints, where a NumPy ``uint8`` would wrap around in arithmetic that numba
does in 64 bits), fixed-width overflow wraps silently in both, and floating-point functions
come from ``math`` (the C library's, which numba calls too; NumPy's own ``log2`` differs
from it in the last digit for a few inputs). Before a large input compiles a family that
takes more than a second, its call site says so once on stderr (:func:`compiling`).

Examples:
    >>> from evalframe.core._njit import njit
    >>> @njit
    ... def add(x, y):
    ...     return x + y
    >>> add(1, 2)
    3
    >>> add.interpreted(1, 2)  # the Python function, numba not involved
    3
"""

from __future__ import annotations

import functools
import os
import threading
import types
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, Generic, ParamSpec, TypeVar, cast, overload

__all__ = [
    "Kernel",
    "compiling",
    "halves",
    "in_halves",
    "kernel_int",
    "njit",
    "numba_object",
    "sharing_cores",
    "side_by_side",
    "threads",
    "worth_compiling",
]

_P = ParamSpec("_P")
_R = TypeVar("_R")
_S = TypeVar("_S")
_LOCK = threading.RLock()
_STATE = threading.local()  # ``interpreting``: kernels called on this thread run as Python
_ANNOUNCED: set[str] = set()


class _NumbaObject:
    """A numba object (module path and name) imported when a kernel reading it compiles."""

    def __init__(self, module: str, name: str, python: Callable[..., Any] | None) -> None:
        self.module = module
        self.name = name
        self.python = python

    def load(self) -> Any:
        import importlib

        return getattr(importlib.import_module(self.module), self.name)

    def __call__(self, *args: Any) -> Any:  # an interpreted kernel calling it
        if self.python is None:
            raise TypeError(f"{self.module}.{self.name} has no interpreted form")
        return self.python(*args)


def numba_object(module: str, name: str, python: Callable[..., Any] | None = None) -> Any:
    """Name a numba object for kernels, imported only when one of them compiles.

    ``python`` is what an interpreted kernel calls in its place.
    """
    return _NumbaObject(module, name, python)


class Kernel(Generic[_P, _R]):
    """A function to compile with numba when it is first needed, or to run as Python."""

    def __init__(self, fn: Callable[_P, _R], options: dict[str, Any]) -> None:
        self.fn = fn
        self.options = options
        self.dispatcher: Any = None
        self.sources: frozenset[str] = frozenset({fn.__code__.co_filename})
        """The files of this kernel and of every kernel it calls (known once compiled)."""
        self.__doc__ = fn.__doc__
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__

    def compile(self) -> Any:
        with _LOCK:
            if self.dispatcher is None:
                import numba

                fn = self.fn
                scope = dict(fn.__globals__)
                for name in fn.__code__.co_names:
                    value = scope.get(name)
                    if isinstance(value, Kernel):
                        scope[name] = value.compile()
                        self.sources |= value.sources
                    elif isinstance(value, _NumbaObject):
                        scope[name] = value.load()
                # The same code (so the same cache entry) reading the dispatchers.
                copy = types.FunctionType(
                    fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__
                )
                copy.__qualname__ = fn.__qualname__
                copy.__module__ = fn.__module__
                try:
                    dispatcher = numba.njit(cache=True, **self.options)(copy)
                except RuntimeError:  # no writable cache directory: compile on each run
                    dispatcher = numba.njit(**self.options)(copy)
                else:
                    _stamp_callees(dispatcher, self.sources - {fn.__code__.co_filename})
                self.dispatcher = dispatcher
            return self.dispatcher

    def __call__(self, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        if getattr(_STATE, "interpreting", False):
            return self.fn(*args, **kwargs)
        return cast(_R, self.compile()(*args))

    def interpreted(self, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        """Run the Python function, and every kernel it calls, without compiling anything."""
        with _interpreting():
            return self.fn(*args, **kwargs)

    def loaded(self) -> bool:
        """Whether this process has run the kernel compiled, so a further call (on types it
        has seen) compiles and loads nothing."""
        return self.dispatcher is not None and bool(self.dispatcher.signatures)

    def cached(self) -> bool:
        """Whether numba's on-disk cache holds a compiled form (imports numba)."""
        cache = getattr(self.compile(), "_cache", None)
        index = getattr(getattr(cache, "_cache_file", None), "_index_path", None)
        return isinstance(index, str) and os.path.exists(index)

    def __repr__(self) -> str:
        state = "compiled" if self.dispatcher is not None else "not yet compiled"
        return f"<numba kernel {self.fn.__qualname__} ({state})>"


def _stamp_callees(dispatcher: Any, callees: frozenset[str]) -> None:
    """Make ``dispatcher``'s disk cache stale when a file of a kernel it calls changes.

    Numba compiles a kernel's callees into it, yet checks only the kernel's own file before
    loading it from the cache: after an edit to a callee's file (a ``git pull`` in a source
    checkout), callers in unchanged files would load their old copy of it. The cache index
    carries a stamp of the source that numba compares on load; it now covers the callees'
    files' contents too. Without the cache internals this relies on (another numba), the
    stamp stays numba's own.
    """
    cache_file: Any = getattr(getattr(dispatcher, "_cache", None), "_cache_file", None)
    if not callees or not hasattr(cache_file, "_source_stamp"):
        return
    contents = tuple(_content_hash(path) for path in sorted(callees))
    cache_file._source_stamp = (cache_file._source_stamp, contents)


def _content_hash(path: str) -> str:
    try:
        stat = os.stat(path)
    except OSError:  # a callee without a file (made at run time): nothing to compare
        return ""
    return _hash_file(path, stat.st_mtime_ns, stat.st_size)


@functools.cache
def _hash_file(path: str, mtime_ns: int, size: int) -> str:  # the stat keys the memo
    import hashlib

    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


@contextmanager
def _interpreting() -> Iterator[None]:
    import numpy as np

    before = getattr(_STATE, "interpreting", False)
    _STATE.interpreting = True
    try:
        # Fixed-width integers wrap around silently in compiled code (the hash kernels rely
        # on it); NumPy's scalars wrap the same way, but warn unless told not to.
        with np.errstate(over="ignore"):
            yield
    finally:
        _STATE.interpreting = before


@overload
def njit(fn: Callable[_P, _R], /) -> Kernel[_P, _R]: ...
@overload
def njit(
    *, inline: str = ..., fastmath: Any = ..., borrows: bool = ...
) -> Callable[[Callable[_P, _R]], Kernel[_P, _R]]: ...
def njit(fn: Any = None, /, *, borrows: bool = False, **options: Any) -> Any:
    """Compile ``fn`` with ``numba.njit(nogil=True, cache=True, **options)`` on first use.

    ``borrows=True`` marks a kernel that only borrows the arrays it is given (it allocates
    none and returns none, nor a tuple holding one), so numba compiles it without reference
    counting. Otherwise every compiled call counts a reference up and down, with atomic
    instructions, for each array it takes (each array of a tuple too): the bulk of a JSON
    scanner's time when its helpers are called a few times per value. Allocating in such a
    kernel fails to compile; returning an array from one would free it early, which
    tests/test_json_primitives.py checks no kernel does.
    """
    if borrows:
        options["_nrt"] = False

    def wrap(f: Callable[_P, _R]) -> Kernel[_P, _R]:
        return Kernel(f, {"nogil": True, **options})

    return wrap(fn) if fn is not None else wrap


def worth_compiling(size: int, interpreted_up_to: int) -> bool:
    """Whether an input of ``size`` (rows, bytes: the call site's measure) takes the
    compiled kernels, or their interpreted source (``size <= interpreted_up_to``).

    ``EVALFRAME_KERNELS=compiled`` or ``interpreted`` forces one path (for tests and
    benchmarks).
    """
    forced = os.environ.get("EVALFRAME_KERNELS", "")
    if forced == "compiled":
        return True
    if forced == "interpreted":
        return False
    return size > interpreted_up_to


def compiling(what: str, *kernels: Kernel[Any, Any]) -> None:
    """Say once per process on stderr that ``what`` compiles now, unless numba has it cached.

    For kernel families that take more than a second to compile, before their first call
    on an input large enough to take them.
    """
    if what in _ANNOUNCED:
        return
    _ANNOUNCED.add(what)
    from evalframe.core._progress import note, quiet

    if quiet() or all(k.cached() for k in kernels):
        return
    note(f"evalframe: compiling {what}, once per environment...")


def kernel_int(value: int) -> int:
    """``value`` as a NumPy int64 (typed ``int``), for module constants kernels pass on.

    Numba types a Python int one kernel passes to another as a literal, and compiles the
    callee (and every kernel it passes the value on to) once per value; a NumPy integer is an
    ordinary int64 argument.
    """
    import numpy as np

    return np.int64(value)  # type: ignore[return-value]  # an int to every kernel and caller


def in_halves(part: Callable[[int, int], _R], n: int, *, alone: bool = False) -> list[_R]:
    """``[part(0, n)]`` for rows ``0..n``, or for many rows ``[part(0, h), part(h, n)]``
    computed on two threads (compiled kernels release the GIL), when Polars' thread pool
    (``POLARS_MAX_THREADS``, the one thread count the package follows) has two or more;
    with ``alone``, only where this thread has the cores to itself (:func:`sharing_cores`)."""
    cuts = halves(n, alone=alone)
    if len(cuts) == 1:
        return [part(0, n)]
    with ThreadPoolExecutor(1) as pool:
        second = pool.submit(part, *cuts[1])
        first = part(*cuts[0])
        return [first, second.result()]


def side_by_side(n: int, first: Callable[[], _R], second: Callable[[], _S]) -> tuple[_R, _S]:
    """``(first(), second())``, two parts of one pass over ``n`` rows, computed on two
    threads where :func:`in_halves` would split the rows (``first`` on the second thread)."""
    if len(halves(n)) == 1:
        return first(), second()
    with ThreadPoolExecutor(1) as pool:
        job = pool.submit(first)
        other = second()
        return job.result(), other


def halves(n: int, *, alone: bool = False) -> list[tuple[int, int]]:
    """The row ranges :func:`in_halves` gives its parts, in order."""
    if n < HALVES_FROM or threads() < 2 or (alone and getattr(_STATE, "sharing", False)):
        return [(0, n)]
    return [(0, n // 2), (n // 2, n)]


@contextmanager
def sharing_cores() -> Iterator[None]:
    """On this thread, passes that split only when ``alone`` keep to one thread: it is one
    of several doing the same kind of work at once (the runner's concurrent metrics), which
    already keep the cores busy."""
    before = getattr(_STATE, "sharing", False)
    _STATE.sharing = True
    try:
        yield
    finally:
        _STATE.sharing = before


HALVES_FROM = 20_000
"""Rows from which :func:`in_halves` runs two threads."""


def threads() -> int:
    """The threads the package's own parallel work may use: Polars' thread pool size, which
    ``POLARS_MAX_THREADS`` sets (and the machine's cores otherwise)."""
    import polars as pl

    return pl.thread_pool_size()
