"""cosine-embedding and bertscore-like: reference goldens, kernels against slow oracles."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from conftest import STUB_API_KEY, frame
from openai_stub import StubOpenAI

import evalframe as ef
from evalframe.metrics.semantic import EMBEDDING, cosine_rows, greedy_match, token_columns
from evalframe.providers import OpenAIEmbeddings, Providers


@pytest.fixture(autouse=True)
def _private_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))


def with_vectors(expected_vecs: list[Any], actual_vecs: list[Any]) -> pl.DataFrame:
    """A frame whose embedding columns are already filled (a stored run, rescored)."""
    n = len(expected_vecs)
    return frame(
        ["e"] * n,
        ["a"] * n,
        **{
            EMBEDDING.expected: pl.Series(expected_vecs, dtype=pl.List(pl.Float32)),
            EMBEDDING.actual: pl.Series(actual_vecs, dtype=pl.List(pl.Float32)),
            EMBEDDING.error: pl.Series([None] * n, dtype=pl.String),
            EMBEDDING.embedder: pl.Series(["given"] * n),
        },
    )


class _NoNetwork:
    """A context that fails the test if any provider is asked for anything."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"a provider was used: {name}")


# --- cosine-embedding ---------------------------------------------------------------------------


def test_cosine_goldens_from_the_reference() -> None:
    f = with_vectors(
        [[1, 0], [1, 0], [1, 0], [0, 0], [1, 2, 3]],
        [[1, 0], [1, 1], [-1, 0.5], [1, 0], [1, 2]],
    )
    scores = ef.score(f, [ef.metrics.cosine_embedding()], context=_NoNetwork())
    assert scores["score"].to_list()[:4] == pytest.approx([1.0, 0.7071067811865475, 0.0, 0.0])
    assert scores["error"].to_list()[:4] == [None] * 4
    assert scores["error"][4] == (
        "Cannot compute cosine similarity on vectors of different dimensionality (3 vs 2)."
    )
    negative = json.loads(scores["details"][2])
    assert negative["cosine_similarity"] == pytest.approx(-0.894427, abs=1e-6)
    assert negative["clamped_score"] == 0.0  # clamped, not (c + 1) / 2
    assert negative["expected_dim"] == negative["actual_dim"] == 2


def test_cosine_rejects_non_string_expected_and_reports_provider_errors() -> None:
    f = frame(["4", "x"], ["4", "x"], ["int", "string"]).with_columns(
        pl.Series(EMBEDDING.expected, [None, [1.0]], dtype=pl.List(pl.Float32)),
        pl.Series(EMBEDDING.actual, [None, None], dtype=pl.List(pl.Float32)),
        pl.Series(EMBEDDING.error, [None, "Embeddings request failed: HTTP 500."]),
        pl.Series(EMBEDDING.embedder, ["x", "x"]),
    )
    scores = ef.score(f, [ef.metrics.cosine_embedding()], context=_NoNetwork())
    assert scores["error"].to_list() == [
        "Sample 's0' expected_output must be a string for cosine-embedding metric; got int.",
        "Embeddings request failed: HTTP 500.",
    ]


def test_cosine_kernel_matches_a_per_row_oracle() -> None:
    rng = np.random.default_rng(7)
    e = rng.standard_normal((500, 16)).astype(np.float32)
    a = rng.standard_normal((500, 16)).astype(np.float32)
    a[3] = 0.0
    got = cosine_rows(pl.Series(e), pl.Series(a))["cosine"].to_numpy()
    for i in range(500):  # the slow, obviously correct reference
        x, y = e[i].astype(np.float64), a[i].astype(np.float64)
        nx, ny = np.linalg.norm(x), np.linalg.norm(y)
        want = 0.0 if nx == 0 or ny == 0 else float(x @ y / (nx * ny))
        assert got[i] == pytest.approx(want, abs=1e-6)


