"""The judge toolbox: g-eval, pairwise, dag, rubric, prompt-alignment and summarization.

Every metric here declares its judge calls as ``JudgeNeed`` values (versioned prompts, staged
where one call reads another's reply); the enrich layer fills them, one call per distinct
prompt across the frame, through the providers' cache, ledger, budget and retries. The
metrics then read the parsed replies: a failed call or a reply that breaks its schema is the
row's error, never a guessed score, and each row's details hold the verdicts its score is
computed from.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, Final, NamedTuple

import polars as pl

from evalframe.core import schema as C
from evalframe.core._errors import MetricError
from evalframe.metrics._batched import batched, sample_error
from evalframe.metrics._dag import Dag, Leaf, Question, load_dag
from evalframe.metrics._fence import Verbatim, fenced, json_object, labelled, numbered, verbatim
from evalframe.metrics._judge_engine import JudgeNeed, Prompt, parsed, reply
from evalframe.metrics._rag_prompts import CLAIMS
from evalframe.metrics._registry import metric
from evalframe.metrics._spec import Metric, Range, Scored
from evalframe.metrics._toolbox_prompts import (
    ALIGNMENT,
    DAG_NODE,
    G_EVAL,
    G_EVAL_STEPS,
    PAIRWISE,
    RATING_HIGH,
    RATING_LOW,
    RUBRIC,
    SUMMARY_ANSWERS,
    SUMMARY_CHECK,
    SUMMARY_QUESTIONS,
)
from evalframe.metrics.judge import _question_expr

__all__ = [
    "Band",
    "dag",
    "expected_rating",
    "g_eval",
    "pairwise",
    "parse_rubric",
    "prompt_alignment",
    "rubric",
    "summarization",
]

_FAMILY: Final = "toolbox"


def _hash(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:12]


def _answer() -> pl.Expr:
    return pl.col(C.ACTUAL_OUTPUT)


def _expected() -> Verbatim:
    """The expected output fenced, or ``(none)`` when it is not a string."""
    return verbatim(
        pl.when(pl.col(C.EXPECTED_TYPE) == "string")
        .then(fenced(pl.col(C.EXPECTED_OUTPUT)))
        .otherwise(pl.lit("(none)"))
    )


def _no_prompt(metric_name: str) -> pl.Expr:
    return sample_error(f"has no actual output to judge for {metric_name}.")


def _prompt(base: Prompt, template: str | None) -> Prompt:
    """The shipped prompt, or the user's template for it (same placeholders)."""
    return base.with_template(template) if template else base


def _listed(items: Sequence[str]) -> Verbatim:
    """A list given with the metric (steps, instructions), fenced on numbered lines."""
    return verbatim(numbered(pl.lit(list(items), pl.List(pl.String))))


def _block(items: pl.Expr, empty: str) -> Verbatim:
    """A list from an earlier reply, fenced on numbered lines; ``empty`` for an empty list."""
    return verbatim(pl.when(items.list.len() > 0).then(numbered(items)).otherwise(pl.lit(empty)))


# --- g-eval ------------------------------------------------------------------------------------


def _steps_need(criteria: str) -> JudgeNeed:
    return JudgeNeed(
        f"g-eval-steps(criteria={_hash(criteria)})", G_EVAL_STEPS, {"criteria": pl.lit(criteria)}
    )


def _steps_expr(criteria: str, steps: Sequence[str] | None) -> pl.Expr:
    """The evaluation steps as a list: the user's, else the generated ones."""
    if steps:
        return pl.lit(list(steps), pl.List(pl.String))
    return reply(_steps_need(criteria)).struct.field("value").struct.field("steps")


def _rate_need(
    criteria: str, steps: Sequence[str] | None, top_logprobs: int, template: str | None = None
) -> JudgeNeed:
    given = bool(steps)
    name = (
        f"g-eval(criteria={_hash(criteria)},steps={_hash(list(steps)) if steps else 'generated'}"
        f"{f',top_logprobs={top_logprobs}' if top_logprobs else ''})"
    )
    return JudgeNeed(
        name,
        _prompt(G_EVAL, template),
        {
            "criteria": pl.lit(criteria),
            "steps": _listed(steps or ())
            if given
            else _block(
                parsed(_steps_need(criteria)).struct.field("value").struct.field("steps"),
                "(no steps)",
            ),
            "question": _question_expr(),
            "expected": _expected(),
            "answer": _answer(),
        },
        requires=() if given else (_steps_need(criteria),),
        top_logprobs=top_logprobs or None,
    )


