"""YAML as eval-harness reads it: PyYAML's safe loader with YAML 1.2 core-schema scalars.

eval-harness parses YAML with Symfony's parser, which follows the YAML 1.2 core schema:
``yes``, ``no``, ``on``, ``off``, ``1:30`` and ``1_000`` are strings, ``010`` is ten, ``1e3``
is a number, and a repeated key is an error. ``YamlLoader`` gives PyYAML those rules,
``parse_yaml`` walks the node tree into plain Python values (about twice as fast as
PyYAML's generic constructor on plain data), and ``yaml_problem`` turns a YAML error into
one line with its position. Dataset files (``evalframe.core._dataset``) and saved outputs files
(``evalframe.core._outputs``) both read YAML through here.

``check_yaml_limits`` runs before any node is composed: libyaml's composer recurses once per
level (50,000 levels overflow the C stack and kill the process) and aliases are copied
(a few hundred bytes of nested aliases expand to billions of nodes), so both are counted
from the parser's events first, which needs neither recursion nor expansion.

``dump_yaml`` writes YAML that ``parse_yaml`` reads back as the same value: a string the
1.2 rules would read as a number (``0o17``, ``1e3``) is quoted, a string holding a line
break other than ``\\n`` is double-quoted (a single-quoted scalar would fold it), and no
anchors or aliases are written.
"""

from __future__ import annotations

import re
from collections.abc import Hashable
from typing import Any, Final, NoReturn

import yaml

from evalframe.core._errors import YamlLimitError

try:
    from yaml import CSafeLoader as _SafeLoader
except ImportError:  # pragma: no cover - PyYAML without libyaml: same results, ~10x slower
    from yaml import SafeLoader as _SafeLoader  # type: ignore[assignment]

__all__ = [
    "MAX_ALIAS_NODES",
    "MAX_DEPTH",
    "YamlLimitError",
    "YamlLoader",
    "check_yaml_limits",
    "dump_yaml",
    "parse_yaml",
    "yaml_problem",
    "yaml_value",
]

MAX_DEPTH: Final = 100
"""How deep lists and maps may nest in a file, counted from its top (the document is level 1)."""
MAX_ALIAS_NODES: Final = 100_000
"""How many nodes YAML aliases may add to a document, unless the document writes out more."""

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


class _YamlDumper(yaml.SafeDumper):
    """PyYAML's safe dumper, quoting every string either rule set would read as another type."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


for _first, _resolvers in YamlLoader.yaml_implicit_resolvers.items():
    for _tag, _regexp in _resolvers:
        _YamlDumper.add_implicit_resolver(_tag, _regexp, [_first])

_FOLDED_BREAKS: Final = frozenset("\x85\u2028\u2029")


def _represent_str(dumper: _YamlDumper, text: str) -> yaml.ScalarNode:
    style = '"' if not _FOLDED_BREAKS.isdisjoint(text) else None
    return dumper.represent_scalar(_STR_TAG, text, style=style)


_YamlDumper.add_representer(str, _represent_str)


class _BlockDumper(_YamlDumper):
    """``_YamlDumper`` writing text of several lines as a literal block where YAML can."""


def _represent_block(dumper: _YamlDumper, text: str) -> yaml.ScalarNode:
    if "\n" in text and _FOLDED_BREAKS.isdisjoint(text):
        return dumper.represent_scalar(_STR_TAG, text, style="|")  # PyYAML falls back if it must
    return _represent_str(dumper, text)


_BlockDumper.add_representer(str, _represent_block)


def dump_yaml(value: object, *, width: int = 100, blocks: bool = False) -> str:
    """YAML text of a plain value (maps in their order) that ``parse_yaml`` reads back equal;
    with ``blocks``, text of several lines is a literal block (``|``), as a person writes it.

    Examples:
        >>> dump_yaml({"id": "0o17", "n": 15})
        "id: '0o17'\\nn: 15\\n"
        >>> print(dump_yaml({"text": "line one\\nline two"}, blocks=True), end="")
        text: |-
          line one
          line two
    """
    dumper = _BlockDumper if blocks else _YamlDumper
    return yaml.dump(value, Dumper=dumper, sort_keys=False, allow_unicode=True, width=width)


_COLLECTION_STARTS: Final = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
_COLLECTION_ENDS: Final = (yaml.SequenceEndEvent, yaml.MappingEndEvent)


def check_yaml_limits(text: str) -> None:
    """Check nesting depth and alias expansion from the parser's events, before composing.

    Lists and maps may nest ``MAX_DEPTH`` levels; aliases may add ``MAX_ALIAS_NODES`` nodes,
    or as many as the document writes out if that is more (so the parsed value stays within
    twice the file's own size). Syntax errors are left for the composer to report.

    Raises:
        YamlLimitError: a limit is exceeded; names it and the line.
    """
    loader = YamlLoader(text)
    # One counter per open collection: the nodes it holds once aliases are expanded.
    open_counts: list[int] = [0]
    anchors: dict[str, int] = {}
    open_anchors: list[str | None] = []
    written = 0
    added = 0
    get_event = loader.get_event
    try:
        while True:
            try:
                event: Any = get_event()
            except yaml.YAMLError as exc:
                # libyaml (0.2.5 and later) stops at its own nesting limit, deeper than ours
                # but met first when it scans ahead: the same limit, crossed.
                if "maximum nesting depth" in str(exc):
                    mark = getattr(exc, "problem_mark", None)
                    raise YamlLimitError(
                        f"nests lists and maps more than {MAX_DEPTH} levels deep",
                        (mark.line + 1) if mark is not None else 1,
                    ) from None
                return
            kind = event.__class__
            if kind is yaml.ScalarEvent:
                written += 1
                open_counts[-1] += 1
                if event.anchor is not None:
                    anchors[event.anchor] = 1
            elif kind in _COLLECTION_STARTS:
                written += 1
                if len(open_counts) > MAX_DEPTH:
                    raise YamlLimitError(
                        f"nests lists and maps more than {MAX_DEPTH} levels deep",
                        event.start_mark.line + 1,
                    )
                open_counts.append(1)
                open_anchors.append(event.anchor)
            elif kind in _COLLECTION_ENDS:
                size = open_counts.pop()
                open_counts[-1] += size
                anchor = open_anchors.pop()
                if anchor is not None:
                    anchors[anchor] = size
            elif kind is yaml.AliasEvent:
                # An unknown or still open anchor is the composer's error to report.
                size = anchors.get(event.anchor, 1)
                open_counts[-1] += size
                added += size
                # More may be written out after this point, but not more than two nodes
                # per character of the text.
                if added > max(MAX_ALIAS_NODES, 2 * len(text)):
                    _alias_limit(event.start_mark.line + 1)
            elif kind is yaml.StreamEndEvent:
                if added > max(MAX_ALIAS_NODES, written):
                    _alias_limit(event.start_mark.line + 1)
                return
    finally:
        loader.dispose()


def _alias_limit(line: int) -> NoReturn:
    raise YamlLimitError(
        f"expands its aliases to more than {MAX_ALIAS_NODES:,} nodes beyond those it writes out",
        line,
    )


def parse_yaml(text: str) -> object:
    """Parse one YAML document into plain Python values.

    Raises:
        YamlLimitError: the document nests too deeply or expands aliases too far.
        yaml.YAMLError: the document is not valid YAML.
    """
    check_yaml_limits(text)
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
