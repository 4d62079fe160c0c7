"""Engines: ``evaluate`` end to end (read, call the system under test, enrich, score, save)."""

from __future__ import annotations

from evalframe.engine import _adversarial as adversarial
from evalframe.engine._calibrate import calibrate
from evalframe.engine._evaluate import evaluate

__all__ = ["adversarial", "calibrate", "evaluate"]
