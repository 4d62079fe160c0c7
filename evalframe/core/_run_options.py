"""Typed option values that ``evaluate``, ``run_set``, ``Store.rescore``, ``Providers.from_env``
and the command line share: what belongs together travels together.

- ``Concurrency``: how fast a run calls the system under test (calls in flight, rate limit).
- ``Checkpoint``: how a run with a system under test checkpoints, and which run it resumes.
- ``Limits``: what bounds the providers' calls (budget, deadline, timeout, retries).
- ``Endpoint``: where one provider role (embeddings, judge) sends its requests.

The single keywords (``concurrency=8``, ``rate_limit=``, ``checkpoint_every=``,
``resume=``, ``budget_usd=``, ``judge_model=``, ...) stay as shortcuts for one field each; a
group and a shortcut of the same group in one call is an error, so no value silently wins
over another. Each field has the range of the option of that name (``core._limits.LIMITS``).

Examples:
    >>> Concurrency(16, rate_limit=600)
    Concurrency(calls=16, rate_limit=600, rate_window_seconds=60.0)
    >>> grouped(Limits, None, "limits", timeout=None, retries=2)
    Limits(budget_usd=None, deadline=None, timeout=None, retries=2)
    >>> Checkpoint(every=0)
    Traceback (most recent call last):
    ...
    ValueError: Checkpoint.every must be a whole number from 1 to 1,000,000,000; got 0.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from evalframe.core._errors import type_name
from evalframe.core._limits import LIMITS, checked
from evalframe.core._secret import Secret, display_url

__all__ = [
    "Checkpoint",
    "Concurrency",
    "Endpoint",
    "Limits",
    "concurrency_of",
    "grouped",
    "no_limits_with",
]


def _check(group: Any) -> None:
    """Each set number field of ``group`` in the range of its ``LIMITS`` entry."""
    for field in dataclasses.fields(group):
        value = getattr(group, field.name)
        limit = group._LIMITS.get(field.name)
        if value is not None and limit is not None:
            checked(value, limit, f"{type(group).__name__}.{field.name}")


@dataclass(frozen=True, slots=True)
class Concurrency:
    """How fast a run calls: ``calls`` in flight at once, and at most ``rate_limit`` call
    starts in any ``rate_window_seconds`` window (the system under test's and the providers'
    together, each HTTP attempt counted; ``None``: no limit beyond the providers' own).

    ``concurrency=N`` is the shortcut for ``Concurrency(calls=N)``; ``rate_limit=`` and
    ``rate_window_seconds=`` for the other two fields.

    Examples:
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records(
        ...     [{"id": "a", "input": {}, "expected_output": "x"}], name="d")
        >>> pace = ef.Concurrency(calls=4, rate_limit=100, rate_window_seconds=1.0)
        >>> ef.evaluate(ds, system=lambda _: "x", metrics=["exact-match"],
        ...             concurrency=pace).macro_f1
        1.0
    """

    calls: int = 8
    rate_limit: int | None = None
    rate_window_seconds: float = 60.0

    _SHORTCUTS: ClassVar[dict[str, str]] = {
        "concurrency": "calls",
        "rate_limit": "rate_limit",
        "rate_window_seconds": "rate_window_seconds",
    }
    _LIMITS: ClassVar[dict[str, str]] = {
        "calls": "concurrency",
        "rate_limit": "rate_limit",
        "rate_window_seconds": "rate_window_seconds",
    }

    def __post_init__(self) -> None:
        _check(self)


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """Checkpoint a run with a system under test: write every ``every`` completed executions
    to its store as they finish, so an interrupted run can be resumed; with ``resume``, the
    id of such a run to finish (only the executions its checkpoints lack are called).

    ``checkpoint_every=`` and ``resume=`` are the shortcuts for the two fields.

    Examples:
        >>> import evalframe as ef
        >>> ds = ef.Dataset.from_records(
        ...     [{"id": "a", "input": {}, "expected_output": "x"}], name="d")
        >>> run = ef.evaluate(ds, system=lambda _: "x", metrics=["exact-match"],
        ...                   store=ef.Store(":memory:"), checkpoint=ef.Checkpoint(every=50))
        >>> run.macro_f1
        1.0
    """

    every: int = 100
    resume: str | None = None

    _SHORTCUTS: ClassVar[dict[str, str]] = {"checkpoint_every": "every", "resume": "resume"}
    _LIMITS: ClassVar[dict[str, str]] = {"every": "checkpoint_every"}

    def __post_init__(self) -> None:
        _check(self)
        if self.resume is not None and (not isinstance(self.resume, str) or not self.resume):
            raise ValueError(f"Checkpoint.resume must be a run id; got {self.resume!r}.")


@dataclass(frozen=True, slots=True)
class Limits:
    """What bounds the providers' calls (``None``: the environment variable, else the
    default): ``budget_usd`` spent in a run, the run's ``deadline`` in seconds, each
    request's ``timeout`` in seconds and the ``retries`` after a failed attempt.

    ``budget_usd=``, ``deadline=``, ``timeout=`` and ``retries=`` of ``Providers.from_env``
    are the shortcuts for the four fields. ``evaluate``, ``run_set`` and ``Store.rescore``
    apply them to the providers they build from the environment.

    Examples:
        >>> import evalframe as ef
        >>> found = ef.Providers.from_env(limits=ef.Limits(deadline=600, retries=1),
        ...                               environ={}, cache=False)
        >>> found.ledger.deadline
        600.0
    """

    budget_usd: float | None = None
    deadline: float | None = None
    timeout: float | None = None
    retries: int | None = None

    _SHORTCUTS: ClassVar[dict[str, str]] = {
        "budget_usd": "budget_usd",
        "deadline": "deadline",
        "timeout": "timeout",
        "retries": "retries",
    }
    _LIMITS: ClassVar[dict[str, str]] = {name: name for name in _SHORTCUTS}

    def __post_init__(self) -> None:
        _check(self)


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where one provider role, the embeddings or the judge, sends its requests: the
    OpenAI-compatible server's ``base_url``, the ``model`` it serves, the ``api_key`` sent as
    a bearer token and the ``concurrency`` (requests in flight at once). A field left
    ``None`` falls back to the role's environment variables, as the shortcut would.

    ``Providers.from_env(embeddings=..., judge=...)`` takes one per role; its shortcuts
    ``embeddings_base_url=``, ``embeddings_model=``, ``embeddings_api_key=`` and
    ``embeddings_concurrency=`` (likewise ``judge_base_url=``, ``judge_model=``,
    ``judge_api_key=`` and ``judge_concurrency=``) set one field each. The key is held as a
    ``Secret``: no repr and no message shows it.

    Examples:
        >>> import evalframe as ef
        >>> local = ef.Endpoint("http://localhost:8000/v1", model="qwen2.5", api_key="sk-1")
        >>> local
        Endpoint(base_url='http://localhost:8000/v1', model='qwen2.5', api_key=Secret('***'), concurrency=None)
        >>> found = ef.Providers.from_env(judge=local, environ={}, cache=False)
        >>> found.judge
        OpenAIJudge(model='qwen2.5', url='http://localhost:8000/v1/chat/completions', api_key=set)
    """  # noqa: E501 - the doctest output is one line

    base_url: str | None = None
    model: str | None = None
    api_key: str | Secret | None = None
    concurrency: int | None = None

    _SHORTCUTS: ClassVar[dict[str, str]] = {
        f"{role}_{field}": field
        for role in ("embeddings", "judge")
        for field in ("base_url", "model", "api_key", "concurrency")
    }
    _LIMITS: ClassVar[dict[str, str]] = {"concurrency": "concurrency"}

    def __repr__(self) -> str:
        # A base URL may carry credentials (user info, an api-key query): shown without them.
        url = None if self.base_url is None else display_url(self.base_url)
        return (
            f"Endpoint(base_url={url!r}, model={self.model!r}, api_key={self.api_key!r}, "
            f"concurrency={self.concurrency!r})"
        )

    def __post_init__(self) -> None:
        for name in ("base_url", "model"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise TypeError(f"Endpoint.{name} must be a string; got {type_name(value)}.")
        key = self.api_key
        if key is not None and not isinstance(key, str | Secret):
            raise TypeError(f"Endpoint.api_key must be a string; got {type_name(key)}.")
        object.__setattr__(self, "api_key", Secret.of(key))
        _check(self)


G = TypeVar("G", Concurrency, Checkpoint, Limits, Endpoint)


def grouped(kind: type[G], group: G | None, argument: str, **shortcuts: Any) -> G:
    """``group``, or the group the shortcut keywords given (not ``None``) make.

    Args:
        kind: the group's class.
        group: the value passed as ``argument`` (``None``: not passed).
        argument: the keyword the group is passed as, for messages.
        shortcuts: each shortcut keyword of ``kind`` and its value.

    Raises:
        TypeError: ``group`` is not a ``kind``.
        ValueError: a group and one of its shortcuts both given, naming them; a shortcut
            outside its range, naming the keyword.
    """
    given = {k: v for k, v in shortcuts.items() if v is not None}
    if group is None:
        for keyword, value in given.items():
            if keyword in LIMITS:
                checked(value, keyword)  # the message names the keyword the caller wrote
        return kind(**{kind._SHORTCUTS[k]: v for k, v in given.items()})
    if not isinstance(group, kind):
        # (a string passed for an endpoint may be its key: only its type is named)
        shown = type_name(group) if kind is Endpoint else repr(group)
        raise TypeError(f"{argument} must be ef.{kind.__name__}(...); got {shown}.")
    if given:
        both = ", ".join(f"{k}=" for k in given)
        raise ValueError(
            f"Pass {both} or {argument}=ef.{kind.__name__}(...), not both: the group "
            "holds every field."
        )
    return group


def concurrency_of(
    concurrency: int | Concurrency, rate_limit: int | None, rate_window_seconds: float | None
) -> Concurrency:
    """The ``Concurrency`` that ``concurrency=`` (a number of calls or the group) and the
    rate shortcuts give; raises as ``grouped``."""
    if isinstance(concurrency, Concurrency):
        return grouped(
            Concurrency,
            concurrency,
            "concurrency",
            rate_limit=rate_limit,
            rate_window_seconds=rate_window_seconds,
        )
    return grouped(
        Concurrency,
        None,
        "concurrency",
        concurrency=concurrency,
        rate_limit=rate_limit,
        rate_window_seconds=rate_window_seconds,
    )


def no_limits_with(providers: object, limits: Limits | None) -> None:
    """``limits`` bound the providers built from the environment, so they come without
    ``providers`` (built already, with limits of their own).

    Raises:
        ValueError: both given.
    """
    if providers is not None and limits is not None:
        raise ValueError(
            "limits= bounds the providers built from the environment: with providers=, give "
            "the limits to ef.Providers.from_env(limits=...) instead."
        )
