"""The pytest plugin's work: a dataset file as items, one per (sample, metric).

``evalframe_pytest`` (the entry point, kept light) hands a dataset file named on the command
line to ``DatasetFile``, which collects one ``SampleNode`` per sample holding one ``EvalItem``
per metric: node ids are ``<file>::<sample_id>::<metric>``, as pytest builds them for any
collector tree, so an id printed in a report selects that item when passed back to pytest
(and ``--lf``, ``--ff`` and JUnit XML see the same ids). Names pytest would split or cut are
escaped by ``node_name``. An item passes when every execution of its row passed its metric's
threshold, and fails below it or on an error, with the input, expected and actual output,
score, threshold and details.

The dataset is scored once per session, only for the samples whose items are selected (by
node id, ``-k``, ``--lf``, ``--deselect``). Without xdist that is the first item's call; with
``-n N`` every worker shares one result: the first worker to take a lock (an atomic
``mkdir``) in a directory named by xdist's test-run id scores the run and writes the result,
the others wait for the file. The lock's key hashes the dataset and outputs files, the metric
specs, the system reference and the selected samples, so two datasets in one session never
share a result.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest

from evalframe.core._errors import EvalframeError

__all__ = ["DatasetFile", "EvalItem", "SampleNode", "node_name", "note_selection"]

_POLL_SECONDS: Final = 0.05
_TEXT_LIMIT: Final = 2000
# What pytest would read as structure in a node name: "::" (and a colon next to it), "["
# (parameters), an escape's own "%XX", and characters that break a line.
_ESCAPED: Final = re.compile(r"%(?=[0-9A-Fa-f]{2})|\[|:{2,}|:$|[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _percent(found: re.Match[str]) -> str:
    return "".join(f"%{byte:02X}" for byte in found.group().encode())


def node_name(text: str) -> str:
    """``text`` (a sample id or metric id) as a pytest node name: unchanged unless it holds
    what pytest would read as structure, which is percent-escaped as UTF-8 bytes: ``[``,
    a run of two or more colons, a colon at the end, ``%`` before two hex digits, and
    control and line-separator characters. Different texts give different names.

    Examples:
        >>> node_name("rouge-l(beta=2.0)"), node_name("refunds/late"), node_name("q:1")
        ('rouge-l(beta=2.0)', 'refunds/late', 'q:1')
        >>> node_name("a::b"), node_name("q[1]"), node_name("50%25 off"), node_name("end:")
        ('a%3A%3Ab', 'q%5B1]', '50%2525 off', 'end%3A')
    """
    return _ESCAPED.sub(_percent, text)


class _RowFailedError(EvalframeError):
    """A (sample, metric) item scored below its threshold or could not be scored."""

    def __init__(self, result: dict[str, Any]) -> None:
        super().__init__(result.get("error") or "below threshold")
        self.result = result


def _load_system(ref: str) -> Any:
    module_name, sep, attr = ref.partition(":")
    if not sep or not module_name or not attr:
        raise pytest.UsageError(
            f"--evalframe-system expects MODULE:FUNCTION, e.g. my_app.rag:answer; got {ref!r}."
        )
    if "" not in sys.path:
        sys.path.insert(0, "")
    try:
        target: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as exc:
        raise pytest.UsageError(f"--evalframe-system: cannot load {ref}: {exc}") from exc
    if not callable(target):
        raise pytest.UsageError(f"--evalframe-system: {ref} is not callable.")
    return target


class _WorkerFailedError(EvalframeError):
    """Scoring failed in the xdist worker that held the lock."""


class _Session:
    """What one dataset file needs to be scored, and its result once scored."""

    def __init__(self, path: Path, config: pytest.Config) -> None:
        here = config.invocation_params.dir
        outputs = config.getoption("evalframe_outputs")
        store = config.getoption("evalframe_store")
        self.path = path
        self.outputs = (here / outputs).resolve() if outputs else None
        self.system: str | None = config.getoption("evalframe_system")
        self.store = (here / store).resolve() if store else None
        self.specs: list[str] = list(config.getoption("evalframe_metric") or [])
        workerinput = getattr(config, "workerinput", None)
        self.run_uid = workerinput["testrunuid"] if workerinput else None
        self.samples: list[str] = []  # every sample of the file, in file order
        self.selected: set[str] | None = None  # the samples with a selected item
        self._result: dict[str, dict[str, Any]] | None = None
        self._failure: str | None = None

    def key(self) -> str:
        digest = hashlib.sha256()
        for part in (
            self.path.read_bytes(),
            self.outputs.read_bytes() if self.outputs else b"",
            (self.system or "").encode(),
            json.dumps(self.specs).encode(),
            json.dumps(self._chosen()).encode(),
        ):
            digest.update(hashlib.sha256(part).digest())
        return digest.hexdigest()[:32]

    def result(self) -> dict[str, dict[str, Any]]:
        """The per-item results; raises ``_RowFailedError`` (for every item) when scoring failed."""
        if self._failure is not None:
            raise _RowFailedError({"error": self._failure})
        if self._result is None:
            try:
                self._result = self._shared() if self.run_uid else self._score()
            except (EvalframeError, OSError, ValueError) as exc:
                self._failure = f"{self.path.name} could not be scored: {exc}"
                raise _RowFailedError({"error": self._failure}) from None
        return self._result

    def _shared(self) -> dict[str, dict[str, Any]]:
        """Score once across xdist workers: the lock's winner scores, the others read."""
        folder = Path(tempfile.gettempdir()) / f"evalframe-pytest-{self.run_uid}"
        folder.mkdir(exist_ok=True)
        key = self.key()
        done, failed = folder / f"{key}.json", folder / f"{key}.error"
        try:
            (folder / f"{key}.lock").mkdir()
        except FileExistsError:
            while not (done.exists() or failed.exists()):
                time.sleep(_POLL_SECONDS)
        else:
            try:
                result = self._score()
            except BaseException as exc:
                _atomic_write(failed, f"{type(exc).__name__}: {exc}")
                raise
            _atomic_write(done, json.dumps(result))
            return result
        if failed.exists():
            raise _WorkerFailedError(failed.read_text(encoding="utf-8"))
        loaded: dict[str, dict[str, Any]] = json.loads(done.read_text(encoding="utf-8"))
        return loaded

    def _chosen(self) -> list[str] | None:
        """The selected samples in file order, or None when every sample is selected."""
        if self.selected is None or self.selected >= set(self.samples):
            return None
        return [s for s in self.samples if s in self.selected]

    def _score(self) -> dict[str, dict[str, Any]]:
        import polars as pl

        import evalframe as ef
        from evalframe.core import schema as C

        dataset: Any = self.path
        outputs: Any = self.outputs
        chosen = self._chosen()
        if chosen is not None:  # score only what was selected: no system call for the rest
            whole = ef.read_dataset(self.path)
            keep = pl.col(C.SAMPLE_ID).is_in(chosen)
            dataset = ef.Dataset.from_frame(
                whole.filter(keep),
                name=whole.name,
                metrics=whole.metrics,
                repetitions=whole.repetitions,
                path=whole.path,
            )
            if self.outputs is not None:
                outputs = ef.read_outputs(self.outputs).filter(keep)
        run = ef.evaluate(
            dataset,
            outputs=outputs,
            system=_load_system(self.system) if self.system else None,
            metrics=self.specs or None,
            progress=False,
            store=self.store,
        )
        return item_results(run)


def _atomic_write(path: Path, text: str) -> None:
    scratch = path.with_suffix(path.suffix + f".{os.getpid()}.tmp")
    scratch.write_text(text, encoding="utf-8")
    scratch.replace(path)


def item_results(run: Any) -> dict[str, dict[str, Any]]:
    """One result per (sample, metric) of ``run``, keyed ``<sample_id>::<metric>``.

    Beside the shown execution's texts and score: ``executions`` attempted, ``scored``,
    ``passed`` (scored and at the threshold: an errored execution did not pass), the
    repetitions that ``failed`` (did not pass) and ``errored``, and the metric's
    ``dimension`` (safety metrics are summed apart from macro-F1).
    """
    import polars as pl

    from evalframe.core import schema as C

    thresholds = pl.DataFrame(
        {
            C.METRIC: run.metric_ids,
            "threshold": [float(m.threshold) for m in run.metrics],
            "dimension": [m.dimension for m in run.metrics],
        },
        schema={C.METRIC: pl.String, "threshold": pl.Float64, "dimension": pl.String},
    )
    texts = run.frame.select(C.SAMPLE_ID, C.REPETITION, C.INPUT, C.EXPECTED_OUTPUT, C.ACTUAL_OUTPUT)
    ok = pl.col("passed").fill_null(False) & pl.col(C.ERROR).is_null()
    rows = (
        run.scores.join(thresholds, on=C.METRIC, how="left")
        .join(texts, on=[C.SAMPLE_ID, C.REPETITION], how="left")
        .sort(ok, C.REPETITION)  # a failing execution first: it is the one shown
        .group_by(C.SAMPLE_ID, C.METRIC, maintain_order=True)
        .agg(
            pl.col(C.SCORE).first().alias("score"),
            pl.col("threshold").first(),
            pl.col("dimension").first(),
            pl.col(C.ERROR).drop_nulls().first().alias("error"),
            pl.col("details").first(),
            pl.col(C.INPUT).first().alias("input"),
            pl.col(C.EXPECTED_OUTPUT).first().alias("expected"),
            pl.col(C.ACTUAL_OUTPUT).first().alias("actual"),
            pl.len().alias("executions"),
            pl.col(C.SCORE).is_not_null().sum().alias("scored"),
            ok.sum().alias("passed"),
            pl.col(C.REPETITION).filter(~ok).sort().alias("failed"),
            pl.col(C.REPETITION).filter(pl.col(C.ERROR).is_not_null()).sort().alias("errored"),
            ok.all().alias("ok"),
        )
    )
    return {f"{r[C.SAMPLE_ID]}::{r[C.METRIC]}": r for r in rows.to_dicts()}


class DatasetFile(pytest.File):
    """A dataset file named on the command line: one ``SampleNode`` per sample."""

    def collect(self) -> Iterator[pytest.Item | pytest.Collector]:
        import evalframe as ef
        from evalframe.metrics._registry import resolve

        session = _Session(self.path, self.config)
        dataset = ef.read_dataset(self.path)
        specs = session.specs or list(dataset.metrics)
        if not specs:
            raise pytest.UsageError(
                f"{self.path.name} lists no metrics: pass --evalframe-metric SPEC, or list them "
                "under 'metrics:' in the dataset file."
            )
        metric_ids = [m.id for m in resolve(specs)]
        session.samples = dataset.get_column("sample_id").to_list()
        for sample_id in session.samples:
            yield SampleNode.from_parent(
                self,
                name=node_name(sample_id),
                scoring=session,
                sample_id=sample_id,
                metrics=metric_ids,
            )


class SampleNode(pytest.Collector):
    """One sample of a dataset file: one item per metric."""

    def __init__(
        self, *, scoring: _Session, sample_id: str, metrics: list[str], **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.eval_session = scoring
        self.sample_id = sample_id
        self.metrics = metrics

    def collect(self) -> Iterator[pytest.Item]:
        for metric in self.metrics:
            yield EvalItem.from_parent(
                self,
                name=node_name(metric),
                scoring=self.eval_session,
                sample_id=self.sample_id,
                metric=metric,
            )


def note_selection(items: list[pytest.Item]) -> None:
    """Record, for each dataset file, which samples have a selected item (the session's
    final items, after node ids, ``-k``, ``--lf`` and ``--deselect`` were applied)."""
    chosen: dict[int, tuple[_Session, set[str]]] = {}
    for item in items:
        if isinstance(item, EvalItem):
            session = item.eval_session
            chosen.setdefault(id(session), (session, set()))[1].add(item.sample_id)
    for session, samples in chosen.values():
        session.selected = samples


class EvalItem(pytest.Item):
    """One (sample, metric) of a dataset file."""

    def __init__(self, *, scoring: _Session, sample_id: str, metric: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.eval_session = scoring
        self.sample_id = sample_id
        self.metric = metric

    def runtest(self) -> None:
        result = self.eval_session.result().get(f"{self.sample_id}::{self.metric}")
        if result is None:
            raise _RowFailedError({"error": "the run has no score for this sample and metric"})
        self.user_properties.extend(
            [
                ("evalframe_metric", self.metric),
                ("evalframe_sample", self.sample_id),
                ("evalframe_dimension", result.get("dimension")),
                ("evalframe_executions", int(result["executions"])),
                ("evalframe_passed", int(result["passed"])),
                ("evalframe_scored", int(result["scored"])),
                ("evalframe_failed", list(result.get("failed") or [])),
                ("evalframe_errored", list(result.get("errored") or [])),
            ]
        )
        if not result["ok"]:
            raise _RowFailedError(result)

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> str | Any:
        if not isinstance(excinfo.value, _RowFailedError):
            return super().repr_failure(excinfo, style=style)
        return failure_text(self.sample_id, self.metric, excinfo.value.result)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        # No domain: pytest would print the dots of "support.yaml" and of metric
        # parameters (rouge-l(beta=2.0)) as "::"; the node id alone reads as intended.
        return self.path, None, ""


def _clip(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= _TEXT_LIMIT else text[:_TEXT_LIMIT] + " [...]"


def failure_text(sample_id: str, metric: str, result: dict[str, Any]) -> str:
    """The readable failure of one (sample, metric) item."""
    score, threshold = result.get("score"), result.get("threshold")
    executions = result.get("executions", 1)
    if result.get("error"):
        head = f"sample {sample_id!r} was not scored by {metric}"
    else:
        head = f"sample {sample_id!r} scored below the threshold of {metric}"
    if executions and executions > 1:
        head += (
            f" ({result['passed']} of {executions} executions passed, "
            f"{len(result.get('errored') or [])} errored; the first failing shown)"
        )
    lines = [head]
    for label, key in (("input", "input"), ("expected", "expected"), ("actual", "actual")):
        if key in result:
            lines.append(f"  {label + ':':<10} {_clip(result[key])}")
    lines.append(f"  {'score:':<10} {'none' if score is None else f'{score:.4f}'}")
    if threshold is not None:
        lines.append(f"  {'threshold:':<10} {threshold:.4f}")
    if result.get("error"):
        lines.append(f"  {'error:':<10} {_clip(result['error'])}")
    if result.get("details"):
        lines.append(f"  {'details:':<10} {_clip(result['details'])}")
    return "\n".join(lines)
