"""Model prices for derived cost, so ``--budget-usd`` binds on providers that report none.

Three sources, the later winning per model: a ``[prices]`` table in the config file
(``evalframe.toml``, ``$EVALFRAME_CONFIG`` or ``[tool.evalframe.prices]`` in
``pyproject.toml``), a ``--prices FILE`` (TOML or JSON, the same table), and ``--price
MODEL=INPUT/OUTPUT`` options. Prices are USD per million tokens: ``INPUT/OUTPUT`` (a chat
model), or one number for an embedding model (input tokens only); ``reported`` says the
provider reports each call's cost itself. In a table a model's value is that text, a number,
or ``{input_per_million = ..., output_per_million = ...}``.
"""

from __future__ import annotations

import json
import math
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalframe.core._errors import EvalframeError

__all__ = ["parse_price", "read_prices"]

Rates = dict[str, float] | str  # "reported": the provider reports each call's cost


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


def _rates(value: Any, where: str) -> Rates:
    """A model's rates from ``INPUT/OUTPUT`` text, a number or a table."""
    expected = (
        "INPUT/OUTPUT (USD per million input and output tokens, e.g. 0.15/0.60), one number "
        "for an embedding model, 'reported' for a provider that reports each call's cost, or "
        "a table of input_per_million and output_per_million"
    )
    if isinstance(value, bool):
        raise EvalframeError(f"{where} must be {expected}; got {value!r}.")
    if isinstance(value, int | float):
        number = _number(str(value))
        if number is None:
            raise EvalframeError(f"{where} must be a number >= 0; got {value!r}.")
        return {"input_per_million": number}
    if isinstance(value, Mapping):
        out: dict[str, float] = {}
        for side, amount in value.items():
            if side not in ("input_per_million", "output_per_million"):
                raise EvalframeError(f"{where} has an unknown key {side!r}; it must be {expected}.")
            number = None if isinstance(amount, bool) else _number(str(amount))
            if number is None:
                raise EvalframeError(f"{where} {side} must be a number >= 0; got {amount!r}.")
            out[side] = number
        return out
    if isinstance(value, str) and value.strip().lower() == "reported":
        return "reported"
    if isinstance(value, str):
        parts = value.split("/")
        numbers = [_number(p.strip()) for p in parts]
        if len(parts) in (1, 2) and all(n is not None for n in numbers):
            sides = ("input_per_million", "output_per_million")
            return {side: n for side, n in zip(sides, numbers, strict=False) if n is not None}
    raise EvalframeError(f"{where} must be {expected}; got {value!r}.")


def parse_price(text: str) -> tuple[str, Rates]:
    """``MODEL=INPUT/OUTPUT`` as the model and its rates.

    Examples:
        >>> parse_price("gpt-4o-mini=0.15/0.60")
        ('gpt-4o-mini', {'input_per_million': 0.15, 'output_per_million': 0.6})
    """
    model, sep, rate = text.rpartition("=")
    if not sep or not model.strip():
        raise EvalframeError(
            f"--price {text!r} is not MODEL=INPUT/OUTPUT (USD per million tokens, e.g. "
            "--price gpt-4o-mini=0.15/0.60)."
        )
    return model.strip(), _rates(rate, f"--price {model.strip()}")


def _table(table: Any, where: str) -> dict[str, Rates]:
    if not isinstance(table, Mapping):
        raise EvalframeError(f"{where} must be a table of model = price.")
    return {str(model): _rates(value, f"{where} model '{model}'") for model, value in table.items()}


def _file(path: Path) -> dict[str, Rates]:
    try:
        text = path.read_text(encoding="utf-8")
        table = json.loads(text) if path.suffix.lower() == ".json" else tomllib.loads(text)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise EvalframeError(f"{path}: cannot read the prices: {exc}") from None
    if path.suffix.lower() != ".json" and isinstance(table, Mapping) and "prices" in table:
        table = table["prices"]  # a TOML file may hold its table under [prices]
    return _table(table, str(path))


def read_prices(options: tuple[str, ...], file: Path | None) -> dict[str, Rates] | None:
    """The prices of a command: the config file's ``[prices]``, then ``file``, then the
    ``--price`` options, the later winning per model; None when there are none."""
    from evalframe.cli._profiles import config_table

    path, table = config_table("prices")
    prices = _table(table, f"{path}: [prices]") if path is not None else {}
    if file is not None:
        prices.update(_file(file))
    prices.update(parse_price(text) for text in options)
    return prices or None
