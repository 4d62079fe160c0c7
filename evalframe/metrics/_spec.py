"""A metric's identity as a value: definitions, parameters, canonical ids and spec strings.

A *definition* (``MetricDef``) is what a registration creates: the alias, its family and
dimension, and the function that builds the metric's column expressions. A *metric*
(``Metric``) is a definition with its parameters bound. Its canonical id is the alias followed
by its non-default parameters, ``rouge-l(beta=2.0)``; that one string is the registry key, the
CLI argument, the report label and the store's ``metric`` value.
"""

from __future__ import annotations

import inspect
import json
import math
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, Protocol, get_args, get_origin

import polars as pl

from evalframe.core._errors import MetricError

__all__ = [
    "DIMENSIONS",
    "Derived",
    "Dimension",
    "Metric",
    "MetricDef",
    "Need",
    "Param",
    "Range",
    "Scored",
    "format_value",
    "parse_spec",
]

Dimension = Literal["correctness", "groundedness", "safety", "trajectory", "performance"]
DIMENSIONS: tuple[str, ...] = get_args(Dimension)


@dataclass(frozen=True, slots=True)
class Scored:
    """The column expressions a metric builds.

    Attributes:
        score: Float64 in [0, 1]; null where the row cannot be scored.
        error: Utf8 message for rows that cannot be scored; null where scored.
        details: optional struct of per-row details (counts, intermediate values).
        prepare: intermediate columns computed once before the three above, which read
            them with ``pl.col(name)``: a batched kernel's struct, typically.
        concurrent: whether the runner may score the metric on another thread alongside
            other such metrics: its kernels are pure functions of the frame and keep any
            state they share under locks.
    """

    score: pl.Expr
    error: pl.Expr | None = None
    details: pl.Expr | None = None
    prepare: Mapping[str, pl.Expr] = field(default_factory=dict)
    concurrent: bool = False


@dataclass(frozen=True, slots=True)
class Derived:
    """A generated column computed from other columns of the frame, with no provider: part
    of the metric. Metrics that declare the same ``column`` share one computation per frame.

    Attributes:
        column: the generated column's name (``actual_output__retrieval``).
        compute: the frame in, a frame of the column's struct fields out (row-aligned).
    """

    column: str
    compute: Callable[[pl.DataFrame], pl.DataFrame]


class Need(Protocol):
    """A provider-filled column a metric reads (an embedding, a judge reply), as plain
    frozen data: the enrich layer dispatches on the value's type and fills ``column`` (with,
    say, a ``<column>__error`` column for rows the provider could not serve). Needs with the
    same ``column`` are filled once.
    """

    @property
    def column(self) -> str: ...


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


@dataclass(frozen=True, slots=True)
class Range:
    """The valid values of a numeric metric parameter, declared in the builder's signature.

    ``max_tokens: Annotated[int, Range(ge=1)] = 1024``. ``ge``/``le`` are inclusive bounds,
    ``gt``/``lt`` exclusive ones. Whatever the range, a float must be finite and an integer
    must fit in Int64; a value outside is a ``MetricError`` naming the parameter, raised
    when the spec is parsed.
    """

    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None

    def describe(self) -> str:
        """The bounds in words: ``at least 1``, ``> 0 and at most 100``."""
        parts = []
        if self.ge is not None:
            parts.append(f"at least {format_value(self.ge)}")
        if self.gt is not None:
            parts.append(f"> {format_value(self.gt)}")
        if self.le is not None:
            parts.append(f"at most {format_value(self.le)}")
        if self.lt is not None:
            parts.append(f"< {format_value(self.lt)}")
        return " and ".join(parts) or "any value"

    def admits(self, value: float) -> bool:
        return not (
            (self.ge is not None and value < self.ge)
            or (self.gt is not None and value <= self.gt)
            or (self.le is not None and value > self.le)
            or (self.lt is not None and value >= self.lt)
        )


