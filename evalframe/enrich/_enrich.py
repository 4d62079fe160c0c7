"""Enrichment: filling the provider-backed columns that metrics declare as needs.

Metrics declare what they need as plain frozen values (``TextEmbeddings``,
``TokenEmbeddings``, ``JudgeReplies``); ``fill`` dispatches on each value's type. Each filler
plans what to ask over the whole frame, deduplicates it, and asks the providers (which cache
and account for every call) once:

* text embeddings: one embedding per unique text among the expected and actual outputs;
* token embeddings: token vectors for bertscore-like, contextual (one pass per unique text)
  or static (one embedding per unique token across the batch);
* judge replies: one judge call per unique prompt.

A row the providers could not serve gets its reason in the ``<column>__error`` column, which
the metric reports as that row's error; every other row is kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

from evalframe.core import schema as C
from evalframe.core._errors import MetricError, ProviderError
from evalframe.enrich._judge_engine import fill_judge_need
from evalframe.metrics._judge_engine import JudgeNeed
from evalframe.metrics._spec import Metric, Need
from evalframe.metrics._text import TOKEN_PATTERN
from evalframe.metrics.deterministic import WebhookNeed
from evalframe.metrics.judge import JudgeKind, JudgeReplies, judge_columns, prompts
from evalframe.metrics.semantic import (
    EMBEDDING,
    EMBEDDING_TABLE,
    EmbeddingColumns,
    ListEmbeddings,
    TextEmbeddings,
    TokenEmbeddings,
    TokenMode,
    table_matrix,
    vector_table,
)
from evalframe.providers import (
    EmbeddingClient,
    JudgeClient,
    Providers,
    TokenEmbeddingClient,
)

__all__ = ["check_providers", "fill", "part_of"]


def check_providers(
    metrics: Sequence[Metric],
    context: Providers | EmbeddingClient | JudgeClient | None,
    columns: Sequence[str] = (),
) -> None:
    """Fail before any work when a metric needs a provider the context does not have.

    Embedding metrics always have one (the embedded offline model is the default); judge
    metrics need a judge endpoint, and webhook metrics their named webhook, unless
    ``columns`` already hold their replies.

    Raises:
        ProviderError: one message naming the metrics and the variables to set.
    """
    needs = [
        m.id
        for m in metrics
        if any(
            isinstance(n, JudgeReplies | JudgeNeed) and n.column not in columns
            for n in _with_requirements(m.needs())
        )
    ]
    if needs:
        Providers.coerce(context).require_judge(f"The metric(s) {', '.join(needs)}")
    hooks: dict[str, list[str]] = {}
    for m in metrics:
        for n in m.needs():
            if isinstance(n, WebhookNeed) and n.column not in columns:
                hooks.setdefault(n.endpoint, []).append(m.id)
    for endpoint, ids in hooks.items():
        Providers.coerce(context).require_webhook(endpoint, ", ".join(ids))
    if isinstance(context, Providers) and context.ledger.budget_usd is not None:
        embeds = [
            m.id
            for m in metrics
            if any(
                isinstance(n, TextEmbeddings | TokenEmbeddings | ListEmbeddings)
                for n in _with_requirements(m.needs())
            )
        ]
        _check_budget(context, judged=needs, embedded=embeds)


def _check_budget(context: Providers, *, judged: list[str], embedded: list[str]) -> None:
    """Refuse a budget that cannot bind before any call: a paid model the run will call
    that has no price, whose cost a provider that reports none would count as $0.

    Only the OpenAI-compatible HTTP clients are known to be paid; the embedded models are
    free, and any other client's calls are checked as they come back (the ledger stops a
    budgeted run at the first call that reported tokens but no cost and has no price).
    """
    from evalframe.providers._openai import OpenAIEmbeddings, OpenAIJudge

    ledger = context.ledger
    judge, client = context.judge, context.configured_embeddings
    unpriced = []
    if judged and isinstance(judge, OpenAIJudge) and not ledger.priced(judge.model):
        unpriced.append((judge.model, "the judge", ", ".join(judged), "INPUT/OUTPUT"))
    paid = client if isinstance(client, OpenAIEmbeddings) else None
    if embedded and paid is not None and not ledger.priced(paid.model, output=False):
        unpriced.append((paid.model, "the embeddings", ", ".join(embedded), "INPUT"))
    if unpriced:
        named = "; ".join(
            f"'{model}' ({role}, for {metrics}): --price {model}={rate}"
            for model, role, metrics, rate in unpriced
        )
        raise ProviderError(
            f"The ${ledger.budget_usd:g} budget cannot bind: these models have no price, so a "
            f"provider that does not report cost would spend unseen, at $0: {named}. Give "
            "their prices in USD per million tokens (--price MODEL=INPUT/OUTPUT, a --prices "
            "file or a [prices] table in evalframe.toml; prices= in Python), or "
            "--price MODEL=reported when the provider reports each call's cost; or drop the "
            "budget."
        )


def _with_requirements(needs: Sequence[Need]) -> list[Need]:
    """The needs and, before each, the needs it requires (judge stages), once each."""
    out: dict[str, Need] = {}

    def add(need: Need) -> None:
        for required in getattr(need, "requires", ()):
            add(required)
        out.setdefault(need.column, need)

    for need in needs:
        add(need)
    return list(out.values())


def _servable(frame: pl.DataFrame) -> pl.Expr:
    """Rows worth a provider call: a string expected output and an actual output."""
    ok = (pl.col(C.EXPECTED_TYPE) == "string") & pl.col(C.ACTUAL_OUTPUT).is_not_null()
    if C.SYSTEM_ERROR in frame.columns:
        ok = ok & pl.col(C.SYSTEM_ERROR).is_null()
    return ok


def _positions(values: pl.Series, distinct: pl.Series) -> pl.Series:
    """Index of each value in ``distinct`` (null for nulls), via one join."""
    table = distinct.rename("v").to_frame().with_row_index("i")
    return (
        values.rename("v")
        .to_frame()
        .join(table, on="v", how="left", maintain_order="left")
        .get_column("i")
    )


def _vector_column(
    name: str, matrix: npt.NDArray[np.float32], idx: pl.Series, ok: pl.Series
) -> pl.Series:
    """Rows of ``matrix`` gathered by ``idx`` as an ``Array(Float32, d)`` column."""
    if matrix.shape[1] == 0:
        return pl.Series(name, [None] * idx.len(), dtype=pl.List(pl.Float32))
    gathered = matrix[idx.fill_null(0).cast(pl.Int64).to_numpy()]
    values = pl.Series(name, gathered)
    return pl.select(pl.when(ok).then(values).alias(name)).to_series()


def _coalesce(first: pl.Series, second: pl.Series) -> pl.Series:
    return pl.DataFrame({"a": first, "b": second}).select(pl.coalesce("a", "b")).to_series()


def _row_errors(idx: pl.Series, errors: list[str | None]) -> pl.Series:
    table = pl.Series("e", errors, dtype=pl.String)
    return table.gather(idx.cast(pl.Int64)) if idx.len() else pl.Series("e", [], pl.String)


@dataclass(frozen=True, slots=True)
class _TextFiller:
    """Fills ``TextEmbeddings``: both outputs' vectors, one per unique text.

    ``gather``: each row's vectors in the two ``Array(Float32, d)`` columns; else each row's
    index into ``EMBEDDING_TABLE`` (the scoring runner's form: 4 bytes a row).
    """

    gather: bool = True

    @property
    def column(self) -> str:
        return EMBEDDING.actual

    def apply(self, frame: pl.DataFrame, context: Any) -> pl.DataFrame:
        providers = Providers.coerce(context)
        ok = _servable(frame)
        texts = frame.select(
            e=pl.when(ok).then(pl.col(C.EXPECTED_OUTPUT)),
            a=pl.when(ok).then(pl.col(C.ACTUAL_OUTPUT)),
        )
        distinct = pl.concat([texts["e"], texts["a"]]).drop_nulls().unique(maintain_order=True)
        unique = distinct.to_list()
        matrix, errors = providers.embed_matrix(unique)
        e_idx, a_idx = _positions(texts["e"], distinct), _positions(texts["a"], distinct)
        row_error = _coalesce(_row_errors(e_idx, errors), _row_errors(a_idx, errors))
        good = e_idx.is_not_null() & a_idx.is_not_null() & row_error.is_null()
        if self.gather:
            vectors = [
                _vector_column(EMBEDDING.expected, matrix, e_idx, good),
                _vector_column(EMBEDDING.actual, matrix, a_idx, good),
            ]
        else:
            vectors = [
                _index_column(EMBEDDING.expected, e_idx, good),
                _index_column(EMBEDDING.actual, a_idx, good),
                vector_table(matrix, frame.height),
            ]
        return pl.DataFrame(
            [
                *vectors,
                row_error.alias(EMBEDDING.error),
                pl.Series(EMBEDDING.embedder, [providers.embeddings.id] * frame.height, pl.String),
            ]
        )


def _index_column(name: str, idx: pl.Series, ok: pl.Series) -> pl.Series:
    """Each row's index into the vector table (null where ``ok`` is not), as Int32."""
    return pl.select(pl.when(ok).then(idx.cast(pl.Int32)).alias(name)).to_series()


def part_of(added: pl.DataFrame, start: int, height: int) -> pl.DataFrame:
    """Rows ``start`` to ``start + height`` of ``fill``'s new columns, for a part of the frame
    scored on its own: a vector table is cut to the vectors those rows read, and their
    indices renumbered into it."""
    part = added.slice(start, height)
    if EMBEDDING_TABLE not in added.columns:
        return part
    matrix = table_matrix(added.get_column(EMBEDDING_TABLE))
    sides = [EMBEDDING.expected, EMBEDDING.actual]
    idx = [part.get_column(c).cast(pl.Int64) for c in sides]
    used = np.unique(np.concatenate([i.drop_nulls().to_numpy() for i in idx]))
    renumbered = [
        pl.Series(c, np.searchsorted(used, i.fill_null(0).to_numpy()), pl.Int32).zip_with(
            i.is_not_null(), pl.Series([None], dtype=pl.Int32)
        )
        for c, i in zip(sides, idx, strict=True)
    ]
    return part.with_columns(*renumbered, vector_table(matrix[used], height))


def _list_column(
    name: str,
    flat: npt.NDArray[np.float32],
    lengths: npt.NDArray[np.int64],
    valid: npt.NDArray[np.bool_],
) -> pl.Series:
    """A ``List(Array(Float32, d))`` column from row-ordered token vectors."""
    import pyarrow as pa

    d = flat.shape[1] if flat.ndim == 2 else 0
    if d == 0 or not valid.any():
        return pl.Series(name, [None] * len(lengths), dtype=pl.List(pl.Float32))
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(np.where(valid, lengths, 0), out=offsets[1:])
    values = pa.FixedSizeListArray.from_arrays(pa.array(flat.reshape(-1)), d)
    arr = pa.LargeListArray.from_arrays(pa.array(offsets), values, mask=pa.array(~valid))
    return pl.Series(name, arr)


def _ranges(starts: npt.NDArray[np.int64], lengths: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Concatenated ``arange(s, s + n)`` for every (start, length), without a Python loop."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    ends = np.cumsum(lengths)
    shift = np.repeat(starts - (ends - lengths), lengths)
    out: npt.NDArray[np.int64] = np.arange(total, dtype=np.int64) + shift
    return out


@dataclass(frozen=True, slots=True)
class _TokenFiller:
    """Fills ``TokenEmbeddings``: token vectors of both outputs."""

    need: TokenEmbeddings

    @property
    def max_tokens(self) -> int:
        return self.need.max_tokens

    @property
    def mode(self) -> TokenMode:
        return self.need.mode

    @property
    def columns(self) -> EmbeddingColumns:
        return self.need.columns

    def apply(self, frame: pl.DataFrame, context: Any) -> pl.DataFrame:
        providers = Providers.coerce(context)
        client = providers.embeddings
        contextual = isinstance(client, TokenEmbeddingClient)
        if self.mode == "contextual" and not contextual:
            raise ProviderError(
                f"bertscore-like mode=contextual needs an embedder with token vectors (the "
                f"embedded ONNX model); {client!r} gives only sentence vectors."
            )
        mode = "contextual" if self.mode != "static" and contextual else "static"
        ok = _servable(frame)
        lowered = frame.select(
            e=pl.when(ok).then(pl.col(C.EXPECTED_OUTPUT).str.to_lowercase()),
            a=pl.when(ok).then(pl.col(C.ACTUAL_OUTPUT).str.to_lowercase()),
        )
        toks = lowered.select(pl.all().str.extract_all(TOKEN_PATTERN))
        ne = toks["e"].list.len().fill_null(0)
        na = toks["a"].list.len().fill_null(0)
        need = (ne > 0) & (na > 0) & (ne <= self.max_tokens) & (na <= self.max_tokens)
        need = need & toks["e"].is_not_null()
        if mode == "contextual":
            out = self._contextual(providers, lowered, toks, need)
        else:
            out = self._static(providers, toks, need)
        embedder = f"{client.id} ({mode})"
        return out.with_columns(pl.lit(embedder, pl.String).alias(self.columns.embedder))

    def _frame(
        self,
        e: tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]],
        a: tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]],
        valid: npt.NDArray[np.bool_],
        errors: pl.Series,
    ) -> pl.DataFrame:
        cols = self.columns
        return pl.DataFrame(
            [
                _list_column(cols.expected, e[0], e[1], valid),
                _list_column(cols.actual, a[0], a[1], valid),
                errors.alias(cols.error),
            ]
        )

    def _contextual(
        self, providers: Providers, lowered: pl.DataFrame, toks: pl.DataFrame, need: pl.Series
    ) -> pl.DataFrame:
        e_text = lowered["e"].zip_with(need, pl.Series([None], dtype=pl.String))
        a_text = lowered["a"].zip_with(need, pl.Series([None], dtype=pl.String))
        distinct = pl.concat([e_text, a_text]).drop_nulls().unique(maintain_order=True)
        distinct_tokens = distinct.str.extract_all(TOKEN_PATTERN)
        result = providers.embed_tokens(distinct.to_list(), distinct_tokens.to_list())
        counts = distinct_tokens.list.len().to_numpy().astype(np.int64)
        vectors, errors = list(result.vectors), list(result.errors)
        d = next((v.shape[1] for v in vectors if v is not None), 0)
        for i, v in enumerate(vectors):  # one per distinct text
            if v is not None and (v.shape != (counts[i], d)):
                vectors[i], errors[i] = None, "Token vectors do not match the tokens."
        lengths = np.array([len(v) if v is not None else 0 for v in vectors], dtype=np.int64)
        flat = (
            np.concatenate([v for v in vectors if v is not None]).astype(np.float32)
            if any(v is not None for v in vectors)
            else np.zeros((0, max(d, 1)), np.float32)
        )
        starts = np.zeros(len(vectors) + 1, dtype=np.int64)
        np.cumsum(lengths, out=starts[1:])
        e_idx, a_idx = _positions(e_text, distinct), _positions(a_text, distinct)
        err = _coalesce(_row_errors(e_idx, errors), _row_errors(a_idx, errors))
        valid = (need & err.is_null()).to_numpy()

        def side(idx: pl.Series) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]:
            i = idx.fill_null(0).cast(pl.Int64).to_numpy()
            n = np.where(valid, lengths[i], 0)
            return flat[_ranges(starts[i], n)], n

        return self._frame(side(e_idx), side(a_idx), valid, err)

    def _static(self, providers: Providers, toks: pl.DataFrame, need: pl.Series) -> pl.DataFrame:
        rows = toks.with_columns(need=need).with_row_index("row")
        flat = {
            side: rows.filter(pl.col("need")).select("row", side).explode(side)
            for side in ("e", "a")
        }
        distinct = pl.concat([flat["e"][["e"]].to_series(), flat["a"][["a"]].to_series()]).unique(
            maintain_order=True
        )
        unique = distinct.to_list()
        matrix, errors = providers.embed_matrix(unique)
        token_error = pl.Series("err", errors, dtype=pl.String)
        failed_rows = (
            pl.concat(
                [
                    f.select(
                        "row",
                        token_error.gather(_positions(f[s], distinct).cast(pl.Int64)).alias("err"),
                    )
                    for s, f in flat.items()
                ]
            )
            .drop_nulls()
            .group_by("row")
            .agg(pl.col("err").first())
        )
        err = (
            rows.select("row")
            .join(failed_rows, on="row", how="left", maintain_order="left")
            .get_column("err")
        )
        valid = (need & err.is_null()).to_numpy()
        keep = pl.Series(valid)

        def side(s: str) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]:
            f = flat[s].filter(keep.gather(flat[s]["row"]))
            ids = _positions(f[s], distinct).cast(pl.Int64).to_numpy()
            lengths = np.where(valid, toks[s].list.len().fill_null(0).to_numpy(), 0)
            return matrix[ids], lengths.astype(np.int64)

        return self._frame(side("e"), side("a"), valid, err)


