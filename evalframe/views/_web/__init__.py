"""``evalframe view``: a local web app over the run store, with a JSON API.

Pages (server-rendered HTML, a little JavaScript from ``/assets/``): Runs, a Run (summary,
aggregates, cohorts, charts, and an execution explorer paged on the server), an execution,
Compare (2 to 10 runs of one dataset), Trends, Online monitoring, the Adversarial lane,
SQL, and Label (a queue of rows for human review whose labels are kept in the store). The
JSON API lives under ``/api/v1``. See docs/howto/viewer.md.

The store is read on one thread through a sandboxed read-only connection (``_worker``);
only labels are written. Starlette and uvicorn come with the ``view`` extra and load when
the viewer starts.

Examples:
    >>> from evalframe.views._web import create_app
    >>> import evalframe as ef, tempfile, pathlib
    >>> db = pathlib.Path(tempfile.mkdtemp()) / "runs.duckdb"
    >>> ds = ef.Dataset.from_records([{"id": "q1", "input": {}, "expected_output": "a"}], name="d")
    >>> _ = ef.evaluate(ds, outputs={"q1": "a"}, metrics=["exact-match"], store=db)
    >>> from starlette.testclient import TestClient
    >>> with TestClient(create_app(db)) as client:
    ...     client.get("/api/v1/health").json()["runs"]
    1
"""

from __future__ import annotations

from evalframe.views._web._serve import INSTALL_HINT, Viewer, create_app, serve

__all__ = ["INSTALL_HINT", "Viewer", "create_app", "serve"]
