"""Every number option of every command has a range: a value past it (huge, past 2**63,
negative, NaN, infinite) is a usage error naming the option (exit 2), never a traceback."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from evalframe.cli import cli
from evalframe.cli._options import Clearable, FiniteFloatRange

HOSTILE = (
    "99999999999999999999999999",
    str(2**63),
    str(2**64 + 1),
    str(-(2**63) - 1),
    "-1",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "1e309",
)


def commands(
    group: click.Group, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            yield from commands(command, (*path, name))
        else:
            yield (*path, name), command


def number_kind(param: click.Parameter) -> click.ParamType | None:
    kind = param.type.inner if isinstance(param.type, Clearable) else param.type
    numeric = (click.types.IntParamType, click.types.FloatParamType)
    return kind if isinstance(kind, numeric) else None


NUMBER_OPTIONS = [
    (path, param.opts[0])
    for path, command in commands(cli)
    for param in command.params
    if isinstance(param, click.Option) and number_kind(param) is not None
]


def test_the_walk_finds_the_number_options() -> None:
    found = {(" ".join(path), option) for path, option in NUMBER_OPTIONS}
    assert {("run", "--rate-limit"), ("promote-online", "--since"), ("compare", "--seed"),
            ("rescore", "--batch-size"), ("online status", "--window"),
            ("brief", "--budget")} <= found  # fmt: skip
    assert len(found) > 60


@pytest.mark.parametrize(
    ("path", "option"), NUMBER_OPTIONS, ids=lambda v: " ".join(v) if isinstance(v, tuple) else v
)
def test_every_number_option_is_bounded_and_refuses_hostile_values(
    path: tuple[str, ...], option: str
) -> None:
    command = dict(commands(cli))[path]
    (param,) = [p for p in command.params if isinstance(p, click.Option) and p.opts[0] == option]
    kind = number_kind(param)
    assert isinstance(kind, click.IntRange | FiniteFloatRange), (option, kind)
    assert kind.max is not None, option
    runner = CliRunner()
    for value in HOSTILE:
        result = runner.invoke(cli, [*path, option, value])
        assert result.exit_code == 2, (path, option, value, result.output)
        assert f"Invalid value for '{option}'" in result.output, (path, option, value)
        assert isinstance(result.exception, SystemExit), (path, option, value, result.exception)


def test_a_real_process_refuses_an_overflowing_rate_limit(tmp_path: Path) -> None:
    dataset = tmp_path / "d.yaml"
    dataset.write_text("name: d\nsamples:\n  - {id: a, input: {q: x}, expected_output: y}\n")
    outputs = tmp_path / "o.json"
    outputs.write_text('{"outputs": {"a": "y"}}')
    done = subprocess.run(
        [sys.executable, "-m", "evalframe", "run", str(dataset), "--outputs", str(outputs),
         "--rate-limit", "99999999999999999999999999"],
        check=False, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 2
    assert "Invalid value for '--rate-limit'" in done.stderr
    assert "Traceback" not in done.stderr
    assert "OverflowError" not in done.stderr


def test_a_profile_value_past_its_option_range_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "evalframe.toml"
    config.write_text("[profiles.fast]\nrate_limit = 99999999999999999999\n")
    monkeypatch.setenv("EVALFRAME_CONFIG", str(config))
    dataset = tmp_path / "d.yaml"
    dataset.write_text("name: d\nsamples:\n  - {id: a, input: {q: x}, expected_output: y}\n")
    outputs = tmp_path / "o.json"
    outputs.write_text('{"outputs": {"a": "y"}}')
    result = CliRunner().invoke(
        cli, ["run", str(dataset), "--outputs", str(outputs), "--profile", "fast"]
    )
    assert result.exit_code == 2, result.output
    assert (
        "profile 'fast' key 'rate_limit' must be a whole number from 1 to 1,000,000; "
        "got 99999999999999999999." in result.output
    )


def test_a_memory_limit_past_its_range_is_refused(tmp_path: Path) -> None:
    for value in ("99999999999999999999999GB", "0.5KB"):
        result = CliRunner().invoke(
            cli, ["run", "d.yaml", "--outputs", "o.parquet", "--store", str(tmp_path / "s"),
                  "--batch-size", "10", "--memory-limit", value],
        )  # fmt: skip
        assert result.exit_code == 2
        assert "Invalid value for '--memory-limit'" in result.output