@dataclass(frozen=True, slots=True)
class _JudgeFiller:
    """Fills ``JudgeReplies``: one judge call per unique prompt."""

    need: JudgeReplies

    @property
    def kind(self) -> JudgeKind:
        return self.need.kind

    @property
    def template(self) -> str | None:
        return self.need.template

    def apply(self, frame: pl.DataFrame, context: Any) -> pl.DataFrame:
        providers = Providers.coerce(context)
        providers.require_judge(f"The {self.kind} metric")
        cols = judge_columns(self.kind, self.template)
        prompt = prompts(frame, self.kind, self.template)
        distinct = prompt.drop_nulls().unique(maintain_order=True)
        replies = providers.complete(distinct.to_list(), tag=self.need.prompt.key)
        content = pl.Series("content", [r.content for r in replies], dtype=pl.String)
        error = pl.Series("error", [r.error for r in replies], dtype=pl.String)
        idx = _positions(prompt, distinct).cast(pl.Int64)
        row_content = content.gather(idx) if idx.len() else content.clear()
        row_error = error.gather(idx) if idx.len() else error.clear()
        struct = pl.DataFrame(
            {
                "content": row_content,
                "prompt_chars": prompt.str.len_bytes().cast(pl.Int64),
                "response_chars": row_content.str.len_bytes().cast(pl.Int64),
            }
        ).to_struct(cols.replies)
        return pl.DataFrame([struct, row_error.alias(cols.error)])


