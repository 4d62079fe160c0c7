"""``--profile NAME``: eval-harness's ci/smoke/nightly and user profiles; explicit flags win."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import evalframe as ef
from evalframe.cli import cli

EXAMPLE = Path(ef.__file__).parent / "examples"
DATASET = str(EXAMPLE / "support.yaml")
OUTPUTS = str(EXAMPLE / "support.outputs.json")


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Every ``ef.evaluate`` call the CLI makes, by keyword (the real function still runs)."""
    calls: list[dict[str, Any]] = []
    real = ef.evaluate

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr("evalframe.cli._run.ef.evaluate", spy)
    return calls


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["run", DATASET, "--outputs", OUTPUTS, *args])
    return result.exit_code, result.output


def rate(kwargs: dict[str, Any]) -> tuple[int, float] | None:
    providers = kwargs["providers"]
    limit = providers.ledger.rate if providers is not None else None
    return (limit.limit, limit.window_seconds) if limit is not None else None


def test_the_built_in_profiles_set_eval_harness_values(seen: list[dict[str, Any]]) -> None:
    assert run("--profile", "nightly")[0] == 0
    assert seen[-1]["concurrency"].calls == 16
    assert rate(seen[-1]) == (60, 60.0)
    assert seen[-1]["checkpoint"] is None  # saved outputs: nothing to checkpoint
    assert run("--profile", "ci")[0] == 0
    assert seen[-1]["concurrency"].calls == 4
    assert rate(seen[-1]) is None
    assert run("--profile", "smoke")[0] == 0
    assert seen[-1]["concurrency"].calls == 1
    assert run()[0] == 0
    assert seen[-1]["concurrency"].calls == 8  # no profile: the defaults


def test_explicit_options_win_over_the_profile(seen: list[dict[str, Any]]) -> None:
    code, _ = run("--profile", "nightly", "--concurrency", "2", "--rate-limit", "5")
    assert code == 0
    assert seen[-1]["concurrency"].calls == 2
    assert rate(seen[-1]) == (5, 60.0)  # the window still comes from the profile
    code, _ = run("--profile", "nightly", "--concurrency", "8")  # equal to the default: still wins
    assert seen[-1]["concurrency"].calls == 8


def test_checkpoints_come_from_the_profile_only_for_a_system_and_a_store(
    tmp_path: Path, seen: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "ci_sut.py").write_text("def answer(inp):\n    return 'x'\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    store = tmp_path / "runs.duckdb"
    args = ["run", DATASET, "--system", "ci_sut:answer", "-m", "exact-match", "--profile", "ci"]
    CliRunner().invoke(cli, [*args, "--store", str(store)])
    assert seen[-1]["checkpoint"].every == 25
    assert seen[-1]["concurrency"].calls == 4
    CliRunner().invoke(cli, args)
    assert seen[-1]["checkpoint"] is None


def test_user_profiles_from_evalframe_toml_add_and_change_profiles(
    tmp_path: Path, seen: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "evalframe.toml").write_text(
        "[profiles.fast]\nconcurrency = 3\nretries = 0\n\n[profiles.ci]\nconcurrency = 7\n",
        encoding="utf-8",
    )
    assert run("--profile", "fast")[0] == 0
    assert seen[-1]["concurrency"].calls == 3
    assert run("--profile", "ci")[0] == 0
    assert seen[-1]["concurrency"].calls == 7  # changed; its other keys stay


def test_pyproject_and_the_config_variable(
    tmp_path: Path, seen: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text(
        "[project]\nname = 'x'\n\n[tool.evalframe.profiles.team]\nconcurrency = 5\n",
        encoding="utf-8",
    )
    assert run("--profile", "team")[0] == 0
    assert seen[-1]["concurrency"].calls == 5
    other = tmp_path / "elsewhere.toml"
    other.write_text("[profiles.team]\nconcurrency = 6\n", encoding="utf-8")
    monkeypatch.setenv("EVALFRAME_CONFIG", str(other))
    assert run("--profile", "team")[0] == 0
    assert seen[-1]["concurrency"].calls == 6


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("[profiles.x]\nconcurency = 3\n", "profile 'x' has an unknown key 'concurency'"),
        ("[profiles.x]\nconcurrency = 0\n", "must be a whole number from 1 to 1,000; got 0"),
        ("[profiles.x]\nstrict = 'yes'\n", "key 'strict' must be true or false"),
        ("[profiles.x]\nrate_window_seconds = -1\n", "seconds more than 0, at most 86,400"),
        ("[profiles.x]\nconcurrency = 2\n[profiles.y]\nwho = 1\n", "profile 'y' has an unknown"),
        ("profiles = 3\n", "'profiles' must be a table"),
        ("[profiles\n", "cannot read the profiles"),
    ],
)
def test_bad_config_files_are_errors_naming_file_profile_and_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, toml: str, message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "evalframe.toml").write_text(toml, encoding="utf-8")
    code, output = run("--profile", "x")
    assert code == 2
    assert "evalframe.toml" in output
    assert message in output


def test_an_unknown_profile_lists_the_known_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, output = run("--profile", "weekly")
    assert code == 2
    assert "Unknown profile 'weekly'; known profiles: ci, nightly, smoke." in output
    monkeypatch.setenv("EVALFRAME_CONFIG", str(tmp_path / "missing.toml"))
    code, output = run("--profile", "ci")
    assert code == 2
    assert "EVALFRAME_CONFIG names" in output


def test_run_set_takes_a_profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[dict[str, Any]] = []
    import evalframe.engine._eval_set as engine

    real = engine.run_set

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(engine, "run_set", spy)
    (tmp_path / "set.yaml").write_text(
        f"schema_version: eval-harness.eval-set.v1\nname: s\ndatasets:\n"
        f"  - dataset: {DATASET}\n    outputs: {OUTPUTS}\n",
        encoding="utf-8",
    )
    result = CliRunner().invoke(
        cli,
        ["run-set", str(tmp_path / "set.yaml"), "--manifest", str(tmp_path / "m.json"),
         "--profile", "smoke"],
    )  # fmt: skip
    assert seen, result.output
    assert seen[-1]["concurrency"].calls == 1


def test_none_clears_a_value_the_profile_sets(seen: list[dict[str, Any]]) -> None:
    assert run("--profile", "nightly", "--rate-limit", "none")[0] == 0
    assert rate(seen[-1]) is None  # nightly's 60 per minute, cleared
    assert seen[-1]["concurrency"].calls == 16  # the rest of the profile stays
    assert run("--profile", "nightly", "--rate-limit", "null", "--deadline", "none")[0] == 0
    assert rate(seen[-1]) is None
    code, output = run("--rate-limit", "fast")
    assert code == 2
    assert "'fast' is not a valid integer" in output


def test_adversarial_run_takes_a_profile(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[dict[str, Any]] = []
    import evalframe.engine._adversarial as lane

    real = lane.run

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(lane, "run", spy)
    outputs = {"outputs": {}}
    import json
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "out.json"
        path.write_text(json.dumps(outputs), encoding="utf-8")
        for profile, concurrency, limit in (("nightly", 16, (60, 60.0)), ("smoke", 1, None)):
            result = CliRunner().invoke(
                cli,
                ["adversarial", "run", "--outputs", str(path), "-m", "exact-match",
                 "--profile", profile],
            )  # fmt: skip
            assert seen, result.output
            assert seen[-1]["concurrency"] == concurrency
            assert rate(seen[-1]) == limit
