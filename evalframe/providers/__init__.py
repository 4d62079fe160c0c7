"""Providers: the embedders and judges behind model-backed metrics.

``Providers`` bundles the run's embedding client, judge client, response cache, usage ledger
and budget. Clients:

* ``OnnxEmbedder``: the embedded default (all-MiniLM-L6-v2, int8, on onnxruntime), offline.
* ``HashingEmbedder``: deterministic hashed features; no model, for tests and fallbacks.
* ``OpenAIEmbeddings`` and ``OpenAIJudge``: any OpenAI-compatible HTTP endpoint, batched,
  concurrent, retried, and usable under a running event loop (Jupyter).
* ``Webhook``: a user's own HTTP endpoint that scores rows, for the ``webhook`` metric.

Configuration comes from arguments, CLI options or the environment: ``OPENAI_API_KEY`` and
``OPENAI_BASE_URL`` as the fallback, ``EVALFRAME_EMBEDDINGS_BASE_URL``,
``EVALFRAME_EMBEDDINGS_MODEL``, ``EVALFRAME_EMBEDDINGS_API_KEY``, ``EVALFRAME_JUDGE_BASE_URL``,
``EVALFRAME_JUDGE_MODEL`` and ``EVALFRAME_JUDGE_API_KEY`` per role. See docs/providers.md.

Nothing heavy is imported here: each client module (and NumPy, onnxruntime, tokenizers,
httpx, duckdb) loads when one of its names is first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalframe.core._lazy import load_attribute

if TYPE_CHECKING:  # each client module loads when its name is first used
    from evalframe.providers._base import (
        Embedded,
        EmbeddingClient,
        JudgeClient,
        Reply,
        TokenEmbeddingClient,
    )
    from evalframe.providers._cache import ResponseCache, default_cache_path
    from evalframe.providers._config import ENV, RetryPolicy, Secret
    from evalframe.providers._hashing import HashingEmbedder
    from evalframe.providers._ledger import BudgetExhaustedError, Call, Ledger
    from evalframe.providers._onnx import OnnxEmbedder
    from evalframe.providers._openai import OpenAIEmbeddings, OpenAIJudge
    from evalframe.providers._providers import Providers
    from evalframe.providers._webhook import Webhook

__all__ = [
    "ENV",
    "BudgetExhaustedError",
    "Call",
    "Embedded",
    "EmbeddingClient",
    "HashingEmbedder",
    "JudgeClient",
    "Ledger",
    "OnnxEmbedder",
    "OpenAIEmbeddings",
    "OpenAIJudge",
    "Providers",
    "Reply",
    "ResponseCache",
    "RetryPolicy",
    "Secret",
    "TokenEmbeddingClient",
    "Webhook",
    "default_cache_path",
]

_MODULES: dict[str, str] = {
    "BudgetExhaustedError": "evalframe.providers._ledger",
    "Call": "evalframe.providers._ledger",
    "ENV": "evalframe.providers._config",
    "Embedded": "evalframe.providers._base",
    "EmbeddingClient": "evalframe.providers._base",
    "HashingEmbedder": "evalframe.providers._hashing",
    "JudgeClient": "evalframe.providers._base",
    "Ledger": "evalframe.providers._ledger",
    "OnnxEmbedder": "evalframe.providers._onnx",
    "OpenAIEmbeddings": "evalframe.providers._openai",
    "OpenAIJudge": "evalframe.providers._openai",
    "Providers": "evalframe.providers._providers",
    "Reply": "evalframe.providers._base",
    "ResponseCache": "evalframe.providers._cache",
    "RetryPolicy": "evalframe.providers._config",
    "Secret": "evalframe.providers._config",
    "TokenEmbeddingClient": "evalframe.providers._base",
    "Webhook": "evalframe.providers._webhook",
    "default_cache_path": "evalframe.providers._cache",
}


def __getattr__(name: str) -> Any:
    return load_attribute(globals(), _MODULES, __name__, name)
