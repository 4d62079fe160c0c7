"""What an evalframe run becomes in MLflow: keys, params, metrics, tags, the per-row table.

Pure functions of the run; nothing here imports MLflow. ``_mlflow`` writes what this builds.

MLflow accepts metric, param and tag keys made of letters, digits, ``_ - . /``, spaces (and
colons outside Windows), that do not resolve to another path (``a//b``, ``./a``, ``..``),
at most 250 characters long. evalframe builds every key from segments joined by ``/`` (or
``label.`` for labels), and maps each segment that comes from user text (a metric id, a tag,
a label name) with ``key_part``:

* a segment made only of ``A-Z a-z 0-9 _ - .`` and spaces, not starting with a dot and at
  most 100 characters long, is kept as it is;
* any other segment has each other character replaced by ``_`` (a leading dot too), is cut
  to 100 characters, and gets ``-`` and the first 8 hex digits of the SHA-256 of its
  original text: ``rouge-l(beta=2.0)`` becomes ``rouge-l_beta_2.0_-<8 hex digits>``.

So the mapping is deterministic, two different texts never share a key (the hash tells apart
texts that replace to the same characters), and the original text of every key is kept in
the ``evalframe_keys.json`` artifact.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

import orjson

from evalframe.core import schema as C
from evalframe.core._errors import ExportError

if TYPE_CHECKING:
    import polars as pl

    from evalframe.core._run import Run

__all__ = [
    "KEYS_FILE",
    "RUN_ID_TAG",
    "TABLE_FILE",
    "Layout",
    "key_part",
    "layout",
    "results_table",
]

RUN_ID_TAG: Final = "evalframe.run_id"
TABLE_FILE: Final = "eval_results_table.json"
KEYS_FILE: Final = "evalframe_keys.json"
STATS: Final = (("mean", "mean"), ("median", "p50"), ("p95", "p95"), ("pass_rate", "pass_rate"))

_UNSAFE: Final = re.compile(r"[^A-Za-z0-9_\-. ]")
_PART_LIMIT: Final = 100
_PARAM_LIMIT: Final = 6000  # MLflow's limit on a param value
_TAG_LIMIT: Final = 8000  # and on a tag value
_DATASET_NAME_LIMIT: Final = 500


def key_part(text: str) -> str:
    """``text`` as one segment of an MLflow key: kept when MLflow takes it as it is, else
    mapped and suffixed with a hash of the original (see the module docstring).

    Examples:
        >>> key_part("exact-match")
        'exact-match'
        >>> key_part("rouge-l(beta=2.0)")
        'rouge-l_beta_2.0_-bdd50bd8'
    """
    clean = _UNSAFE.sub("_", text)
    if clean.startswith("."):
        clean = "_" + clean[1:]
    if clean == text and 0 < len(text) <= _PART_LIMIT:
        return text
    return f"{clean[:_PART_LIMIT]}-{hashlib.sha256(text.encode()).hexdigest()[:8]}"


def cut(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters, marked where it was cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class Layout:
    """Everything one export logs, computed before MLflow is touched."""

    params: dict[str, str]
    metrics: dict[str, float]
    tags: dict[str, str]
    keys: dict[str, dict[str, str]] = field(default_factory=dict)
    """Each logged key built from user text -> the original text of its parts."""
    dataset_name: str = ""
    dataset_digest: str = ""
    dataset_source_type: str = "code"
    dataset_source: str = "{}"
    dataset_profile: str = "{}"


def dataset_digest(run: Run) -> str:
    """A digest of the dataset's rows (their content hashes, in any order): 16 hex digits."""
    hashes = sorted(run.dataset.get_column(C.ROW_HASH).cast(str).to_list())
    return hashlib.sha256("\n".join(hashes).encode()).hexdigest()[:16]


def _params(run: Run, digest: str) -> dict[str, str]:
    providers: list[str] = []
    if run.usage.height and {"provider", "model"} <= set(run.usage.columns):
        pairs = run.usage.select("provider", "model").unique().sort("provider", "model")
        providers = [f"{p}/{m}" for p, m in pairs.iter_rows()]
    prompts = []
    for metric in run.metrics:
        template = dict(getattr(metric, "params", ())).get("template")
        if isinstance(template, str):
            prompts.append(f"{metric.id}={hashlib.sha256(template.encode()).hexdigest()[:12]}")
    params = {
        "dataset": run.dataset.name,
        "dataset_hash": digest,
        "samples": str(run.dataset.height),
        "repetitions": str(run.repetitions),
        "metrics": ", ".join(run.metric_ids),
        "providers": ", ".join(providers) or "none",
        "prompt_versions": ", ".join(prompts) or "none",
    }
    return {k: cut(v, _PARAM_LIMIT) for k, v in params.items()}


