"""Writing a file a user named without ever leaving it half written, and read-modify-write
under a lock.

``write_atomic`` writes a temporary file beside the target, flushes it to disk, lets the
caller check it, and only then renames it over the target: a crash, a full disk or a failed
check leaves the target as it was. ``locked`` serialises writers of one file across
processes with an advisory lock (``flock``) on a lock file beside it; the operating system
releases it when its holder exits, even by SIGKILL, so a lock is never stale.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Final

from evalframe.core._errors import EvalframeError

__all__ = ["LOCK_WAIT_SECONDS", "locked", "real_target", "same_file", "write_atomic"]

LOCK_WAIT_SECONDS: Final = 120.0
"""How long a writer waits for another process's lock on the same file."""


def real_target(path: str | os.PathLike[str]) -> Path:
    """The file a write to ``path`` should replace: a symbolic link is followed, so the file
    it points to is written and the link stays a link."""
    file = Path(path)
    return file.resolve() if file.is_symlink() else file


def same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Whether two paths name one file: the same inode (hard and symbolic links included),
    or, for a file not there yet, the same resolved path."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return Path(a).resolve() == Path(b).resolve()


def write_atomic(
    path: str | os.PathLike[str],
    data: bytes | Iterable[bytes | memoryview],
    *,
    check: Callable[[Path], None] | None = None,
) -> None:
    """Write ``data`` (bytes, or pieces written in order) to ``path`` all at once: a
    temporary file in the same folder, flushed to disk, checked by ``check`` (given the
    temporary file; it raises to refuse it), then renamed over ``path``. An existing file
    keeps its permission bits; a symbolic link stays a link to the file it names.

    Raises:
        OSError: the folder cannot be written (the target is untouched).
        Exception: whatever ``check`` raised (the target is untouched).
    """
    target = real_target(path)
    # The same suffix as the target, so a reader choosing its format by suffix can check it.
    scratch = target.with_name(f".{target.stem}.{secrets.token_hex(4)}.partial{target.suffix}")
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
    except OSError:
        mode = None
    fd = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        try:
            for piece in (data,) if isinstance(data, bytes) else data:
                view = memoryview(piece)
                while view:
                    view = view[os.write(fd, view) :]
            if mode is not None:
                os.fchmod(fd, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        if check is not None:
            check(scratch)
        os.replace(scratch, target)
    except BaseException:
        scratch.unlink(missing_ok=True)
        raise
    _sync_folder(target.parent)


def _sync_folder(folder: Path) -> None:
    """Flush the folder entry of a rename to disk (where the platform allows it)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def locked(
    path: str | os.PathLike[str], what: str, *, timeout: float = LOCK_WAIT_SECONDS
) -> Iterator[None]:
    """Hold the advisory lock of ``path`` (on ``.<name>.lock`` beside it) while the block runs.

    The lock file stays after the block: removing it while another process waits on it
    would let two writers in at once.

    Raises:
        EvalframeError: another process held it for ``timeout`` seconds (``what`` names the
            file in the message).
    """
    import fcntl

    target = real_target(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    lock = target.with_name(f".{target.name}.lock")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise EvalframeError(
                        f"{what} {target} is being written by another process (it holds "
                        f"{lock}) and was not released within {timeout:g} s."
                    ) from None
                time.sleep(0.02)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
