"""Starting the viewer: the application over a store, served by uvicorn.

``serve`` runs in the foreground until Ctrl-C (uvicorn finishes the requests under way, the
store worker closes the file, and the call returns); ``Viewer`` runs the same server on a
thread, for tests and notebooks. Starlette and uvicorn are the ``view`` extra, imported
here and nowhere else, with an install hint when missing.
"""

from __future__ import annotations

import ipaddress
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from evalframe.core._errors import EvalframeError

if TYPE_CHECKING:
    from evalframe.store import Store

__all__ = ["INSTALL_HINT", "Viewer", "create_app", "is_loopback", "serve"]

INSTALL_HINT: Final = (
    "evalframe view needs the optional 'view' extra (Starlette and uvicorn): "
    "pip install '.[view]' in a clone of evalframe"
)


def _require() -> None:
    try:
        import starlette  # noqa: F401  (a probe for the view extra)
        import uvicorn  # noqa: F401  (likewise)
    except ImportError as exc:
        raise EvalframeError(f"{INSTALL_HINT} ({exc}).") from None


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address or ``localhost``."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def create_app(
    store: Store | str | os.PathLike[str],
    *,
    token: str | None = None,
    hosts: frozenset[str] | None = None,
) -> Any:
    """The viewer's ASGI application over ``store``.

    Args:
        store: a ``Store`` or the path of a store file (an older file is migrated, as every
            command does when it opens one).
        token: when given, every request must carry it (see ``_guard``).
        hosts: the host names requests may be addressed to (None: any).
    """
    _require()
    from evalframe.store import as_store
    from evalframe.views._web._app import build_app
    from evalframe.views._web._guard import Guard
    from evalframe.views._web._worker import StoreWorker

    db = as_store(store)
    if not os.path.exists(db.path):
        raise EvalframeError(
            f"No store at {db.path}: save a run to it first (evalframe run --store)."
        )
    app = build_app(db, StoreWorker(db), name=os.path.basename(db.path))
    return Guard(app, token=token, hosts=hosts)


def _settings(host: str, token: str | None) -> tuple[str | None, frozenset[str] | None]:
    """The token to require and the host names to answer for, given the bind address."""
    from evalframe.views._web._guard import LOOPBACK_NAMES

    if is_loopback(host):
        return token, LOOPBACK_NAMES | {host.lower(), f"[{host.strip('[]')}]".lower()}
    return token or secrets.token_urlsafe(24), None


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise EvalframeError(
            f"Cannot listen on {host}:{port} ({exc.strerror or exc}); pick another --port "
            "(--port 0 takes any free one) or --host."
        ) from None
    sock.listen(128)
    return sock


def _url(host: str, sock: socket.socket, token: str | None) -> str:
    port = sock.getsockname()[1]
    shown = f"[{host.strip('[]')}]" if ":" in host.strip("[]") else host
    return f"http://{shown}:{port}/" + (f"?token={token}" if token else "")


def _server(app: Any) -> Any:
    import uvicorn

    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    return uvicorn.Server(config)


def serve(
    store: Store | str | os.PathLike[str],
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve the viewer until interrupted (Ctrl-C): ``on_ready(url)`` is called once the
    socket listens, with the address to open (carrying the token when one is needed).

    Raises:
        EvalframeError: the extra is missing, the store does not exist, or the port is taken.
    """
    token, hosts = _settings(host, token)
    app = create_app(store, token=token, hosts=hosts)
    sock = _bind(host, port)
    server = _server(app)
    if on_ready is not None:
        on_ready(_url(host, sock, token))
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn stops, then raises the signal it caught again
        pass
    finally:
        sock.close()


class Viewer:
    """The viewer served on a thread (tests, notebooks): ``with Viewer(path) as v: v.url``.

    Args:
        store: a store or its path.
        host: the address to bind (loopback by default).
        port: the port (0: any free one).
        token: required of every request when given (always, off loopback).
    """

    def __init__(
        self,
        store: Store | str | os.PathLike[str],
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
    ) -> None:
        self.token, hosts = _settings(host, token)
        self._sock = _bind(host, port)
        self._server = _server(create_app(store, token=self.token, hosts=hosts))
        self.url = _url(host, self._sock, None).rstrip("/")
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, name="evalframe-view"
        )

    def start(self, timeout: float = 30.0) -> Viewer:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise EvalframeError("The viewer did not start.")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join()
        self._sock.close()

    def __enter__(self) -> Viewer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
