"""``--profile NAME``: named sets of run options, built in (``ci``, ``smoke``, ``nightly``) or
from a config file; options given on the command line (or by their variable) win.

User profiles live in a TOML file: the one ``$EVALFRAME_CONFIG`` names, else ``evalframe.toml``
in the current directory (tables ``[profiles.NAME]``), else ``pyproject.toml`` there (tables
``[tool.evalframe.profiles.NAME]``). A user profile named like a built-in one changes only the
keys it sets. Every profile in the file is checked when a profile is used: an unknown key, or a
value of the wrong kind, is an error naming the file, the profile and the key.
"""

from __future__ import annotations

import functools
import os
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from evalframe.core._errors import EvalframeError
from evalframe.core._limits import LIMITS

__all__ = ["BUILTIN_PROFILES", "CONFIG_ENV", "load_profile", "profile_option"]

CONFIG_ENV = "EVALFRAME_CONFIG"

# eval-harness's three, in the options evalframe has. Its per-job timeouts and chunk sizes
# belong to its queued batch mode; evalframe calls systems on threads, so they have no match.
BUILTIN_PROFILES: dict[str, dict[str, Any]] = {
    "ci": {"concurrency": 4, "checkpoint_every": 25},
    "smoke": {"concurrency": 1},
    "nightly": {
        "concurrency": 16,
        "rate_limit": 60,
        "rate_window_seconds": 60.0,
        "checkpoint_every": 100,
    },
}


def _number(key: str) -> tuple[Callable[[Any], bool], str]:
    """A number key's check and its description: the range of its option (``LIMITS``)."""
    limit = LIMITS[key]
    kind = int if limit.integer else int | float

    def ok(v: Any) -> bool:
        return isinstance(v, kind) and not isinstance(v, bool) and limit.admits(v)

    return ok, limit.describe()


# Each key a profile may set: the option it stands for, and what its value must be (the
# option's own range, core._limits.LIMITS).
_KEYS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "strict": (lambda v: isinstance(v, bool), "true or false"),
    **{
        key: _number(key)
        for key in (
            "concurrency", "repetitions", "checkpoint_every", "rate_limit",
            "rate_window_seconds", "timeout", "retries", "deadline", "budget_usd",
            "embeddings_concurrency", "judge_concurrency",
        )
    },
}  # fmt: skip


def config_table(key: str) -> tuple[Path | None, Any]:
    """The config file and its ``key`` table (``profiles``, ``prices``), empty when the file
    has none: the file ``$EVALFRAME_CONFIG`` names, else ``evalframe.toml`` here, else
    ``pyproject.toml`` here when it has ``[tool.evalframe.<key>]``."""
    named = os.environ.get(CONFIG_ENV)
    if named:
        path = Path(named)
        if not path.is_file():
            raise EvalframeError(f"${CONFIG_ENV} names {path}, which is not a file.")
        return path, _read(path).get(key, {})
    local = Path("evalframe.toml")
    if local.is_file():
        return local, _read(local).get(key, {})
    project = Path("pyproject.toml")
    if project.is_file():
        tool = _read(project).get("tool", {}).get("evalframe", {})
        if key in tool:
            return project, tool[key]
    return None, {}


def _config_file() -> tuple[Path | None, dict[str, Any]]:
    """The config file and its profiles table (empty when there is none)."""
    path, profiles = config_table("profiles")
    return path, profiles


def _read(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise EvalframeError(f"{path}: cannot read the profiles: {exc}") from None


def _checked(path: Path, profiles: Any) -> dict[str, dict[str, Any]]:
    if not isinstance(profiles, dict):
        raise EvalframeError(f"{path}: 'profiles' must be a table of profiles.")
    for name, settings in profiles.items():
        if not isinstance(settings, dict):
            raise EvalframeError(f"{path}: profile '{name}' must be a table of options.")
        for key, value in settings.items():
            if key not in _KEYS:
                known = ", ".join(sorted(_KEYS))
                raise EvalframeError(
                    f"{path}: profile '{name}' has an unknown key '{key}'; known keys: {known}."
                )
            ok, expected = _KEYS[key]
            if not ok(value):
                raise EvalframeError(
                    f"{path}: profile '{name}' key '{key}' must be {expected}; got {value!r}."
                )
    return profiles


def load_profile(name: str) -> dict[str, Any]:
    """The options profile ``name`` sets: a built-in one, changed or added by the config file.

    Raises:
        EvalframeError: an unknown profile (the message lists the known ones), or a config
            file with an unknown key or a bad value.

    Examples:
        >>> load_profile("nightly")["rate_limit"]
        60
    """
    path, found = _config_file()
    user = _checked(path, found) if path is not None else {}
    if name not in BUILTIN_PROFILES and name not in user:
        known = ", ".join(sorted({*BUILTIN_PROFILES, *user}))
        where = f" (user profiles from {path})" if path is not None else ""
        raise EvalframeError(f"Unknown profile '{name}'; known profiles: {known}{where}.")
    return {**BUILTIN_PROFILES.get(name, {}), **user.get(name, {})}


def profile_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--profile NAME``: fill the options the command line left at their defaults.

    Put it right under ``@click.command`` so that it sees every option of the command.
    ``checkpoint_every`` applies only to a run that calls a system and has a store.
    """

    @functools.wraps(f)
    def command(**kwargs: Any) -> Any:
        name = kwargs.pop("profile")
        if name is not None:
            ctx = click.get_current_context()
            for key, value in load_profile(name).items():
                if key not in kwargs or ctx.get_parameter_source(key) != ParameterSource.DEFAULT:
                    continue
                if key == "checkpoint_every" and not (
                    kwargs.get("system_ref") and kwargs.get("store_path")
                ):
                    continue
                kwargs[key] = value
        return f(**kwargs)

    return click.option(
        "--profile",
        metavar="NAME",
        help="Options from a profile: ci, smoke, nightly, or one from evalframe.toml / "
        f"pyproject.toml / ${CONFIG_ENV}; options given explicitly win.",
    )(command)