@dataclass(frozen=True, slots=True)
class _ListFiller:
    """Fills ``ListEmbeddings``: an anchor vector and a list of vectors per row."""

    need: ListEmbeddings

    def apply(self, frame: pl.DataFrame, context: Any) -> pl.DataFrame:
        from evalframe.metrics.trajectory import items_frame

        providers = Providers.coerce(context)
        rows = frame.select(anchor=self.need.anchor, items=self.need.items)
        anchor, lists = rows.get_column("anchor"), rows.get_column("items")
        items = items_frame(lists, "text")  # row, position, text: one row per list item
        texts = items.get_column("text")
        distinct = pl.concat([anchor, texts]).drop_nulls().unique(maintain_order=True)
        unique = distinct.to_list()
        matrix, errors = providers.embed_matrix(unique)
        a_idx, i_idx = _positions(anchor, distinct), _positions(texts, distinct)
        # A row's error: its anchor's, else its first item's; a null item spoils the row.
        per_item = items.select(
            pl.col("row"),
            e=_row_errors(i_idx, errors) if items.height else pl.lit(None, pl.String),
            gap=i_idx.is_null(),
        )
        by_row = per_item.group_by("row").agg(pl.col("e").drop_nulls().first(), pl.col("gap").any())
        per_row = pl.DataFrame(
            {"row": pl.int_range(frame.height, dtype=pl.Int64, eager=True)}
        ).join(by_row, on="row", how="left", maintain_order="left")
        row_error = _coalesce(_row_errors(a_idx, errors), per_row.get_column("e"))
        good = (
            a_idx.is_not_null()
            & lists.is_not_null()
            & ~per_row.get_column("gap").fill_null(False)
            & row_error.is_null()
        )
        item_rows = items.get_column("row").to_numpy()
        keep = good.to_numpy()[item_rows]
        flat = matrix[i_idx.fill_null(0).cast(pl.Int64).to_numpy()][keep]
        lengths = lists.list.len().fill_null(0).to_numpy().astype(np.int64)
        name = self.need.column
        vectors = pl.DataFrame(
            [
                _vector_column("anchor", matrix, a_idx, good),
                _list_column("items", flat, lengths, good.to_numpy()),
            ]
        ).to_struct(name)
        return pl.DataFrame([vectors, row_error.alias(f"{name}__error")])


