"""The client protocols and what their calls return.

Clients do one thing: turn texts into vectors, or prompts into replies, recording each call
in the ledger they are given. Deduplication, caching and the budget's bookkeeping live in
``Providers``; a client only asks the ledger, before each call, whether it may still spend.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from evalframe.providers._ledger import Ledger

__all__ = [
    "Embedded",
    "EmbeddingClient",
    "JudgeClient",
    "Reply",
    "TokenEmbeddingClient",
    "Vector",
]

Vector = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class Embedded:
    """Per input, a float32 array (``(d,)`` for a text, ``(tokens, d)`` for token vectors)
    or, where it failed, ``None`` and the reason in ``errors``."""

    vectors: list[Vector | None]
    errors: list[str | None]

    @staticmethod
    def failed(n: int, message: str) -> Embedded:
        return Embedded([None] * n, [message] * n)


@dataclass(frozen=True, slots=True)
class Reply:
    """A judge's raw reply content, or the reason there is none.

    ``logprobs``, when the judge was asked for them and gave them: per token of the reply,
    ``{"token": ..., "top": [[token, logprob], ...]}`` (the most likely tokens at that
    position); ``None`` otherwise.
    """

    content: str | None
    error: str | None = None
    logprobs: Any = None


@runtime_checkable
class EmbeddingClient(Protocol):
    """Turns texts into vectors (``OpenAIEmbeddings``, ``OnnxEmbedder``, ``HashingEmbedder``).

    Attributes:
        id: names the model and where it runs, never a credential; it keys the cache, so two
            clients with the same id must give the same vectors for the same text.
        model: the model name used for pricing and reports.
        cacheable: whether results are worth caching (a hashing embedder is faster than
            a cache lookup).
    """

    @property
    def id(self) -> str: ...

    @property
    def model(self) -> str: ...

    @property
    def cacheable(self) -> bool: ...

    def embed(self, texts: Sequence[str], ledger: Ledger) -> Embedded:
        """One ``(d,)`` float32 vector per text, in order."""
        ...


@runtime_checkable
class TokenEmbeddingClient(EmbeddingClient, Protocol):
    """An embedder that also gives contextual vectors of given tokens of a text."""

    def embed_tokens(
        self, texts: Sequence[str], tokens: Sequence[Sequence[str]], ledger: Ledger
    ) -> Embedded:
        """Per text, a ``(len(tokens[i]), d)`` array: the vector of each token in context.

        ``tokens[i]`` are substrings of ``texts[i]``, in order of appearance.
        """
        ...


@runtime_checkable
class JudgeClient(Protocol):
    """Sends chat prompts to a judge model and returns the raw reply text.

    A client whose ``structured`` attribute is true also takes ``schema=`` (the reply's
    JSON schema) in ``request`` and ``complete``, and a client that gives token
    log-probabilities takes ``top_logprobs=``; ``Providers.complete`` passes either only when
    it is asked for, so a minimal client implements just the two methods below.
    """

    @property
    def id(self) -> str: ...

    @property
    def model(self) -> str: ...

    def request(self, prompt: str) -> dict[str, object]:
        """The request body for ``prompt``: it keys the cache, so it must hold every
        parameter that changes the reply (model, temperature, seed, format)."""
        ...

    def complete(self, prompts: Sequence[str], ledger: Ledger) -> list[Reply]:
        """One reply per prompt, in order."""
        ...