def expected_rating(logprobs: Any) -> list[float] | None:
    """The probabilities of the ratings 1..5 at the rating token of a reply, normalised
    over the valid ratings; ``None`` when the logprobs hold no rating token.

    ``logprobs`` is a reply's token list (``[{"token", "top": [[token, logprob], ...]}]``).
    The rating token is the first token whose text, stripped of spaces and quotes, is a
    valid rating; the probabilities are those of its top alternatives that are valid
    ratings.

    Examples:
        >>> import math
        >>> lp = [{"token": '{"score": ', "top": []},
        ...       {"token": "4", "top": [["4", math.log(0.6)], ["5", math.log(0.2)],
        ...                              ["x", math.log(0.2)]]}]
        >>> [round(p, 3) for p in expected_rating(lp)]
        [0.0, 0.0, 0.0, 0.75, 0.25]
    """
    if not isinstance(logprobs, list):
        return None
    valid = {str(r): r for r in range(RATING_LOW, RATING_HIGH + 1)}
    for entry in logprobs:  # tokens of one reply, not rows
        if not isinstance(entry, dict) or str(entry.get("token", "")).strip(" \"'") not in valid:
            continue
        mass = [0.0] * (RATING_HIGH - RATING_LOW + 1)
        for alt in entry.get("top") or []:
            if not (isinstance(alt, list) and len(alt) == 2):
                continue
            token, logprob = str(alt[0]).strip(" \"'"), alt[1]
            if token in valid and isinstance(logprob, int | float) and math.isfinite(logprob):
                mass[valid[token] - RATING_LOW] += math.exp(logprob)
        total = sum(mass)
        return [m / total for m in mass] if total > 0 else None
    return None


def _probabilities_batch(f: pl.DataFrame) -> pl.DataFrame:
    texts = f.get_column("logprobs")
    distinct = texts.drop_nulls().unique(maintain_order=True)
    probs = [expected_rating(json.loads(t)) for t in distinct.to_list()]  # distinct replies
    table = pl.DataFrame(
        {"__t": distinct, "p": pl.Series(probs, dtype=pl.List(pl.Float64))},
        schema={"__t": pl.String, "p": pl.List(pl.Float64)},
    )
    return (
        texts.alias("__t")
        .to_frame()
        .join(table, on="__t", how="left", maintain_order="left")
        .select("p")
    )


def _g_eval_needs(
    *,
    criteria: str,
    steps: Sequence[str] | None = None,
    top_logprobs: int = 5,
    template: str | None = None,
) -> list[JudgeNeed]:
    return [_rate_need(criteria, steps, top_logprobs, template)]


@metric("g-eval", family=_FAMILY, dimension="correctness", needs=_g_eval_needs)
def g_eval(
    *,
    criteria: str,
    steps: tuple[str, ...] | None = None,
    top_logprobs: Annotated[int, Range(ge=0, le=20)] = 5,
    template: str | None = None,
) -> Scored:
    """A criteria-driven judge (G-Eval): rating 1-5 mapped to [0, 1].

    With token logprobs the score is the probability-weighted rating over the valid
    ratings; without them, the parsed rating. Evaluation steps are generated once per
    criteria (one call per frame) unless ``steps`` are given.

    Examples:
        >>> import evalframe as ef
        >>> def judge(prompt):
        ...     if "write the steps" in prompt:  # asked once per criteria
        ...         return {"steps": ["Check the facts.", "Check the tone."]}
        ...     return {"score": 4 if "Paris" in prompt.split("ANSWER:")[-1] else 1, "reason": "r"}
        >>> ds = ef.Dataset.from_records([
        ...     {"id": k, "input": {"q": "Capital of France?"}, "expected_output": "Paris"} for k in "ab"],
        ...     name="demo")
        >>> run = ef.evaluate(ds, outputs={"a": "Paris, of course.", "b": "Lyon"},
        ...                   metrics=['g-eval(criteria="The answer is correct and polite.")'],
        ...                   providers=ef.Providers(judge=ef.testing.ScriptedJudge(judge), cache=False))
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        a 0.75 {"criteria":"The answer is correct and polite.","steps":["Check the facts.","Check the tone."],"rating":4,"reason":"r","probabilities":null,"expected_rating":4.0,"method":"rating","prompt":"toolbox.g-eval@v2"}
        b 0.0 {"criteria":"The answer is correct and polite.","steps":["Check the facts.","Check the tone."],"rating":1,"reason":"r","probabilities":null,"expected_rating":1.0,"method":"rating","prompt":"toolbox.g-eval@v2"}
    """  # noqa: E501
    if not criteria.strip():
        raise MetricError("Metric 'g-eval' parameter 'criteria' must be non-empty text.")
    need = _rate_need(criteria, steps, top_logprobs, template)
    return rated("g-eval", need, criteria, steps, top_logprobs)


