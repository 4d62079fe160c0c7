"""The public surface: a sorted, importable ``__all__`` and no side effects at import."""

from __future__ import annotations

import subprocess
import sys

import evalframe as ef


def test_all_is_sorted_and_every_name_exists() -> None:
    assert ef.__all__ == sorted(ef.__all__)
    for name in ef.__all__:
        assert hasattr(ef, name), name


def test_metrics_namespace_exports_every_builtin_factory() -> None:
    assert ef.metrics.__all__ == sorted(ef.metrics.__all__)
    assert len(ef.metrics.available()) >= 15
    for d in ef.metrics.available():
        if d.build.__module__.startswith("evalframe."):
            factory = getattr(ef.metrics, d.name.replace("-", "_"))
            assert factory.definition is d


def test_import_loads_no_model_runtime_or_http_client() -> None:
    code = (
        "import sys, evalframe; "
        "print(sorted(m for m in ('onnxruntime', 'tokenizers', 'httpx', 'altair', 'tenacity') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_option_groups_are_typed_frozen_values_with_their_shortcuts_documented() -> None:
    """``ef.Concurrency``, ``ef.Checkpoint``, ``ef.Limits`` and ``ef.Endpoint``: each a frozen
    dataclass whose docstring names its shortcut keywords, taken by the functions that share
    it."""
    import dataclasses
    import inspect

    from evalframe.engine._eval_set import run_set

    takes = {
        ef.Concurrency: [("concurrency", ef.evaluate), ("concurrency", run_set)],
        ef.Checkpoint: [("checkpoint", ef.evaluate)],
        ef.Limits: [
            ("limits", ef.evaluate), ("limits", run_set), ("limits", ef.Store.rescore),
            ("limits", ef.Store.score_outputs), ("limits", ef.Providers.from_env),
        ],
        ef.Endpoint: [("embeddings", ef.Providers.from_env), ("judge", ef.Providers.from_env)],
    }  # fmt: skip
    for group, users in takes.items():
        assert dataclasses.is_dataclass(group)
        assert group.__dataclass_params__.frozen  # type: ignore[attr-defined]
        for keyword in group._SHORTCUTS:  # type: ignore[attr-defined]
            assert f"``{keyword}" in (group.__doc__ or ""), (group, keyword)
        for argument, function in users:
            assert argument in inspect.signature(function).parameters, (group, function)
