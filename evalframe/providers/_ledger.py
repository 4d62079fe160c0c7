"""The usage ledger: one record per provider call, its cost, and the run's budget.

A *call* is one request to a provider (a batch of texts to embed, one judge prompt) or one
batch of local work (the embedded model). Its cost is, in order: the cost the provider
reported (``usage.cost_usd``, else ``usage.total_cost_usd``), zero for local models, the cost
derived from the user's price table, or unknown ("unpriced"). The budget halts further calls
once the money spent exceeds the limit (strictly); the run's deadline halts them once that
many seconds have passed since the run began; either way what was already computed is kept.

The ledger is also the one place provider errors are redacted: every error it records or
that the providers hand back passes through :meth:`Ledger.redact` with the run's API keys.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import polars as pl

from evalframe.core import schema as C
from evalframe.core._errors import BudgetExhaustedError, DeadlineExceededError, StopCallsError
from evalframe.core._limits import checked
from evalframe.core._rate import RateLimit
from evalframe.providers._config import Secret, redact

__all__ = [
    "BudgetExhaustedError",
    "Call",
    "DeadlineExceededError",
    "Ledger",
    "Prices",
    "StopCallsError",
    "usage_from_body",
]

Kind = Literal["embeddings", "judge", "webhook"]
CostSource = Literal["reported", "derived", "free", "unpriced"]
Prices = Mapping[str, Mapping[str, float] | str]
"""USD per million tokens by model; ``"reported"`` names a model whose provider reports each
call's cost (a budget then binds on it, and stops at a call that reports none)."""

UNNAMED_MODEL = "(unnamed model)"


@dataclass(frozen=True, slots=True)
class Call:
    """One provider call as the ledger records it.

    Attributes:
        kind: ``embeddings``, ``judge`` or ``webhook``.
        provider: where it went (a URL without credentials, or ``local``).
        model: the model the provider named in its reply, else the configured one.
        prompt_tokens, completion_tokens, total_tokens: as reported (``None`` when not).
        reported_cost_usd: the provider's own cost figure, if any.
        latency_ms: wall time measured by evalframe, all attempts included.
        attempts: requests made (1 + retries used).
        items: texts or prompts carried by the call.
        error: why the call failed (never the API key or the response body), else ``None``.
        free: a local model: its cost is zero.
        started_at: when the call began, in epoch seconds; by default, the time it is recorded
            less its latency (clients record a call as soon as it ends).
    """

    kind: Kind
    provider: str
    model: str | None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    reported_cost_usd: float | None = None
    latency_ms: float | None = None
    attempts: int = 1
    items: int = 0
    error: str | None = None
    free: bool = False
    started_at: float | None = None