def rated(
    name: str, need: JudgeNeed, criteria: str, steps: Sequence[str] | None, top_logprobs: int
) -> Scored:
    """Score, error and details of a G-Eval rating need (``g-eval``,
    ``conversational-g-eval``): the probability-weighted rating with logprobs, else the
    parsed one, mapped from 1-5 to [0, 1]."""
    column, probs_column = f"__{name}", f"__{name}__probs"
    r = pl.col(column)
    value, error = r.struct.field("value"), r.struct.field("error")
    rating = value.struct.field("score")
    out_of_range = rating.is_not_null() & ~rating.is_between(RATING_LOW, RATING_HIGH)
    if top_logprobs:
        probs = batched(
            _probabilities_batch,
            {"logprobs": pl.col(need.logprobs_column)},
            {"p": pl.List(pl.Float64)},
        ).struct.field("p")
    else:
        probs = pl.lit(None, pl.List(pl.Float64))
    ratings = pl.lit(list(range(RATING_LOW, RATING_HIGH + 1)), pl.List(pl.Float64))
    weighted = (pl.col(probs_column) * ratings).list.sum()
    expected = pl.coalesce(weighted, rating.cast(pl.Float64))
    ok = error.is_null() & rating.is_not_null() & ~out_of_range
    err = (
        pl.when(error.is_not_null())
        .then(sample_error(f"{name} judge failed: {{}}", error))
        .when(out_of_range)
        .then(sample_error(f"{name} rating {{}} is outside {RATING_LOW}-{RATING_HIGH}.", rating))
        .when(rating.is_null())
        .then(_no_prompt(name))
    )
    details = pl.struct(
        criteria=pl.lit(criteria),
        steps=_steps_expr(criteria, steps),
        rating=rating,
        reason=value.struct.field("reason"),
        probabilities=pl.col(probs_column),
        expected_rating=pl.when(ok).then(expected),
        method=pl.when(pl.col(probs_column).is_not_null())
        .then(pl.lit("logprobs"))
        .otherwise(pl.lit("rating")),
        prompt=pl.lit(need.prompt.key),
    )
    return Scored(
        score=pl.when(ok).then((expected - RATING_LOW) / (RATING_HIGH - RATING_LOW)),
        error=err,
        details=pl.when(ok).then(details),
        prepare={column: reply(need), probs_column: probs},
    )


# --- pairwise ----------------------------------------------------------------------------------


_OUTPUT_FILES: Final = (".json", ".jsonl", ".yaml", ".yml", ".csv", ".parquet")


RUN_BASELINE: Final = "run:"
"""``pairwise(baseline=run:REF)``: a stored run's outputs, attached by the engine as a column."""


def _is_file(baseline: str) -> bool:
    return not baseline.startswith(RUN_BASELINE) and Path(baseline).suffix.lower() in _OUTPUT_FILES


def run_baselines(metrics: Sequence[Metric]) -> list[str]:
    """The ``run:REF`` baselines of the pairwise metrics among ``metrics``, in order."""
    found = [str(dict(m.params).get("baseline", "")) for m in metrics if m.name == "pairwise"]
    return list(dict.fromkeys(b for b in found if b.startswith(RUN_BASELINE)))


def _baseline(baseline: str) -> tuple[pl.Expr, dict[str, pl.DataType]]:
    """The baseline output per row: a column of the frame, or the saved outputs file
    ``baseline`` looked up by sample id (its first output per sample)."""
    if not _is_file(baseline):
        return pl.col(baseline).cast(pl.String), {baseline: pl.String()}
    from evalframe.core._outputs import read_outputs

    saved = read_outputs(baseline).unique(C.SAMPLE_ID, keep="first", maintain_order=True)
    expr = pl.col(C.SAMPLE_ID).replace_strict(
        saved.get_column(C.SAMPLE_ID),
        saved.get_column(C.ACTUAL_OUTPUT).cast(pl.String),
        default=None,
        return_dtype=pl.String,
    )
    return expr, {}


def _pair_needs(baseline: str, template: str | None = None) -> tuple[JudgeNeed, JudgeNeed]:
    prompt = _prompt(PAIRWISE, template)
    base, optional = _baseline(baseline)
    question = _question_expr()
    first = JudgeNeed(
        f"pairwise(baseline={baseline})[actual first]",
        prompt,
        {"question": question, "first": _answer(), "second": base},
        optional=optional,
    )
    swapped = JudgeNeed(
        f"pairwise(baseline={baseline})[baseline first]",
        prompt,
        {"question": question, "first": base, "second": _answer()},
        optional=optional,
    )
    return first, swapped