def test_cosine_embeds_each_unique_text_once_and_is_row_order_invariant() -> None:
    p = Providers(embeddings="hashing", cache=False)
    f = frame(["the cat", "a dog", "the cat"], ["the cat", "the cat", "a bird"])
    scores = ef.score(f, [ef.metrics.cosine_embedding()], providers=p)
    assert p.usage_frame()["items"].to_list() == [3]  # the cat, a dog, a bird
    shuffled = ef.score(f.reverse(), [ef.metrics.cosine_embedding()], context=p)
    by_id = dict(zip(scores["sample_id"], scores["score"], strict=True))
    assert dict(zip(shuffled["sample_id"], shuffled["score"], strict=True)) == by_id
    assert by_id["s0"] == 1.0


# --- bertscore-like -----------------------------------------------------------------------------

_TOKENS = {"cat": [1.0, 0.0, 0.0], "sat": [0.0, 1.0, 0.0], "feline": [0.6, 0.0, 0.8]}


def _stub_providers(stub: StubOpenAI) -> Providers:
    stub.vectors = dict(_TOKENS)
    client = OpenAIEmbeddings("tok", base_url=stub.url, api_key=STUB_API_KEY, backoff=0.001)
    return Providers(client, cache=False)


def test_bertscore_golden_cat_sat_sends_unique_tokens_in_one_call(openai_stub: StubOpenAI) -> None:
    p = _stub_providers(openai_stub)
    scores = ef.score(frame(["cat sat"], ["feline sat"]), [ef.metrics.bertscore_like()], context=p)
    (call,) = openai_stub.calls("/embeddings")
    assert call.body["input"] == ["cat", "sat", "feline"]
    assert scores["score"].to_list() == [pytest.approx(0.8)]
    details = json.loads(scores["details"][0])
    assert details["precision"] == pytest.approx(0.8)
    assert details["recall"] == pytest.approx(0.8)
    assert details["embedded_tokens"] == 3
    assert details["embedder"].endswith("(static)")


def test_bertscore_duplicates_count_in_the_averages(openai_stub: StubOpenAI) -> None:
    p = _stub_providers(openai_stub)
    scores = ef.score(frame(["Cat, cat sat."], ["cat"]), [ef.metrics.bertscore_like()], context=p)
    details = json.loads(scores["details"][0])
    assert details["recall"] == pytest.approx(2 / 3)  # cat, cat match; sat has no match
    assert details["precision"] == pytest.approx(1.0)
    assert scores["score"][0] == pytest.approx(0.8)
    assert openai_stub.calls("/embeddings")[0].body["input"] == ["cat", "sat"]


def test_bertscore_edge_cases_make_no_call_and_cap_tokens() -> None:
    f = frame(["", "...", "word", "a b c", "x"], ["", "text", "!!", "a", "x"], None)
    metric = ef.metrics.bertscore_like(max_tokens=2)
    scores = ef.score(f, [metric], context=Providers(embeddings="hashing", cache=False))
    assert scores["score"].to_list()[:3] == [1.0, 0.0, 0.0]
    assert scores["error"][3] == (
        "Sample 's3' expected_output has 3 tokens; bertscore-like metric supports at most 2 "
        "tokens per field."
    )
    assert scores["score"][4] == 1.0
    edge = json.loads(scores["details"][1])
    assert (edge["expected_tokens"], edge["actual_tokens"], edge["raw_score"]) == (0, 1, 0.0)
    with pytest.raises(ef.MetricError, match="at least 1"):
        ef.metrics.bertscore_like(max_tokens=0)
    assert metric.id == "bertscore-like(max_tokens=2)"


