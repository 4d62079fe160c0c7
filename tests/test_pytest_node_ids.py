"""The pytest plugin's node ids, run by real pytest: what a report prints selects its item
again, --lf and --ff, failure sections, JUnit XML, under xdist too."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from urllib.parse import unquote

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalframe.integrations._pytest import node_name

pytest_plugins = ["pytester"]

# Sample ids that hold what pytest reads as structure in a node id.
IDS = ["math", "a::b", "x/y[1]", "end:", "50%41 off", "line\u2028break", "q:1"]
PASSING = {"q:1", "a::b", "50%41 off"}

# Answers by question; the system records every question it is asked in calls.log.
SYSTEM = """\
import json, os

ANSWERS = json.loads({answers!r})

def answer(inputs):
    with open(os.path.join(os.path.dirname(__file__), "calls.log"), "a") as log:
        log.write(json.dumps(inputs["q"]) + "\\n")
    return ANSWERS[inputs["q"]]
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    samples = [
        {"id": sid, "input": {"q": sid}, "expected_output": f"right {i}"}
        for i, sid in enumerate(IDS)
    ]
    document = {"schema_version": "eval-harness.dataset.v1", "name": "ids", "samples": samples}
    pytester.makefile(".json", golden=json.dumps(document))
    answers = {sid: f"right {i}" if sid in PASSING else "wrong" for i, sid in enumerate(IDS)}
    pytester.makepyfile(sut=SYSTEM.format(answers=json.dumps(answers)))
    return pytester


def run(pytester: pytest.Pytester, *args: str, cache: bool = False) -> pytest.RunResult:
    # The installed entry point is blocked and the module named instead, so the plugin loads
    # once whether or not this checkout is installed.
    plugins = ["-p", "no:evalframe", "-p", "evalframe_pytest"]
    if not cache:
        plugins += ["-p", "no:cacheprovider"]
    system = ["--evalframe-system", "sut:answer", "--evalframe-metric", "exact-match"]
    return pytester.runpytest_subprocess(*plugins, *system, "--evalframe-metric", "contains",
                                         *args)  # fmt: skip


def expected_ids(samples: list[str]) -> list[str]:
    return [
        f"golden.json::{node_name(s)}::{node_name(m)}"
        for s in samples
        for m in ("exact-match", "contains")
    ]


def ran(result: pytest.RunResult) -> list[str]:
    """The item ids of the verbose progress lines, in order."""
    found = (re.match(r"(golden\.json::.*) (PASSED|FAILED)", line) for line in result.outlines)
    return [m.group(1) for m in found if m]


def calls(pytester: pytest.Pytester) -> list[str]:
    log = pytester.path / "calls.log"
    lines = log.read_text().splitlines() if log.exists() else []
    log.unlink(missing_ok=True)
    return sorted(json.loads(line) for line in lines)


def test_every_printed_id_selects_its_item_again(project: pytest.Pytester) -> None:
    listed = run(project, "golden.json", "--collect-only", "-q")
    printed = [line for line in listed.outlines if line.startswith("golden.json::")]
    assert printed == expected_ids(IDS)
    # The printed ids, passed back, select those items and no other (the example
    # among them); a sample's node id selects its metrics. Only their samples are scored.
    chosen = ["golden.json::math::contains", printed[2], printed[5]]
    assert chosen[1:] == ["golden.json::a%3A%3Ab::exact-match", "golden.json::x/y%5B1]::contains"]
    result = run(project, *chosen, "golden.json::line%E2%80%A8break", "-v")
    assert ran(result) == [*chosen, *expected_ids(["line\u2028break"])]
    assert calls(project) == sorted(["math", "a::b", "x/y[1]", "line\u2028break"])


@given(st.text())
def test_node_names_cannot_be_split_and_decode_back(text: str) -> None:
    name = node_name(text)
    assert "::" not in name
    assert "[" not in name
    assert not name.endswith(":")
    assert not re.search(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]", name)
    assert unquote(name) == text  # the standard percent-decoding gives the text back


def test_lf_and_ff_rerun_the_last_failures(project: pytest.Pytester) -> None:
    first = run(project, "golden.json", cache=True)
    failing = [s for s in IDS if s not in PASSING]
    first.assert_outcomes(passed=2 * len(PASSING), failed=2 * len(failing))
    assert calls(project) == sorted(IDS)

    again = run(project, "golden.json", "--lf", "-v", cache=True)
    again.assert_outcomes(failed=2 * len(failing), deselected=2 * len(PASSING))
    assert ran(again) == expected_ids(failing)
    assert calls(project) == sorted(failing)  # the system is asked only what failed

    first_ = run(project, "golden.json", "--ff", "-v", cache=True)
    assert ran(first_) == expected_ids(failing) + expected_ids([s for s in IDS if s in PASSING])
    assert calls(project) == sorted(IDS)

    parallel = run(project, "golden.json", "--lf", "-n", "2", cache=True)
    parallel.assert_outcomes(failed=2 * len(failing))
    assert calls(project) == sorted(failing)  # once per sample across both workers


def test_failure_sections_are_headed_by_the_item_id(project: pytest.Pytester) -> None:
    result = run(project, "golden.json", "-v")
    heads = [m.group(1) for m in map(re.compile(r"^_+ (.+?) _+$").match, result.outlines) if m]
    failing = expected_ids([s for s in IDS if s not in PASSING])
    assert heads == failing
    # The progress lines and the summary print the same ids, their dots left alone.
    for node_id in failing:
        assert any(line.startswith(f"{node_id} FAILED ") for line in result.outlines)
        summary = re.compile(f"FAILED {re.escape(node_id)}( - |$)")  # pytest 8: no reason
        assert any(summary.match(line) for line in result.outlines)
    assert not any("golden::json" in line for line in result.outlines)


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_junit_xml_keeps_every_id(project: pytest.Pytester, workers: list[str]) -> None:
    run(project, "golden.json", "--junitxml=report.xml", *workers)
    cases = ET.parse(project.path / "report.xml").getroot().iter("testcase")
    found = set()
    for case in cases:
        classname, name = case.get("classname", ""), case.get("name", "")
        assert classname.startswith("golden.json.")
        found.add((unquote(classname.removeprefix("golden.json.")), unquote(name)))
        assert (case.find("failure") is not None) == (unquote(classname[12:]) not in PASSING)
    assert found == {(s, m) for s in IDS for m in ("exact-match", "contains")}