def layout(run: Run, *, tags: dict[str, str]) -> Layout:
    """The params, metrics, tags and dataset input of ``run``; ``tags`` are added as given.

    Raises:
        ExportError: two keys collide (only a text built to equal another's mapped form can).
    """
    _check_unique(run)
    digest = dataset_digest(run)
    out = Layout(params=_params(run, digest), metrics={}, tags=dict(tags))
    if run.macro_f1 is not None:  # null without a quality metric
        out.metrics["macro_f1"] = float(run.macro_f1)
    for row in run.summary.iter_rows(named=True):
        for stat, column in STATS:
            if row[column] is not None:
                key = f"{key_part(row['metric'])}/{stat}"
                out.metrics[key] = float(row[column])
                out.keys[key] = {"metric": row["metric"], "statistic": stat}
    cohorts = run.cohorts
    if cohorts.height:
        named = cohorts.filter(~cohorts.get_column("is_untagged"))
        for tag, metric, rate in named.select("cohort", C.METRIC, "pass_rate").iter_rows():
            if rate is not None:
                key = f"cohort/{key_part(tag)}/{key_part(metric)}/pass_rate"
                out.metrics[key] = float(rate)
                out.keys[key] = {"cohort": tag, "metric": metric, "statistic": "pass_rate"}
    for name, value in run.labels.items():
        key = f"label.{key_part(name)}"
        out.tags[key] = cut(str(value), _TAG_LIMIT)
        out.keys[key] = {"label": name, "value": str(value)}
    out.dataset_name = cut(run.dataset.name, _DATASET_NAME_LIMIT)
    out.dataset_digest = digest
    path = run.dataset.path
    if path is not None:
        out.dataset_source_type = "local"
        out.dataset_source = orjson.dumps({"uri": path.resolve().as_uri()}).decode()
    else:
        out.dataset_source = orjson.dumps(
            {"tags": {"evalframe.dataset": run.dataset.name}}
        ).decode()
    out.dataset_profile = orjson.dumps({"num_rows": run.dataset.height}).decode()
    return out


def _check_unique(run: Run) -> None:
    """Refuse a run whose user texts map to one key (no two texts share a key otherwise)."""
    texts = {*run.metric_ids, *run.labels}
    cohorts = run.cohorts
    if cohorts.height:
        texts |= set(cohorts.filter(~cohorts.get_column("is_untagged")).get_column("cohort"))
    seen: dict[str, str] = {}
    for text in sorted(texts):
        part = key_part(text)
        other = seen.setdefault(part, text)
        if other != text:
            raise ExportError(
                f"MLflow export: {other!r} and {text!r} map to the same MLflow key segment "
                f"{part!r}; rename one of them."
            )


def results_table(run: Run) -> bytes:
    """The per-row table as MLflow's table artifacts hold it: ``{"columns": [...], "data":
    [[...], ...]}``, one row per (sample, repetition), with ``<metric>/score``,
    ``<metric>/passed``, ``<metric>/error`` and ``<metric>/details`` per metric. The input,
    and an expected output that is not a string, go in as the JSON they are."""
    import polars as pl

    frame = run.frame.select(
        C.SAMPLE_ID, C.REPETITION, C.INPUT, C.EXPECTED_OUTPUT, C.EXPECTED_TYPE, C.ACTUAL_OUTPUT,
        C.TAGS,
    )  # fmt: skip
    columns = [C.SAMPLE_ID, C.REPETITION, "inputs", "ground_truth", "outputs", "tags"]
    cells = [
        _json(C.SAMPLE_ID),
        _json(C.REPETITION),
        pl.col(C.INPUT).fill_null("null"),
        pl.when(pl.col(C.EXPECTED_TYPE).fill_null("string") == "string")
        .then(_json(C.EXPECTED_OUTPUT))
        .otherwise(pl.col(C.EXPECTED_OUTPUT).fill_null("null")),
        _json(C.ACTUAL_OUTPUT),
        _json(C.TAGS),
    ]
    scores = run.scores
    for i, metric in enumerate(run.metric_ids):
        parts = {"score": C.SCORE, "passed": "passed", "error": C.ERROR, "details": "details"}
        one = scores.filter(pl.col(C.METRIC) == metric).select(
            C.SAMPLE_ID,
            C.REPETITION,
            *(pl.col(column).alias(f"{i}/{part}") for part, column in parts.items()),
        )
        frame = frame.join(one, on=[C.SAMPLE_ID, C.REPETITION], how="left", maintain_order="left")
        columns += [f"{metric}/{part}" for part in parts]
        cells += [_json(f"{i}/{part}") for part in parts]
    rows = frame.select(pl.concat_str(cells, separator=",").str.join("],[")).item()
    head = orjson.dumps({"columns": columns})[:-1]
    return head + b',"data":[' + (b"[" + rows.encode() + b"]" if frame.height else b"") + b"]}"


def _json(column: str) -> pl.Expr:
    """Each value of ``column`` as JSON text (Polars encodes it: no loop over rows)."""
    import polars as pl

    encoded = pl.struct(pl.col(column).alias("v")).struct.json_encode()
    return encoded.str.slice(5, encoded.str.len_chars() - 6)
