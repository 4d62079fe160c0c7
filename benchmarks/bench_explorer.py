"""The HTML sample explorer at 100,000 executions, in a real headless Chromium.

Run: ``.venv/bin/python benchmarks/bench_explorer.py [--samples N] [--rounds R]``
(needs the test extra's playwright and a Chromium: ``EVALFRAME_CHROMIUM`` or one on PATH).

A dataset of N samples (default 100,000) of English-like text (answers of 10-60 words) is
scored with exact-match, contains and rouge-l; its self-contained report page (tables, no
charts, the explorer with every execution) is written once. Then, R times, a fresh page opens
the file and we time:

* navigation to first rows: from ``page.goto`` to the explorer's first rows in the DOM
  (``document.body.dataset.efExplorer == "ready"``, set after the first render and after the
  handlers are attached, so the table is interactive from then on), as wall time in the
  driver and as ``performance.now()`` in the page (time since navigation start);
* filter: selecting "fail" on every metric, then "every metric" + "pass": from the change
  event to the next animation frame (rows re-rendered and laid out);
* sort: clicking the rouge-l header twice (ascending, then descending), to the next frame;
* search: typing a word, to the count updating (this includes the 120 ms typing debounce).

Every request the page makes is recorded; the script fails if there is any.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))
from _common import machine, text_pairs

import evalframe as ef
from evalframe.views._html import page

_TIMED = """async ([selector, value]) => {
  const el = document.querySelector(selector);
  const t0 = performance.now();
  if (value === null) el.click();
  else { el.value = value; el.dispatchEvent(new Event("change")); }
  await new Promise(r => requestAnimationFrame(() => r()));
  return performance.now() - t0;
}"""


def build(n: int, path: Path) -> tuple[float, float, int]:
    refs, cands = text_pairs(n, seed=11)
    records = [
        {"id": f"s{i:06d}", "input": {"question": f"question {i}"}, "expected_output": refs[i],
         "metadata": {"tags": [f"topic-{i % 7}"] if i % 5 else []}}
        for i in range(n)
    ]  # fmt: skip
    ds = ef.Dataset.from_records(records, name="bench")
    outputs = {f"s{i:06d}": cands[i] if i % 10 else refs[i] for i in range(n)}
    t0 = time.perf_counter()
    run = ef.evaluate(ds, outputs=outputs, metrics=["exact-match", "contains", "rouge-l"])
    scored = time.perf_counter() - t0
    t0 = time.perf_counter()
    html = page(run.report(samples=False), charts="none", run=run)
    path.write_text(html, encoding="utf-8")
    written = time.perf_counter() - t0
    return scored, written, len(html.encode("utf-8"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    from browser import OfflineBrowser, launch

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "report.html"
        scored, written, size = build(args.samples, path)
        print(machine())
        print(f"{args.samples} executions, 3 metrics: scored in {scored:.2f} s; page built and "
              f"written in {written:.2f} s, {size / 1e6:.1f} MB")  # fmt: skip
        rows: dict[str, list[float]] = {}
        with launch() as browser:
            harness = OfflineBrowser(browser)
            for _ in range(args.rounds):
                t0 = time.perf_counter()
                visit = harness.open(path)
                visit.page.wait_for_function("document.body.dataset.efExplorer === 'ready'")
                rows.setdefault("navigation to first rows, driver (ms)", []).append(
                    1000 * (time.perf_counter() - t0)
                )
                rows.setdefault("navigation to first rows, in page (ms)", []).append(
                    visit.page.evaluate("window.efExplorerReady")
                )
                p = visit.page
                for label, sel, value in (
                    ("filter: fail, every metric (ms)", "#ef-x-status", "fail"),
                    ("filter: pass (ms)", "#ef-x-status", "pass"),
                    ("filter: one cohort (ms)", "#ef-x-cohort", "2"),
                    ("filter: cleared (ms)", "#ef-x-cohort", ""),
                    ("sort: rouge-l ascending (ms)", "[data-sort=m2]", None),
                    ("sort: rouge-l descending (ms)", "[data-sort=m2]", None),
                    ("sort: sample id (ms)", "[data-sort=id]", None),
                ):
                    rows.setdefault(label, []).append(p.evaluate(_TIMED, [sel, value]))
                p.select_option("#ef-x-status", "")
                before = p.inner_text("#ef-x-count")
                t0 = time.perf_counter()
                p.fill("#ef-x-search", "refund")
                p.wait_for_function(
                    "t => document.getElementById('ef-x-count').textContent !== t", arg=before
                )
                rows.setdefault("search, incl. 120 ms debounce (ms)", []).append(
                    1000 * (time.perf_counter() - t0)
                )
                shown = p.locator(".ef-x-row").count()
                if visit.requests:
                    raise SystemExit(f"the page made requests: {visit.requests}")
                visit.page.context.close()
            harness.close()
        print(f"rows in the DOM after a search: {shown} (virtual rendering)")
        print(f"{'measure':42s} {'median':>9s} {'best':>9s} {'worst':>9s}  ({args.rounds} rounds)")
        for label, xs in rows.items():
            print(f"{label:42s} {statistics.median(xs):9.0f} {min(xs):9.0f} {max(xs):9.0f}")


if __name__ == "__main__":
    main()
