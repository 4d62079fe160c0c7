"""Options more than one command takes, and the output ``--out`` redirects."""

from __future__ import annotations

import functools
import math
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeVar

import click

from evalframe.core._limits import LIMITS, MAX_COUNT
from evalframe.core._run_options import Limits

if TYPE_CHECKING:
    from evalframe.providers import Providers

__all__ = [
    "EXIT_CODES",
    "PROMOTE_HELP",
    "STORE_ENV",
    "Clearable",
    "ProviderSettings",
    "emit",
    "evidence_option",
    "force_option",
    "format_option",
    "guard_commands",
    "max_rows_option",
    "open_store",
    "out_option",
    "own_files",
    "provider_limit_options",
    "provider_options",
    "store_option",
    "system_options",
]

F = TypeVar("F", bound=Callable[..., Any])

STORE_ENV = "EVALFRAME_STORE"

EXIT_CODES = (
    "Exit codes: 0 on a clean run, 1 when any (execution, metric) pair could not be scored (an "
    "errored execution included) or a gate failed, 2 on usage or input errors, a store that "
    "cannot be read or written included (a one-paragraph message, no traceback)."
)
"""The exit-code contract, shown at the end of ``--help`` of every command it governs."""


PROMOTE_HELP: Final = (
    "Add the failing rows (a score below the metric's threshold, or an error) to this dataset "
    "YAML, without outputs or error text: a new file, or a promotion file evalframe wrote, "
    "whose samples are kept (a row it holds is skipped). Any other existing file, and the "
    "files the command reads, are refused. A row that would not load is skipped and named."
)


def force_option(f: F) -> F:
    """``--force``: let a promotion replace what its file holds."""
    return click.option(
        "--force",
        is_flag=True,
        help="Replace what the promotion file holds, even a file evalframe did not write, with "
        "this run's rows; with none, delete a promotion file there. Never a file the command "
        "reads.",
    )(f)


def _path_params(ctx: click.Context) -> Iterator[tuple[click.Parameter, str]]:
    """The paths the command was given: arguments, and options taking a path."""
    for param in ctx.command.params:
        value = ctx.params.get(param.name or "")
        values = value if isinstance(value, tuple) else (value,)
        if not isinstance(param, click.Argument) and not (
            isinstance(param.type, click.Path) or param.name == "outputs"
        ):
            continue
        for item in values:
            if isinstance(item, str | os.PathLike) and os.fspath(item):
                yield param, os.fspath(item)


def _role(param: click.Parameter) -> str:
    if isinstance(param, click.Argument):
        return f"the file given as {param.human_readable_name}"
    return f"the file given to {param.opts[0]}"


def own_files(*exclude: str) -> dict[str, str]:
    """The files the running command was given (arguments, and options taking a path), by
    role ("the file given to --outputs"), but the parameters named in ``exclude``: what a
    file the command writes must never be."""
    ctx = click.get_current_context()
    return {_role(p): v for p, v in _path_params(ctx) if p.name not in exclude}


_WRITTEN: Final = ("out", "promote_failures", "chart")
"""Options naming a file a command writes."""
_SAME_ON_PURPOSE: Final = {("out", "merge")}
"""(written, other) pairs that may name one file: ``promote-online --merge F --out F``."""


def _refuse_overwriting_own_files() -> None:
    """Refuse, before any work, a file to write that the command also reads or writes under
    another name (``run golden.yaml --out golden.yaml``; hard and symbolic links count)."""
    from evalframe.core._safe_write import same_file

    ctx = click.get_current_context()
    given = list(_path_params(ctx))
    for param, path in given:
        if param.name not in _WRITTEN:
            continue
        for other, other_path in given:
            if other is param or (param.name, other.name) in _SAME_ON_PURPOSE:
                continue
            if "://" not in other_path and same_file(path, other_path):
                raise click.UsageError(
                    f"{param.opts[0]} {path} is {_role(other)} ({other_path}): writing it would "
                    "destroy that file. Name another file."
                )


