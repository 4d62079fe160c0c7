"""Online monitoring's defaults (eval-harness's) and the drift verdict, as plain values."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

__all__ = ["DEFAULTS", "OnlineStatus"]

DEFAULTS: Final = {
    "metric": "llm-as-judge",
    "pass_threshold": 0.7,
    "window": 50,
    "min_samples": 20,
    "alert_threshold": 0.8,
    "limit": 50,
}


@dataclass(frozen=True)
class OnlineStatus:
    """The latest window of a dataset's online scores against the alert threshold."""

    dataset: str
    window: int
    min_samples: int
    threshold: float
    sample_count: int
    pass_rate: float | None

    @property
    def dropped(self) -> bool:
        """eval-harness's alert: enough samples, and a pass rate below the threshold."""
        return (
            self.sample_count >= self.min_samples
            and self.pass_rate is not None
            and self.pass_rate < self.threshold
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "window": self.window,
            "min_samples": self.min_samples,
            "threshold": self.threshold,
            "sample_count": self.sample_count,
            "pass_rate": self.pass_rate,
            "dropped": self.dropped,
        }