def test_bertscore_rescores_stored_token_vectors_without_a_provider() -> None:
    cols = token_columns()
    vec = pl.List(pl.Array(pl.Float32, 2))
    f = frame(["cat sat", "cat"], ["cat", "dog"]).with_columns(
        pl.Series(cols.expected, [[[1, 0], [0, 1]], [[1, 0]]], dtype=vec),
        pl.Series(cols.actual, [[[1, 0]], [[0.6, 0.8]]], dtype=vec),
        pl.Series(cols.error, [None, None], dtype=pl.String),
        pl.Series(cols.embedder, ["stored", "stored"]),
    )
    scores = ef.score(f, [ef.metrics.bertscore_like()], context=_NoNetwork())
    assert scores["score"].to_list() == pytest.approx([2 * 1 * 0.5 / 1.5, 0.6])


def _greedy_oracle(e: np.ndarray, a: np.ndarray) -> tuple[float, float]:
    def cos(x: np.ndarray, y: np.ndarray) -> float:
        x, y = x.astype(np.float64), y.astype(np.float64)
        nx, ny = np.linalg.norm(x), np.linalg.norm(y)
        return 0.0 if nx == 0 or ny == 0 else float(np.clip(x @ y / (nx * ny), 0.0, 1.0))

    recall = np.mean([max(cos(x, y) for y in a) for x in e])
    precision = np.mean([max(cos(y, x) for x in e) for y in a])
    return float(precision), float(recall)


def test_greedy_kernel_matches_a_per_row_oracle() -> None:
    rng = np.random.default_rng(3)
    m = rng.integers(0, 20, size=60)
    n = rng.integers(0, 20, size=60)
    e = rng.standard_normal((int(m.sum()), 5)).astype(np.float32)
    a = rng.standard_normal((int(n.sum()), 5)).astype(np.float32)
    e[0] = 0.0
    e_off = np.r_[0, np.cumsum(m)].astype(np.int64)
    a_off = np.r_[0, np.cumsum(n)].astype(np.int64)
    precision, recall = greedy_match(e, e_off, a, a_off)
    for i in range(60):  # the slow, obviously correct reference
        if m[i] == 0 or n[i] == 0:
            assert np.isnan(precision[i])
            continue
        p, r = _greedy_oracle(e[e_off[i] : e_off[i + 1]], a[a_off[i] : a_off[i + 1]])
        assert precision[i] == pytest.approx(p, abs=1e-6)
        assert recall[i] == pytest.approx(r, abs=1e-6)


def test_bertscore_on_the_embedded_model_is_contextual_and_offline() -> None:
    f = frame(
        ["The cat sat on the mat.", "Paris is the capital of France.", "It rained all day."],
        ["The cat sat on the mat.", "France's capital city is Paris.", "Stocks fell sharply."],
    )
    p = Providers(cache=False)  # no endpoint: the embedded ONNX model
    scores = ef.score(f, [ef.metrics.bertscore_like(), ef.metrics.cosine_embedding()], context=p)
    bert = scores.filter(pl.col("metric") == "bertscore-like")["score"].to_list()
    cosine = scores.filter(pl.col("metric") == "cosine-embedding")["score"].to_list()
    assert bert[0] == 1.0
    assert cosine[0] == 1.0
    assert bert[1] > bert[2]
    assert cosine[1] > 0.8 > 0.3 > cosine[2]  # noqa: PLR0133 - the two bounds read as a band
    details = json.loads(scores["details"][0])
    assert details["embedder"] == "onnx:all-MiniLM-L6-v2-int8@8199be6f (contextual)"


# --- one vector per distinct text: the runner's form -------------------------------------------