@metric(
    "pairwise",
    family=_FAMILY,
    dimension="correctness",
    needs=lambda *, baseline, template=None: list(_pair_needs(baseline, template)),
)
def pairwise(*, baseline: str, template: str | None = None) -> Scored:
    """A/B preference of the actual output over a baseline output, judged in both orders:
    1 win, 0.5 tie, 0 loss per order, averaged over the two orders.

    ``baseline`` names a column of the frame, a saved outputs file (``.json``,
    ``.jsonl``, ``.yaml``, ``.csv``, ``.parquet``) whose outputs are matched by sample id, or
    a stored run, ``run:REF`` (an id, a name, latest, ...), whose outputs ``ef.evaluate`` and
    ``rescore`` read from their store, matched by sample and repetition.

    Examples:
        >>> import polars as pl
        >>> import evalframe as ef
        >>> def judge(prompt):  # prefers the answer that names Paris, in whichever position
        ...     first = prompt.split("RESPONSE A:")[1].split("RESPONSE B:")[0]
        ...     return {"winner": "A" if "Paris" in first else "B", "reason": "r"}
        >>> frame = pl.DataFrame({
        ...     "sample_id": ["a"], "input": ['{"q": "Capital of France?"}'], "expected_output": [""],
        ...     "expected_type": ["string"], "metadata": ["{}"], "tags": [[]],
        ...     "actual_output": ["Paris"], "previous": ["Lyon"]})
        >>> scores = ef.score(frame, ["pairwise(baseline=previous)"],
        ...                   context=ef.Providers(judge=ef.testing.ScriptedJudge(judge), cache=False))
        >>> for row in scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        a 1.0 {"baseline":"previous","actual_first":{"winner":"A","reason":"r","points":1.0},"baseline_first":{"winner":"B","reason":"r","points":1.0},"prompt":"toolbox.pairwise@v2"}
    """  # noqa: E501
    if not baseline.strip():
        raise MetricError("Metric 'pairwise' parameter 'baseline' must name a column.")
    first, swapped = _pair_needs(baseline, template)
    a, b = pl.col("__pair_first"), pl.col("__pair_swapped")
    wa = a.struct.field("value").struct.field("winner").cast(pl.String)
    wb = b.struct.field("value").struct.field("winner").cast(pl.String)
    points_a = wa.replace_strict({"A": 1.0, "tie": 0.5, "B": 0.0}, return_dtype=pl.Float64)
    points_b = wb.replace_strict({"B": 1.0, "tie": 0.5, "A": 0.0}, return_dtype=pl.Float64)
    error = pl.coalesce(a.struct.field("error"), b.struct.field("error"))
    ok = error.is_null() & wa.is_not_null() & wb.is_not_null()
    err = (
        pl.when(error.is_not_null())
        .then(sample_error("pairwise judge failed: {}", error))
        .when(~ok)
        .then(
            sample_error(
                "has no actual output or no baseline output in "
                f"{'file' if _is_file(baseline) else 'column'} '{baseline}'."
            )
        )
    )
    details = pl.struct(
        baseline=pl.lit(baseline),
        actual_first=pl.struct(
            winner=wa, reason=a.struct.field("value").struct.field("reason"), points=points_a
        ),
        baseline_first=pl.struct(
            winner=wb, reason=b.struct.field("value").struct.field("reason"), points=points_b
        ),
        prompt=pl.lit(first.prompt.key),
    )
    return Scored(
        score=pl.when(ok).then((points_a + points_b) / 2.0),
        error=err,
        details=pl.when(ok).then(details),
        prepare={"__pair_first": reply(first), "__pair_swapped": reply(swapped)},
    )


# --- rubric ------------------------------------------------------------------------------------

_BAND = re.compile(r"\s*([A-Za-z0-9_][A-Za-z0-9_ \-]*?)\s*=\s*([^:\s]+)\s*(?::\s*(.*))?", re.S)


class Band(NamedTuple):
    """A rubric band: its name, its score in [0, 1], and what it describes."""

    name: str
    score: float
    description: str


def _band(name: object, score: object, description: object, where: str) -> Band:
    if not isinstance(name, str) or not name.strip():
        raise MetricError(f"Rubric {where}: a band needs a name; got {name!r}.")
    if isinstance(score, str):
        with contextlib.suppress(ValueError):
            score = float(score)
    if isinstance(score, bool) or not isinstance(score, int | float):
        raise MetricError(f"Rubric {where}: band {name!r} needs a numeric score; got {score!r}.")
    if not (math.isfinite(score) and 0.0 <= score <= 1.0):
        raise MetricError(f"Rubric {where}: band {name!r} score must be in [0, 1]; got {score}.")
    text = "" if description is None else str(description).strip()
    return Band(name.strip(), float(score), text)


def parse_rubric(rubric: str | Sequence[str] | Mapping[str, Any]) -> tuple[Band, ...]:
    """The bands of a rubric, checked (at least two, distinct names, scores in [0, 1]).

    ``rubric`` is a list of ``"name=score: description"`` strings, a mapping of band names to
    ``{score, description}`` (or to a score), or the path of a YAML file holding that mapping.

    Examples:
        >>> [b.name for b in parse_rubric(["good=1: all facts", "poor=0: wrong"])]
        ['good', 'poor']
    """
    where = "parameter"
    value: Any = rubric
    if isinstance(rubric, str):
        from evalframe.core._yaml import parse_yaml

        where = rubric
        try:
            value = parse_yaml(Path(rubric).read_text(encoding="utf-8"))
        except OSError as exc:
            raise MetricError(f"Rubric {where}: cannot read the file: {exc}.") from None
        except ValueError as exc:
            raise MetricError(f"Rubric {where}: not valid YAML: {exc}.") from None
        if isinstance(value, Mapping) and set(value) == {"bands"}:
            value = value["bands"]
    bands: list[Band] = []
    if isinstance(value, Mapping):
        for name, spec in value.items():  # bands of a rubric, not rows
            if isinstance(spec, Mapping):
                unknown = set(spec) - {"score", "description"}
                if unknown:
                    raise MetricError(
                        f"Rubric {where}: band {name!r} has unknown key(s) {sorted(unknown)}."
                    )
                bands.append(_band(name, spec.get("score"), spec.get("description"), where))
            else:
                bands.append(_band(name, spec, None, where))
    elif isinstance(value, Sequence) and not isinstance(value, str):
        for item in value:
            m = _BAND.fullmatch(item) if isinstance(item, str) else None
            if m is None:
                raise MetricError(
                    f"Rubric {where}: band {item!r} is not of the form 'name=score: description'."
                )
            bands.append(_band(m.group(1), m.group(2), m.group(3), where))
    else:
        raise MetricError(f"Rubric {where}: expected bands; got {type(value).__name__}.")
    if len(bands) < 2:
        raise MetricError(f"Rubric {where}: a rubric needs at least two bands.")
    names = [b.name for b in bands]
    if len(set(names)) != len(names):
        raise MetricError(f"Rubric {where}: band names must differ; got {names}.")
    return tuple(bands)