@dataclass(frozen=True, slots=True)
class _WebhookFiller:
    """Fills a ``WebhookNeed``: one POST per distinct payload (batched when asked)."""

    need: WebhookNeed

    def apply(self, frame: pl.DataFrame, context: Any) -> pl.DataFrame:
        providers = Providers.coerce(context)
        payload = frame.select(self.need.payload()).to_series()
        distinct = payload.drop_nulls().unique(maintain_order=True)
        got = providers.post_webhook(
            self.need.endpoint,
            distinct.to_list(),
            batch=self.need.batch,
            verdict=self.need.verdict,
        )
        content = pl.Series("content", [c for c, _ in got], dtype=pl.String)
        error = pl.Series("error", [e for _, e in got], dtype=pl.String)
        idx = _positions(payload, distinct).cast(pl.Int64)
        return pl.DataFrame(
            [
                (content.gather(idx) if idx.len() else content.clear()).alias(self.need.column),
                (error.gather(idx) if idx.len() else error.clear()).alias(self.need.error_column),
            ]
        )


@dataclass(frozen=True, slots=True)
class _StagedFiller:
    """Fills a ``JudgeNeed`` (its required needs are filled before it)."""

    need: JudgeNeed

    def apply(self, frame: pl.DataFrame, context: Any) -> pl.DataFrame:
        return fill_judge_need(frame, self.need, context)


