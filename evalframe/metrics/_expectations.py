"""Trajectory expectations read for the metrics that check them: ``metadata.trajectory`` and
``metadata.mcp.tools`` of a batch of rows, decoded by field when first asked for.

What a dataset may say there (and the checks run when it is read) is the core's
(``core/_trajectory.parse_expectations``, the compiled decoding ``core/_expectations_compiled``);
reading it column by column for scoring is the trajectory, agent and MCP metrics' alone.
"""

from __future__ import annotations

import json
import threading
from typing import Final

import numpy as np
import polars as pl

from evalframe.core._errors import DatasetError
from evalframe.core._njit import worth_compiling
from evalframe.core._trajectory import (
    EXPECTATIONS_IN_PYTHON_UP_TO,
    argument_spec,
    mcp_tool,
)

__all__ = ["Expectations", "distinct_texts", "in_row_order"]

_ITEM: Final = r'(?:"(?:[^"\\]|\\.)*"|-?[0-9][0-9.eE+-]*)'
_FLAT_ARRAY: Final = rf"^\[(?:{_ITEM}(?:,{_ITEM})*)?\]$"
"""A JSON array of strings and numbers, as ``json_path_match`` writes it (compact)."""
_NAME_LIST: Final = pl.List(pl.String())
_NAME_LIST_FIELDS: Final = {
    "tools": True,
    "forbidden_tools": True,
    "order": False,
    "expected_tools": False,
    "requires_approval": True,
}
"""The name-list keys, and whether a single string stands for a one-item list."""
_COUNT_FIELDS: Final = {"max_steps": pl.Int64(), "optimal_steps": pl.Int64()}
"""The integer keys."""