def guard_commands(group: click.Group) -> None:
    """Make every command under ``group`` refuse to write over its own files before it runs,
    and bound every number option it takes (``bound_numbers``)."""
    for command in group.commands.values():
        if isinstance(command, click.Group):
            guard_commands(command)
            continue
        if command.callback is not None:
            command.callback = _guarded(command.callback)
        for param in command.params:
            bound_numbers(param)


def _guarded(callback: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(callback)
    def run(*args: Any, **kwargs: Any) -> Any:
        _refuse_overwriting_own_files()
        return callback(*args, **kwargs)

    return run


def store_option(help: str = f"The DuckDB run store (default: ${STORE_ENV}).") -> Callable[[F], F]:
    """``--store PATH`` (the ``store_path`` argument), defaulting to ``$EVALFRAME_STORE``."""
    return click.option(
        "--store",
        "store_path",
        envvar=STORE_ENV,
        type=click.Path(dir_okay=False, path_type=Path),
        help=help,
    )


def format_option(dest: str, *choices: str) -> Callable[[F], F]:
    """``--format`` (the ``dest`` argument): one of ``choices``, the first by default."""
    return click.option(
        "--format", dest, type=click.Choice(choices), default=choices[0], show_default=True
    )


def evidence_option(f: F) -> F:
    """``--include-evidence``: put each execution's retrieved contexts in the JSON report."""
    return click.option(
        "--include-evidence",
        is_flag=True,
        help="Add the retrieved contexts behind judged scores to the JSON report (its "
        "evidence section); they are left out otherwise.",
    )(f)


def max_rows_option() -> Callable[[F], F]:
    """``--max-rows``: how many failing samples the Markdown and HTML reports list."""
    return click.option(
        "--max-rows",
        type=click.IntRange(min=0),
        default=20,
        show_default=True,
        help="Failing samples listed in the Markdown and HTML reports, worst first.",
    )


def open_store(store_path: Path | None, *, create: bool = False) -> Any:
    """The ``Store`` at ``--store`` (a missing file is an error unless ``create``).

    Raises:
        click.UsageError: no ``--store`` and no ``$EVALFRAME_STORE``.
        StoreError: no store at that path.
    """
    from evalframe.core._errors import StoreError
    from evalframe.store import Store

    if store_path is None:
        raise click.UsageError(f"Pass --store PATH or set {STORE_ENV}.")
    if not create and not store_path.exists():
        raise StoreError(
            f"No store at {store_path}: save a run to it first (evalframe run --store)."
        )
    return Store(store_path)


def system_options(
    outputs_help: str, *, sources: bool = False, repeatable: bool = False
) -> Callable[[F], F]:
    """``--outputs FILE``, ``--system MODULE:FUNCTION`` and ``--concurrency N``: where the
    outputs come from (saved, or a system under test called for them). With ``sources``,
    ``--outputs`` also takes a directory, glob or URL of Parquet files (kept as text); with
    ``repeatable``, both options may be given several times (tuples)."""
    kind = click.Path() if sources else click.Path(dir_okay=False, path_type=Path)
    again = (
        " Repeatable: one run per system (or outputs file), sharing a comparison label."
        if repeatable
        else ""
    )
    options = (
        click.option("--outputs", type=kind, multiple=repeatable, help=outputs_help + again),
        click.option(
            "--system",
            "system_ref",
            metavar="MODULE:FUNCTION",
            multiple=repeatable,
            help="A system under test to call instead: a function taking a sample's input map "
            "and returning a string, e.g. my_app.rag:answer (the current directory is "
            "importable)." + again,
        ),
        click.option(
            "--concurrency",
            type=click.IntRange(min=1),
            default=8,
            show_default=True,
            help="Calls to the system under test in flight at once (with --system).",
        ),
    )

    def apply(f: F) -> F:
        for option in reversed(options):
            f = option(f)
        return f

    return apply


def dask_option(help: str) -> Callable[[F], F]:
    """``--dask ADDRESS``: a Dask scheduler address, or ``local:N``."""
    return click.option(
        "--dask",
        "dask",
        metavar="ADDRESS",
        default=None,
        help=f"{help} ADDRESS is a scheduler (tcp://host:8786) or local:N, a cluster of N "
        "worker processes on this machine started for the command "
        '(pip install ".[dask]" in a clone of evalframe).',
    )


_SIZE: Final = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]i?)?B\s*", re.IGNORECASE)
_SIZE_RANGE: Final = (10**6, 2**50)  # 1MB to 1PiB