_Filler = _TextFiller | _TokenFiller | _JudgeFiller | _StagedFiller | _ListFiller | _WebhookFiller


def _filler(need: Need, gather: bool) -> _Filler:
    match need:
        case TextEmbeddings():
            return _TextFiller(gather)
        case TokenEmbeddings():
            return _TokenFiller(need)
        case JudgeReplies():
            return _JudgeFiller(need)
        case JudgeNeed():
            return _StagedFiller(need)
        case ListEmbeddings():
            return _ListFiller(need)
        case WebhookNeed():
            return _WebhookFiller(need)
    raise MetricError(
        f"No provider fills the column {need.column!r} ({type(need).__name__}); "
        "a metric's needs must be one of TextEmbeddings, TokenEmbeddings, ListEmbeddings, "
        "JudgeReplies, JudgeNeed or WebhookNeed."
    )


def fill(
    frame: pl.DataFrame,
    metrics: Sequence[Metric],
    context: Providers | EmbeddingClient | JudgeClient | None,
    *,
    gather: bool = True,
) -> tuple[pl.DataFrame, dict[str, str]]:
    """Add the provider-filled columns the metrics need, each filled once.

    A column already in the frame is kept as it is (vectors computed earlier are reused),
    and providers are only built (from ``context``, else the environment) when a column
    must be filled. ``gather=False`` fills the text embeddings in the scoring runner's
    form: one vector per distinct text in ``EMBEDDING_TABLE`` and each row's index into it
    in ``expected_output__embedding`` and ``actual_output__embedding``, instead of each
    row's two vectors (3 KB a row at 384 dimensions); the semantic metrics read both.

    Returns:
        The frame with the new columns and, per metric id, the error that kept one of its
        needs from being filled at all (the metric then errors on every row).
    """
    failed: dict[str, str] = {}
    done: dict[str, str | None] = {}
    providers: Providers | None = None
    for m in metrics:
        for need in _with_requirements(m.needs()):
            column = need.column
            if column not in done:
                done[column] = None
                if column not in frame.columns:
                    try:
                        providers = providers or Providers.coerce(context)
                        frame = frame.with_columns(_filler(need, gather).apply(frame, providers))
                    except Exception as exc:  # reported per row, the run goes on
                        done[column] = f"{type(exc).__name__}: {exc}"
            problem = done[column]
            if problem is not None and m.id not in failed:
                failed[m.id] = f"could not compute {column}: {problem}"
    return frame, failed
