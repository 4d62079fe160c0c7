"""``ef.adversarial``: the red-team lane in Python (``evalframe adversarial`` on the command line).

``seed()`` builds the ``adversarial.security.v1`` dataset (optionally with perturbed probes);
``run()`` scores it with refusal-quality by default, gates the run against the history
(a run store and/or an eval-harness manifest file), records the run there only when it is
clean, and promotes its failing rows to a dataset file.

Examples:
    >>> import evalframe as ef
    >>> ds = ef.adversarial.seed(["ssrf", "pii-leak"], perturb=["base64"])
    >>> ds.get_column("sample_id").to_list()
    ['adv.ssrf', 'adv.pii-leak', 'adv.ssrf~base64', 'adv.pii-leak~base64']
    >>> ef.adversarial.CATEGORIES["pii-leak"].frameworks
    ('OWASP LLM', 'NIST AI RMF', 'EU AI Act')
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from evalframe.core._adversarial import (
    CATEGORIES,
    DEFAULT_DATASET_NAME,
    DEFAULT_METRICS,
    LANGUAGE_TEMPLATES,
    PERTURBATIONS,
    Category,
    perturb,
    seed_records,
)
from evalframe.core._adversarial_history import (
    GateResult,
    Manifest,
    entry_from_report,
    evaluate_gate,
    is_recordable,
    parse_targets,
    record_in_manifest,
)
from evalframe.core._dataset import Dataset
from evalframe.core._errors import ComparisonError
from evalframe.core._promote import Promotion, promote_failures
from evalframe.core._promotion_file import check_target
from evalframe.core._system import System
from evalframe.engine._evaluate import MetricLike, evaluate

if TYPE_CHECKING:
    from evalframe.core._run import Run
    from evalframe.providers import EmbeddingClient, JudgeClient, Providers
    from evalframe.store import Store
    from evalframe.views._report import Report

__all__ = [
    "CATEGORIES",
    "DEFAULT_DATASET_NAME",
    "DEFAULT_METRICS",
    "LANGUAGE_TEMPLATES",
    "PERTURBATIONS",
    "AdversarialRun",
    "Category",
    "GateResult",
    "Manifest",
    "Promotion",
    "evaluate_gate",
    "promote_failures",
    "run",
    "seed",
]


def seed(
    categories: Sequence[str] | None = None,
    *,
    perturb: Sequence[str] = (),
    name: str = DEFAULT_DATASET_NAME,
) -> Dataset:
    """The seed dataset: one sample per category (all ten by default), then the probes.

    Args:
        categories: category keys, in the order wanted; unknown or repeated ones are errors.
        perturb: transformations from ``PERTURBATIONS`` (base64, leetspeak, ascii-smuggling,
            role-play, language); each adds probes ``<seed id>~<variant>``.
        name: the dataset name.

    Raises:
        DatasetError: an unknown or repeated category or transformation.
    """
    return Dataset.from_records(
        _records(categories, perturb), name=name, metrics=list(DEFAULT_METRICS)
    )


def _records(
    categories: Sequence[str] | None, transformations: Sequence[str]
) -> list[dict[str, Any]]:
    records = seed_records(categories)
    return perturb(records, list(transformations)) if transformations else records


@dataclass(frozen=True)
class AdversarialRun:
    """What ``run`` did.

    Attributes:
        run: the scored run.
        report: its report (with the adversarial block).
        entry: its history entry (eval-harness's manifest entry).
        gate: the drift gate's result, when a gate was asked for.
        recorded: whether the run joined the history (only clean runs do).
        promotion: what failure promotion did, when asked for.
    """

    run: Run
    report: Report
    entry: dict[str, Any]
    gate: GateResult | None
    recorded: bool
    promotion: Promotion | None

    @property
    def failed(self) -> bool:
        """Whether a command would exit 1: a (sample, metric) failure or a failed gate."""
        return self.run.failures.height > 0 or (self.gate is not None and self.gate.failed)


def run(
    *,
    outputs: str | os.PathLike[str] | pl.DataFrame | Mapping[str, str] | None = None,
    system: System | None = None,
    categories: Sequence[str] | None = None,
    metrics: Sequence[MetricLike] | None = None,
    perturb: Sequence[str] = (),
    name: str = DEFAULT_DATASET_NAME,
    store: Store | str | os.PathLike[str] | None = None,
    manifest: str | os.PathLike[str] | None = None,
    manifest_retain: int = 10,
    regression_gate: bool = False,
    regression_max_drop: float = 5.0,
    regression_metrics: Sequence[str] = (),
    promote_failures_to: str | os.PathLike[str] | None = None,
    promoted_dataset: str | None = None,
    force_promotion: bool = False,
    providers: Providers | EmbeddingClient | JudgeClient | None = None,
    concurrency: int = 8,
    labels: Mapping[str, str] | None = None,
    samples: bool = False,
    save_run: bool = True,
) -> AdversarialRun:
    """Run the adversarial lane once.

    Args:
        outputs: saved outputs for the seed (and probe) ids; exclusive with ``system``.
        system: a callable taking a sample's input map and returning the reply.
        categories: the categories to probe (default: all ten).
        metrics: metric specs (default: refusal-quality, which needs a judge in
            ``providers``, or stored replies).
        perturb: transformations adding probes per seed.
        name: the dataset name (the history is kept per name).
        store: a run store: the run is saved there, and joins its adversarial history
            when clean.
        manifest: an ``eval-harness.adversarial-runs.v1`` JSON file, read for baselines and
            updated with a clean run (created when missing). The update is made under the
            file's lock, so runs recording at once all end up in it.
        manifest_retain: runs the manifest keeps (plus each slice's newest clean run).
        regression_gate: gate against the newest compatible clean run of the history.
        regression_max_drop: the largest allowed drop, in percentage points (0 to 100).
        regression_metrics: extra ``metric[:mean|p50|p95|pass_rate]`` checks.
        promote_failures_to: add the failing rows to this promotion file (a dataset YAML;
            see ``promote_failures``: an existing file must be one evalframe wrote, and
            keeps its samples).
        promoted_dataset: the promoted dataset's name (default: ``<name>.failures``).
        force_promotion: replace what ``promote_failures_to`` holds, whatever it is.
        providers: the judge (and embeddings) for model-backed metrics.
        concurrency: system calls in flight at once.
        labels: labels stored with the run.
        samples: include the per-execution samples in the report.
        save_run: save the run itself to ``store`` (every run, clean or not).

    Raises:
        ComparisonError: a gate without a history, a max drop outside [0, 100], a malformed
            target, or an unusable manifest (all before any scoring).
        PromotionTargetError: ``promote_failures_to`` names the store, the manifest, the
            outputs or a file evalframe did not write for promotions (before any scoring).
    """
    if regression_gate and store is None and manifest is None:
        raise ComparisonError(
            "The regression gate needs a history: pass a store and/or a manifest file."
        )
    if not 0.0 <= regression_max_drop <= 100.0:
        raise ComparisonError(
            f"The regression max drop must be a finite percentage in [0, 100]; got "
            f"{regression_max_drop!r}."
        )
    parse_targets(regression_metrics)
    own_files = {
        "the run store": store if isinstance(store, str | os.PathLike) else None,
        "the adversarial manifest": manifest,
        "the saved outputs": outputs if isinstance(outputs, str | os.PathLike) else None,
    }
    if promote_failures_to is not None:
        check_target(promote_failures_to, own_files, force=force_promotion)
    dataset = seed(categories, perturb=perturb, name=name)
    history_manifest = Manifest.load(manifest, name=name) if manifest is not None else None
    the_store: Store | None = None
    if store is not None:
        from evalframe.store import as_store

        the_store = as_store(store)
    result = evaluate(
        dataset,
        outputs=outputs,
        system=system,
        metrics=list(metrics) if metrics else list(DEFAULT_METRICS),
        providers=providers,
        concurrency=concurrency,
        labels=labels,
    )
    report = result.report(samples=samples)
    entry = entry_from_report(report)
    gate: GateResult | None = None
    if regression_gate:
        gate = evaluate_gate(
            entry,
            _history(the_store, history_manifest, name),
            max_drop=regression_max_drop / 100.0,
            targets=regression_metrics,
        )
    recorded = is_recordable(entry, gate, regression_metrics) and (
        the_store is not None or history_manifest is not None
    )
    if gate is not None:
        gate = GateResult(
            gate.status, gate.current_run_id, gate.baseline_run_id, gate.checks, recorded
        )
    promotion = (
        promote_failures(
            result,
            promote_failures_to,
            name=promoted_dataset,
            force=force_promotion,
            protected=own_files,
        )
        if promote_failures_to is not None
        else None
    )
    if the_store is not None and save_run:
        the_store.save(result)
    if recorded:
        if the_store is not None:
            from evalframe.store import _adversarial as store_history

            store_history.record(the_store, entry)
        if manifest is not None:
            record_in_manifest(manifest, entry, name=name, retain=manifest_retain)
    return AdversarialRun(result, report, entry, gate, recorded, promotion)


def _history(store: Store | None, manifest: Manifest | None, name: str) -> list[dict[str, Any]]:
    """The entries of the store's history and the manifest's, each run once."""
    entries: list[dict[str, Any]] = []
    if store is not None:
        from evalframe.store import _adversarial as store_history

        entries.extend(store_history.history(store, name))
    if manifest is not None:
        seen = {e["run_id"] for e in entries}
        entries.extend(e for e in manifest.runs if e["run_id"] not in seen)
    return entries
