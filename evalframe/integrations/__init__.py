"""Integrations with the tools teams already run: pytest, MLflow, OpenTelemetry.

A layer above the views, beside the command line. Each integration's third-party library is
an optional extra, imported on first use with an install hint; importing this package
imports none of them.
"""

from __future__ import annotations

from typing import Any

from evalframe.core import _seam


def _run_mlflow(*args: Any, **kwargs: Any) -> Any:
    from evalframe.integrations._mlflow import to_mlflow

    return to_mlflow(*args, **kwargs)


_seam.run_mlflow.provide(_run_mlflow)
