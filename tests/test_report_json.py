"""Report JSON: byte-identical to ``json.dumps(indent=2, ensure_ascii=False)``, and fast."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from evalframe.report import Report

# Every JSON value a report can hold: finite floats of any magnitude, any text.
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
trees = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=30,
)


def reference(doc: Any) -> str:
    """What ``Report.to_json`` wrote before it used orjson: the oracle."""
    return json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.text(), trees, max_size=6))
def test_to_json_is_byte_identical_to_json_dumps(doc: dict[str, Any]) -> None:
    assert Report(doc).to_json() == reference(doc)


def test_small_and_large_floats_keep_pythons_spelling() -> None:
    values = [3e-05, -2.5e-07, 1e-4, 9.99e-05, 5e-324, 1e16, 1.2345678901234568e16, 1e300, -0.0]
    doc = {
        "v": values,
        "x": {"y": 1e-05},
        "text": "looks like 0.00003,\nor e-7 and 1e-05",
        "nested": [[1e-8], {"z": 4e-06}],
    }
    text = Report(doc).to_json()
    assert text == reference(doc)
    assert '"y": 1e-05' in text
    assert "0.00003" not in text.replace("0.00003,\\n", "")


def test_control_characters_and_unicode_are_escaped_like_json() -> None:
    doc = {"s": "".join(chr(c) for c in range(0x20)) + '\x7f\u2028\u2029/é😀"\\', "k\n": 1}
    assert Report(doc).to_json() == reference(doc)


def test_other_indents_still_work() -> None:
    doc = {"a": [1, 2.5, "x"], "b": {}}
    assert Report(doc).to_json(indent=None) == json.dumps(doc, ensure_ascii=False) + "\n"
    assert Report(doc).to_json(indent=4) == json.dumps(doc, indent=4, ensure_ascii=False) + "\n"
