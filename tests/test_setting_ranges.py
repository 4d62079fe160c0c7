"""Every number a user can give outside the command line has the range its option has: the
``EVALFRAME_*`` variables and the Python API's arguments refuse huge, negative, 2**63, NaN,
infinite and non-numeric values with an error naming the variable or argument and the range
(exit 2 from the CLI), from the one table in ``core._limits``."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import evalframe as ef
from evalframe.cli import cli
from evalframe.cli._options import OPTION_LIMITS
from evalframe.cli._profiles import _KEYS
from evalframe.core._limits import LIMITS, MAX_REPETITIONS
from evalframe.engine._eval_set import run_set
from evalframe.engine._online import RATE_ENV
from evalframe.providers._config import ENV

ROOT = Path(__file__).resolve().parents[1]

NUMBER_VARIABLES = {
    "EVALFRAME_TIMEOUT": "timeout",
    "EVALFRAME_RETRIES": "retries",
    "EVALFRAME_DEADLINE": "deadline",
    "EVALFRAME_EMBEDDINGS_CONCURRENCY": "embeddings_concurrency",
    "EVALFRAME_JUDGE_CONCURRENCY": "judge_concurrency",
    "EVALFRAME_ONLINE_SAMPLING_RATE": "sampling_rate",
}
"""Each variable evalframe reads a number from, and its entry in ``LIMITS``."""

OTHER_VARIABLES = {
    "EVALFRAME_CONFIG", "EVALFRAME_EMBEDDINGS_API_KEY", "EVALFRAME_EMBEDDINGS_BASE_URL",
    "EVALFRAME_EMBEDDINGS_MODEL", "EVALFRAME_JUDGE_API_KEY", "EVALFRAME_JUDGE_BASE_URL",
    "EVALFRAME_JUDGE_MODEL", "EVALFRAME_KERNELS", "EVALFRAME_ONLINE_STORE", "EVALFRAME_OTEL",
    "EVALFRAME_OTEL_CAPTURE_CONTENT", "EVALFRAME_STORE", "EVALFRAME_STRICT",
    "EVALFRAME_VIEW_TOKEN", "EVALFRAME_WEBHOOK_URL", "EVALFRAME_WEBHOOK_TOKEN",
}  # fmt: skip
"""The variables that hold text, a path, a switch or a key: no number."""

HOSTILE = (
    "99999999999999999999999999",
    "1e300",
    "1e23",
    str(2**63),
    "-1",
    str(-(2**63)),
    "nan",
    "inf",
    "-inf",
    "many",
    "0x10",
)


def test_every_variable_evalframe_reads_is_classified() -> None:
    """A new variable must join one list or the other: a number one is then checked below."""
    source = "\n".join(
        p.read_text(encoding="utf-8")
        for folder in ("evalframe", "evalframe_pytest")
        for p in (ROOT / folder).rglob("*.py")
    )
    read = set(re.findall(r"\bEVALFRAME_[A-Z_]*[A-Z]\b", source))
    read -= {"EVALFRAME_WEBHOOK", "EVALFRAME_EMBEDDINGS", "EVALFRAME_JUDGE"}  # prefixes
    assert read == set(NUMBER_VARIABLES) | OTHER_VARIABLES
    assert {ENV[role] for role in NUMBER_VARIABLES.values() if role in ENV} | {RATE_ENV} == set(
        NUMBER_VARIABLES
    )
    assert all(role in LIMITS for role in NUMBER_VARIABLES.values())


PROVIDER_VARIABLES = [v for v in NUMBER_VARIABLES if v != RATE_ENV]


@pytest.mark.parametrize("variable", PROVIDER_VARIABLES)
def test_a_provider_variable_out_of_range_is_an_error_naming_it(variable: str) -> None:
    describe = LIMITS[NUMBER_VARIABLES[variable]].describe()
    base = {"EVALFRAME_JUDGE_BASE_URL": "http://127.0.0.1:9/v1"}
    for value in HOSTILE:
        with pytest.raises(ef.ProviderError) as raised:
            ef.Providers.from_env(environ={**base, variable: value}, cache=False)
        assert str(raised.value) == f"{variable} must be {describe}; got {value!r}.", value


@pytest.mark.parametrize("variable", PROVIDER_VARIABLES)
def test_the_cli_exits_two_on_a_provider_variable_out_of_range(
    variable: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dataset = tmp_path / "d.yaml"
    dataset.write_text("name: d\nsamples:\n  - {id: a, input: {q: x}, expected_output: y}\n")
    outputs = tmp_path / "o.json"
    outputs.write_text(json.dumps({"outputs": {"a": "y"}}))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("EVALFRAME_JUDGE_BASE_URL", "http://127.0.0.1:9/v1")
    describe = LIMITS[NUMBER_VARIABLES[variable]].describe()
    for value in ("1e300", str(2**63), "nan", "-1"):
        monkeypatch.setenv(variable, value)
        result = CliRunner().invoke(
            cli, ["run", str(dataset), "--outputs", str(outputs), "-m", "llm-as-judge"]
        )
        assert result.exit_code == 2, (value, result.output)
        assert f"{variable} must be {describe}; got {value!r}." in result.output
        assert "Traceback" not in result.output


def test_the_sampling_rate_variable_out_of_range_is_an_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "online.duckdb"
    for value in (*HOSTILE, "1.5"):
        monkeypatch.setenv(RATE_ENV, value)
        with pytest.raises(ef.EvalframeError) as raised:
            ef.online.configure(store=store)
        assert str(raised.value) == (f"{RATE_ENV} must be a number from 0 to 1; got {value!r}."), (
            value
        )
    monkeypatch.delenv(RATE_ENV)
    for bad in (1.5, -0.1, float("nan"), float("inf"), True, "0.5"):
        with pytest.raises(ef.EvalframeError, match=r"^sampling_rate must be a number from 0 to"):
            ef.online.configure(store=store, sampling_rate=bad)  # type: ignore[arg-type]


def _dataset() -> ef.Dataset:
    return ef.Dataset.from_records([{"id": "a", "input": {}, "expected_output": "x"}], name="d")


def _evaluate(**kwargs: Any) -> Any:
    if "checkpoint_every" in kwargs:
        return ef.evaluate(_dataset(), system=lambda _: "x", metrics=["exact-match"], **kwargs)
    return ef.evaluate(_dataset(), outputs={"a": "x"}, metrics=["exact-match"], **kwargs)


def _compare(**kwargs: Any) -> Any:
    run = _evaluate()
    return ef.compare(run, run, **kwargs)


def _rescore(**kwargs: Any) -> Any:
    store = ef.Store(":memory:")
    _evaluate(store=store)
    return store.rescore(["rouge-l"], **kwargs)


def _providers(**kwargs: Any) -> Any:
    if "rate_window_seconds" in kwargs:
        kwargs["rate_limit"] = 10
    return ef.Providers(cache=False, **kwargs)


HUGE = (10**30, 2**63, -1, -(2**63), float("nan"), float("inf"), True)

API: list[tuple[str, Callable[..., Any], str, str]] = [
    # (what is called, the call, the argument, its LIMITS entry)
    ("ef.evaluate", _evaluate, "concurrency", "concurrency"),
    ("ef.evaluate", _evaluate, "repetitions", "repetitions"),
    ("ef.evaluate", _evaluate, "rate_limit", "rate_limit"),
    ("ef.evaluate", _evaluate, "rate_window_seconds", "rate_window_seconds"),
    ("ef.evaluate", _evaluate, "checkpoint_every", "checkpoint_every"),
    ("ef.compare", _compare, "n_bootstrap", "bootstrap"),
    ("ef.compare", _compare, "seed", "seed"),
    ("Store.rescore", _rescore, "batch_size", "batch_size"),
    ("ef.Providers", _providers, "budget_usd", "budget_usd"),
    ("ef.Providers", _providers, "deadline", "deadline"),
    ("ef.Providers", _providers, "rate_limit", "rate_limit"),
    ("ef.Providers", _providers, "rate_window_seconds", "rate_window_seconds"),
    ("ef.OpenAIJudge", ef.OpenAIJudge, "timeout", "timeout"),
    ("ef.OpenAIJudge", ef.OpenAIJudge, "retries", "retries"),
    ("ef.OpenAIJudge", ef.OpenAIJudge, "concurrency", "concurrency"),
    ("ef.OpenAIEmbeddings", ef.OpenAIEmbeddings, "batch_size", "batch_size"),
    ("ef.OpenAIEmbeddings", ef.OpenAIEmbeddings, "concurrency", "concurrency"),
    ("ef.Webhook", lambda **k: ef.Webhook("http://127.0.0.1:9/score", **k), "timeout", "timeout"),
    ("ef.Webhook", lambda **k: ef.Webhook("http://127.0.0.1:9/score", **k), "retries", "retries"),
]


@pytest.mark.parametrize(
    ("where", "call", "argument", "limit"), API, ids=[f"{w}-{a}" for w, _, a, _ in API]
)
def test_a_python_argument_out_of_range_is_an_error_naming_it(
    where: str, call: Callable[..., Any], argument: str, limit: str
) -> None:
    describe = LIMITS[limit].describe()
    for value in HUGE:
        with pytest.raises(ValueError, match=f"^{argument} must be ") as raised:
            call(**{argument: value})
        assert str(raised.value) == f"{argument} must be {describe}; got {value!r}.", (
            where,
            value,
        )


def test_provider_arguments_out_of_range_are_provider_errors_naming_the_argument() -> None:
    for argument in ("timeout", "retries", "deadline", "judge_concurrency"):
        for value in HUGE:
            with pytest.raises(ef.ProviderError, match=rf"^the {argument} argument must be "):
                ef.Providers.from_env(**{argument: value}, environ={}, cache=False)


def test_run_set_checks_its_numbers_before_marking_anything_running(tmp_path: Path) -> None:
    for argument in ("repetitions", "concurrency"):
        with pytest.raises(ValueError, match=rf"^{argument} must be a whole number from 1 to"):
            run_set(tmp_path / "missing.yaml", **{argument: 10**30})


def test_the_limits_at_the_edges_are_accepted() -> None:
    assert _evaluate(concurrency=1000, repetitions=MAX_REPETITIONS).frame.height == 1000
    assert ef.OpenAIJudge(timeout=86_400, retries=100, concurrency=1000).timeout == 86_400
    assert ef.Providers(budget_usd=1e9, deadline=30 * 86_400.0, cache=False).ledger.deadline
    env = {"EVALFRAME_RETRIES": "100", "EVALFRAME_JUDGE_BASE_URL": "http://127.0.0.1:9/v1"}
    found = ef.Providers.from_env(environ=env, cache=False).judge
    assert found is not None
    assert found.policy.retries == 100  # type: ignore[attr-defined]


def test_one_table_serves_the_options_and_the_profiles() -> None:
    for name, limit in LIMITS.items():
        assert OPTION_LIMITS["--" + name.replace("_", "-")] == (limit.low, limit.high)
    assert set(_KEYS) - {"strict"} <= set(LIMITS)


def test_the_docs_give_every_bound() -> None:
    """Each entry of the table is in the docs' table of ranges, with its bounds."""
    text = (ROOT / "docs" / "howto" / "profiles-and-rate-limits.md").read_text(encoding="utf-8")
    section = text.split("## The range of every number", 1)[1]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    for name, limit in LIMITS.items():
        names = (f"`--{name.replace('_', '-')}`", f"`{name}`")
        row = next((r for r in rows if any(n in r for n in names)), None)
        assert row is not None, name
        high = f"{int(limit.high):,}" if limit.high == int(limit.high) else f"{limit.high:g}"
        assert high in row, (name, row)
    for variable in NUMBER_VARIABLES:
        assert f"`{variable}`" in section, variable
