"""The viewer's routes: the pages and the JSON API (``/api/v1``), on Starlette.

Handlers parse their parameters (``_filters``), run their reads on the store's one worker
thread (``_worker``), and render HTML (``_run_pages``, ``_pages``) or JSON. Errors are a
``RequestError``'s status and message: JSON ``{"status": ..., "message": ...}`` under
``/api/``, a page elsewhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlencode

from evalframe.views._web import _queries as Q
from evalframe.views._web._filters import (
    CompareQuery,
    ExecutionQuery,
    RequestError,
    RunQuery,
    TrendQuery,
    integer,
)
from evalframe.views._web._layout import escape, page

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

    from evalframe.store import Store
    from evalframe.views._web._worker import StoreWorker

__all__ = ["API_VERSION", "build_app"]

API_VERSION: Final = "v1"
MAX_BODY: Final = 4 * 1024 * 1024
"""Bytes a request body may hold (a batch of labels)."""
SQL_ROWS: Final = 1_000
_REPORTS_KEPT: Final = 8


def _json(data: Any, status: int = 200) -> Response:
    import orjson
    from starlette.responses import Response

    body = orjson.dumps(data, default=str, option=orjson.OPT_SERIALIZE_NUMPY)
    return Response(body, status_code=status, media_type="application/json")


def _html(body: str, status: int = 200) -> Response:
    from starlette.responses import HTMLResponse

    return HTMLResponse(body, status_code=status)


class _Reports:
    """The last few report documents built (runs never change, so they stay right)."""

    def __init__(self) -> None:
        self._docs: OrderedDict[str, bytes] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, store: Store, run_id: str) -> bytes:
        with self._lock:
            if run_id in self._docs:
                self._docs.move_to_end(run_id)
                return self._docs[run_id]
        from evalframe.views._report import Report
        from evalframe.views._report_build import build_report

        doc = dict(build_report(store.load(run_id), samples=False))
        doc.pop("samples", None)
        text = Report(doc).to_json_bytes()
        with self._lock:
            self._docs[run_id] = text
            while len(self._docs) > _REPORTS_KEPT:
                self._docs.popitem(last=False)
        return text


def build_app(store: Store, worker: StoreWorker, *, name: str) -> Starlette:
    """The Starlette application over ``store`` (``name``: how the nav bar names it)."""
    from starlette.applications import Starlette
    from starlette.responses import Response
    from starlette.routing import Route

    from evalframe.core._errors import StoreBusyError, StoreError
    from evalframe.views._web import _pages as P
    from evalframe.views._web import _run_pages as RP
    from evalframe.views._web._compare import compared, matrix_page, metric_rows
    from evalframe.views._web._label import QueueQuery, queue
    from evalframe.views._web._trend import trend

    reports = _Reports()

    def html_page(title: str, body: str, here: str = "") -> Response:
        from evalframe.views._web._assets import has_vega

        charted = 'class="ef-vega"' in body or 'id="ef-run-charts"' in body
        scripts = ("vega.js", "app.js") if has_vega() and charted else ("app.js",)
        return _html(page(title, body, here=here, store=name, scripts=scripts))

    def params(request: Request) -> dict[str, str]:
        return dict(request.query_params)

    async def info_of(request: Request) -> dict[str, Any]:
        ref = request.path_params["run"]
        return await worker.read(lambda r: Q.run_info(r, Q.resolve(r, ref)))

    def metrics_of(info: dict[str, Any]) -> list[str]:
        return [m["metric"] for m in info["metrics"]]

    # --- pages ---------------------------------------------------------------------------

    async def runs(request: Request) -> Response:
        q = RunQuery.parse(params(request))

        def read(r: Any) -> tuple[int, list[dict[str, Any]], list[tuple[str, int]]]:
            total, rows = Q.runs_page(r, q)
            return total, rows, Q.datasets(r)

        total, rows, datasets = await worker.read(read)
        return html_page("Runs", RP.runs_page(q, total, rows, datasets), "/")

    async def run(request: Request) -> Response:
        ref = request.path_params["run"]

        def read(r: Any) -> tuple[dict[str, Any], str]:
            info = Q.run_info(r, Q.resolve(r, ref))
            q = ExecutionQuery.parse(params(request), metrics_of(info))
            total, rows = Q.executions(r, info, q)
            cohorts = Q.cohort_names(r, info["run_id"])
            explorer = RP.explorer(info, q, total, rows, cohorts)
            return info, RP.run_page(info, Q.failures(r, info["run_id"]), explorer)

        info, body = await worker.read(read)
        return html_page(f"{info['name']} ({info['run_id']})", body)

    async def run_charts(request: Request) -> Response:
        ref = request.path_params["run"]

        def read(r: Any) -> str:
            info = Q.run_info(r, Q.resolve(r, ref))
            return RP.run_charts(info, Q.histograms(r, info["run_id"]))

        return _html(await worker.read(read))

    async def sample(request: Request) -> Response:
        ref = request.path_params["run"]
        sid = request.query_params.get("id")
        if not sid:
            raise RequestError(400, "Which execution? Pass ?id=SAMPLE_ID (and &rep=N).")
        rep = integer(params(request), "rep", 0, 0, 10**9)

        def read(r: Any) -> str:
            info = Q.run_info(r, Q.resolve(r, ref))
            return RP.execution_page(info, Q.execution(r, info, sid, rep))

        return html_page(sid, await worker.read(read))

    async def label_queue(request: Request) -> Response:
        ref = request.path_params["run"]

        def read(r: Any) -> str:
            info = Q.run_info(r, Q.resolve(r, ref))
            q = QueueQuery.parse(params(request), metrics_of(info))
            return RP.label_page(info, q, queue(r, info, q))

        return html_page("Label rows", await worker.read(read))

    async def compare_pages(request: Request) -> Response:
        picked = request.query_params.getlist("pick")
        if picked and "runs" not in request.query_params:
            # Runs ticked on the runs page: the oldest is the reference.
            ordered = await worker.read(lambda r: _oldest_first(r, picked))
            from starlette.responses import RedirectResponse

            return RedirectResponse(f"/compare?{urlencode({'runs': ','.join(ordered)})}", 303)
        q = CompareQuery.parse(params(request), request.query_params.getlist("runs"))
        found = await _compared(q, intervals=False)  # they follow: compare_intervals
        total, rows = matrix_page(found, q)
        return html_page("Compare", P.compare_page(found, q, total, rows))

    async def compare_intervals(request: Request) -> Response:
        q = CompareQuery.parse(params(request), request.query_params.getlist("runs"))
        return _html(P.statistics(await _compared(q)))

    async def _compared(q: CompareQuery, *, intervals: bool = True) -> Any:
        ids = await worker.read(lambda r: tuple(Q.resolve(r, ref) for ref in q.runs))
        if len(set(ids)) != len(ids):
            raise RequestError(400, "Two of the references in 'runs' name the same run.")
        return await worker.call(lambda s: compared(s, ids, intervals=intervals))

    async def trends(request: Request) -> Response:
        p = params(request)
        if not (p.get("dataset") or p.get("label")):
            datasets = await worker.read(Q.datasets)
            return html_page("Trends", P.trends_page(None, None, datasets), "/trends")
        q = TrendQuery.parse(p)
        data, datasets = await worker.read(lambda r: (trend(r, q), Q.datasets(r)))
        return html_page("Trends", P.trends_page(q, data, datasets), "/trends")

    async def online(request: Request) -> Response:
        chosen = request.query_params.get("dataset") or None
        body = await worker.call(lambda s: _online(s, chosen))
        return html_page("Online", body, "/online")

    def _online(s: Store, chosen: str | None) -> str:
        from evalframe.engine._online import status as online_status
        from evalframe.engine._online import trend as online_trend
        from evalframe.store._online import scores as online_scores

        datasets = s.sql(
            "SELECT dataset, count(*) AS n, avg(passed::INTEGER) AS rate, max(judged_at) AS last "
            "FROM online_scores GROUP BY dataset ORDER BY dataset"
        )
        detail = None
        if chosen is not None:
            if chosen not in datasets.get_column("dataset").to_list():
                raise RequestError(404, f"No online scores for dataset {chosen!r}.")
            detail = {
                "status": online_status(s, chosen),
                "trend": online_trend(s, chosen, days=90),
                "latest": online_scores(s, chosen).head(50).to_dicts(),
            }
        return P.online_page(datasets, chosen, detail)

    async def adversarial(request: Request) -> Response:
        chosen = request.query_params.get("dataset") or None

        def read(s: Store) -> str:
            from evalframe.store._adversarial import TABLE, history

            present = s.sql(
                "SELECT count(*) FROM information_schema.tables WHERE table_name = ?", [TABLE]
            ).item()
            datasets: list[tuple[str, int]] = []
            if present:
                frame = s.sql(
                    f"SELECT dataset, count(*) AS n FROM {TABLE} GROUP BY dataset ORDER BY dataset"
                )
                datasets = [(str(d), int(n)) for d, n in frame.iter_rows()]
            if chosen is not None and chosen not in [d for d, _ in datasets]:
                raise RequestError(404, f"No adversarial history for dataset {chosen!r}.")
            entries = history(s, chosen) if chosen is not None else []
            return P.adversarial_page(datasets, chosen, entries)

        return html_page("Adversarial", await worker.call(read), "/adversarial")

    async def sql(request: Request) -> Response:
        text = request.query_params.get("q", "")
        if len(text) > 100_000:
            raise RequestError(400, "A query is at most 100,000 characters.")
        result, error = None, None
        if text.strip():
            try:
                result = await worker.read(lambda r: r.sql(text, limit=SQL_ROWS + 1))
            except StoreBusyError:
                raise
            except StoreError as exc:
                error = str(exc)
        return html_page("SQL", P.sql_page(text, result, error, SQL_ROWS), "/sql")

    async def asset(request: Request) -> Response:
        from evalframe.views._web._assets import asset as find

        found = find(request.path_params["name"])
        if found is None:
            raise RequestError(404, "No such asset.")
        kind, text = found
        cache = {"cache-control": "private, max-age=3600"}
        return Response(text, media_type=kind, headers=cache)

    # --- the API -------------------------------------------------------------------------

    async def api_health(request: Request) -> Response:
        from evalframe._version import __version__
        from evalframe.store import SCHEMA_VERSION

        count = await worker.read(lambda r: int(r.sql("SELECT count(*) FROM runs").item()))
        return _json(
            {
                "status": "ok",
                "api": API_VERSION,
                "evalframe_version": __version__,
                "schema_version": SCHEMA_VERSION,
                "runs": count,
            }
        )

    async def api_runs(request: Request) -> Response:
        q = RunQuery.parse(params(request))
        total, rows = await worker.read(lambda r: Q.runs_page(r, q))
        return _json({"total": total, "limit": q.page.limit, "offset": q.page.offset, "runs": rows})

    async def api_run(request: Request) -> Response:
        ref = request.path_params["run"]
        run_id = await worker.read(lambda r: Q.resolve(r, ref))
        body = await worker.call(lambda s: reports.get(s, run_id))
        return Response(body, media_type="application/json")

    async def api_executions(request: Request) -> Response:
        ref = request.path_params["run"]

        def read(r: Any) -> dict[str, Any]:
            info = Q.run_info(r, Q.resolve(r, ref))
            q = ExecutionQuery.parse(params(request), metrics_of(info))
            total, rows = Q.executions(r, info, q)
            return {
                "run_id": info["run_id"],
                "total": total,
                "limit": q.page.limit,
                "offset": q.page.offset,
                "executions": rows,
            }

        return _json(await worker.read(read))

    async def api_execution(request: Request) -> Response:
        ref, sid = request.path_params["run"], request.path_params["sample"]
        rep = integer(params(request), "repetition", 0, 0, 10**9)

        def read(r: Any) -> dict[str, Any]:
            info = Q.run_info(r, Q.resolve(r, ref))
            return Q.execution(r, info, sid, rep)

        return _json(await worker.read(read))

    async def api_queue(request: Request) -> Response:
        ref = request.path_params["run"]

        def read(r: Any) -> dict[str, Any]:
            info = Q.run_info(r, Q.resolve(r, ref))
            q = QueueQuery.parse(params(request), metrics_of(info))
            return {
                "run_id": info["run_id"],
                "metric": q.metric,
                "n": q.n,
                "strata": q.strata,
                "seed": q.seed,
                "rows": queue(r, info, q),
            }

        return _json(await worker.read(read))

    async def api_run_labels(request: Request) -> Response:
        ref = request.path_params["run"]
        metric = request.query_params.get("metric") or None

        def read(r: Any) -> dict[str, Any]:
            run_id = Q.resolve(r, ref)
            frame = r.sql(
                "SELECT sample_id, repetition, metric, label, verdict, note, labeller, "
                "labelled_at, label_id FROM run_labels WHERE run_id = $run "
                "AND ($metric IS NULL OR metric = $metric) ORDER BY sample_id, repetition, metric",
                {"run": run_id, "metric": metric},
            )
            return {"run_id": run_id, "labels": frame.to_dicts()}

        return _json(await worker.read(read))

    async def api_compare(request: Request) -> Response:
        q = CompareQuery.parse(params(request), request.query_params.getlist("runs"))
        found = await _compared(q)
        total, rows = matrix_page(found, q)
        return _json(
            {
                "dataset": found.comparisons[0].after.dataset.name,
                "reference": found.runs[0]["run_id"],
                "runs": found.runs,
                "comparisons": [
                    {
                        "run_id": c.after.run_id,
                        "counts": c.counts,
                        "macro_f1": c.macro_f1,
                        "pass_rate": c.pass_rate,
                    }
                    for c in found.comparisons
                ],
                "metrics": metric_rows(found),
                "rows": {
                    "filter": q.rows,
                    "total": total,
                    "limit": q.page.limit,
                    "offset": q.page.offset,
                    "items": rows,
                },
            }
        )

    async def api_trend(request: Request) -> Response:
        q = TrendQuery.parse(params(request))
        data = await worker.read(lambda r: trend(r, q))
        return _json(
            {
                "dataset": q.dataset,
                "label": q.label,
                "metric": q.metric,
                "value": q.value,
                "floor": q.floor,
                **data,
            }
        )

    async def api_labels(request: Request) -> Response:
        import orjson

        body = await _body(request)
        try:
            doc = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise RequestError(400, f"The body is not JSON: {exc}") from None
        items = doc.get("labels") if isinstance(doc, dict) and "labels" in doc else [doc]
        if not isinstance(items, list) or not items:
            raise RequestError(400, 'Send a label object, or {"labels": [label, ...]}.')

        def write(s: Store) -> list[str]:
            from evalframe.core._errors import LabelTargetError

            try:
                return s.save_labels(items)
            except LabelTargetError as exc:
                raise RequestError(404 if exc.missing == "run" else 400, str(exc)) from None
            except StoreBusyError:
                raise
            except StoreError as exc:
                raise RequestError(400, str(exc)) from None

        ids = await worker.call(write)
        return _json({"saved": len(ids), "label_ids": ids}, status=201)

    async def api_missing(request: Request) -> Response:
        raise RequestError(
            404, f"No API endpoint {request.url.path} (see /api/{API_VERSION}/health)."
        )

    async def page_missing(request: Request) -> Response:
        raise RequestError(404, f"No page at {request.url.path}.")

    # --- errors --------------------------------------------------------------------------

    async def on_request_error(request: Request, exc: Exception) -> Response:
        status, message = 500, str(exc)
        if isinstance(exc, RequestError):
            status, message = exc.status, exc.message
        elif isinstance(exc, StoreBusyError):
            status, message = 503, str(exc).splitlines()[0]
        elif isinstance(exc, StoreError):
            message = str(exc).splitlines()[0]
        if request.url.path.startswith("/api/"):
            return _json({"status": status, "message": message}, status=status)
        body = page(
            "Error",
            f'<h2>{status}</h2><div class="ef-error" role="alert">{escape(message)}</div>',
            store=name,
        )
        return _html(body, status=status)

    v = f"/api/{API_VERSION}"
    routes = [
        Route("/", runs),
        Route("/runs/{run:path}/sample", sample),
        Route("/runs/{run:path}/label", label_queue),
        Route("/runs/{run:path}/charts", run_charts),
        Route("/runs/{run:path}", run),
        Route("/compare/intervals", compare_intervals),
        Route("/compare", compare_pages),
        Route("/trends", trends),
        Route("/online", online),
        Route("/adversarial", adversarial),
        Route("/sql", sql),
        Route("/assets/{name}", asset),
        Route(f"{v}/health", api_health),
        Route(f"{v}/runs", api_runs),
        Route(f"{v}/runs/{{run:path}}/executions/{{sample:path}}", api_execution),
        Route(f"{v}/runs/{{run:path}}/executions", api_executions),
        Route(f"{v}/runs/{{run:path}}/queue", api_queue),
        Route(f"{v}/runs/{{run:path}}/labels", api_run_labels),
        Route(f"{v}/runs/{{run:path}}", api_run),
        Route(f"{v}/compare", api_compare),
        Route(f"{v}/trend", api_trend),
        Route(f"{v}/labels", api_labels, methods=["POST"]),
        Route("/api/{rest:path}", api_missing, methods=["GET", "POST", "PUT", "DELETE", "PATCH"]),
        Route("/{rest:path}", page_missing),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        from evalframe.views._web._assets import warm

        # The chart bundle takes seconds to build once: build it before a page asks.
        asyncio.get_running_loop().run_in_executor(None, warm)
        yield
        worker.shutdown()

    handlers: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
        RequestError: on_request_error,
        StoreError: on_request_error,
    }
    return Starlette(routes=routes, exception_handlers=handlers, lifespan=lifespan)


def _oldest_first(r: Any, refs: list[str]) -> list[str]:
    """The runs ``refs`` name, oldest first."""
    CompareQuery.parse({}, [",".join(refs)])  # 2 to 10 of them
    ids = [Q.resolve(r, ref) for ref in refs]
    frame = r.sql(
        "SELECT run_id FROM runs WHERE list_contains($ids, run_id) ORDER BY created_at, seq",
        {"ids": ids},
    )
    return [str(x) for x in frame.get_column("run_id").to_list()]


async def _body(request: Request) -> bytes:
    """The request body, refused past ``MAX_BODY`` bytes."""
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            raise RequestError(413, f"A request body is at most {MAX_BODY:,} bytes.")
        chunks.append(chunk)
    return b"".join(chunks)