def test_the_runner_holds_one_vector_per_distinct_text_and_an_index_per_row(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ef.score fills an Int32 index per row into one table of the distinct texts' vectors
    (no per-row vectors); the scores are those of the documented gathered columns, which
    ``evalframe.enrich.fill`` still returns."""
    from evalframe import enrich
    from evalframe.enrich import fill
    from evalframe.metrics.semantic import EMBEDDING_TABLE, table_matrix

    f = frame(
        ["Paris is the capital", "Paris is the capital", "4", "Berlin", "same"],
        ["the capital is Paris", "Berlin", "4", None, "same"],
        ["string", "string", "int", "string", "string"],
    )
    metrics = [ef.metrics.cosine_embedding(), ef.metrics.answer_correctness(similarity_weight=0.5)]
    providers = Providers(embeddings="hashing", cache=False)
    seen: list[pl.DataFrame] = []
    real = enrich._score_frame

    def spy(filled: pl.DataFrame, *args: Any, **kwargs: Any) -> pl.DataFrame:
        seen.append(filled)
        return real(filled, *args, **kwargs)

    monkeypatch.setattr(enrich, "_score_frame", spy)
    scores = ef.score(f, metrics[:1], providers=providers)
    runner = seen[0]
    assert runner.schema[EMBEDDING.expected] == pl.Int32
    assert runner.schema[EMBEDDING.actual] == pl.Int32
    # Four distinct servable texts ("4" is not a string expected output, row 3 has no output).
    table = table_matrix(runner.get_column(EMBEDDING_TABLE))
    assert table.shape == (4, 512)
    # Expected outputs first, then the actual outputs not seen yet, in order.
    assert runner.get_column(EMBEDDING.expected).to_list() == [0, 0, None, None, 1]
    assert runner.get_column(EMBEDDING.actual).to_list() == [2, 3, None, None, 1]

    gathered, _ = fill(f, metrics[:1], providers)
    assert gathered.schema[EMBEDDING.expected] == pl.Array(pl.Float32, 512)
    assert EMBEDDING_TABLE not in gathered.columns
    direct = ef.score(gathered, metrics[:1], context=_NoNetwork())
    assert scores.equals(direct, null_equal=True)
    assert scores["score"].to_list()[4] == 1.0
    assert scores["error"][2].endswith("expected_output must be a string for cosine-embedding "
                                       "metric; got int.")  # fmt: skip


def test_a_part_of_the_runner_s_columns_reads_only_its_rows_vectors() -> None:
    """``part_of`` cuts the vector table to a part's rows (as a cluster scores parts): each
    part scores as the whole frame did."""
    from evalframe.core._score import score as score_frame
    from evalframe.enrich import fill, part_of
    from evalframe.metrics.semantic import EMBEDDING_TABLE, table_matrix

    texts = [f"text {i % 5} and {i % 3}" for i in range(12)]
    f = frame(texts, [*reversed(texts[:11]), None])
    metrics = [ef.metrics.cosine_embedding()]
    filled, _ = fill(f, metrics, Providers(embeddings="hashing", cache=False), gather=False)
    added = filled.select([c for c in filled.columns if c not in f.columns])
    whole = score_frame(filled, metrics)
    parts = []
    for start, height in ((0, 5), (5, 1), (6, 6)):
        part = part_of(added, start, height)
        used = table_matrix(part.get_column(EMBEDDING_TABLE))
        indices = pl.concat([part[EMBEDDING.expected], part[EMBEDDING.actual]]).drop_nulls()
        assert sorted(set(indices.to_list())) == list(range(len(used)))
        parts.append(score_frame(pl.concat([f.slice(start, height), part], how="horizontal"),
                                 metrics))  # fmt: skip
    assert pl.concat(parts).equals(whole, null_equal=True)


def test_when_no_text_could_be_embedded_each_row_carries_the_provider_s_reason() -> None:
    class Down:
        id, model, cacheable = "down-v1", "down", False

        def embed(self, texts: Any, ledger: Any) -> Any:
            from evalframe.providers import Embedded

            return Embedded([None] * len(texts), ["Embeddings: the service is down."] * len(texts))

    f = frame(["a", "b", "c"], ["a", "x", None])
    scores = ef.score(f, ["cosine-embedding"], providers=Providers(embeddings=Down(), cache=False))
    assert scores["error"].to_list() == [
        "Embeddings: the service is down.",
        "Embeddings: the service is down.",
        "Sample 's2' has no actual output.",
    ]
