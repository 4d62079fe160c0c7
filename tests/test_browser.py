"""The self-contained report in a real headless Chromium: it renders, its charts are drawn,
and it makes no network request.

Chromium is launched with ``--proxy-server`` pointing at a recording proxy on loopback that
this test starts, so any request the page makes (a CDN script, a font, a schema URL) would
reach the proxy; a control page that does fetch something proves the proxy sees requests.
Chromium must be installed (``.ci/run`` installs Debian's ``chromium``); without it this test
fails rather than skips, because the check matters.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import evalframe as ef
from evalframe.cli import cli

EXAMPLES = Path(ef.__file__).parent / "examples"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--no-default-browser-check",
    # Chromium's own traffic (clock sync, updaters, sign-in) would reach the proxy too.
    "--disable-extensions",
    "--disable-default-apps",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--no-pings",
    "--metrics-recording-only",
    "--disable-features=NetworkTimeServiceQuerying,OptimizationHints,MediaRouter,Translate,"
    "AutofillServerCommunication,CertificateTransparencyComponentUpdater,InterestFeedContentSuggestions",
)


# Chromium talks to its own services (clock sync, component and extension updaters, sign-in)
# whatever flags it gets, and those connections reach the proxy too. None of these hosts
# serves web content a page could load (fonts and script CDNs are not on this list), so a
# request to any other host is the page's.
BROWSER_SERVICES = re.compile(
    r"^(clients\d*\.google\.com|accounts\.google\.com|update\.googleapis\.com|"
    r"safebrowsing\.googleapis\.com|content-autofill\.googleapis\.com|"
    r"optimizationguide-pa\.googleapis\.com|android\.clients\.google\.com|"
    r"[a-z0-9-]+\.gvt1\.com)(:\d+)?$"
)


def request_host(line: str) -> str:
    """The host of a proxied request line (``CONNECT host:443`` or ``GET http://host/...``)."""
    parts = line.split()
    target = parts[1] if len(parts) > 1 else ""
    if "://" in target:
        target = target.split("://", 1)[1].split("/", 1)[0]
    return target


def page_requests(lines: list[str]) -> list[str]:
    return [r for r in lines if not BROWSER_SERVICES.match(request_host(r))]


def find_chromium() -> str:
    for name in (os.environ.get("EVALFRAME_CHROMIUM"), "chromium", "chromium-browser",
                 "google-chrome", "chrome"):  # fmt: skip
        if name and (path := shutil.which(name)):
            return path
    pytest.fail(
        "Chromium is needed for the headless-browser test and was not found on PATH. "
        "Install it (Debian: apt-get install -y chromium) or set EVALFRAME_CHROMIUM."
    )


class RecordingProxy:
    """A loopback TCP listener that records every connection and answers 502."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.requests: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                conn.settimeout(1.0)
                try:
                    first = conn.recv(4096).split(b"\r\n", 1)[0].decode("latin-1")
                except OSError:
                    first = "(no request line)"
                self.requests.append(first)
                with contextlib.suppress(OSError):
                    conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")

    def close(self) -> None:
        self._stop.set()
        self.sock.close()
        self._thread.join(timeout=2)


@pytest.fixture
def proxy() -> Iterator[RecordingProxy]:
    p = RecordingProxy()
    yield p
    p.close()


def dump_dom(chromium: str, page: Path, proxy: RecordingProxy, profile: Path) -> str:
    cmd = [
        chromium,
        *FLAGS,
        f"--user-data-dir={profile}",
        f"--proxy-server=http://127.0.0.1:{proxy.port}",
        # Send loopback through the proxy too: nothing at all may leave the page.
        "--proxy-bypass-list=<-loopback>",
        "--virtual-time-budget=10000",
        "--run-all-compositor-stages-before-draw",
        "--dump-dom",
        page.as_uri(),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.fixture(scope="module")
def report_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report file exactly as CI makes it: `evalframe report ... --out report.html`."""
    from click.testing import CliRunner

    tmp = tmp_path_factory.mktemp("browser")
    run = ef.evaluate(
        EXAMPLES / "support.yaml",
        outputs=EXAMPLES / "support.outputs.json",
        metrics=["exact-match", "contains", "rouge-l"],
        run_id="browser-run",
    )
    run = dataclasses.replace(run, started_at=1_700_000_000.0, finished_at=1_700_000_001.0)
    src = tmp / "report.json"
    src.write_text(run.report().to_json(), encoding="utf-8")
    out = tmp / "report.html"
    result = CliRunner().invoke(cli, ["report", str(src), "--format", "html", "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


def test_report_renders_with_its_charts_and_makes_no_request(
    report_file: Path, proxy: RecordingProxy, tmp_path: Path
) -> None:
    dom = dump_dom(find_chromium(), report_file, proxy, tmp_path / "profile")
    assert "evalframe run — support.faq" in dom
    assert "Per-metric aggregates" in dom
    # vega-embed replaced each empty chart container with a drawn SVG.
    for i in range(2):
        start = dom.index(f'id="ef-chart-{i}"')
        chart = dom[start : dom.index("<h3>", start)]
        assert '<svg xmlns="http://www.w3.org/2000/svg"' in chart, chart[:500]
        # Bars (histograms) or cells (heatmap): data marks were drawn, not just axes.
        assert chart.count('class="mark-rect role-mark') >= 1, chart[:500]
        assert chart.count("<path") >= 5
    assert page_requests(proxy.requests) == []


def test_the_proxy_sees_a_page_that_does_fetch(proxy: RecordingProxy, tmp_path: Path) -> None:
    """Control: the harness above would notice a request."""
    page = tmp_path / "fetches.html"
    page.write_text(
        '<!DOCTYPE html><html><body><img src="http://cdn.example.invalid/x.png">'
        '<script src="http://cdn.example.invalid/vega.js"></script></body></html>',
        encoding="utf-8",
    )
    dump_dom(find_chromium(), page, proxy, tmp_path / "profile")
    hosts = {request_host(r) for r in page_requests(proxy.requests)}
    assert hosts == {"cdn.example.invalid"}, proxy.requests


def test_browser_service_hosts_are_the_only_ones_ignored() -> None:
    assert (
        page_requests(
            [
                "CONNECT update.googleapis.com:443 HTTP/1.1",
                "GET http://clients2.google.com/time/1/current?x=1 HTTP/1.1",
                "CONNECT redirector.gvt1.com:443 HTTP/1.1",
            ]
        )
        == []
    )
    kept = [
        "CONNECT fonts.googleapis.com:443 HTTP/1.1",
        "CONNECT cdn.jsdelivr.net:443 HTTP/1.1",
        "GET http://www.google.com/x HTTP/1.1",
        "CONNECT evil.update.googleapis.com.example:443 HTTP/1.1",
    ]
    assert page_requests(kept) == kept


def test_chromium_is_real() -> None:
    version = subprocess.run(
        [find_chromium(), "--version"], capture_output=True, text=True, timeout=30, check=False
    )
    assert "Chrom" in version.stdout, version.stdout + version.stderr
