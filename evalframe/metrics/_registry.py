"""The metric registry: built-in aliases, the ``@metric`` decorator and entry-point plugins."""

from __future__ import annotations

import dataclasses
import difflib
import functools
import importlib
import inspect
from collections.abc import Callable, Iterable, Sequence
from importlib.metadata import entry_points
from typing import Any, Final

from evalframe.core._errors import MetricError
from evalframe.metrics._spec import (
    DIMENSIONS,
    Derived,
    Metric,
    MetricDef,
    Need,
    Scored,
    coerce,
    params_of,
    parse_spec,
)

__all__ = [
    "Alias",
    "MetricFactory",
    "alias",
    "aliases",
    "available",
    "definition",
    "get",
    "metric",
    "register",
    "resolve",
]

ENTRY_POINT_GROUP = "evalframe.metrics"

_REGISTRY: dict[str, MetricDef] = {}
_ALIASES: dict[str, Alias] = {}
_plugins_loaded = False

BUILTIN_FAMILIES: Final = (
    "agent",
    "citation",
    "conversation",
    "deterministic",
    "judge",
    "judge_toolbox",
    "lexical",
    "mcp",
    "operational",
    "ordinal",
    "rag",
    "reliability",
    "retrieval",
    "safety",
    "semantic",
    "similarity",
    "structural",
    "trajectory",
)
"""The modules of ``evalframe.metrics`` whose ``@metric`` registrations are the built-ins."""

_builtins = "absent"


def load_builtins() -> None:
    """Import the built-in families once, in a fixed order, on first use of the registry.

    ``import evalframe`` leaves them (and NumPy with them) unloaded; any lookup, listing or
    registration loads them first, so built-ins keep their order ahead of user metrics.
    """
    global _builtins  # noqa: PLW0603 - a once-only latch, like the plugins'
    if _builtins != "absent":
        return
    _builtins = "loading"
    for family in BUILTIN_FAMILIES:
        importlib.import_module(f"evalframe.metrics.{family}")
    importlib.import_module("evalframe.metrics._aliases")
    importlib.import_module("evalframe.metrics._synthesis_prompts")  # listed with the others
    _builtins = "loaded"


