"""Unaligned 8-byte loads and stores into byte arrays, for compiled kernels only.

Imported (with numba) when the first kernel that reads them compiles, through
``core/_njit.numba_object``; :func:`evalframe.core._json._text.copy_words` is their one user.
An array's ``[at, at + 8)`` must lie inside it: the callers keep 8 bytes of slack at the end.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir  # type: ignore[import-untyped]
from numba.core import types
from numba.extending import intrinsic

__all__ = ["load8", "store8"]


def _word_pointer(context: Any, builder: Any, array_type: Any, array: Any, at: Any) -> Any:
    data = context.make_array(array_type)(context, builder, array).data
    return builder.bitcast(builder.gep(data, [at]), ir.IntType(64).as_pointer())


@intrinsic
def load8(typingctx: Any, array: Any, at: Any) -> Any:
    """The 8 bytes at ``array[at:]`` as one unsigned integer (in memory order)."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        pointer = _word_pointer(context, builder, signature.args[0], args[0], args[1])
        return builder.load(pointer, align=1)

    return types.uint64(array, at), codegen


@intrinsic
def store8(typingctx: Any, array: Any, at: Any, word: Any) -> Any:
    """Write ``word`` (from :func:`load8`) to the 8 bytes at ``array[at:]``."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> None:
        pointer = _word_pointer(context, builder, signature.args[0], args[0], args[1])
        builder.store(args[2], pointer, align=1)

    return types.void(array, at, word), codegen
