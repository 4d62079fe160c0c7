"""A headless-Chromium harness for HTML that must work offline: open a local file, drive it,
and know every request the page itself made.

Playwright drives the system Chromium (``executable_path``), so no browser is downloaded.
Each page opens in a fresh browser context whose router sees every request the page, its
frames and its workers start. ``file:``, ``data:``, ``blob:`` and ``about:`` URLs load; every
other request (http, https, ws, ...) is recorded in ``Visit.requests`` and aborted, so nothing
leaves the machine and nothing is missed. Chromium's own background traffic (clock sync,
updaters, the connection it opens to www.google.com at startup) belongs to no page and never
reaches the router, so it needs no host allow-list.

The fixture ``offline_browser`` in conftest.py hands tests an ``OfflineBrowser``; a test of an
interactive page drives ``visit.page`` (``fill``, ``click``, ``select_option``) as it would any
Playwright page.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Page, Route, WebSocketRoute

LOCAL_SCHEMES = ("file:", "data:", "blob:", "about:")
CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "chrome")


def find_chromium() -> str:
    """The Chromium executable: ``EVALFRAME_CHROMIUM``, else the first one on PATH.

    A missing browser fails the test rather than skipping it: the offline check matters.
    """
    for name in (os.environ.get("EVALFRAME_CHROMIUM"), *CANDIDATES):
        if name and (path := shutil.which(name)):
            return path
    pytest.fail(
        "Chromium is needed for the headless-browser tests and was not found on PATH. "
        "Install it (Debian: apt-get install -y chromium) or set EVALFRAME_CHROMIUM."
    )


@dataclass
class Visit:
    """One page opened by ``OfflineBrowser.open``.

    Attributes:
        page: the Playwright page, loaded.
        requests: every non-local URL the page asked for, in order (each one was aborted).
    """

    page: Page
    requests: list[str] = field(default_factory=list)

    def dom(self) -> str:
        """The page's DOM serialised as it is now (after its scripts ran)."""
        return self.page.content()


class OfflineBrowser:
    """Opens local files in a headless Chromium with every non-local request blocked."""

    def __init__(self, browser: Browser) -> None:
        self._browser = browser
        self._contexts: list[BrowserContext] = []

    def open(self, path: Path, *, timeout_ms: int = 60_000) -> Visit:
        """Load ``path`` (a local file) and return the page with the requests it made.

        The page has loaded (its ``load`` event fired and the network is idle) when this
        returns; wait for what scripts draw later with ``visit.page.wait_for_function``.
        """
        context = self._browser.new_context(service_workers="block", java_script_enabled=True)
        context.set_default_timeout(timeout_ms)
        self._contexts.append(context)
        page = context.new_page()
        visit = Visit(page)

        def route(r: Route) -> None:
            url = r.request.url
            if url.startswith(LOCAL_SCHEMES):
                r.continue_()
            else:
                visit.requests.append(url)
                r.abort()

        def route_ws(ws: WebSocketRoute) -> None:
            visit.requests.append(ws.url)
            ws.close()

        context.route("**/*", route)
        context.route_web_socket("**/*", route_ws)
        page.goto(path.resolve().as_uri(), wait_until="load")
        page.wait_for_load_state("networkidle")
        return visit

    def close(self) -> None:
        for context in self._contexts:
            context.close()
        self._contexts.clear()


@contextmanager
def launch() -> Iterator[Browser]:
    """A headless Chromium driven by Playwright; fails the test when either is missing."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:  # the test extra installs it
        pytest.fail(f"the browser tests need playwright (pip install -e '.[test]'): {exc}")
    executable = find_chromium()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=executable,
            headless=True,
            # CI runs as root in a container: no user namespaces for the sandbox, a small /dev/shm.
            args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
        )
        try:
            yield browser
        finally:
            browser.close()