@dataclasses.dataclass(frozen=True, slots=True)
class Alias:
    """Another name for a metric spec: the name a user of another tool types.

    Attributes:
        name: the alias, e.g. ``embedding-similarity``.
        target: the spec it stands for, e.g. ``cosine-embedding(threshold=0.8)``; parameters
            given with the alias are added to (and override) the target's.
        note: where the name comes from, shown by ``evalframe metrics``.
    """

    name: str
    target: str
    note: str = ""

    def resolve(self, params: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """The target's name and its parameters with ``params`` over them."""
        name, fixed = parse_spec(self.target)
        return name, {**fixed, **params}

    @property
    def definition(self) -> MetricDef:
        """The target metric's definition."""
        return definition(self.resolve({})[0])

    @property
    def threshold(self) -> float:
        """The pass threshold the alias gives (its target's unless the alias sets one)."""
        fixed = self.resolve({})[1].get("threshold")
        if fixed is None:
            return self.definition.threshold
        return float(coerce(fixed, float, self.name, "threshold"))


class MetricFactory:
    """What ``@metric`` returns: call it with parameters to get a ``Metric`` value.

    Examples:
        >>> import evalframe as ef
        >>> ef.metrics.rouge_l(beta=2.0)
        Metric('rouge-l(beta=2.0)')
    """

    def __init__(self, definition: MetricDef) -> None:
        self.definition = definition
        functools.update_wrapper(self, definition.build)

    @property
    def name(self) -> str:
        return self.definition.name

    def __call__(self, **params: Any) -> Metric:
        return self.definition.bind(**params)

    def __repr__(self) -> str:
        return f"<metric factory {self.definition.name!r}>"


def metric(
    name: str,
    *,
    family: str = "custom",
    dimension: str = "correctness",
    threshold: float = 0.5,
    derived: Callable[..., Sequence[Derived]] | None = None,
    needs: Callable[..., Sequence[Need]] | None = None,
    replace: bool = False,
    higher_is_better: bool = True,
) -> Callable[[Callable[..., Scored]], MetricFactory]:
    """Register a metric builder under ``name`` and return its factory.

    The builder takes keyword-only parameters and returns ``Scored`` column expressions over
    the canonical columns (``actual_output``, ``expected_output``, ``metadata``, ...).

    Args:
        name: the kebab-case alias, e.g. ``"jaccard-words"``.
        family: the family shown by ``evalframe metrics``.
        dimension: one of correctness, groundedness, safety, trajectory, performance.
        threshold: the default pass threshold (a sample passes when ``score >= threshold``,
            or ``score <= threshold`` for a lower-is-better metric).
        derived: given the bound parameters, the pure generated columns the metric reads.
        needs: given the bound parameters, the provider-filled columns the metric reads.
        replace: allow replacing an existing registration of the same name.
        higher_is_better: ``False`` for a metric whose score measures what should be low (a
            share of contradicted contexts, say): rows then pass at or below the threshold.

    Examples:
        >>> import polars as pl
        >>> import evalframe as ef
        >>> @ef.metrics.metric("same-length", replace=True)
        ... def same_length() -> ef.metrics.Scored:
        ...     a = pl.col("actual_output").str.len_chars()
        ...     e = pl.col("expected_output").str.len_chars()
        ...     return ef.metrics.Scored(score=(a == e).cast(pl.Float64))
        >>> same_length().id
        'same-length'
    """
    if dimension not in DIMENSIONS:
        raise MetricError(f"Metric '{name}' dimension must be one of {', '.join(DIMENSIONS)}.")

    def decorate(build: Callable[..., Scored]) -> MetricFactory:
        doc = inspect.getdoc(build) or ""
        definition = MetricDef(
            name=name,
            family=family,
            dimension=dimension,
            summary=doc.split("\n", 1)[0],
            build=build,
            params=params_of(build),
            threshold=threshold,
            derived=derived,
            needs=needs,
            doc=doc,
            higher_is_better=higher_is_better,
        )
        _add(definition, replace=replace)
        return MetricFactory(definition)

    return decorate


def register(item: Metric | MetricDef | MetricFactory, *, replace: bool = False) -> None:
    """Register a user metric so its name resolves in specs, YAML and the CLI.

    A ``Metric`` instance registers its definition with the instance's parameters as the
    defaults, so the bare alias gives back exactly that instance.
    """
    if isinstance(item, MetricFactory):
        definition = item.definition
    elif isinstance(item, Metric):
        bound = dict(item.params)
        definition = MetricDef(
            name=item.name,
            family=item.family,
            dimension=item.dimension,
            summary=item.definition.summary,
            build=item.definition.build,
            params=tuple(
                dataclasses.replace(p, default=bound[p.name], required=False)
                for p in item.definition.params
            ),
            threshold=item.threshold,
            derived=item.definition.derived,
            needs=item.definition.needs,
            doc=item.definition.doc,
            higher_is_better=item.definition.higher_is_better,
        )
    elif isinstance(item, MetricDef):
        definition = item
    else:
        raise MetricError(f"Cannot register {type(item).__name__}; expected a Metric.")
    _add(definition, replace=replace)


def _add(definition: MetricDef, *, replace: bool) -> None:
    load_builtins()
    if definition.name in _ALIASES:
        raise MetricError(f"The name '{definition.name}' is already an alias.")
    existing = _REGISTRY.get(definition.name)
    if existing is not None and not replace and existing.build is not definition.build:
        raise MetricError(
            f"A metric named '{definition.name}' is already registered; "
            "pass replace=True to override it."
        )
    _REGISTRY[definition.name] = definition


def alias(name: str, target: str, *, note: str = "") -> Alias:
    """Register ``name`` as another name for the metric spec ``target``.

    ``get("name(k=v)")`` resolves to the target with ``k=v`` added: the run records the
    target's canonical id, so an alias and the spec it stands for share their scores, cache
    entries and history.

    Raises:
        MetricError: ``name`` is a metric's own name or another alias's.

    Examples:
        >>> import evalframe as ef
        >>> ef.metrics.get("embedding-similarity").id
        'cosine-embedding(threshold=0.8)'
        >>> ef.metrics.get("embedding-similarity(threshold=0.7)").id
        'cosine-embedding(threshold=0.7)'
    """
    load_builtins()
    found = Alias(name, target, note)
    if name in _REGISTRY or (name in _ALIASES and _ALIASES[name] != found):
        raise MetricError(f"The name '{name}' is already registered.")
    _ALIASES[name] = found
    return found


def aliases() -> list[Alias]:
    """Every registered alias, in registration order."""
    load_builtins()
    return list(_ALIASES.values())


def _load_plugins() -> None:
    """Import the ``evalframe.metrics`` entry points once, on first lookup (not at import)."""
    global _plugins_loaded  # noqa: PLW0603 - a once-only latch for lazy plugin loading
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            obj = ep.load()
        except Exception as exc:
            raise MetricError(
                f"Metric plugin '{ep.name}' ({ep.value}) failed to load: {exc}"
            ) from exc
        if isinstance(obj, Metric | MetricDef | MetricFactory) and obj.name not in _REGISTRY:
            register(obj)
        # A module entry point registers its metrics through @metric when imported.


def available() -> list[MetricDef]:
    """Every registered definition, built-ins first, in registration order."""
    load_builtins()
    _load_plugins()
    return list(_REGISTRY.values())


def definition(name: str) -> MetricDef:
    """The registered definition for a name (an alias gives its target's); raises with close
    matches when unknown."""
    load_builtins()
    if name in _ALIASES:
        name = _ALIASES[name].resolve({})[0]
    found = _REGISTRY.get(name)
    if found is None:
        _load_plugins()
        found = _REGISTRY.get(name)
    if found is None:
        close = difflib.get_close_matches(name, [*_REGISTRY, *_ALIASES], n=3, cutoff=0.6)
        hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise MetricError(
            f"Unknown metric '{name}'.{hint} Run `evalframe metrics` to list the "
            f"{len(_REGISTRY)} registered metrics."
        )
    return found


def get(spec: str) -> Metric:
    """Resolve a spec string such as ``"rouge-l(beta=2.0)"`` to a metric value."""
    name, params = parse_spec(spec)
    load_builtins()
    if name in _ALIASES:
        name, params = _ALIASES[name].resolve(params)
    return definition(name).bind(**params)


def resolve(specs: Iterable[str | Metric | MetricFactory]) -> list[Metric]:
    """Resolve a mix of spec strings, metric values and factories; duplicates are an error."""
    out: list[Metric] = []
    for spec in specs:
        if isinstance(spec, Metric):
            m = spec
        elif isinstance(spec, MetricFactory):
            m = spec()
        elif isinstance(spec, str):
            m = get(spec)
        else:
            raise MetricError(
                "A metric must be a spec string, a Metric or a metric factory; "
                f"got {type(spec).__name__}."
            )
        out.append(m)
    ids = [m.id for m in out]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise MetricError(f"Metric {', '.join(dupes)} is listed more than once.")
    return out
