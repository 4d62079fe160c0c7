"""The evalframe error tree.

```
EvalframeError
├── DatasetError        bad dataset or outputs file: names file, sample index and id, field
├── MetricError         unknown metric (suggests close names), bad parameters, bad spec
├── ProviderError       a provider call failed: provider, model, status; never the API key
└── StoreError          a run store operation failed: the statement and the cause
```

Per-sample scoring problems are not exceptions: they are data, an ``error`` value on that
sample's row of the scores frame.
"""

from __future__ import annotations

__all__ = ["DatasetError", "EvalframeError", "MetricError", "ProviderError", "StoreError"]


class EvalframeError(Exception):
    """Base class of every error evalframe raises on purpose."""


class DatasetError(EvalframeError, ValueError):
    """A dataset or saved-outputs file is missing, unreadable or invalid."""


class MetricError(EvalframeError, ValueError):
    """An unknown metric, a bad metric parameter or an unparsable metric spec."""


class ProviderError(EvalframeError):
    """An embeddings or judge provider call failed after its retries."""


class StoreError(EvalframeError):
    """A run store could not be opened, read or written."""