@dataclass(frozen=True, slots=True)
class Param:
    """One keyword parameter of a metric, read from its function's signature."""

    name: str
    annotation: Any
    default: Any
    required: bool
    range: Range | None = None

    def check(self, value: Any, metric: str) -> None:
        """Refuse a coerced value that is not finite, not an Int64, or out of ``range``."""
        numbers = value if isinstance(value, tuple) else (value,)
        for v in numbers:
            if isinstance(v, bool) or not isinstance(v, int | float):
                continue
            where = f"Metric '{metric}' parameter '{self.name}'"
            if isinstance(v, float) and not math.isfinite(v):
                raise MetricError(f"{where} must be a finite number; got {v}.")
            if isinstance(v, int) and not _INT64_MIN <= v <= _INT64_MAX:
                raise MetricError(f"{where} must fit in a 64-bit integer; got {v}.")
            if self.range is not None and not self.range.admits(v):
                raise MetricError(f"{where} must be {self.range.describe()}; got {v}.")


@dataclass(frozen=True, eq=False)
class MetricDef:
    """A registered metric definition: an alias and the function building its expressions."""

    name: str
    family: str
    dimension: str
    summary: str
    build: Callable[..., Scored]
    params: tuple[Param, ...]
    threshold: float = 0.5
    derived: Callable[..., Sequence[Derived]] | None = None
    needs: Callable[..., Sequence[Need]] | None = None
    doc: str = ""
    higher_is_better: bool = True

    def bind(self, **params: Any) -> Metric:
        """Validate ``params`` and return the metric value they define."""
        threshold = params.pop("threshold", self.threshold)
        known = {p.name: p for p in self.params}
        unknown = sorted(set(params) - set(known))
        if unknown:
            allowed = ", ".join([*known, "threshold"])
            raise MetricError(
                f"Metric '{self.name}' has no parameter {', '.join(map(repr, unknown))}; "
                f"it takes: {allowed}."
            )
        bound: dict[str, Any] = {}
        for p in self.params:
            if p.name in params:
                bound[p.name] = coerce(params[p.name], p.annotation, self.name, p.name)
                if bound[p.name] is not None:
                    p.check(bound[p.name], self.name)
            elif p.required:
                listed = get_origin(p.annotation) in (tuple, list, Sequence)
                example = "[a,b,c]" if listed else "..."
                raise MetricError(
                    f"Metric '{self.name}' requires the parameter '{p.name}'; it has no "
                    f"default (for example {self.name}({p.name}={example}))."
                )
            else:
                bound[p.name] = p.default
        threshold = coerce(threshold, float, self.name, "threshold")
        if not 0.0 <= threshold <= 1.0:  # NaN fails this too
            raise MetricError(f"Metric '{self.name}' threshold must be in [0, 1]; got {threshold}.")
        metric = Metric(self, tuple(bound.items()), threshold)
        metric.expressions()  # parameter checks inside the builder run at bind time
        return metric


@dataclass(frozen=True)
class Metric:
    """A metric with its parameters bound: a frozen, hashable value.

    Examples:
        >>> import evalframe as ef
        >>> ef.metrics.rouge_l(beta=2.0).id
        'rouge-l(beta=2.0)'
        >>> ef.metrics.get("exact-match(threshold=1.0)").threshold
        1.0
    """

    definition: MetricDef
    params: tuple[tuple[str, Any], ...]
    threshold: float = 0.5
    _cache: dict[str, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)

    @property
    def name(self) -> str:
        """The alias, e.g. ``rouge-l``."""
        return self.definition.name

    @property
    def family(self) -> str:
        return self.definition.family

    @property
    def dimension(self) -> str:
        return self.definition.dimension

    @property
    def higher_is_better(self) -> bool:
        """Whether a higher score is better: a row passes when ``score >= threshold``; for a
        lower-is-better metric (a share of failures), when ``score <= threshold``."""
        return self.definition.higher_is_better

    @property
    def id(self) -> str:
        """The canonical id: the alias and every non-default parameter, in signature order."""
        parts = [
            f"{p.name}={format_value(value)}"
            for p, (_, value) in zip(self.definition.params, self.params, strict=True)
            if p.required or value != p.default
        ]
        if self.threshold != self.definition.threshold:
            parts.append(f"threshold={format_value(self.threshold)}")
        return f"{self.name}({', '.join(parts)})" if parts else self.name

    @property
    def kwargs(self) -> dict[str, Any]:
        return dict(self.params)

    def expressions(self) -> Scored:
        """The metric's column expressions over the canonical columns."""
        if "scored" not in self._cache:
            self._cache["scored"] = self.definition.build(**self.kwargs)
        return typing.cast(Scored, self._cache["scored"])

    def derived(self) -> list[Derived]:
        """The pure generated columns this metric reads (computed by the runner)."""
        if self.definition.derived is None:
            return []
        return list(self.definition.derived(**self.kwargs))

    def needs(self) -> list[Need]:
        """The provider-filled columns this metric reads (filled by the enrich layer)."""
        if self.definition.needs is None:
            return []
        return list(self.definition.needs(**self.kwargs))

    def __str__(self) -> str:
        return self.id

    def __repr__(self) -> str:
        return f"Metric({self.id!r})"