def _count(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def _money(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) and x >= 0 else None


def _positive(value: object, name: str) -> float | None:
    """``value`` as a float (None stays None), within its range (``core._limits``)."""
    return None if value is None else float(checked(value, name))


def usage_from_body(body: Mapping[str, Any]) -> dict[str, Any]:
    """Token counts, reported cost and model from a provider response.

    Malformed fields are ignored; ``total_tokens`` is never derived from the other two.
    """
    usage = body.get("usage")
    usage = usage if isinstance(usage, Mapping) else {}
    cost = _money(usage.get("cost_usd"))
    if cost is None:
        cost = _money(usage.get("total_cost_usd"))
    model = body.get("model")
    return {
        "prompt_tokens": _count(usage.get("prompt_tokens")),
        "completion_tokens": _count(usage.get("completion_tokens")),
        "total_tokens": _count(usage.get("total_tokens")),
        "reported_cost_usd": cost,
        "model": model.strip() if isinstance(model, str) and model.strip() else None,
    }


def _check_prices(prices: Prices | None) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for model, rate in (prices or {}).items():
        if rate == "reported":  # the provider reports the cost: no rate to derive it from
            out[_model_key(model)] = {}
            continue
        if not isinstance(rate, Mapping):
            raise ValueError(
                f"prices[{model!r}] must be a mapping such as "
                "{'input_per_million': 0.15, 'output_per_million': 0.6}, or 'reported'."
            )
        unknown = set(rate) - {"input_per_million", "output_per_million"}
        if unknown:
            raise ValueError(
                f"prices[{model!r}] has unknown key(s) {sorted(unknown)}; "
                "use input_per_million and output_per_million (USD per million tokens)."
            )
        clean: dict[str, float] = {}
        for side, value in rate.items():
            x = _money(value)
            if x is None:
                raise ValueError(
                    f"prices[{model!r}][{side!r}] must be a number >= 0; got {value!r}."
                )
            clean[side] = x
        out[_model_key(model)] = clean
    return out


def _model_key(model: str) -> str:
    """Lower-cased, without a ``vendor/`` prefix: how models and price entries are matched."""
    name = model.strip().lower()
    return name.split("/", 1)[1] if "/" in name else name


class Ledger:
    """Every call of a run, its cost, and the optional budget. Thread-safe.

    Args:
        prices: USD per million tokens by model name, e.g.
            ``{"gpt-4o-mini": {"input_per_million": 0.15, "output_per_million": 0.6}}``.
            Models match by longest prefix, case-insensitively, ignoring a ``vendor/`` prefix.
            A call is priced when every side with tokens has a rate.
        budget_usd: stop calling providers once more than this much has been spent.
        deadline: stop calling providers this many seconds after the run began
            (:meth:`reset`); calls in flight then are abandoned.
        secrets: API keys to remove from every error (clients add their own).
        rate: the run's rate limit, shared by every call of the run (``ef.evaluate`` may
            set it for a run; see ``RateLimit``).

    Raises:
        ValueError: a malformed price table, or a budget or deadline outside its range
            (``core._limits.LIMITS``).
    """

    def __init__(
        self,
        *,
        prices: Prices | None = None,
        budget_usd: float | None = None,
        deadline: float | None = None,
        secrets: Sequence[Secret | None] = (),
        rate: RateLimit | None = None,
    ) -> None:
        self.rate = rate
        self.deadline = _positive(deadline, "deadline")
        self.secrets: tuple[Secret | None, ...] = tuple(secrets)
        self._started = time.monotonic()
        budget = _positive(budget_usd, "budget_usd")
        self.prices = _check_prices(prices)
        self.budget_usd = budget
        self._lock = threading.Lock()
        self._rows: list[dict[str, Any]] = []
        self._spent = 0.0
        self._halted = False
        self._unpriced: str | None = None  # a model a budget cannot bind on
        self.on_progress: Callable[[int], None] | None = None

    def progressed(self, items: int) -> None:
        """Clients call this as items are done (texts embedded, prompts answered), for the
        progress display of the call under way (``on_progress``, set by ``Providers``)."""
        hook = self.on_progress
        if hook is not None:
            hook(items)

    # -- recording ------------------------------------------------------------------------

    def reset(self) -> None:
        """Forget every call and any spending: a new run starts."""
        with self._lock:
            self._rows.clear()
            self._spent = 0.0
            self._halted = False
            self._unpriced = None
            self._started = time.monotonic()

    def priced(self, model: str | None, *, output: bool = True) -> bool:
        """Whether calls to ``model`` get a derived cost: it has an input rate (and an output
        rate, for a model that writes tokens, ``output``)."""
        rate = self._rate(model)
        if rate == {}:  # declared "reported": the provider gives each call's cost
            return True
        return (
            rate is not None
            and "input_per_million" in rate
            and (not output or "output_per_million" in rate)
        )

    def check(self) -> None:
        """Raise ``StopCallsError`` when the budget is spent or the deadline has passed;
        call before every call."""
        if self._halted:
            raise BudgetExhaustedError(self.halt_message())
        if self.remaining_seconds() == 0.0:
            raise DeadlineExceededError(self.deadline_message(sent=False))

    def remaining_seconds(self) -> float | None:
        """Seconds left before the deadline (``0.0`` once passed), ``None`` without one."""
        if self.deadline is None:
            return None
        return max(0.0, self.deadline - (time.monotonic() - self._started))

    def deadline_message(self, *, sent: bool) -> str:
        what = "the call was abandoned" if sent else "the provider was not called"
        return f"Deadline exceeded: the run's {self.deadline:g} s provider deadline passed; {what}."

    def redact(self, text: str, *secrets: Secret | None) -> str:
        """``text`` without the ledger's secrets or ``secrets``, in any form (the one
        redaction point of provider errors)."""
        return redact(text, *self.secrets, *secrets)

    def halt_message(self) -> str:
        assert self.budget_usd is not None
        if self._unpriced is not None:
            return f"{self._unpriced_reason()}; the provider was not called."
        return (
            f"Budget exhausted: spent ${self._spent:.4f} of a ${self.budget_usd:.4f} budget; "
            "the provider was not called."
        )

    def _unpriced_reason(self) -> str:
        return (
            f"The ${self.budget_usd:.4f} budget cannot bind: a call to model "
            f"'{self._unpriced}' reported no cost and the model has no price (give one: "
            f"--price {self._unpriced}=INPUT/OUTPUT, USD per million tokens)"
        )

    def record(self, call: Call) -> None:
        started = call.started_at
        if started is None:
            started = time.time() - (call.latency_ms or 0.0) / 1000.0
        cost, source = self._price(call)
        derived = ["latency_ms"] if call.latency_ms is not None else []
        if source in {"derived", "free"}:
            derived.insert(0, "cost_usd")
        row = {
            "kind": call.kind,
            "provider": call.provider,
            "model": call.model,
            "prompt_tokens": call.prompt_tokens,
            "completion_tokens": call.completion_tokens,
            "total_tokens": call.total_tokens,
            "cost_usd": cost,
            "cost_source": source,
            "latency_ms": call.latency_ms,
            "attempts": call.attempts,
            "items": call.items,
            "error": self.redact(call.error) if call.error is not None else None,
            "derived": derived,
            "started_at": started,
        }
        with self._lock:
            self._rows.append(row)
            if cost is not None:
                self._spent += cost
            if self.budget_usd is not None and self._spent > self.budget_usd:
                self._halted = True
            used = any((call.prompt_tokens, call.completion_tokens, call.total_tokens))
            if self.budget_usd is not None and source == "unpriced" and used and not self._halted:
                # Spending it cannot see would pass as $0: stop rather than run unbounded.
                self._unpriced = call.model or UNNAMED_MODEL
                self._halted = True

    def _price(self, call: Call) -> tuple[float | None, CostSource]:
        if call.reported_cost_usd is not None:
            return call.reported_cost_usd, "reported"
        if call.free:
            return 0.0, "free"
        rate = self._rate(call.model)
        tokens_in, tokens_out = call.prompt_tokens or 0, call.completion_tokens or 0
        if call.prompt_tokens is None and call.completion_tokens is None:
            if call.total_tokens is None:
                return None, "unpriced"
            tokens_in = call.total_tokens  # embeddings endpoints may report only the total
        if rate is None:
            return None, "unpriced"
        if (tokens_in and "input_per_million" not in rate) or (
            tokens_out and "output_per_million" not in rate
        ):
            return None, "unpriced"
        cost = (
            tokens_in * rate.get("input_per_million", 0.0)
            + tokens_out * rate.get("output_per_million", 0.0)
        ) / 1e6
        return cost, "derived"

    def _rate(self, model: str | None) -> dict[str, float] | None:
        if not model or not self.prices:
            return None
        name = _model_key(model)
        matches = [k for k in self.prices if name.startswith(k)]
        return self.prices[max(matches, key=len)] if matches else None

    # -- reading --------------------------------------------------------------------------

    @property
    def spent_usd(self) -> float:
        return self._spent

    @property
    def halted(self) -> bool:
        return self._halted

    def frame(self) -> pl.DataFrame:
        """One row per call, in the order the calls finished (``ef.schema.USAGE_SCHEMA``)."""
        with self._lock:
            rows = list(self._rows)
        return (
            pl.DataFrame(rows, schema=C.USAGE_SCHEMA, orient="row")
            if rows
            else pl.DataFrame(schema=C.USAGE_SCHEMA)
        )

    def cost_summary(self) -> dict[str, Any]:
        """The report's ``cost`` block.

        A call that carries neither tokens nor a cost (a failed request) is not counted.
        Models are sorted by cost, most expensive first.
        """
        usage = self.frame().filter(
            pl.any_horizontal(
                pl.col(
                    "prompt_tokens", "completion_tokens", "total_tokens", "cost_usd"
                ).is_not_null()
            )
        )
        tokens = ("prompt_tokens", "completion_tokens", "total_tokens")
        priced = pl.col("cost_usd").is_not_null()
        models = (
            usage.with_columns(pl.col("model").fill_null(UNNAMED_MODEL))
            .group_by("model", maintain_order=True)
            .agg(
                pl.len().alias("calls"),
                *[pl.col(t).sum() for t in tokens],
                pl.col("cost_usd").sum(),
                priced.all().alias("priced"),
            )
            .sort("cost_usd", "model", descending=[True, False])
        )
        unpriced = usage.filter(~priced)
        total = float(usage.get_column("cost_usd").sum())

        def by_source(source: str) -> float:
            return float(usage.filter(pl.col("cost_source") == source)["cost_usd"].sum())

        return {
            "total_usd": total,
            "reported_usd": by_source("reported"),
            "derived_usd": by_source("derived"),
            "complete": unpriced.height == 0,
            "calls": usage.height,
            "unpriced_calls": unpriced.height,
            "unpriced_models": sorted(
                set(unpriced.get_column("model").fill_null(UNNAMED_MODEL).to_list())
            ),
            **{t: int(usage.get_column(t).sum()) for t in tokens},
            "models": models.to_dicts(),
        }

    def budget_summary(self, completed_rows: int, total_rows: int) -> dict[str, Any] | None:
        """The report's ``budget`` block, or ``None`` when no budget was set."""
        if self.budget_usd is None:
            return None
        reason = (
            f"Spent ${self._spent:.4f} of a ${self.budget_usd:.4f} budget after "
            f"{completed_rows} row(s)."
            if self._halted
            else None
        )
        if self._unpriced is not None:
            reason = f"{self._unpriced_reason()}; stopped after {completed_rows} row(s)."
        return {
            "limit_usd": self.budget_usd,
            "spent_usd": self._spent,
            "halted": self._halted,
            "completed_rows": completed_rows if self._halted else total_rows,
            "reason": reason,
        }