class Expectations:
    """``metadata.trajectory`` (and ``metadata.mcp.tools``) of a batch of rows, by field.

    The trajectory fields of every row are decoded together, once per distinct metadata
    text, by a compiled pass (``core/_expectations_compiled.py``) where it can vouch for the
    text; the other rows, and ``mcp_tools``, are decoded field by field when first asked for:
    the name lists and counts with Polars' JSON path functions, the nested ones
    (``tool_arguments``, ``goal``, ``mcp_tools``) in Python once per distinct text of that
    field. A row whose field has the wrong shape (possible only in frames built by hand:
    datasets are checked on load) gets a message in ``problem`` naming the sample and field.
    """

    def __init__(
        self, metadata: pl.Series, sample_ids: pl.Series, *, compiled: bool | None = None
    ) -> None:
        self._frame = pl.DataFrame({"metadata": metadata, "sample_id": sample_ids})
        self._cache: dict[str, pl.Series] = {}
        self._problems: dict[str, pl.Series] = {}
        self._decoding = ""
        if compiled is None:  # a few rows are decoded without compiling anything
            compiled = worth_compiling(metadata.len(), EXPECTATIONS_IN_PYTHON_UP_TO)
        self._use_compiled = compiled
        self._compiled: pl.DataFrame | None = None
        self._rest: Expectations | None = None
        self._lock = threading.RLock()  # metrics scored on several threads share one

    @property
    def height(self) -> int:
        return self._frame.height

    def _select(self, expr: pl.Expr) -> pl.Series:
        return self._frame.select(expr).to_series()

    def _field(self, path: str) -> pl.Expr:
        return pl.col("metadata").str.json_path_match(f"$.{path}")

    def _problem(self, bad: pl.Expr, field: str, wanted: str) -> None:
        message = pl.concat_str(
            pl.lit("Sample '"),
            pl.col("sample_id"),
            pl.lit(f"' field 'metadata.{field}' must be {wanted}."),
        )
        self._problems[self._decoding] = self._select(pl.when(bad).then(message))

    @property
    def problem(self) -> pl.Series:
        """The first problem of each row among the fields read so far, or null."""
        return self.problem_for(list(self._problems))

    def problem_for(self, names: list[str]) -> pl.Series:
        """The first problem of each row among the fields ``names``, or null."""
        names = ["tool_arguments" if n == "skipped_arguments" else n for n in names]
        with self._lock:
            found = [self._problems[n] for n in names if n in self._problems]
        if not found:
            return _no_problems(self.height)
        return self._select(pl.coalesce(*(pl.lit(p) for p in found))).alias("problem")

    def get_column(self, name: str) -> pl.Series:
        with self._lock:
            return self._get_column(name)

    def _get_column(self, name: str) -> pl.Series:
        if name not in self._cache:
            self._decoding = "tool_arguments" if name == "skipped_arguments" else name
            if self._use_compiled and name != "mcp_tools":
                self._cache[name] = self._from_compiled(name).alias(name)
            else:
                self._cache[name] = self._decode(name).alias(name)
        return self._cache[name]

    def _from_compiled(self, name: str) -> pl.Series:
        """Field ``name`` from the compiled decoding, the rows it leaves read field by field."""
        if self._compiled is None:
            from evalframe.core._expectations_compiled import decode_expectations

            texts = self._frame.get_column("metadata")
            distinct, held = distinct_texts(texts)
            decoded = decode_expectations(distinct)
            if distinct.len() == texts.len():  # every text distinct: already in row order
                rows = decoded.rechunk()
            else:  # each row takes its text's decoding (a null text none)
                rows = in_row_order(decoded, texts.len(), held)
            self._compiled = rows.with_columns(pl.col("exact").fill_null(True))
        exact = self._compiled.get_column("exact")
        field = "skipped" if name == "skipped_arguments" else name
        values = self._compiled.get_column(field)
        if name == "skipped_arguments":
            values = values.fill_null(0)
        problem = _no_problems(self.height)
        if not exact.all():
            if self._rest is None:
                rest = self._frame.filter(~exact)
                self._rest = Expectations(
                    rest.get_column("metadata"), rest.get_column("sample_id"), compiled=False
                )
            slow = self._rest.get_column(name)
            values = _merge(exact, values, slow.cast(values.dtype))
            problem = _merge(exact, problem, self._rest.problem_for([name]))
        self._problems[self._decoding] = problem
        return values

    def _decode(self, name: str) -> pl.Series:
        if name in _NAME_LIST_FIELDS:
            return self._names(name, single=_NAME_LIST_FIELDS[name])
        if name in _COUNT_FIELDS:
            typed = self._typed()
            if typed is None:
                values, bad = self._count_by_path(self._frame, name)
            else:
                number = self._typed_field(typed, name)
                values = typed.select(
                    pl.when(pl.lit(number) >= 0).then(pl.lit(number))
                    if name == "optimal_steps"
                    else pl.lit(number)
                ).to_series()
                bad = number.is_not_null() & values.is_null()
                exact = typed.get_column("exact")
                if not exact.all():
                    slow = self._count_by_path(self._frame.filter(~exact), name)
                    values, bad = (
                        _merge(exact, fast, path)
                        for fast, path in zip((values, bad), slow, strict=True)
                    )
            self._problem(pl.lit(bad), f"trajectory.{name}", "an integer")
            return values
        if name == "skipped_arguments":
            self.get_column("tool_arguments")
            return self._cache["skipped_arguments"]
        if name in ("tool_arguments", "goal", "mcp_tools"):
            return self._nested(name)
        raise KeyError(name)

    def _count_by_path(self, frame: pl.DataFrame, name: str) -> tuple[pl.Series, pl.Series]:
        raw = frame.select(self._field(f"trajectory.{name}")).to_series()
        number = pl.lit(raw).str.strip_chars().cast(pl.Int64, strict=False)
        if name == "optimal_steps":
            number = pl.when(number >= 0).then(number)
        values = frame.select(number).to_series()
        return values, raw.is_not_null() & values.is_null()

    def _names(self, key: str, *, single: bool) -> pl.Series:
        typed = self._typed()
        if typed is None:  # some row has a shape the typed decoding cannot take
            names, problem = self._names_by_path(self._frame, key, single=single)
        else:
            names, problem = self._names_typed(typed, key, single=single)
        self._problems[self._decoding] = problem
        return names

    def _typed(self) -> pl.DataFrame | None:
        """The name lists and counts of every row in one typed JSON decoding (instead of a
        path lookup per field), where that decoding is exact; ``exact`` marks those rows.

        Polars' typed decoding turns ``true``, ``false`` and ``null`` into text or numbers,
        a lone value into a one-item list, a fraction or an exponent into an integer, and
        drops integers too large for 64 bits, so rows whose metadata holds such a literal, a
        name field that is not a list, or a count that is not a plain integer go to the
        per-field path, which reads them as it always has (and reports the wrong shapes).
        ``None`` when the decoding fails for the whole column (an object inside a name list,
        a trajectory that is not a map).
        """
        if "typed" not in self._cache:
            text = pl.col("metadata")
            names = "|".join(_NAME_LIST_FIELDS)
            inexact = text.str.contains(r"\btrue\b|\bfalse\b|\bnull\b") | text.str.contains(
                rf'"(?:{names})"\s*:\s*[^\[\s]'
                r'|"(?:max_steps|optimal_steps)"\s*:\s*(?:-?[0-9]+[.eE]|-?[0-9]{19}|[^-0-9\s])'
            )
            fields = {**dict.fromkeys(_NAME_LIST_FIELDS, _NAME_LIST), **_COUNT_FIELDS}
            block = pl.Struct({"trajectory": pl.Struct(fields)})
            try:
                typed = self._frame.select(
                    exact=~inexact.fill_null(False),
                    block=pl.when(~inexact).then(text).str.json_decode(block),
                )
            except pl.exceptions.ComputeError:
                return None
            self._cache["typed"] = typed.to_struct("typed")
        return self._cache["typed"].struct.unnest()

    @staticmethod
    def _typed_field(typed: pl.DataFrame, key: str) -> pl.Series:
        return typed.select(
            pl.col("block").struct.field("trajectory").struct.field(key)
        ).to_series()

    def _names_typed(
        self, typed: pl.DataFrame, key: str, *, single: bool
    ) -> tuple[pl.Series, pl.Series]:
        exact = typed.get_column("exact")
        names = self._typed_field(typed, key)
        problem = _no_problems(self.height)
        if not exact.all():
            slow = self._names_by_path(self._frame.filter(~exact), key, single=single)
            names, problem = (
                _merge(exact, fast, path) for fast, path in zip((names, problem), slow, strict=True)
            )
        return names.alias("names"), problem

    def _names_by_path(
        self, frame: pl.DataFrame, key: str, *, single: bool
    ) -> tuple[pl.Series, pl.Series]:
        # Materialize the two path lookups once; the rest reads plain columns.
        parts = frame.select(
            text=self._field(f"trajectory.{key}"),
            first=self._field(f"trajectory.{key}[0]"),
            sample_id=pl.col("sample_id"),
        )
        text = pl.col("text")
        is_array = pl.col("first").is_not_null() | (text == "[]")
        flat = is_array & text.str.contains(_FLAT_ARRAY)
        parts = parts.with_columns(flat=flat, is_array=is_array)
        decoded = pl.when("flat").then(text).otherwise(pl.lit("[]")).str.json_decode(_NAME_LIST)
        names: pl.Expr = pl.when("flat").then(decoded)
        ok = pl.col("flat")
        if single:
            is_scalar = ~pl.col("is_array") & ~text.str.starts_with("{")
            names = pl.when("flat").then(decoded).when(is_scalar).then(pl.concat_list(text))
            ok = ok | is_scalar
        wanted = "a tool name or a list of tool names" if single else "a list of strings"
        out = parts.select(
            names=names,
            problem=pl.when(text.is_not_null() & ~ok).then(
                pl.concat_str(
                    pl.lit("Sample '"),
                    pl.col("sample_id"),
                    pl.lit(f"' field 'metadata.trajectory.{key}' must be {wanted}."),
                )
            ),
        )
        return out.get_column("names"), out.get_column("problem")

    def _nested(self, name: str) -> pl.Series:
        path = "mcp.tools" if name == "mcp_tools" else f"trajectory.{name}"
        texts = self._select(self._field(path))
        distinct = texts.drop_nulls().unique(maintain_order=True).to_list()
        owners: list[int] = []
        items: list[tuple[str | None, str | None]] = []
        skipped: list[int] = []
        problems: list[str | None] = []
        for index, text in enumerate(distinct):
            problem = None
            try:
                value = json.loads(text) if text[:1] in "[{" else text
                parsed, dropped = _nested_items(name, value)
            except (ValueError, DatasetError) as exc:
                parsed, dropped, problem = [], 0, str(exc).strip()
            owners.extend([index] * len(parsed))
            items.extend(parsed)
            skipped.append(dropped)
            problems.append(problem)
        flat = pl.DataFrame(
            {
                "i": owners,
                "name": [n for n, _ in items],
                "value": [v for _, v in items],
            },
            schema={"i": pl.Int64, "name": pl.String, "value": pl.String},
        )
        second = "input_schema" if name == "mcp_tools" else "arguments"
        grouped = flat.group_by("i", maintain_order=True).agg(
            pl.struct(pl.col("name"), pl.col("value").alias(second)).alias("items")
        )
        table = (
            pl.DataFrame(
                {"text": distinct, "skipped": skipped, "bad": problems},
                schema={"text": pl.String, "skipped": pl.Int64, "bad": pl.String},
            )
            .with_row_index("i")
            .with_columns(pl.col("i").cast(pl.Int64))
            .join(grouped, on="i", how="left", maintain_order="left")
        )
        rows = pl.DataFrame({"text": texts}).join(
            table, on="text", how="left", maintain_order="left", nulls_equal=False
        )
        items_col = rows.get_column("items")
        dtype = pl.List(pl.Struct({"name": pl.String(), second: pl.String()}))
        items_col = items_col.cast(dtype)
        present = rows.get_column("text").is_not_null()
        items_col = self._select(
            pl.when(pl.lit(present) & pl.lit(rows.get_column("bad")).is_null()).then(
                pl.lit(items_col).fill_null(pl.lit([], dtype))
            )
        )
        bad = rows.get_column("bad")
        self._problems[self._decoding] = self._select(
            pl.when(pl.lit(bad).is_not_null()).then(
                pl.concat_str(pl.lit("Sample '"), pl.col("sample_id"), pl.lit("' "), pl.lit(bad))
            )
        )
        if name == "tool_arguments":
            self._cache["skipped_arguments"] = rows.get_column("skipped").fill_null(0)
        if name == "goal":
            return items_col.list.first()
        return items_col