def params_of(fn: Callable[..., Any]) -> tuple[Param, ...]:
    """Read a metric builder's keyword parameters and their resolved annotations."""
    hints = typing.get_type_hints(fn, include_extras=True)
    out = []
    for p in inspect.signature(fn).parameters.values():
        if p.kind is not inspect.Parameter.KEYWORD_ONLY:
            raise TypeError(f"metric parameters must be keyword-only: {fn.__name__}({p.name})")
        required = p.default is inspect.Parameter.empty
        annotation, valid = hints.get(p.name, Any), None
        if get_origin(annotation) is Annotated:
            annotation, *extras = get_args(annotation)
            valid = next((e for e in extras if isinstance(e, Range)), None)
        default = None if required else p.default
        out.append(Param(p.name, annotation, default, required, valid))
    return tuple(out)


# --- values: formatting, parsing and coercion ----------------------------------------------

_BARE = re.compile(r"^[A-Za-z0-9_.:/@+\-]+$")


def format_value(value: Any) -> str:
    """Format a parameter value for a canonical id: ``2.0``, ``true``, ``[low,high]``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        if _BARE.match(value) and value not in {"true", "false", "null"}:
            return value
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, Sequence):
        return "[" + ",".join(format_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        items = ",".join(f"{k}:{format_value(v)}" for k, v in value.items())
        return "{" + items + "}"
    return repr(value)


@dataclass(frozen=True, slots=True)
class _Raw:
    """A scalar as written in a spec string; typed later from the parameter's annotation."""

    text: str
    quoted: bool


def parse_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """Split ``name(key=value, ...)`` into the name and raw parameter values.

    Lists are written ``[a,b,c]``; strings may be quoted with ``"`` or ``'``.

    Examples:
        >>> parse_spec("retrieval-ndcg-at-k(k=10)")[0]
        'retrieval-ndcg-at-k'
    """
    text = spec.strip()
    match = re.fullmatch(r"([A-Za-z0-9_.:\-]+)\s*(?:\((.*)\))?", text, flags=re.DOTALL)
    if not match:
        raise MetricError(
            f"Metric spec {spec!r} is not of the form name or name(key=value, ...), "
            "e.g. rouge-l(beta=2.0)."
        )
    name, body = match.group(1), match.group(2)
    params: dict[str, Any] = {}
    if body and body.strip():
        parser = _SpecParser(body, spec)
        for key, value in parser.items():
            if key in params:
                raise MetricError(f"Metric spec {spec!r} sets '{key}' twice.")
            params[key] = value
    return name, params


