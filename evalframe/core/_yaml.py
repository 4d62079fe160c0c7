"""YAML as eval-harness reads it: PyYAML's safe loader with YAML 1.2 core-schema scalars.

eval-harness parses YAML with Symfony's parser, which follows the YAML 1.2 core schema:
``yes``, ``no``, ``on``, ``off``, ``1:30`` and ``1_000`` are strings, ``010`` is ten, ``1e3``
is a number, and a repeated key is an error. ``YamlLoader`` gives PyYAML those rules,
``parse_yaml`` walks the node tree into plain Python values (about twice as fast as
PyYAML's generic constructor on plain data), and ``yaml_problem`` turns a YAML error into
one line with its position. Dataset files (``evalframe.core._dataset``) and saved outputs files
(``evalframe.core._outputs``) both read YAML through here.
"""

from __future__ import annotations

import re
from collections.abc import Hashable
from typing import Any, Final

import yaml

try:
    from yaml import CSafeLoader as _SafeLoader
except ImportError:  # pragma: no cover - PyYAML without libyaml: same results, ~10x slower
    from yaml import SafeLoader as _SafeLoader  # type: ignore[assignment]

__all__ = ["YamlLoader", "parse_yaml", "yaml_problem", "yaml_value"]

_MERGE_TAG: Final = "tag:yaml.org,2002:merge"
_STR_TAG: Final = "tag:yaml.org,2002:str"
_INT_TAG: Final = "tag:yaml.org,2002:int"
_NULL_TAG: Final = "tag:yaml.org,2002:null"
_BOOL_TAG: Final = "tag:yaml.org,2002:bool"
_SEQ_TAG: Final = "tag:yaml.org,2002:seq"
_MAP_TAG: Final = "tag:yaml.org,2002:map"
_BOOLS: Final = {
    "true": True,
    "True": True,
    "TRUE": True,
    "false": False,
    "False": False,
    "FALSE": False,
}
_YAML11_TAGS: Final = frozenset({_BOOL_TAG, _INT_TAG, "tag:yaml.org,2002:float"})


class YamlLoader(_SafeLoader):
    """PyYAML's safe loader with YAML 1.2 core-schema scalars, and repeated keys as errors.

    eval-harness parses YAML with Symfony's parser, for which ``yes``, ``no``, ``on``,
    ``off``, ``1:30`` and ``1_000`` are strings, ``1e3`` is a number and a repeated key is an
    error. PyYAML's YAML 1.1 rules would read ``expected_output: no`` as ``false`` and keep
    the last of two equal keys without a word.
    """

    yaml_implicit_resolvers = {  # noqa: RUF012  # PyYAML's class-level registry
        first: [(tag, regexp) for tag, regexp in resolvers if tag not in _YAML11_TAGS]
        for first, resolvers in _SafeLoader.yaml_implicit_resolvers.items()
    }

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        own = [key for key, _ in node.value if key.tag != _MERGE_TAG]
        merged = len(own) < len(node.value)
        mapping = super().construct_mapping(node, deep=deep)
        if merged or len(mapping) < len(own):
            seen: set[object] = set()
            for key_node in own:
                key = self.construct_object(key_node, deep=deep)
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping",
                        node.start_mark,
                        f"found duplicate key {key!r}",
                        key_node.start_mark,
                    )
                seen.add(key)
        return mapping


def _construct_int(loader: _SafeLoader, node: yaml.ScalarNode) -> int:
    text = str(loader.construct_scalar(node))
    digits = text.lstrip("+-")
    sign = -1 if text.startswith("-") else 1
    try:
        if digits[:2] in {"0o", "0x"}:
            return sign * int(digits[2:], 8 if digits[1] == "o" else 16)
        return int(text, 10)  # "010" is ten in YAML 1.2, not eight
    except ValueError as exc:
        raise yaml.constructor.ConstructorError(
            None, None, f"invalid integer {text!r}", node.start_mark
        ) from exc


YamlLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)
YamlLoader.add_implicit_resolver(
    "tag:yaml.org,2002:int",
    re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"),
    list("-+0123456789"),
)
YamlLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
    list("-+.0123456789"),
)
YamlLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)


def parse_yaml(text: str) -> object:
    """Parse one YAML document into plain Python values."""
    loader = YamlLoader(text)
    try:
        root = loader.get_single_node()
        return None if root is None else yaml_value(loader, root)
    except RecursionError as exc:
        raise yaml.YAMLError("the document nests too deeply or an anchor refers to itself") from exc
    finally:
        loader.dispose()


def yaml_value(loader: YamlLoader, node: yaml.Node) -> object:
    """The value of a node: plain scalars, lists and maps directly, the rest by PyYAML.

    PyYAML's generic constructor spends most of a large load in bookkeeping that plain data
    does not need; this walk is about twice as fast. Aliases are copied, not shared.
    """
    tag = node.tag
    if isinstance(node, yaml.ScalarNode):
        if tag == _STR_TAG:
            return node.value
        if tag == _INT_TAG:
            return _construct_int(loader, node)
        if tag == _NULL_TAG:
            return None
        if tag == _BOOL_TAG and node.value in _BOOLS:
            return _BOOLS[node.value]
    elif isinstance(node, yaml.SequenceNode) and tag == _SEQ_TAG:
        return [yaml_value(loader, item) for item in node.value]
    elif (
        isinstance(node, yaml.MappingNode)
        and tag == _MAP_TAG
        and not any(key.tag == _MERGE_TAG for key, _ in node.value)
    ):
        return _yaml_mapping(loader, node)
    return loader.construct_object(node, deep=True)


def _yaml_mapping(loader: YamlLoader, node: yaml.MappingNode) -> dict[Any, object]:
    mapping: dict[Any, object] = {}
    for key_node, value_node in node.value:
        key = yaml_value(loader, key_node)
        if not isinstance(key, Hashable):
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping",
                node.start_mark,
                "found unhashable key",
                key_node.start_mark,
            )
        if key in mapping:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping",
                node.start_mark,
                f"found duplicate key {key!r}",
                key_node.start_mark,
            )
        mapping[key] = yaml_value(loader, value_node)
    return mapping


def yaml_problem(exc: yaml.YAMLError) -> str:
    """A one-line account of a YAML error: what, and at which line and column."""
    if isinstance(exc, yaml.MarkedYAMLError):
        what = ": ".join(part for part in (exc.context, exc.problem) if part)
        mark = exc.problem_mark or exc.context_mark
        if mark is not None:
            what += f" at line {mark.line + 1}, column {mark.column + 1}"
        return what
    return " ".join(str(exc).split())