_FEW_OTHERS: Final = 256
"""Rows repeating an earlier text (or without one) up to which :func:`in_row_order` slices."""


def distinct_texts(texts: pl.Series) -> tuple[pl.Series, pl.Series]:
    """The distinct texts of ``texts`` (nulls left out) in order of first appearance, and
    the rows holding each, in order: one hashing pass, where a join on the texts would hash
    them all again."""
    groups = (
        pl.DataFrame({"text": texts})
        .with_row_index("row")
        .drop_nulls("text")
        .group_by("text", maintain_order=True)
        .agg("row")
    )
    return groups.get_column("text").alias(texts.name), groups.get_column("row")


def in_row_order(decoded: pl.DataFrame, height: int, held: pl.Series) -> pl.DataFrame:
    """The ``height`` rows of a frame whose distinct texts ``decoded`` holds a row each (in
    order of first appearance; ``held``: the rows holding each text, as
    :func:`distinct_texts` gives them), each row with its text's, a row without a text all
    null; in one chunk.

    Where few rows are not first appearances, the runs of first appearances are sliced and
    the others put between them, then the whole made one chunk: each column copied once,
    where a gather takes several times as long (and as long again over the decoder's two
    chunks). Otherwise the rows are gathered.

    Examples:
        >>> import polars as pl
        >>> texts = pl.Series(["x", "x", None, "y"])
        >>> distinct, held = distinct_texts(texts)
        >>> decoded = pl.DataFrame({"a": [10, 20]})  # x's row, y's row
        >>> in_row_order(decoded, texts.len(), held).get_column("a").to_list()
        [10, 10, None, 20]
    """
    which = np.full(height, -1, np.int64)
    which[held.explode().to_numpy()] = np.repeat(
        np.arange(held.len(), dtype=np.int64), held.list.len().to_numpy()
    )
    firsts = held.list.first().to_numpy()
    first = np.zeros(which.size, np.bool_)
    first[firsts] = True
    others = np.flatnonzero(~first)
    if others.size > _FEW_OTHERS:
        take = pl.Series(which).set(pl.Series(which < 0), None)
        return decoded.rechunk().select(pl.all().gather(take))
    pieces, start, row = [], 0, 0
    for at in others.tolist():  # a few rows: not a loop over the frame's rows
        if at > row:
            pieces.append(decoded.slice(start, at - row))
            start += at - row
        source = int(which[at])
        pieces.append(decoded.slice(source, 1) if source >= 0 else decoded.clear(1))
        row = at + 1
    if start < decoded.height:
        pieces.append(decoded.slice(start))
    return pl.concat(pieces).rechunk()