class _SpecParser:
    def __init__(self, body: str, spec: str) -> None:
        self.s, self.i, self.spec = body, 0, spec

    def fail(self, what: str) -> MetricError:
        return MetricError(f"Metric spec {self.spec!r}: {what} at position {self.i} of {self.s!r}.")

    def ws(self) -> None:
        while self.i < len(self.s) and self.s[self.i].isspace():
            self.i += 1

    def items(self) -> list[tuple[str, Any]]:
        out = []
        while True:
            self.ws()
            m = re.compile(r"[A-Za-z_][A-Za-z0-9_]*").match(self.s, self.i)
            if not m:
                raise self.fail("expected a parameter name")
            self.i = m.end()
            self.ws()
            if self.i >= len(self.s) or self.s[self.i] != "=":
                raise self.fail(f"expected '=' after '{m.group()}'")
            self.i += 1
            out.append((m.group(), self.value()))
            self.ws()
            if self.i >= len(self.s):
                return out
            if self.s[self.i] != ",":
                raise self.fail("expected ',' between parameters")
            self.i += 1

    def value(self) -> Any:
        self.ws()
        if self.i >= len(self.s):
            raise self.fail("expected a value")
        c = self.s[self.i]
        if c == "[":
            self.i += 1
            items: list[Any] = []
            self.ws()
            if self.i < len(self.s) and self.s[self.i] == "]":
                self.i += 1
                return items
            while True:
                items.append(self.value())
                self.ws()
                if self.i < len(self.s) and self.s[self.i] == ",":
                    self.i += 1
                elif self.i < len(self.s) and self.s[self.i] == "]":
                    self.i += 1
                    return items
                else:
                    raise self.fail("expected ',' or ']' in a list")
        if c in "\"'":
            end = self.i + 1
            chars = []
            while end < len(self.s) and self.s[end] != c:
                if self.s[end] == "\\" and end + 1 < len(self.s):
                    end += 1
                chars.append(self.s[end])
                end += 1
            if end >= len(self.s):
                raise self.fail("unterminated string")
            self.i = end + 1
            return _Raw("".join(chars), quoted=True)
        m = re.compile(r"[^,\[\]]+").match(self.s, self.i)
        if not m:
            raise self.fail("expected a value")
        self.i = m.end()
        return _Raw(m.group().strip(), quoted=False)


def coerce(value: Any, annotation: Any, metric: str, param: str) -> Any:
    """Convert a parsed or Python value to the type a parameter is annotated with."""

    def bad(expected: str) -> MetricError:
        shown = value.text if isinstance(value, _Raw) else repr(value)
        return MetricError(
            f"Metric '{metric}' parameter '{param}' must be {expected}; got {shown}."
        )

    origin = get_origin(annotation)
    if origin in (types.UnionType, typing.Union):
        options = get_args(annotation)
        if type(None) in options and (
            value is None or (isinstance(value, _Raw) and not value.quoted and value.text == "null")
        ):
            return None
        errors = []
        for option in options:
            if option is type(None):
                continue
            try:
                return coerce(value, option, metric, param)
            except MetricError as exc:
                errors.append(exc)
        raise errors[0] if errors else bad(str(annotation))
    if origin is Literal:
        allowed = get_args(annotation)
        raw = value.text if isinstance(value, _Raw) else value
        if raw not in allowed:
            raise bad("one of " + ", ".join(map(str, allowed)))
        return raw
    if annotation is Any:
        return _plain(value)
    if annotation is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, _Raw) and value.text.lower() in {"true", "false"}:
            return value.text.lower() == "true"
        raise bad("true or false")
    if annotation is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, _Raw) and re.fullmatch(r"[+-]?\d+", value.text):
            return int(value.text)
        raise bad("an integer")
    if annotation is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, _Raw):
            try:
                return float(value.text)
            except ValueError:
                pass
        raise bad("a number")
    if annotation is str:
        if isinstance(value, str):
            return value
        if isinstance(value, _Raw):
            return value.text
        raise bad("a string")
    if origin in (list, tuple, Sequence) or annotation in (list, tuple):
        if isinstance(value, str | bytes | _Raw) or not isinstance(value, Sequence):
            raise bad("a list such as [a,b,c]")
        args = get_args(annotation)
        item_type = args[0] if args else Any
        return tuple(coerce(v, item_type, metric, param) for v in value)
    if isinstance(annotation, type):
        if isinstance(value, annotation):
            return value
        raise bad(getattr(annotation, "__name__", str(annotation)))
    return _plain(value)


def _plain(value: Any) -> Any:
    """A parsed value with no annotation to guide it: numbers, booleans, strings, lists."""
    if isinstance(value, list | tuple):
        return tuple(_plain(v) for v in value)
    if not isinstance(value, _Raw):
        return value
    if value.quoted:
        return value.text
    lowered = value.text.lower()
    if lowered in {"true", "false"}:
        return lowered == "true"
    if lowered == "null":
        return None
    for cast in (int, float):
        try:
            return cast(value.text)
        except ValueError:
            continue
    return value.text
