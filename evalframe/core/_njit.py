"""Numba kernels compiled on first use, so ``import evalframe`` does not import numba.

``njit`` is the one decorator every compiled kernel uses. It returns a stand-in; the first
call imports numba and compiles the function (``nogil``, cached on disk where a cache
directory is writable). Numba can only call another kernel from a kernel when it sees the
real dispatcher, so compiling a function first compiles every stand-in it reads from its
module's globals and puts the dispatchers there in their place. A numba object a kernel
needs (an intrinsic, say) is named with ``numba_object("numba.module", "name")`` and
imported the same way, when the first kernel that reads it compiles.

Examples:
    >>> from evalframe.core._njit import njit
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

__all__ = ["njit", "numba_object"]

_F = TypeVar("_F", bound=Callable[..., Any])
_LOCK = threading.RLock()


class _NumbaObject:
    """A numba object (module path and name) imported when a kernel reading it compiles."""

    def __init__(self, module: str, name: str) -> None:
        self.module = module
        self.name = name

    def load(self) -> Any:
        import importlib

        return getattr(importlib.import_module(self.module), self.name)


def numba_object(module: str, name: str) -> Any:
    """Name a numba object for kernels, imported only when one of them compiles."""
    return _NumbaObject(module, name)


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
                    value = scope.get(name)
                    if isinstance(value, _Kernel):
                        scope[name] = value.compile()
                    elif isinstance(value, _NumbaObject):
                        scope[name] = value.load()
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