def _size(ctx: click.Context, param: click.Parameter, value: str) -> str:
    found = _SIZE.fullmatch(value)
    if not found:
        raise click.BadParameter(f"{value!r} is not a size such as 2GB, 512MB or 1.5GiB.")
    unit = (found.group(2) or "").upper()
    scale = (1024 if unit.endswith("I") else 1000) ** (" KMGT".index(unit[:1] or " "))
    size = float(found.group(1)) * scale
    if not _SIZE_RANGE[0] <= size <= _SIZE_RANGE[1]:
        raise click.BadParameter(f"{value!r} is not a size from 1MB to 1PiB.")
    return value


def memory_limit_option(help: str) -> Callable[[F], F]:
    """``--memory-limit SIZE``: DuckDB's memory limit while scoring stored outputs."""
    return click.option(
        "--memory-limit",
        default="2GB",
        show_default=True,
        metavar="SIZE",
        callback=_size,
        help=f"{help} Beyond it, DuckDB spills to temporary files beside the store; long "
        "outputs (tens of kilobytes each) store faster with more.",
    )


def out_option(help: str = "Write the report here instead of stdout.") -> Callable[[F], F]:
    """``--out PATH``: a file to write instead of printing (its folder must exist)."""
    return click.option("--out", type=_OUT, callback=_out_folder, help=help)


_OUT: Final = click.Path(dir_okay=False, path_type=Path)