def _rubric_need(bands: tuple[Band, ...], template: str | None = None) -> JudgeNeed:
    shown = pl.lit(
        [{"band": b.name, "description": b.description or None} for b in bands],
        pl.List(pl.Struct({"band": pl.String, "description": pl.String})),
    ).list.eval(
        json_object(
            band=pl.element().struct.field("band"),
            description=pl.element().struct.field("description"),
        )
    )
    prompt = replace(
        _prompt(RUBRIC, template),
        reply=pl.Struct({"band": pl.Enum([b.name for b in bands]), "reason": pl.String}),
    )
    return JudgeNeed(
        f"rubric(rubric={_hash([list(b) for b in bands])})",
        prompt,
        {
            "bands": verbatim(labelled(shown)),
            "question": _question_expr(),
            "expected": _expected(),
            "answer": _answer(),
        },
    )


@metric(
    "rubric",
    family=_FAMILY,
    dimension="correctness",
    needs=lambda *, rubric, template=None: [_rubric_need(parse_rubric(rubric), template)],
)
def rubric(*, rubric: str | tuple[str, ...], template: str | None = None) -> Scored:
    """A rubric judge: the judge names a band, the score is that band's score.

    Examples:
        >>> import evalframe as ef
        >>> def judge(prompt):
        ...     return {"band": "good" if "Paris" in prompt.split("ANSWER:")[-1] else "bad", "reason": "r"}
        >>> ds = ef.Dataset.from_records([
        ...     {"id": k, "input": {"q": "Capital of France?"}, "expected_output": "Paris"} for k in "ab"],
        ...     name="demo")
        >>> run = ef.evaluate(ds, outputs={"a": "Paris", "b": "Lyon"},
        ...                   metrics=['rubric(rubric=["good=1: correct", "bad=0: wrong"])'],
        ...                   providers=ef.Providers(judge=ef.testing.ScriptedJudge(judge), cache=False))
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        a 1.0 {"band":"good","band_score":1.0,"reason":"r","prompt":"toolbox.rubric@v2"}
        b 0.0 {"band":"bad","band_score":0.0,"reason":"r","prompt":"toolbox.rubric@v2"}
    """  # noqa: E501
    bands = parse_rubric(rubric)
    need = _rubric_need(bands, template)
    r = pl.col("__rubric")
    value, error = r.struct.field("value"), r.struct.field("error")
    band = value.struct.field("band").cast(pl.String)
    band_score = band.replace_strict(
        {b.name: b.score for b in bands}, default=None, return_dtype=pl.Float64
    )
    err = (
        pl.when(error.is_not_null())
        .then(sample_error("rubric judge failed: {}", error))
        .when(band.is_null())
        .then(_no_prompt("rubric"))
    )
    details = pl.struct(
        band=band,
        band_score=band_score,
        reason=value.struct.field("reason"),
        prompt=pl.lit(need.prompt.key),
    )
    ok = error.is_null() & band_score.is_not_null()
    return Scored(
        score=pl.when(ok).then(band_score),
        error=err,
        details=pl.when(ok).then(details),
        prepare={"__rubric": reply(need)},
    )


# --- prompt-alignment --------------------------------------------------------------------------


def _alignment_need(instructions: Sequence[str], template: str | None = None) -> JudgeNeed:
    return JudgeNeed(
        f"prompt-alignment(instructions={_hash(list(instructions))})",
        _prompt(ALIGNMENT, template),
        {
            "instructions": _listed(instructions),
            "question": _question_expr(),
            "answer": _answer(),
        },
    )


