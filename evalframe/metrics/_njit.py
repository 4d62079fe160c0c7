"""Numba kernels compiled on first use, so ``import evalframe`` does not import numba.

``njit`` is the one decorator every compiled kernel uses. It returns a stand-in; the first
call imports numba and compiles the function (``nogil``, cached on disk where a cache
directory is writable). Numba can only call another kernel from a kernel when it sees the
real dispatcher, so compiling a function first compiles every stand-in it reads from its
module's globals and puts the dispatchers there in their place.

Examples:
    >>> from evalframe.metrics._njit import njit
    >>> @njit
    ... def add(x, y):
    ...     return x + y
    >>> add(1, 2)
    3
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar, cast, overload

__all__ = ["njit"]

_F = TypeVar("_F", bound=Callable[..., Any])
_LOCK = threading.RLock()


class _Kernel:
    """A function to compile with numba when it is first needed."""

    def __init__(self, fn: Callable[..., Any], options: dict[str, Any]) -> None:
        self.fn = fn
        self.options = options
        self.dispatcher: Any = None
        self.__doc__ = fn.__doc__
        self.__name__ = fn.__name__

    def compile(self) -> Any:
        with _LOCK:
            if self.dispatcher is None:
                import numba

                scope = self.fn.__globals__
                for name in self.fn.__code__.co_names:
                    callee = scope.get(name)
                    if isinstance(callee, _Kernel):
                        scope[name] = callee.compile()
                try:
                    dispatcher = numba.njit(cache=True, **self.options)(self.fn)
                except RuntimeError:  # no writable cache directory: compile on each run
                    dispatcher = numba.njit(**self.options)(self.fn)
                if scope.get(self.fn.__name__) is self:
                    scope[self.fn.__name__] = dispatcher
                self.dispatcher = dispatcher
            return self.dispatcher

    def __call__(self, *args: Any) -> Any:
        return self.compile()(*args)

    def __repr__(self) -> str:
        state = "compiled" if self.dispatcher is not None else "not yet compiled"
        return f"<numba kernel {self.fn.__qualname__} ({state})>"


@overload
def njit(fn: _F, /) -> _F: ...
@overload
def njit(*, inline: str = ..., fastmath: Any = ...) -> Callable[[_F], _F]: ...
def njit(fn: Any = None, /, **options: Any) -> Any:
    """Compile ``fn`` with ``numba.njit(nogil=True, cache=True, **options)`` on first use."""

    def wrap(f: _F) -> _F:
        return cast(_F, _Kernel(f, {"nogil": True, **options}))

    return wrap(fn) if fn is not None else wrap
