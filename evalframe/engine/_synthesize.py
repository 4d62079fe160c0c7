"""Golden sets from documents: ``ef.synthesize`` and ``evalframe synthesize``.

The documents are cut into chunks (``core/_chunking``). Each candidate question is a *slot*:
an evolution and its contexts, one chunk (``simple``, ``reasoning``, ``conditional``) or a
chunk and the most similar other chunk by the embedder (``multi-context``). Slots are dealt
in a fixed order for a seed: each evolution walks the chunks sorted by a hash of the seed,
the evolution and the chunk's text, so the same seed and documents ask the same prompts (and
adding a document does not reorder the others' chunks).

The requested questions are shared among the evolutions (``n // m`` each, the first ``n % m``
one more). Rounds then go until every share is filled: each asks, per evolution, for as many
candidates as its share still lacks (divided by the share of candidates it has kept so
far), in batches through the judge engine (``fill_judge_need``: fenced prompts, one call per
distinct prompt, the cache, the ledger, the budget, retries). A candidate is dropped when its
call failed, its reply does not fit the schema, it has nothing to ask, it repeats a question
already held (same words, or an embedding cosine of at least ``dedup_threshold``), or the
critique call finds it unanswerable from its contexts, not grounded, not standalone or
trivial. At most ``ATTEMPTS_PER_QUESTION`` candidates are asked per requested question.

Every reply is also appended to a journal beside the output (``.<name>.synthesize.journal``,
one JSON line each, flushed), read first on the next run: a synthesize that was killed
continues where it stopped without asking an answered prompt again, even with ``--no-cache``;
the journal is removed once the whole set is written. A budget or deadline that runs out
stops the rounds; the questions kept so far are written.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, cast

import numpy as np
import polars as pl

from evalframe.core._chunking import DEFAULT_CHUNK_CHARS, Chunk, chunk_documents
from evalframe.core._dataset import Dataset
from evalframe.core._dataset_file import check_dataset_target, write_dataset
from evalframe.core._documents import find_documents, read_documents
from evalframe.core._errors import DocumentError, EvalframeError
from evalframe.core._progress import Advance, track
from evalframe.core._safe_write import locked, same_file
from evalframe.core.schema import DATASET_SCHEMA
from evalframe.enrich._judge_engine import fill_judge_need
from evalframe.metrics._fence import numbered, verbatim
from evalframe.metrics._judge_engine import JudgeNeed, reply
from evalframe.metrics._synthesis_prompts import CRITIQUE, EVOLUTIONS, GENERATE
from evalframe.providers import Providers, ResponseCache
from evalframe.providers._cache import request_key

__all__ = [
    "ATTEMPTS_PER_QUESTION",
    "DEFAULT_METRICS",
    "EVOLUTIONS",
    "MAX_QUESTIONS",
    "SynthesisStats",
    "Synthesized",
    "synthesis_needs",
    "synthesize",
]

MAX_QUESTIONS: Final = 10_000
"""The most questions one synthesize may ask for."""
ATTEMPTS_PER_QUESTION: Final = 3
"""At most this many candidates are generated per question asked for."""
DEFAULT_METRICS: Final = ("rouge-l", "cosine-embedding")
"""The ``metrics:`` a golden set is written with by default: no judge needed to run it."""
DEFAULT_DEDUP: Final = 0.9
NEAR_DUPLICATE_CHUNK: Final = 0.95
"""A chunk at least this similar to a seed is a copy of it, never its related chunk."""
RELATED_POOL: Final = 512
"""A multi-context question's related chunk is searched among at least this many chunks (all
of a document set this size or smaller), embedded a block of this many at a time."""
_MIN_ACCEPTANCE: Final = 0.25
_JOURNAL_HEADER: Final = {"evalframe": "synthesize journal", "version": 1}


@dataclass(frozen=True, slots=True)
class SynthesisStats:
    """What a synthesize did.

    Attributes:
        requested: the questions asked for.
        kept: the questions written.
        candidates: the candidates generated (every slot asked).
        calls: judge calls made (replies from the cache or the journal not counted).
        reused: judge replies taken from the cache or the journal instead of a call.
        dropped: per reason, the candidates left out.
        stopped: why fewer than ``requested`` were kept (the budget, the deadline, the
            judge failing, or the documents and attempts running out); ``None`` otherwise.
        documents, chunks: what the documents gave.
        path: the file written, if any.
        journal: the journal kept for a rerun to continue from, if the set is incomplete.
        notes: files left out, evolutions that could not be asked.
    """

    requested: int
    kept: int
    candidates: int
    calls: int
    reused: int
    dropped: dict[str, int]
    stopped: str | None
    documents: int
    chunks: int
    path: Path | None = None
    journal: Path | None = None
    notes: list[str] = field(default_factory=list)


class Synthesized(Dataset):
    """The golden set ``synthesize`` returns: a ``Dataset`` with ``synthesis``, its
    ``SynthesisStats``."""

    synthesis: SynthesisStats


# --- the journal: every reply of this synthesize, kept until the set is written -------------


def journal_path(out: Path) -> Path:
    """Where the journal of a synthesize writing ``out`` lives: beside it, hidden."""
    return out.with_name(f".{out.name}.synthesize.journal")


class _Journal(ResponseCache):
    """A response cache that answers first from the journal file, then from ``inner`` (the
    user's cache, if any), and writes every reply to both: the journal a line at a time,
    flushed, so a killed process keeps every reply it had written down."""

    def __init__(self, path: Path, inner: ResponseCache | None) -> None:
        self.path = path
        self.inner = inner
        self.hits = 0
        self.misses = 0
        self.replies: dict[str, str] = {}
        self._ready = False
        self._broken = False
        if path.exists():
            self._load()

    def __repr__(self) -> str:
        return f"_Journal({str(self.path)!r}, inner={self.inner!r})"

    def _load(self) -> None:
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise EvalframeError(
                f"{self.path}: the journal of an interrupted synthesize cannot be read ({exc}); "
                "remove it to start afresh."
            ) from None
        if not lines or _line(lines[0]) != _JOURNAL_HEADER:
            raise EvalframeError(
                f"{self.path}: is not a synthesize journal (its first line is not "
                f"{json.dumps(_JOURNAL_HEADER)}); remove it or name another --out."
            )
        for line in lines[1:]:  # one per reply; a line cut short by a kill is skipped
            entry = _line(line)
            if isinstance(entry, dict) and isinstance(entry.get("key"), str):
                content = entry.get("content")
                if isinstance(content, str):
                    self.replies[entry["key"]] = content

    def _append(self, entries: list[dict[str, str]]) -> None:
        new = not self.path.exists()
        with open(self.path, "a", encoding="utf-8") as f:
            if new:
                f.write(json.dumps(_JOURNAL_HEADER) + "\n")
            for entry in entries:  # one line each, so a kill cuts at most the last
                f.write(json.dumps(entry, ensure_ascii=False) + "\n")
                f.flush()

    def get_replies(self, namespace: str, requests: Sequence[Any]) -> list[str | None]:
        keys = [request_key(namespace, r) for r in requests]
        out: list[str | None] = [self.replies.get(k) for k in keys]
        missing = [i for i, v in enumerate(out) if v is None]
        if missing and self.inner is not None:
            found = self.inner.get_replies(namespace, [requests[i] for i in missing])
            for i, content in zip(missing, found, strict=True):
                out[i] = content
        answered = sum(v is not None for v in out)
        self.hits += answered
        self.misses += len(out) - answered
        return out

    def put_replies(self, namespace: str, requests: Sequence[Any], contents: Sequence[str]) -> None:
        entries = [
            {"key": request_key(namespace, r), "content": c}
            for r, c in zip(requests, contents, strict=True)
        ]
        self._append(entries)
        self.replies.update((e["key"], e["content"]) for e in entries)
        if self.inner is not None:
            self.inner.put_replies(namespace, requests, contents)

    def get_vectors(self, namespace: str, payloads: Sequence[Any]) -> list[Any]:
        if self.inner is None:
            return [None] * len(payloads)
        return self.inner.get_vectors(namespace, payloads)

    def put_vectors(self, namespace: str, payloads: Sequence[Any], arrays: Sequence[Any]) -> None:
        if self.inner is not None:
            self.inner.put_vectors(namespace, payloads, arrays)


def _line(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


@contextmanager
def _journal(providers: Providers, path: Path) -> Iterator[_Journal]:
    """The providers answering through the journal at ``path`` while the block runs."""
    inner = providers.cache
    journal = _Journal(path, inner)
    providers.cache = journal
    try:
        yield journal
    finally:
        providers.cache = inner


# --- slots -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Slot:
    evolution: str
    chunks: tuple[int, ...]  # the seed chunk first


def _order(chunks: Sequence[Chunk], seed: int, evolution: str) -> list[int]:
    """The chunks in the order ``evolution`` walks them for ``seed``: by a hash of the seed,
    the evolution and each chunk's text (the same on every machine and Python version)."""
    prefix = f"{seed}\0{evolution}\0".encode()
    keys = [hashlib.sha256(prefix + c.text.encode("utf-8")).digest() for c in chunks]
    return sorted(range(len(chunks)), key=keys.__getitem__)


class _Related:
    """The most similar other chunk of a chunk, by the embedder (cosine of the chunk vectors;
    near-copies and chunks without a vector left out).

    It is searched among the chunks the ``multi-context`` walk has reached: the first
    ``RELATED_POOL`` of its order, and as many more as the walk goes past them. Chunks are
    embedded as the walk reaches them, a block at a time, so a long document costs the
    embedding of what the questions need rather than of every chunk; documents of at most
    ``RELATED_POOL`` chunks are searched whole.
    """

    def __init__(self, providers: Providers, chunks: Sequence[Chunk], order: list[int]) -> None:
        self.providers = providers
        self.chunks = chunks
        self.order = order  # the multi-context walk; rows below follow it
        self.position = {chunk: p for p, chunk in enumerate(order)}
        self.vectors: list[np.ndarray | None] = []
        self.matrix = np.zeros((0, 0), dtype=np.float32)
        self.valid = np.zeros(0, dtype=bool)
        self.failed: str | None = None
        self._reach(min(RELATED_POOL, len(order)))

    def _reach(self, upto: int) -> None:
        """Embed the walk's chunks up to position ``upto`` (exclusive), whole blocks."""
        start = len(self.vectors)
        if upto <= start:
            return
        upto = min(max(upto, start + RELATED_POOL), len(self.order))
        got = self.providers.embed_texts([self.chunks[i].text for i in self.order[start:upto]])
        self.vectors.extend(got.vectors)
        self.failed = self.failed or next((e for e in got.errors if e is not None), None)
        dim = next((v.shape[0] for v in self.vectors if v is not None), 0)
        matrix = np.zeros((len(self.vectors), dim), dtype=np.float32)
        valid = np.zeros(len(self.vectors), dtype=bool)
        for row, v in enumerate(self.vectors):  # one vector per chunk reached
            if v is not None and v.shape == (dim,):
                norm = float(np.linalg.norm(v))
                if norm > 0:
                    matrix[row] = v / norm
                    valid[row] = True
        self.matrix, self.valid = matrix, valid

    def __call__(self, i: int) -> int | None:
        at = self.position[i]
        self._reach(at + 1)
        if not self.valid[at]:
            return None
        sims = self.matrix @ self.matrix[at]
        sims[~self.valid] = -np.inf
        sims[at] = -np.inf
        sims[sims >= NEAR_DUPLICATE_CHUNK] = -np.inf
        best = int(np.argmax(sims))
        return self.order[best] if np.isfinite(sims[best]) else None


def _slots(
    chunks: Sequence[Chunk], seed: int, evolution: str, related: Callable[[int], int | None] | None
) -> Iterator[_Slot]:
    for i in _order(chunks, seed, evolution):  # each chunk once per evolution
        if evolution != "multi-context":
            yield _Slot(evolution, (i,))
            continue
        other = related(i) if related is not None else None
        if other is not None:
            yield _Slot(evolution, (i, other))


# --- one round's candidates ----------------------------------------------------------------------


@dataclass(slots=True)
class _Candidate:
    slot: _Slot
    question: str = ""
    answer: str = ""
    draft: str | None = None
    reason: str | None = None  # why it was dropped, else None
    critique: dict[str, Any] | None = None
    stopped: bool = False  # dropped because the budget or deadline ran out


_STOPPERS: Final = ("Budget exhausted:", "Deadline exceeded:")
_FAILED: Final = "judge call failed"
_VERDICTS: Final = ("answerable", "grounded", "standalone", "non_trivial")


def _reason_key(reason: str) -> str:
    """The reason a candidate was dropped, without its details: ``critique: not grounded``,
    ``duplicate``, ``judge call failed``."""
    head = reason.split(" (", 1)[0]
    return head if head.startswith("critique:") else head.split(":", 1)[0]


def synthesis_needs() -> tuple[dict[str, JudgeNeed], JudgeNeed]:
    """The judge needs a synthesize fills: per evolution, its generation prompt over the
    ``contexts`` column (numbered, each passage fenced); and the critique over ``question``,
    ``answer`` and ``contexts``."""
    passages = verbatim(numbered(pl.col("contexts")))
    generate = {
        e: JudgeNeed(name=f"synthesize({e})", prompt=p, inputs={"passages": passages})
        for e, p in GENERATE.items()
    }
    critique = JudgeNeed(
        name="synthesize-critique",
        prompt=CRITIQUE,
        inputs={"question": pl.col("question"), "answer": pl.col("answer"), "passages": passages},
    )
    return generate, critique


def _ask(providers: Providers, need: JudgeNeed, frame: pl.DataFrame) -> list[dict[str, Any]]:
    """The need's decoded replies for the frame's rows: ``{"value": ..., "error": ...}``."""
    filled = frame.hstack(fill_judge_need(frame, need, providers))
    return filled.select(reply(need).alias("r")).get_column("r").to_list()


def _normal(question: str) -> str:
    return " ".join(re.findall(r"\w+", question.lower()))


# --- the run -------------------------------------------------------------------------------------


class _Synthesis:
    def __init__(
        self,
        providers: Providers,
        chunks: list[Chunk],
        evolutions: tuple[str, ...],
        n: int,
        seed: int,
        dedup_threshold: float,
        batch: int,
        advance: Advance,
    ) -> None:
        self.providers = providers
        self.chunks = chunks
        self.evolutions = evolutions
        self.n = n
        self.seed = seed
        self.threshold = dedup_threshold
        self.batch = batch
        self.advance = advance
        self.generate, self.critique = synthesis_needs()
        self.kept: list[_Candidate] = []
        self.kept_by: dict[str, int] = dict.fromkeys(evolutions, 0)
        self.tried_by: dict[str, int] = dict.fromkeys(evolutions, 0)
        self.candidates = 0
        self.asked = 0
        self.dropped: dict[str, int] = {}
        self.stopped: str | None = None
        self.notes: list[str] = []
        self.vectors: list[np.ndarray] = []
        self.seen: set[str] = set()
        self.related = (
            _Related(providers, chunks, _order(chunks, seed, "multi-context"))
            if "multi-context" in evolutions
            else None
        )
        self.slots = {e: _slots(chunks, seed, e, self.related) for e in evolutions}
        self.exhausted: set[str] = set()
        self.target: dict[str, int] = {}

    # -- shares ---------------------------------------------------------------------------------

    def _targets(self) -> dict[str, int]:
        """How many questions each evolution is to give in all: ``n`` shared evenly, and
        what an evolution that ran out of slots in an earlier round could not give moved to
        those that still have some, one at a time in the evolutions' order."""
        m = len(self.evolutions)
        share = {
            e: self.n // m + (1 if i < self.n % m else 0) for i, e in enumerate(self.evolutions)
        }
        target = {e: self.kept_by[e] if e in self.exhausted else share[e] for e in share}
        open_ = [e for e in self.evolutions if e not in self.exhausted]
        spare = self.n - sum(target.values())
        for k in range(max(spare, 0) if open_ else 0):  # one question at a time
            target[open_[k % len(open_)]] += 1
        return target

    def _take(self, evolution: str, count: int) -> list[_Slot]:
        out: list[_Slot] = []
        for _ in range(count):  # the next slots of one evolution
            found = next(self.slots[evolution], None)
            if found is None:
                self.exhausted.add(evolution)
                break
            out.append(found)
        return out

    # -- rounds ---------------------------------------------------------------------------------

    def run(self) -> None:
        cap = ATTEMPTS_PER_QUESTION * self.n
        while self.stopped is None and len(self.kept) < self.n:
            self.target = self._targets()
            lacking = {e: max(self.target[e] - self.kept_by[e], 0) for e in self.evolutions}
            before = len(self.exhausted)
            wave: list[_Slot] = []
            for e in self.evolutions:  # a handful of evolutions
                if lacking[e] == 0 or e in self.exhausted:
                    continue
                rate = self.kept_by[e] / self.tried_by[e] if self.tried_by[e] else 1.0
                want = math.ceil(lacking[e] / max(rate, _MIN_ACCEPTANCE))
                want = min(want, cap - self.candidates - len(wave))
                wave.extend(self._take(e, want))
            if wave:
                self._round(wave)
            elif len(self.exhausted) == before:  # no share moved: nothing left to ask
                break
        if self.related is not None and self.related.failed is not None:
            failed = self.related.failed
            self.notes.append(f"multi-context: some chunks could not be embedded ({failed})")

    def _round(self, wave: list[_Slot]) -> None:
        """Ask the wave's candidates a batch at a time (generate, drop duplicates, critique,
        keep), so an interruption, the budget or the deadline loses at most one batch."""
        self.candidates += len(wave)
        found: list[_Candidate] = []
        for e in self.evolutions:  # one need per evolution
            mine = [_Candidate(s) for s in wave if s.evolution == e]
            self.tried_by[e] += len(mine)
            for start in range(0, len(mine), self.batch):  # so a kill loses one batch
                part = mine[start : start + self.batch]
                found.extend(part)
                if self.stopped is not None:
                    for c in part:
                        c.reason, c.stopped = "stopped", True
                else:
                    self._generate(e, part)
                    live = [c for c in part if c.reason is None]
                    self._deduplicate(live)
                    self._criticise([c for c in live if c.reason is None])
                self._keep(part)
        failed = [c.reason for c in found if c.reason and c.reason.startswith(_FAILED)]
        if self.stopped is None and found and len(failed) == len(found):
            self.stopped = f"the judge failed every call of a round ({failed[0]})"

    def _keep(self, part: list[_Candidate]) -> None:
        for c in part:  # in the wave's order: the first good ones fill each share
            if c.reason is None:
                if self.kept_by[c.slot.evolution] < self.target[c.slot.evolution]:
                    self.kept.append(c)
                    self.kept_by[c.slot.evolution] += 1
                    self.advance(1)
                    continue
                c.reason = "not needed (its evolution's share was full)"
            key = "stopped" if c.stopped else _reason_key(c.reason)
            self.dropped[key] = self.dropped.get(key, 0) + 1

    def _frame(self, items: list[_Candidate], **extra: list[str]) -> pl.DataFrame:
        contexts = [[self.chunks[i].text for i in c.slot.chunks] for c in items]
        schema: dict[str, pl.DataType] = {"contexts": pl.List(pl.String)}
        schema.update((name, pl.String()) for name in extra)
        return pl.DataFrame({"contexts": contexts, **extra}, schema=schema)

    def _failure(self, c: _Candidate, error: str | None, what: str) -> None:
        """Why ``c`` got no usable reply: the budget or deadline (which stops the rounds),
        a reply that does not fit its schema, or a failed call."""
        if error is not None and error.startswith(_STOPPERS):
            self.stopped = self.stopped or error
            c.reason, c.stopped = "stopped", True
        elif error is not None and error.startswith("judge reply"):
            c.reason = f"unreadable {what}: {error}"
        else:
            c.reason = f"{_FAILED}: {error}"

    def _generate(self, evolution: str, part: list[_Candidate]) -> None:
        self.asked += len(part)
        replies = _ask(self.providers, self.generate[evolution], self._frame(part))
        for c, r in zip(part, replies, strict=True):
            value = r["value"]
            if value is None:
                self._failure(c, r["error"], "reply")
                continue
            c.question = value["question"].strip()
            c.answer = value["answer"].strip()
            c.draft = value.get("draft", "").strip() or None
            if not c.question or not c.answer:
                c.reason = "nothing to ask: the judge found nothing to ask in the contexts"

    def _deduplicate(self, live: list[_Candidate]) -> None:
        texts = list(dict.fromkeys(c.question for c in live))
        got = self.providers.embed_texts(texts) if texts else None
        vectors = dict(zip(texts, got.vectors if got else [], strict=True))
        for c in live:  # in the wave's order: the first of two duplicates stays
            norm = _normal(c.question)
            if norm in self.seen:
                c.reason = "duplicate: the same question is already held"
                continue
            v = vectors.get(c.question)
            if v is not None and float(np.linalg.norm(v)) > 0:
                v = v / np.linalg.norm(v)
                if self.vectors and float(np.max(np.stack(self.vectors) @ v)) >= self.threshold:
                    c.reason = f"duplicate: a question held is at least {self.threshold:g} similar"
                    continue
                self.vectors.append(v)
            self.seen.add(norm)

    def _criticise(self, live: list[_Candidate]) -> None:
        if not live:
            return
        questions = [c.question for c in live]
        frame = self._frame(live, question=questions, answer=[c.answer for c in live])
        self.asked += len(live)
        for c, r in zip(live, _ask(self.providers, self.critique, frame), strict=True):
            value = r["value"]
            if value is None:
                self._failure(c, r["error"], "critique")
                continue
            c.critique = value
            failed = [k for k in _VERDICTS if not value[k]]
            if failed:
                label = "trivial" if failed[0] == "non_trivial" else f"not {failed[0]}"
                detail = f" ({value['reason']})" if value["reason"] else ""
                c.reason = f"critique: {label}{detail}"


# --- records -------------------------------------------------------------------------------------


def _slug(text: str) -> str:
    found = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return found[:40].strip("-") or "doc"


def _records(
    kept: list[_Candidate], chunks: list[Chunk], *, model: str, seed: int
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    ids: set[str] = set()
    for c in kept:  # one sample per kept question
        used = [chunks[i] for i in c.slot.chunks]
        sources = list(dict.fromkeys(ch.source for ch in used))
        digest = hashlib.sha256(c.question.encode("utf-8")).hexdigest()[:8]
        sid = f"{_slug(Path(sources[0]).stem)}-{c.slot.evolution}-{digest}"
        k = 2
        base = sid
        while sid in ids:
            sid, k = f"{base}-{k}", k + 1
        ids.add(sid)
        metadata: dict[str, Any] = {
            "tags": ["synthesized", c.slot.evolution, *sources],
            "evolution": c.slot.evolution,
            "sources": sources,
        }
        if c.draft:
            metadata["draft_question"] = c.draft
        metadata["generation_model"] = model
        metadata["prompt_versions"] = {
            "generate": GENERATE[c.slot.evolution].key,
            "critique": CRITIQUE.key,
        }
        metadata["seed"] = seed
        if c.critique and c.critique.get("reason"):
            metadata["critique"] = c.critique["reason"]
        out.append(
            {
                "id": sid,
                "input": {"question": c.question},
                "expected_output": c.answer,
                "reference_contexts": [{"id": ch.id, "text": ch.text} for ch in used],
                "metadata": metadata,
            }
        )
    return out


# --- the entry point -----------------------------------------------------------------------------


def _evolutions(value: str | Sequence[str]) -> tuple[str, ...]:
    items = (
        [v.strip() for v in value.split(",")]
        if isinstance(value, str)
        else [str(v).strip() for v in value]
    )
    items = [v for v in items if v]
    unknown = [v for v in items if v not in EVOLUTIONS]
    if unknown or not items:
        raise ValueError(
            f"evolutions must be a comma-separated list of {', '.join(EVOLUTIONS)}; got "
            f"{', '.join(map(repr, unknown)) if unknown else 'none'}."
        )
    return tuple(dict.fromkeys(items))


def synthesize(
    docs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    out: str | os.PathLike[str] | None = None,
    n: int = 10,
    evolutions: str | Sequence[str] = EVOLUTIONS,
    seed: int = 0,
    name: str | None = None,
    metrics: Sequence[str] = DEFAULT_METRICS,
    providers: Providers | None = None,
    budget_usd: float | None = None,
    chunk_size: int = DEFAULT_CHUNK_CHARS,
    dedup_threshold: float = DEFAULT_DEDUP,
    progress: bool | None = None,
) -> Synthesized:
    """A golden set generated from documents by the judge model: questions, their reference
    answers and the contexts they were written from.

    Args:
        docs: Markdown, text, PDF (``pdf`` extra) or passages (``.jsonl``/``.parquet`` with a
            ``text`` field) files, folders of them or glob patterns.
        out: write the set here (``.yaml``, ``.yml``, ``.json`` or ``.jsonl``), all at once;
            never one of the documents. A synthesize killed before it wrote ``out``
            continues where it stopped when run again (its journal is beside ``out``).
        n: the questions to keep (1 to ``MAX_QUESTIONS``).
        evolutions: which kinds of question, shared evenly: ``simple``, ``reasoning``,
            ``multi-context``, ``conditional`` (a list, or a comma-separated string).
        seed: which chunks are asked about, in which order; the same seed, documents and
            judge replies (the cache) give the same set.
        name: the dataset's name (default: ``out``'s stem, else ``synthesized``).
        metrics: the ``metrics:`` list written with the set.
        providers: the judge (required) and embedder; default ``Providers.from_env()``.
        budget_usd: with no ``providers``: stop calling the judge once this is spent.
        chunk_size: a chunk's greatest length in characters (200 to 20,000).
        dedup_threshold: a question whose embedding cosine with one already held is at
            least this is a duplicate (0 to 1).
        progress: show progress on stderr (default: when stderr is a terminal).

    Returns:
        The set as a ``Dataset`` (``Synthesized``), its ``synthesis`` attribute saying what
        was kept, dropped and why, the calls made, and why it stopped short if it did.

    Raises:
        DocumentError: a document that cannot be read, is empty or of another kind, a glob
            matching nothing (the message names the file and what was expected).
        ProviderError: no judge is configured.
        ValueError: an ``n``, evolution, chunk size or threshold out of range.

    Example (a judge configured by ``EVALFRAME_JUDGE_*``)::

        golden = ef.synthesize("docs/", out="golden.yaml", n=20, budget_usd=1.0)
        golden.synthesis.kept, golden.synthesis.calls, golden.synthesis.dropped
    """
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_QUESTIONS:
        raise ValueError(f"n must be a number of questions from 1 to {MAX_QUESTIONS:,}; got {n!r}.")
    chosen = _evolutions(evolutions)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0; got {seed!r}.")
    if (
        isinstance(chunk_size, bool)
        or not isinstance(chunk_size, int)
        or not 200 <= chunk_size <= 20_000
    ):
        raise ValueError(
            f"chunk_size must be a number of characters from 200 to 20,000; got {chunk_size!r}."
        )
    if not (isinstance(dedup_threshold, int | float) and 0.0 < dedup_threshold <= 1.0):
        raise ValueError(
            f"dedup_threshold must be a number above 0 and at most 1; got {dedup_threshold!r}."
        )
    if providers is not None and budget_usd is not None:
        raise ValueError("Pass budget_usd to Providers(...) when you pass providers=.")
    specs = [docs] if isinstance(docs, str | os.PathLike) else list(docs)
    notes: list[str] = []
    found = find_documents(specs, notes)
    if out is not None:
        for f in found:  # never write over a document
            if same_file(out, f.path):
                raise DocumentError(
                    f"{out}: is one of the documents ({f.path}); writing the golden set there "
                    "would destroy it. Name another file."
                )
    target = check_dataset_target(out, "The golden set") if out is not None else None
    documents = read_documents(found, notes)
    chunks = chunk_documents(documents, chunk_size)
    most = len(chunks) * len(chosen)
    if n > most:
        raise DocumentError(
            f"The documents give {len(chunks)} chunk(s): at most {most} distinct questions "
            f"({len(chunks)} x {len(chosen)} evolution(s)) can be asked of them; got -n {n}. "
            "Ask for fewer, or give more documents."
        )
    if providers is None:
        providers = Providers.from_env(budget_usd=budget_usd)
    judge = providers.require_judge("evalframe synthesize")
    providers.begin_run()
    dataset_name = name or (target.stem if target is not None else "synthesized")
    concurrency = getattr(judge, "concurrency", 8)
    batch = max(8, 4 * int(concurrency)) if isinstance(concurrency, int) else 32
    with ExitStack() as stack:
        journal: _Journal | None = None
        if target is not None:
            stack.enter_context(locked(target, "The golden set", timeout=0.0))
            journal = stack.enter_context(_journal(providers, journal_path(target)))
        advance = stack.enter_context(
            track("synthesizing questions", n, unit="questions", show=progress)
        )
        work = _Synthesis(
            providers, chunks, chosen, n, seed, float(dedup_threshold), batch, advance
        )
        work.run()
        usage = providers.ledger.frame()
        calls = usage.filter(pl.col("kind") == "judge").height
        records = _records(work.kept, chunks, model=judge.model, seed=seed)
        stopped = work.stopped
        if stopped is None and len(work.kept) < n:
            stopped = (
                f"the documents and the {ATTEMPTS_PER_QUESTION} attempts per question ran out "
                f"with {len(work.kept)} kept"
            )
        path = None
        if target is not None and records:
            path = write_dataset(
                target,
                records,
                name=dataset_name,
                metrics=metrics,
                extra={
                    "evalframe_synthesis": {
                        "generation_model": judge.model,
                        "seed": seed,
                        "evolutions": list(chosen),
                        "prompt_versions": sorted(
                            {GENERATE[e].key for e in chosen} | {CRITIQUE.key}
                        ),
                        "documents": [d.path for d in documents],
                        "chunk_size": chunk_size,
                        "dedup_threshold": dedup_threshold,
                    }
                },
            )
        kept_journal: Path | None = None
        if journal is not None:
            if work.stopped is None:  # nothing a rerun would ask differently
                journal.path.unlink(missing_ok=True)
            elif journal.path.exists():
                kept_journal = journal.path
    stats = SynthesisStats(
        requested=n,
        kept=len(records),
        candidates=work.candidates,
        calls=calls,
        reused=max(work.asked - calls, 0),
        dropped=dict(sorted(work.dropped.items())),
        stopped=stopped,
        documents=len(documents),
        chunks=len(chunks),
        path=path,
        journal=kept_journal,
        notes=notes + work.notes,
    )
    if records:
        dataset = Dataset.from_records(records, name=dataset_name, metrics=metrics, path=path)
        frame: pl.DataFrame = dataset
        kept_metrics = dataset.metrics
    else:  # nothing kept (the judge failed, say): an empty set, its stats saying why
        frame, kept_metrics = pl.DataFrame(schema=DATASET_SCHEMA), list(metrics)
    result = cast(
        "Synthesized",
        Synthesized._wrap(
            frame, name=dataset_name, metrics=kept_metrics, repetitions=None, path=path
        ),
    )
    result.synthesis = stats
    return result