@metric(
    "prompt-alignment",
    family=_FAMILY,
    dimension="correctness",
    needs=lambda *, instructions, template=None: [_alignment_need(instructions, template)],
)
def prompt_alignment(*, instructions: tuple[str, ...], template: str | None = None) -> Scored:
    """Share of the instructions the answer follows (all judged in one call per sample).

    Examples:
        >>> import evalframe as ef
        >>> def judge(prompt):
        ...     return {"verdicts": [{"instruction": 1, "followed": True, "reason": "r"},
        ...                          {"instruction": 2, "followed": False, "reason": "In English."}]}
        >>> ds = ef.Dataset.from_records([{"id": "a", "input": {"q": "Capital of France?"},
        ...                                "expected_output": ""}], name="demo")
        >>> run = ef.evaluate(ds, outputs={"a": "Paris."},
        ...                   metrics=["prompt-alignment(instructions=[Be brief, Answer in French])"],
        ...                   providers=ef.Providers(judge=ef.testing.ScriptedJudge(judge), cache=False))
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        a 0.5 {"instructions":["Be brief","Answer in French"],"followed":[true,false],"reasons":["r","In English."],"prompt":"toolbox.prompt-alignment@v2"}
    """  # noqa: E501
    if not instructions or any(not i.strip() for i in instructions):
        raise MetricError(
            "Metric 'prompt-alignment' parameter 'instructions' must be a non-empty list of "
            "non-empty instructions."
        )
    need = _alignment_need(instructions, template)
    n = len(instructions)
    r = pl.col("__align")
    value, error = r.struct.field("value"), r.struct.field("error")
    verdicts = value.struct.field("verdicts")
    order = verdicts.list.eval(pl.element().struct.field("instruction").cast(pl.String)).list.join(
        ","
    )
    in_order = order == ",".join(str(i) for i in range(1, n + 1))
    followed = verdicts.list.eval(pl.element().struct.field("followed"))
    ok = error.is_null() & verdicts.is_not_null() & in_order
    err = (
        pl.when(error.is_not_null())
        .then(sample_error("prompt-alignment judge failed: {}", error))
        .when(verdicts.is_null())
        .then(_no_prompt("prompt-alignment"))
        .when(~in_order)
        .then(
            sample_error(
                f"prompt-alignment judge must give {n} verdict(s) numbered 1..{n} in order; "
                "got instructions [{}].",
                order,
            )
        )
    )
    details = pl.struct(
        instructions=pl.lit(list(instructions), pl.List(pl.String)),
        followed=followed,
        reasons=verdicts.list.eval(pl.element().struct.field("reason")),
        prompt=pl.lit(need.prompt.key),
    )
    return Scored(
        score=pl.when(ok).then(followed.list.sum().cast(pl.Float64) / n),
        error=err,
        details=pl.when(ok).then(details),
        prepare={"__align": reply(need)},
    )


# --- summarization -----------------------------------------------------------------------------


def _summary_needs(
    questions: int,
    questions_template: str | None = None,
    answers_template: str | None = None,
    claims_template: str | None = None,
    check_template: str | None = None,
) -> tuple[JudgeNeed, JudgeNeed, JudgeNeed, JudgeNeed]:
    source = _question_expr()
    asked = JudgeNeed(
        f"summary-questions(n={questions})",
        _prompt(SUMMARY_QUESTIONS, questions_template),
        {"text": source, "n": verbatim(pl.lit(str(questions)))},
    )
    qs = parsed(asked).struct.field("value").struct.field("questions")
    answers = JudgeNeed(
        f"summary-answers(n={questions})",
        _prompt(SUMMARY_ANSWERS, answers_template),
        {
            "summary": _answer(),
            "questions": verbatim(pl.when(qs.list.len() > 0).then(numbered(qs))),
        },
        requires=(asked,),
    )
    claims = JudgeNeed(
        "claims(actual_output)", _prompt(CLAIMS, claims_template), {"text": _answer()}
    )
    cs = parsed(claims).struct.field("value").struct.field("claims")
    check = JudgeNeed(
        "summary-check",
        _prompt(SUMMARY_CHECK, check_template),
        {"source": source, "claims": verbatim(pl.when(cs.list.len() > 0).then(numbered(cs)))},
        requires=(claims,),
    )
    return asked, answers, claims, check


