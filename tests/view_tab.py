"""A page of `evalframe view` in headless Chromium, with what went wrong in it: console
errors, page errors, dialogs and requests that would leave the viewer all fail the test
(``Tab.check``), as does any element a hostile string would have made."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from snapshot import OPTION, updating

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

SHOTS = Path(__file__).parent.parent / "docs" / "howto" / "img"


@dataclass
class Tab:
    """A page of the viewer with what went wrong in it."""

    page: Page
    base: str
    problems: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)

    def go(self, path: str, status: int = 200) -> None:
        response = self.page.goto(self.base + path, wait_until="load")
        assert response is not None
        assert response.status == status, path
        self.page.wait_for_function("document.body.dataset.efReady === 'yes'")
        if status != 200:  # Chromium reports the page's own status as a console error
            expected = f"the server responded with a status of {status}"
            self.problems = [p for p in self.problems if expected not in p]

    def check(self) -> None:
        assert self.problems == [], self.problems
        assert self.outside == [], self.outside
        # No element that a probe would have made, and no script but the viewer's own.
        injected = self.page.evaluate(
            "() => [...document.querySelectorAll('img, script:not([src]):not([type]), "
            "[onerror], [onmouseover]')].map(e => e.outerHTML)"
        )
        assert injected == []

    def shot(self, name: str) -> None:
        """Keep a screenshot for the docs (written in update mode; else it must exist)."""
        path = SHOTS / f"viewer-{name}.png"
        if updating():
            SHOTS.mkdir(parents=True, exist_ok=True)
            self.page.screenshot(path=str(path), full_page=False)
            return
        if not path.is_file():
            pytest.fail(f"{path} is missing: run pytest {OPTION} and commit it.", pytrace=False)


@contextmanager
def open_tab(browser: Browser, base: str) -> Iterator[Tab]:
    """A fresh browser context on the viewer at ``base``; requests elsewhere are aborted and
    recorded."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(60_000)
    page = context.new_page()
    tab = Tab(page, base)

    def route(r: Any) -> None:
        url = r.request.url
        if url.startswith((base + "/", "data:", "about:", "blob:")):
            r.continue_()
        else:
            tab.outside.append(url)
            r.abort()

    context.route("**/*", route)
    page.on("console", lambda m: tab.problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: tab.problems.append(f"page error: {e}"))
    page.on("dialog", lambda d: (tab.problems.append(f"dialog: {d.message}"), d.dismiss()))
    try:
        yield tab
    finally:
        context.close()