def _no_problems(height: int) -> pl.Series:
    """A ``problem`` column with none (made without a Python list of ``height`` Nones)."""
    return pl.repeat(None, height, dtype=pl.String, eager=True).alias("problem")


def _merge(exact: pl.Series, fast: pl.Series, path: pl.Series) -> pl.Series:
    """``fast`` where ``exact``, else the next of ``path`` (one value per inexact row)."""
    slot = (~exact).cast(pl.Int64).cum_sum() - 1
    spread = path.gather(slot.clip(0)) if path.len() else fast
    return pl.select(pl.when(exact).then(fast).otherwise(spread)).to_series().alias(fast.name)


def _nested_items(name: str, value: object) -> tuple[list[tuple[str | None, str | None]], int]:
    """(name, JSON text) pairs of a nested field's value, and how many entries were skipped."""
    if name == "goal":
        spec = argument_spec({"name": value} if isinstance(value, str) else value)
        if spec is None:
            raise DatasetError("field 'metadata.trajectory.goal' must be a tool name or a map.")
        return [(spec["name"], spec["arguments"])], 0
    if name == "tool_arguments":
        if not isinstance(value, list):
            raise DatasetError("field 'metadata.trajectory.tool_arguments' must be a list.")
        specs = [argument_spec(entry) for entry in value]
        usable = [(s["name"], s["arguments"]) for s in specs if s is not None]
        return usable, len(value) - len(usable)
    if not isinstance(value, list):
        raise DatasetError("field 'metadata.mcp.tools' must be a list of tools.")
    tools = [mcp_tool(t, f"metadata.mcp.tools[{i}]", "") for i, t in enumerate(value)]
    return [(t["name"], t["input_schema"]) for t in tools], 0