@metric(
    "summarization",
    family=_FAMILY,
    dimension="groundedness",
    needs=lambda *, questions=5, **templates: list(_summary_needs(questions, **templates)),
)
def summarization(
    *,
    questions: Annotated[int, Range(ge=1, le=50)] = 5,
    questions_template: str | None = None,
    answers_template: str | None = None,
    claims_template: str | None = None,
    check_template: str | None = None,
) -> Scored:
    """A summary (actual output) against its source (input): min(coverage, alignment).

    Coverage: share of ``questions`` closed questions, written from the source so that it
    answers them "yes", that the summary also answers "yes". Alignment: share of the
    summary's claims the source supports. Each of the four prompts can be replaced
    (``questions_template``, ``answers_template``, ``claims_template``, ``check_template``;
    same placeholders), which changes that prompt's key and so its cache namespace.

    Examples:
        >>> import evalframe as ef
        >>> def judge(prompt):  # questions from the source, the summary's answers, its claims, their check
        ...     if "closed (yes/no) questions" in prompt:
        ...         return {"questions": ["Is the shop in Oslo?", "Does it open at 9?"]}
        ...     if "SUMMARY:" in prompt:
        ...         return {"answers": ["yes", "idk"]}
        ...     if "Split the TEXT" in prompt:
        ...         return {"claims": ["The shop is in Oslo."]}
        ...     return {"verdicts": ["yes"]}
        >>> source = "The shop is in Oslo. It opens at 9."
        >>> ds = ef.Dataset.from_records([{"id": "a", "input": {"text": source}, "expected_output": ""}],
        ...                              name="demo")
        >>> run = ef.evaluate(ds, outputs={"a": "An Oslo shop."}, metrics=["summarization(questions=2)"],
        ...                   providers=ef.Providers(judge=ef.testing.ScriptedJudge(judge), cache=False))
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        a 0.5 {"questions":["Is the shop in Oslo?","Does it open at 9?"],"answers":["yes","idk"],"claims":["The shop is in Oslo."],"verdicts":["yes"],"coverage":0.5,"alignment":1.0,"prompts":["toolbox.summary-questions@v2","toolbox.summary-answers@v2","rag.claims@v2","toolbox.summary-check@v2"]}
    """  # noqa: E501
    asked, answers, claims, check = _summary_needs(
        questions, questions_template, answers_template, claims_template, check_template
    )
    rq, ra, rc, rk = (pl.col(c) for c in ("__sq", "__sa", "__sc", "__sk"))
    qs = rq.struct.field("value").struct.field("questions")
    ans = ra.struct.field("value").struct.field("answers").cast(pl.List(pl.String))
    cs = rc.struct.field("value").struct.field("claims")
    ver = rk.struct.field("value").struct.field("verdicts").cast(pl.List(pl.String))
    nq, nc = qs.list.len(), cs.list.len()
    # A list the judge was not asked for (no questions, no claims) is empty, not missing.
    ans_list = pl.when(nq == 0).then(pl.lit([], pl.List(pl.String))).otherwise(ans)
    ver_list = pl.when(nc == 0).then(pl.lit([], pl.List(pl.String))).otherwise(ver)
    error = pl.coalesce(
        *(r.struct.field("error") for r in (rq, rc)),
        pl.when(nq > 0).then(ra.struct.field("error")),
        pl.when(nc > 0).then(rk.struct.field("error")),
    )
    missing = qs.is_null() | cs.is_null() | ans_list.is_null() | ver_list.is_null()
    bad_counts = ~missing & ((ans_list.list.len() != nq) | (ver_list.list.len() != nc))
    yes_a = ans_list.list.eval(pl.element() == "yes").list.sum()
    yes_v = ver_list.list.eval(pl.element() == "yes").list.sum()
    coverage = pl.when(nq > 0).then(yes_a / nq).otherwise(pl.lit(1.0))
    alignment = pl.when(nc > 0).then(yes_v / nc).otherwise(pl.lit(1.0))
    ok = error.is_null() & ~missing & ~bad_counts
    err = (
        pl.when(error.is_not_null())
        .then(sample_error("summarization judge failed: {}", error))
        .when(missing)
        .then(_no_prompt("summarization"))
        .when(bad_counts)
        .then(
            sample_error(
                "summarization judge gave {} answer(s) for {} question(s) and {} verdict(s) "
                "for {} claim(s).",
                ans_list.list.len(),
                nq,
                ver_list.list.len(),
                nc,
            )
        )
    )
    details = pl.struct(
        questions=qs,
        answers=ans_list,
        claims=cs,
        verdicts=ver_list,
        coverage=pl.when(ok).then(coverage),
        alignment=pl.when(ok).then(alignment),
        prompts=pl.lit([n.prompt.key for n in (asked, answers, claims, check)], pl.List(pl.String)),
    )
    return Scored(
        score=pl.when(ok).then(pl.min_horizontal(coverage, alignment)),
        error=err,
        details=pl.when(ok).then(details),
        prepare={
            "__sq": reply(asked),
            "__sa": reply(answers),
            "__sc": reply(claims),
            "__sk": reply(check),
        },
    )


# --- dag ---------------------------------------------------------------------------------------


def _tree(tree: str | Dag) -> Dag:
    return tree if isinstance(tree, Dag) else load_dag(tree)


def _dag_plan(
    d: Dag, template: str | None = None
) -> tuple[list[JudgeNeed], list[pl.Expr], list[pl.Expr]]:
    """Per level: the need, the node a row is at (null once it reached a leaf or went
    astray), and the verdict it got there; plus the node after the last level."""
    questions = {n: q for n, q in d.nodes.items() if isinstance(q, Question)}
    texts = {n: q.text for n, q in questions.items()}
    allowed = {n: list(q.edges) for n, q in questions.items()}
    edges = {f"{n}\x1f{v}": child for n, q in questions.items() for v, child in q.edges.items()}
    needs: list[JudgeNeed] = []
    nodes: list[pl.Expr] = [pl.lit(d.root)]
    verdicts: list[pl.Expr] = []
    for level in range(d.depth):  # levels of the tree, not rows
        node = nodes[-1]
        need = JudgeNeed(
            f"dag(tree={d.digest})[level {level}]",
            _prompt(DAG_NODE, template),
            {
                "node_question": node.replace_strict(texts, default=None, return_dtype=pl.String),
                "verdicts": verbatim(
                    pl.concat_str(
                        pl.lit("["),
                        node.replace_strict(allowed, default=None, return_dtype=pl.List(pl.String))
                        .list.eval(fenced(pl.element()))
                        .list.join(", "),
                        pl.lit("]"),
                    )
                ),
                "question": _question_expr(),
                "answer": _answer(),
            },
            requires=tuple(needs),
        )
        needs.append(need)
        verdict = (
            parsed(need)
            .struct.field("value")
            .struct.field("verdict")
            .str.strip_chars()
            .str.to_lowercase()
        )
        verdicts.append(verdict)
        nodes.append(
            pl.concat_str(node, pl.lit("\x1f"), verdict).replace_strict(
                edges, default=None, return_dtype=pl.String
            )
        )
    return needs, nodes, verdicts


