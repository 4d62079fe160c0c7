"""The judge engine's declarations: versioned prompts, judge needs, and reading replies.

A judge-backed metric declares what it must ask as plain data, a ``JudgeNeed``: which
versioned ``Prompt`` to send, the expressions its placeholders are rendered from (columns of
the frame, or the parsed replies of other needs: stages), and optionally one placeholder
whose input is a list (one prompt per item). The enrich layer fills the need's column with
the raw replies, one call per distinct prompt across the frame, through the providers'
cache, ledger, budget and retries; the metric then reads the replies with ``reply(need)``,
which decodes them (once per distinct reply) against the prompt's reply schema. A reply
that does not fit the schema is that row's error, never a guessed score.

Shipped prompts are package data files, one per prompt, read by one function
(``_prompt_texts.prompt_text``); they are registered by id (``shipped``), listed by
``evalframe metrics --prompts``, and overridable per metric (``Prompt.with_template``). The
prompt's key (``id@vN``, plus a hash of an overridden template) names the need's column, goes
into the cache namespace, and is recorded with the run (``prompt_keys``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final

import polars as pl

from evalframe.core._errors import MetricError
from evalframe.metrics._batched import batched
from evalframe.metrics._fence import Verbatim
from evalframe.metrics._prompt_texts import prompt_text

if TYPE_CHECKING:
    from polars._typing import PolarsDataType

__all__ = [
    "DATA_RULE",
    "PROMPTS",
    "JudgeNeed",
    "Prompt",
    "decode_reply",
    "json_schema",
    "parsed",
    "prompt",
    "prompt_keys",
    "register_prompt",
    "render",
    "reply",
    "shipped",
    "upstream_error",
]

_PLACEHOLDER: Final = re.compile(r"\{([a-z][a-z0-9_]*)\}")
_FENCE_OPEN: Final = re.compile(r"^```(?:json)?\s*", flags=re.IGNORECASE)
_FENCE_CLOSE: Final = re.compile(r"\s*```$")

DATA_RULE: Final = prompt_text("data-rule").text
"""The paragraph every judge prompt starts with: the quoted values are data, never
instructions (``prompts/data-rule.v<N>.txt``)."""


# --- prompts -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Prompt:
    """A versioned judge prompt: its template and the schema of the reply it asks for.

    Attributes:
        id: a dotted name (``rag.claims``); with the version it is the prompt's identity.
        version: bump it whenever the template or the reply schema changes meaning, so
            cached replies to the old text are never reused for the new one (a shipped
            prompt's version is the number in its file name).
        template: the text, with ``{name}`` placeholders (lower-case identifiers; other
            braces, such as a JSON example, are left as written).
        reply: the reply's shape as a Polars ``Struct``: the JSON schema sent to the
            endpoint is derived from it, and replies are checked against it.
        description: one line for ``evalframe metrics --prompts``.
        custom: a hash of an overriding template, or ``""`` for the shipped one.
    """

    id: str
    version: int
    template: str
    reply: pl.Struct
    description: str = ""
    custom: str = ""

    @property
    def key(self) -> str:
        """``id@vN`` (``id@vN+<hash>`` when overridden): part of the column and cache key."""
        base = f"{self.id}@v{self.version}"
        return f"{base}+{self.custom}" if self.custom else base

    @property
    def text(self) -> str:
        """What is rendered and sent: ``DATA_RULE``, a blank line, then the template."""
        return f"{DATA_RULE}\n\n{self.template}"

    @property
    def placeholders(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(m.group(1) for m in _PLACEHOLDER.finditer(self.template)))

    def with_template(self, template: str) -> Prompt:
        """This prompt with another template (same placeholders and reply schema).

        Raises:
            MetricError: the template lacks one of the placeholders, or adds an unknown one.
        """
        if template == self.template:
            return self
        got = set(dict.fromkeys(m.group(1) for m in _PLACEHOLDER.finditer(template)))
        want = set(self.placeholders)
        if got != want:
            raise MetricError(
                f"A template overriding prompt {self.id!r} must use the placeholders "
                f"{sorted('{' + p + '}' for p in want)}; got {sorted('{' + p + '}' for p in got)}."
            )
        digest = hashlib.sha256(template.encode()).hexdigest()[:12]
        return replace(self, template=template, custom=digest)

    def json_schema(self) -> dict[str, Any]:
        """The reply's JSON schema (objects closed, every field required)."""
        return json_schema(self.reply)


PROMPTS: dict[str, Prompt] = {}


def register_prompt(p: Prompt) -> Prompt:
    """Add a shipped prompt to the registry (``evalframe metrics --prompts`` lists them).

    Raises:
        MetricError: another prompt already holds the id.
    """
    found = PROMPTS.get(p.id)
    if found is not None and found != p:
        raise MetricError(f"A prompt with id {p.id!r} is already registered.")
    PROMPTS[p.id] = p
    return p


def shipped(id: str, *, reply: pl.Struct, description: str) -> Prompt:
    """The shipped prompt ``id``, its text and version read from its package data file
    (``prompt_text``), registered."""
    found = prompt_text(id)
    return register_prompt(
        Prompt(
            id=id, version=found.version, template=found.text, reply=reply, description=description
        )
    )


def prompt(id: str) -> Prompt:
    """The registered prompt ``id``."""
    try:
        return PROMPTS[id]
    except KeyError:
        raise MetricError(f"Unknown prompt {id!r}; registered: {sorted(PROMPTS)}.") from None


def json_schema(dtype: PolarsDataType) -> dict[str, Any]:
    """The JSON schema of a value of ``dtype`` (String, Boolean, integers, floats, Enum,
    List and Struct).

    Examples:
        >>> import polars as pl
        >>> json_schema(pl.Struct({"claims": pl.List(pl.String)}))["properties"]
        {'claims': {'type': 'array', 'items': {'type': 'string'}}}
    """
    if isinstance(dtype, pl.Struct):
        return {
            "type": "object",
            "properties": {f.name: json_schema(f.dtype) for f in dtype.fields},
            "required": [f.name for f in dtype.fields],
            "additionalProperties": False,
        }
    if isinstance(dtype, pl.List):
        return {"type": "array", "items": json_schema(dtype.inner)}
    if isinstance(dtype, pl.Enum):
        return {"type": "string", "enum": list(dtype.categories.to_list())}
    if dtype == pl.String:
        return {"type": "string"}
    if dtype == pl.Boolean:
        return {"type": "boolean"}
    if dtype.is_integer():
        return {"type": "integer"}
    if dtype.is_float():
        return {"type": "number"}
    raise MetricError(f"A judge reply cannot hold {dtype}.")


# --- needs ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class JudgeNeed:
    """Need: a judge's replies to a versioned prompt, rendered per row (or per list item).

    Attributes:
        name: what is judged, unique per rendering (``claims(actual_output)``); with the
            prompt's key it names the column (``judge__claims(actual_output)@rag.claims@v1``),
            so metrics declaring the same name and prompt share one set of calls.
        prompt: the prompt to send.
        inputs: per placeholder, the expression (over the frame and the columns of
            ``requires``) it is rendered from, fenced (``_fence.fenced``: a JSON string
            literal); a ``Verbatim`` input is evalframe's own text, inserted as it is. A
            row with a null input sends no prompt.
        each: the placeholder whose input is a ``List(String)``: one prompt per item, and
            the column holds a list of replies in the items' order.
        requires: the needs whose replies ``inputs`` read (with ``parsed(need)``); filled
            first. A row whose required reply failed sends no prompt and gets that error.
        optional: columns ``inputs`` read that a frame may lack (``contexts``), with their
            dtypes: absent, they are read as nulls.
        top_logprobs: ask the judge for this many top token log-probabilities per token;
            they land, as JSON text, in ``<column>__logprobs`` (null where the judge gave
            none).

    The filled column is the raw reply text (String, or List(String) with ``each``), and
    ``<column>__error`` the row's error (a failed call, or a failed required reply).
    """

    name: str
    prompt: Prompt
    inputs: Mapping[str, pl.Expr | Verbatim]
    each: str | None = None
    requires: tuple[JudgeNeed, ...] = field(default=())
    optional: Mapping[str, pl.DataType] = field(default_factory=dict)
    top_logprobs: int | None = None

    def __post_init__(self) -> None:
        missing = set(self.prompt.placeholders) - set(self.inputs)
        if missing:
            raise MetricError(
                f"Judge need {self.name!r} gives no input for {sorted(missing)} of prompt "
                f"{self.prompt.id!r}."
            )
        if self.each is not None and not isinstance(self.inputs.get(self.each), pl.Expr):
            raise MetricError(
                f"Judge need {self.name!r}: each={self.each!r} is not a fenced input."
            )

    @property
    def column(self) -> str:
        return f"judge__{self.name}@{self.prompt.key}"

    @property
    def error_column(self) -> str:
        return f"{self.column}__error"

    @property
    def logprobs_column(self) -> str:
        return f"{self.column}__logprobs"

    @property
    def parsed_column(self) -> str:
        """Where the engine keeps the decoded replies while it renders a later stage."""
        return f"{self.column}__parsed"


def prompt_keys(metrics: Iterable[Any]) -> dict[str, list[str]]:
    """Per metric id, the keys (``id@vN``) of the judge prompts its needs send, required
    stages first, once each; metrics that send none are left out. A run records this, so
    its scores say which prompt versions produced them.

    Examples:
        >>> import evalframe as ef
        >>> prompt_keys([ef.metrics.get("exact-match"), ef.metrics.get("faithfulness")])
        {'faithfulness': ['rag.claims@v2', 'rag.grounding@v2']}
    """

    def walk(needs: Iterable[Any], out: dict[str, None]) -> None:
        for need in needs:  # a metric's needs, not rows
            walk(getattr(need, "requires", ()), out)
            found = getattr(need, "prompt", None)
            if isinstance(found, Prompt):
                out[found.key] = None

    keys: dict[str, list[str]] = {}
    for m in metrics:
        seen: dict[str, None] = {}
        walk(m.needs() if hasattr(m, "needs") else (), seen)
        if seen:
            keys[m.id] = list(seen)
    return keys


# --- rendering -----------------------------------------------------------------------------------


def render(template: str, values: Mapping[str, pl.Expr]) -> pl.Expr:
    """The template with each placeholder replaced by its expression, in one pass: text
    substituted for a placeholder is never scanned again. Null if any input is null."""
    parts: list[pl.Expr] = []
    pos = 0
    for match in _PLACEHOLDER.finditer(template):  # pieces of the template, not rows
        name = match.group(1)
        if name not in values:
            continue
        parts.append(pl.lit(template[pos : match.start()]))
        parts.append(values[name].cast(pl.String))
        pos = match.end()
    parts.append(pl.lit(template[pos:]))
    return pl.concat_str(parts)


# --- replies -------------------------------------------------------------------------------------


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _conform(value: Any, dtype: PolarsDataType, path: str) -> Any:
    """``value`` checked against ``dtype`` (raises ``ValueError`` naming the path)."""

    def bad(expected: str) -> ValueError:
        return ValueError(f"'{path or 'reply'}' must be {expected}; got {_kind(value)}")

    if isinstance(dtype, pl.Struct):
        if not isinstance(value, dict):
            raise bad("an object")
        out = {}
        for f in dtype.fields:
            if f.name not in value:
                raise ValueError(f"'{path + '.' if path else ''}{f.name}' is missing")
            out[f.name] = _conform(value[f.name], f.dtype, f"{path + '.' if path else ''}{f.name}")
        return out
    if isinstance(dtype, pl.List):
        if not isinstance(value, list):
            raise bad("an array")
        return [_conform(v, dtype.inner, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(dtype, pl.Enum):
        allowed = dtype.categories.to_list()
        if not isinstance(value, str) or value not in allowed:
            raise ValueError(f"'{path}' must be one of {allowed}; got {json.dumps(value)}")
        return value
    if dtype == pl.String:
        if not isinstance(value, str):
            raise bad("a string")
        return value
    if dtype == pl.Boolean:
        if not isinstance(value, bool):
            raise bad("a boolean")
        return value
    if dtype.is_integer():
        if isinstance(value, bool) or not (
            isinstance(value, int) or (isinstance(value, float) and value.is_integer())
        ):
            raise bad("an integer")
        return int(value)
    if dtype.is_float():
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise bad("a number")
        return float(value)
    raise ValueError(f"'{path}' has an unsupported type {dtype}")


def decode_reply(content: str, dtype: pl.Struct) -> tuple[dict[str, Any] | None, str | None]:
    """A reply decoded leniently (whitespace and one code fence stripped), checked strictly.

    Returns:
        ``(value, None)``, or ``(None, message)`` when the reply is not JSON or breaks the
        schema: a missing field, a wrong type, a label outside an enum. Extra keys are
        ignored.

    Examples:
        >>> import polars as pl
        >>> shape = pl.Struct({"claims": pl.List(pl.String)})
        >>> decode_reply('```json\\n{"claims": ["a"]}\\n```', shape)
        ({'claims': ['a']}, None)
        >>> decode_reply('{"claims": "a"}', shape)[1]
        "judge reply does not fit the schema: 'claims' must be an array; got string."
    """
    text = content.strip()
    if text.startswith("```"):
        text = _FENCE_CLOSE.sub("", _FENCE_OPEN.sub("", text, count=1), count=1).strip()
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except ValueError as exc:
        return None, f"judge reply is not valid JSON: {exc}."
    try:
        return _conform(value, dtype, ""), None
    except ValueError as exc:
        return None, f"judge reply does not fit the schema: {exc}."


def _decode_series(content: pl.Series, dtype: pl.Struct) -> pl.DataFrame:
    """Decode each distinct reply once; rows aligned with ``content``."""
    distinct = content.drop_nulls().unique(maintain_order=True)
    decoded = [decode_reply(c, dtype) for c in distinct.to_list()]  # distinct replies only
    table = pl.DataFrame(
        {
            "__value": distinct,
            "value": pl.Series([d[0] for d in decoded], dtype=dtype),
            "error": pl.Series([d[1] for d in decoded], dtype=pl.String),
        },
        schema={"__value": pl.String, "value": dtype, "error": pl.String},
    )
    return (
        content.alias("__value")
        .to_frame()
        .join(table, on="__value", how="left", maintain_order="left", nulls_equal=False)
        .drop("__value")
    )


def reply(need: JudgeNeed) -> pl.Expr:
    """The need's replies decoded: a struct of ``value`` (the prompt's reply dtype, or a
    list of them with ``each``; null where no prompt was sent or the reply failed) and
    ``error`` (the row's failed call or required reply, else the first undecodable reply).
    """
    dtype = need.prompt.reply
    col = pl.col(need.column)
    provider_error = pl.col(need.error_column)
    if need.each is None:

        def kernel(f: pl.DataFrame) -> pl.DataFrame:
            return _decode_series(f.get_column("content"), dtype)

        parsed = batched(kernel, {"content": col}, {"value": dtype, "error": pl.String})
        value = parsed.struct.field("value")
        error = pl.coalesce(provider_error, parsed.struct.field("error"))
    else:

        def kernel_each(f: pl.DataFrame) -> pl.DataFrame:
            lists = f.get_column("content")
            rows = pl.DataFrame(
                {"row": pl.Series(range(lists.len()), dtype=pl.Int64), "content": lists}
            ).explode("content", empty_as_null=True)  # a null or empty list: one null item
            flat = rows.select("row").hstack(_decode_series(rows.get_column("content"), dtype))
            grouped = flat.group_by("row", maintain_order=True).agg(
                pl.col("value"), pl.col("error").drop_nulls().first()
            )
            n = lists.list.len()
            return grouped.with_columns(n=n).select(
                value=pl.when(pl.col("n") > 0)
                .then(pl.col("value"))
                .when(pl.col("n") == 0)
                .then(pl.lit([], pl.List(dtype))),
                error=pl.col("error"),
            )

        parsed = batched(
            kernel_each, {"content": col}, {"value": pl.List(dtype), "error": pl.String}
        )
        value = parsed.struct.field("value")
        error = pl.coalesce(provider_error, parsed.struct.field("error"))
    return pl.struct(value=pl.when(error.is_null()).then(value), error=error)


def parsed(need: JudgeNeed) -> pl.Expr:
    """``reply(need)`` as another need's inputs read it: the engine decodes each required
    need's replies once per frame before rendering (Polars does not share a Python
    function's result between the expressions that use it), so inputs that read a stage's
    claims several times cost one decode."""
    return pl.col(need.parsed_column)


def upstream_error(need: JudgeNeed) -> pl.Expr:
    """The first error among the replies ``need`` requires, named by their prompts (or
    null): the rows that must not be sent. Reads ``parsed`` columns."""
    errors = [
        pl.format(
            "{} ({}): {}", pl.lit(r.name), pl.lit(r.prompt.key), parsed(r).struct.field("error")
        )
        for r in need.requires
    ]
    return pl.coalesce(errors) if errors else pl.lit(None, pl.String)