def _out_folder(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    """Refuse an ``--out`` whose folder is missing before any work starts (a run's scores
    must not be lost to a typo found only when the report is written)."""
    if value is not None and not value.absolute().parent.is_dir():
        raise click.BadParameter(
            f"the folder {str(value.absolute().parent)!r} does not exist.", ctx, param
        )
    return value


if TYPE_CHECKING:
    _ParamType = click.ParamType[Any, Any]  # generic to type checkers in click 8.2 and later
else:
    _ParamType = click.ParamType


# --- number options ----------------------------------------------------------------------------

OPTION_LIMITS: Final[dict[str, tuple[float, float]]] = {
    "--" + name.replace("_", "-"): (limit.low, limit.high) for name, limit in LIMITS.items()
}
"""The range of each number option by name, whichever command takes it (``core._limits``,
the table the profiles, the environment variables and the Python API read too): what the
option declares, narrowed to these bounds (a count without one here stops at ``MAX_COUNT``;
a number of seconds or dollars is finite). A value outside is a usage error naming the
option (exit 2), never an overflow deep in a library."""


class FiniteFloatRange(click.FloatRange):
    """A ``FloatRange`` that also refuses NaN and infinities (which pass its comparisons)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number


def option_range(
    name: str, low: float | None = None, high: float | None = None, *, integer: bool = True
) -> tuple[float, float]:
    """The bounds of the number option ``name``: those it declares (``low``, ``high``),
    narrowed to ``OPTION_LIMITS[name]``; a count with no upper bound stops at ``MAX_COUNT``.

    Examples:
        >>> option_range("--rate-limit", 1), option_range("--window", 1)
        ((1, 1000000), (1, 1000000000))
    """
    lo = -math.inf if low is None else low
    hi = math.inf if high is None else high
    if name in OPTION_LIMITS:
        lo, hi = max(lo, OPTION_LIMITS[name][0]), min(hi, OPTION_LIMITS[name][1])
    if integer and hi == math.inf:
        hi = MAX_COUNT
    return lo, hi


def _bounded(kind: Any, name: str) -> Any:
    """``kind`` (a click number type) with the option's bounds, or None for another type."""
    if isinstance(kind, Clearable):
        inner = _bounded(kind.inner, name)
        return None if inner is None else Clearable(inner)
    if isinstance(kind, click.IntRange | click.FloatRange):
        low, high, min_open, max_open = kind.min, kind.max, kind.min_open, kind.max_open
    elif isinstance(kind, click.types.IntParamType | click.types.FloatParamType):
        low, high, min_open, max_open = None, None, False, False
    else:
        return None
    integer = isinstance(kind, click.types.IntParamType)
    lo, hi = option_range(name, low, high, integer=integer)
    lowest = None if lo == -math.inf else lo
    highest = None if hi == math.inf else hi
    if integer:
        return click.IntRange(
            None if lowest is None else int(lowest),
            None if highest is None else int(highest),
            min_open=min_open,
            max_open=max_open,
        )
    return FiniteFloatRange(lowest, highest, min_open=min_open, max_open=max_open)


def bound_numbers(param: click.Parameter) -> None:
    """Give a number option its range (``OPTION_LIMITS``): called on every option of every
    command when the command line is built, so no number option is left unbounded."""
    if not isinstance(param, click.Option) or param.nargs != 1:
        return
    bounded = _bounded(param.type, param.opts[0])
    if bounded is not None:
        param.type = bounded


class Clearable(_ParamType):
    """A number option that also takes ``none`` (or ``null``): no value, even where a profile
    (``--profile``) would set one."""

    def __init__(self, inner: _ParamType) -> None:
        self.inner = inner
        self.name = inner.name

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and value.strip().lower() in ("none", "null"):
            return None
        return self.inner.convert(value, param, ctx)


def provider_limit_options(f: F) -> F:
    """``--timeout``, ``--retries``, ``--deadline``, ``--rate-limit`` and
    ``--rate-window-seconds`` for provider calls (the arguments of the same names).

    Their ``EVALFRAME_*`` variables are read by ``Providers.from_env``, so a bad value is an
    error naming the variable, whether or not an option was given.
    """
    seconds = click.FloatRange(min=0.0, min_open=True)
    options = (
        click.option(
            "--timeout",
            type=Clearable(seconds),
            metavar="SECONDS",
            help="Seconds one provider request may take, reading the whole reply included "
            "(default: $EVALFRAME_TIMEOUT, else 30 for embeddings and 60 for the judge).",
        ),
        click.option(
            "--retries",
            type=Clearable(click.IntRange(min=0)),
            metavar="N",
            help="Extra attempts after a provider connection error, timeout, 429 or 5xx "
            "(default: $EVALFRAME_RETRIES, else 3).",
        ),
        click.option(
            "--deadline",
            type=Clearable(seconds),
            metavar="SECONDS",
            help="Seconds for all provider calls of the run; calls after it become their "
            "rows' errors and the scores so far are kept (default: $EVALFRAME_DEADLINE, "
            "else none).",
        ),
        click.option(
            "--rate-limit",
            type=Clearable(click.IntRange(min=1)),
            metavar="N",
            help="At most N calls start in any --rate-window-seconds window: the system under "
            "test's and the providers' together, each retry counted (default: no limit).",
        ),
        click.option(
            "--rate-window-seconds",
            type=seconds,
            default=60.0,
            show_default=True,
            metavar="SECONDS",
            help="The sliding window of --rate-limit.",
        ),
    )
    for option in reversed(options):
        f = option(f)
    return f


@dataclass(frozen=True, slots=True)
class ProviderSettings:
    """The provider options of one command, as given (``None``: not given)."""

    embeddings_base_url: str | None = None
    embeddings_model: str | None = None
    embeddings_concurrency: int | None = None
    judge_base_url: str | None = None
    judge_model: str | None = None
    judge_concurrency: int | None = None
    cache_path: Path | None = None
    no_cache: bool = False
    budget_usd: float | None = None
    timeout: float | None = None
    retries: int | None = None
    deadline: float | None = None
    rate_limit: int | None = None
    rate_window_seconds: float = 60.0
    price: tuple[str, ...] = ()
    prices_file: Path | None = None

    @property
    def limits(self) -> Limits:
        """``--budget-usd``, ``--deadline``, ``--timeout`` and ``--retries`` as one value."""
        return Limits(self.budget_usd, self.deadline, self.timeout, self.retries)

    def build(self) -> Providers | None:
        """The command's providers, or ``None`` when no option was given and the config
        file has no prices (the library then builds them from the environment, only if a
        metric needs one).

        Raises:
            click.UsageError: both ``--cache`` and ``--no-cache``.
            EvalframeError: a price that cannot be read (naming the option or file).
        """
        if self.no_cache and self.cache_path is not None:
            raise click.UsageError("Pass --cache PATH or --no-cache, not both.")
        if self.rate_limit is None and self.rate_window_seconds != 60.0:
            raise click.UsageError("--rate-window-seconds needs --rate-limit N.")
        from evalframe.cli._prices import read_prices

        prices = read_prices(self.price, self.prices_file)
        if self == ProviderSettings() and prices is None:
            return None
        from evalframe.providers import Providers

        return Providers.from_env(
            embeddings_base_url=self.embeddings_base_url,
            embeddings_model=self.embeddings_model,
            embeddings_concurrency=self.embeddings_concurrency,
            judge_base_url=self.judge_base_url,
            judge_model=self.judge_model,
            judge_concurrency=self.judge_concurrency,
            cache=False if self.no_cache else (self.cache_path or True),
            prices=prices,
            limits=self.limits,
            rate_limit=self.rate_limit,
            rate_window_seconds=self.rate_window_seconds,
        )


def provider_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """Every provider option (endpoints, models, concurrency, cache, budget, ``--timeout``,
    ``--retries``, ``--deadline``, ``--rate-limit``), gathered into one ``provider_settings``
    argument.

    ``evalframe run`` and ``evalframe rescore`` both take this group, so the two reach the
    providers the same way.
    """
    names = tuple(ProviderSettings.__dataclass_fields__)

    @functools.wraps(f)
    def command(**kwargs: Any) -> Any:
        given = {name: kwargs.pop(name) for name in names}
        return f(**kwargs, provider_settings=ProviderSettings(**given))

    in_flight = click.IntRange(min=1)
    options = (
        click.option(
            "--embeddings-base-url",
            metavar="URL",
            help="OpenAI-compatible embeddings endpoint (default: "
            "$EVALFRAME_EMBEDDINGS_BASE_URL; with none, the embedded offline model). Keys "
            "come only from the environment.",
        ),
        click.option(
            "--embeddings-model",
            metavar="NAME",
            help="Embedding model at that endpoint, or 'onnx'/'hashing' for a local one "
            "(default: $EVALFRAME_EMBEDDINGS_MODEL).",
        ),
        click.option(
            "--embeddings-concurrency",
            type=in_flight,
            metavar="N",
            help="Embedding requests in flight at once (default: "
            "$EVALFRAME_EMBEDDINGS_CONCURRENCY, else 8).",
        ),
        click.option(
            "--judge-base-url",
            metavar="URL",
            help="OpenAI-compatible chat endpoint of the judge (default: "
            "$EVALFRAME_JUDGE_BASE_URL, then $OPENAI_BASE_URL).",
        ),
        click.option(
            "--judge-model", metavar="NAME", help="Judge model (default: $EVALFRAME_JUDGE_MODEL)."
        ),
        click.option(
            "--judge-concurrency",
            type=in_flight,
            metavar="N",
            help="Judge requests in flight at once (default: $EVALFRAME_JUDGE_CONCURRENCY, "
            "else 8).",
        ),
        click.option(
            "--cache",
            "cache_path",
            type=click.Path(dir_okay=False, path_type=Path),
            help="Provider response cache file (default: ~/.cache/evalframe/cache.duckdb).",
        ),
        click.option("--no-cache", is_flag=True, help="Neither read nor write the provider cache."),
        click.option(
            "--budget-usd",
            type=Clearable(click.FloatRange(min=0.0, min_open=True)),
            help="Stop calling providers once this much (USD) is spent; the scores so far "
            "are kept and the command exits 1. It binds on reported and derived cost: a "
            "paid model without a price is refused before any call.",
        ),
        click.option(
            "--price",
            multiple=True,
            metavar="MODEL=INPUT/OUTPUT",
            help="A model's price in USD per million input/output tokens (one number for an "
            "embedding model), for providers that do not report cost. Repeatable; beside a "
            "[prices] table in evalframe.toml.",
        ),
        click.option(
            "--prices",
            "prices_file",
            type=click.Path(exists=True, dir_okay=False, path_type=Path),
            help="A TOML or JSON table of model = 'INPUT/OUTPUT' prices (USD per million "
            "tokens); --price options win over it.",
        ),
    )
    wrapped: Callable[..., Any] = provider_limit_options(command)
    for option in reversed(options):
        wrapped = option(wrapped)
    return wrapped


def emit(text: str | bytes | Iterable[memoryview], out: Path | None, *, note: str = "") -> None:
    """Print ``text`` (bytes are UTF-8; an iterable is UTF-8 pieces written in order), or
    write it to ``out`` and say so on stderr (``note`` follows the path). It goes to a
    temporary file of its own, flushed to disk and renamed to ``out`` at the end, so a
    failure midway leaves no half file (and the previous one as it was), and two commands
    writing one file at once each write a whole one; a failure to write is an error naming
    ``out``."""
    if out is None:
        if isinstance(text, str | bytes):
            click.echo(text, nl=False)
        else:
            for part in text:  # click finds the binary stream (also under a test runner)
                click.echo(bytes(part), nl=False)
        return
    from evalframe.core._safe_write import write_atomic

    try:
        write_atomic(out, text.encode("utf-8") if isinstance(text, str) else text)
    except OSError as exc:
        raise click.ClickException(f"could not write {out}: {exc.strerror or exc}") from exc
    click.echo(f"wrote {out}{note}", err=True)


def _parse_labels(
    ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
) -> dict[str, str]:
    labels: dict[str, str] = {}
    for value in values:
        key, sep, val = value.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"expected KEY=VALUE, got {value!r}", ctx, param)
        labels[key.strip()] = val
    return labels


def label_option(f: F) -> F:
    """``--label KEY=VALUE`` (repeatable; the ``labels`` argument, a dict); a value without
    ``=`` or with an empty key is a usage error (exit 2) naming the option."""
    return click.option(
        "--label",
        "labels",
        multiple=True,
        metavar="KEY=VALUE",
        callback=_parse_labels,
        help="A label kept with the run, e.g. --label model=gpt-4o. Repeatable.",
    )(f)


def table_format_option(f: F) -> F:
    """``--format table|csv|json|parquet`` (the ``output`` argument) and ``--out PATH``;
    parquet needs ``--out``."""
    f = click.option(
        "--out",
        type=_OUT,
        callback=_out_folder,
        help="Write the result here instead of stdout (required with --format parquet).",
    )(f)
    return click.option(
        "--format",
        "output",
        type=click.Choice(("table", "csv", "json", "parquet")),
        default="table",
        show_default=True,
    )(f)