@metric(
    "dag",
    family=_FAMILY,
    dimension="correctness",
    needs=lambda *, tree, template=None: _dag_plan(_tree(tree), template)[0],
)
def dag(*, tree: str, template: str | None = None) -> Scored:
    """A decision tree of judge questions (YAML file ``tree``): one call per visited node,
    asked level by level across the frame; the score is the reached leaf's.

    Examples:
        >>> import tempfile
        >>> from pathlib import Path
        >>> import evalframe as ef
        >>> tree = Path(tempfile.mkdtemp()) / "on-topic.yaml"
        >>> _ = tree.write_text('{root: asked, nodes: {asked: {question: "Does it answer the question?",'
        ...                     ' edges: {yes: good, no: off}}, good: {score: 1.0}, off: {score: 0.0}}}')
        >>> def judge(prompt):
        ...     return {"verdict": "yes" if "Paris" in prompt.split("ANSWER:")[-1] else "no", "reason": "r"}
        >>> ds = ef.Dataset.from_records([
        ...     {"id": k, "input": {"q": "Capital of France?"}, "expected_output": ""} for k in "ab"],
        ...     name="demo")
        >>> run = ef.evaluate(ds, outputs={"a": "Paris", "b": "I like trains."}, metrics=[f"dag(tree={tree})"],
        ...                   providers=ef.Providers(judge=ef.testing.ScriptedJudge(judge), cache=False))
        >>> for row in run.scores.select("sample_id", "score", "details").iter_rows():
        ...     print(*row)
        a 1.0 {"path":[{"node":"asked","verdict":"yes","reason":"r"}],"leaf":"good","leaf_score":1.0,"tree":"09aababd0180","prompt":"toolbox.dag-node@v2"}
        b 0.0 {"path":[{"node":"asked","verdict":"no","reason":"r"}],"leaf":"off","leaf_score":0.0,"tree":"09aababd0180","prompt":"toolbox.dag-node@v2"}
    """  # noqa: E501
    d = _tree(tree)
    needs, _, _ = _dag_plan(d, template)
    leaves = {n: v.score for n, v in d.nodes.items() if isinstance(v, Leaf)}
    questions = {n: q for n, q in d.nodes.items() if isinstance(q, Question)}
    edges = {f"{n}\x1f{v}": child for n, q in questions.items() for v, child in q.edges.items()}
    replies = [pl.col(f"__dag{i}") for i in range(len(needs))]
    # The walk, from the prepared replies.
    node: pl.Expr = pl.lit(d.root)
    steps: list[pl.Expr] = []
    astray: list[pl.Expr] = []
    errors: list[pl.Expr] = []
    reached: list[pl.Expr] = [pl.when(pl.lit(d.root in leaves)).then(pl.lit(d.root))]
    for r in replies:  # levels of the tree, not rows
        value = r.struct.field("value")
        verdict = value.struct.field("verdict").str.strip_chars().str.to_lowercase()
        is_question = node.is_in(list(questions))
        nxt = pl.concat_str(node, pl.lit("\x1f"), verdict).replace_strict(
            edges, default=None, return_dtype=pl.String
        )
        steps.append(
            pl.when(is_question).then(
                pl.struct(node=node, verdict=verdict, reason=value.struct.field("reason"))
            )
        )
        errors.append(pl.when(is_question).then(r.struct.field("error")))
        astray.append(
            pl.when(is_question & verdict.is_not_null() & nxt.is_null()).then(
                pl.format("verdict '{}' at node '{}'", verdict, node)
            )
        )
        node = nxt
        reached.append(pl.when(node.is_in(list(leaves))).then(node))
    leaf = pl.coalesce(reached) if reached else pl.lit(None, pl.String)
    leaf_score = leaf.replace_strict(leaves, default=None, return_dtype=pl.Float64)
    error = pl.coalesce(errors) if errors else pl.lit(None, pl.String)
    wrong = pl.coalesce(astray) if astray else pl.lit(None, pl.String)
    allowed = "; ".join(f"{n}: {', '.join(q.edges)}" for n, q in questions.items())
    err = (
        pl.when(error.is_not_null())
        .then(sample_error("dag judge failed: {}", error))
        .when(wrong.is_not_null())
        .then(sample_error(f"dag judge gave {{}}, not an edge of the node ({allowed}).", wrong))
        .when(leaf.is_null())
        .then(_no_prompt("dag"))
    )
    path = (
        pl.concat_list(steps).list.drop_nulls()
        if steps
        else pl.lit(
            [], pl.List(pl.Struct({"node": pl.String, "verdict": pl.String, "reason": pl.String}))
        )
    )
    details = pl.struct(
        path=path,
        leaf=leaf,
        leaf_score=leaf_score,
        tree=pl.lit(d.digest),
        prompt=pl.lit(_prompt(DAG_NODE, template).key),
    )
    ok = error.is_null() & wrong.is_null() & leaf.is_not_null()
    return Scored(
        score=pl.when(ok).then(leaf_score),
        error=err,
        details=pl.when(ok).then(details),
        prepare={f"__dag{i}": reply(n) for i, n in enumerate(needs)},
    )
