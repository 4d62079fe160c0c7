"""The regex metric never scores a pattern differently from PCRE: it agrees, or it refuses.

The table below gives, per construct, a pattern, a subject and PCRE's verdict, written by hand
from PCRE2's documented semantics in UTF + UCP mode (PHP's ``/u``, which evalframe always
uses). Where the ``regex`` module reads a construct as PCRE does, it checks the table itself.
"""

from __future__ import annotations

import json

import polars as pl
import pytest
import regex as pyregex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import evalframe as ef

ERROR = "error"  # PCRE itself refuses the pattern

# (pattern, subject, PCRE verdict, construct named when evalframe refuses or None, oracle)
# ``oracle`` is the pattern in the regex module's syntax when it reads it as PCRE does.
TABLE: list[tuple[str, str, float | str, str | None, str | None]] = [
    # possessive quantifiers and atomic groups: no backtracking into them
    ("/a++a/", "aaa", 0.0, "possessive quantifier (++)", r"a++a"),
    ("/a*+a/", "aaa", 0.0, "possessive quantifier (*+)", r"a*+a"),
    ("/a?+a/", "a", 0.0, "possessive quantifier (?+)", r"a?+a"),
    ("/[0-9]++0/", "100", 0.0, "possessive quantifier (++)", r"[0-9]++0"),
    ("/a{1,3}+a/", "aaa", 0.0, "possessive quantifier ({1,3}+)", r"a{1,3}+a"),
    ("/(?>a+)a/", "aaa", 0.0, "atomic group", r"(?>a+)a"),
    ("/a**/", "a", ERROR, "quantifier after a quantifier", None),
    # lazy quantifiers mean the same in both
    ("/a??b/", "ab", 1.0, None, r"a??b"),
    ("/a+?b/", "aab", 1.0, None, r"a+?b"),
    ("/^a{2}?$/", "aa", 1.0, None, r"^a{2}?$"),
    # end of subject: $ and \Z also match before a final newline, \z never does
    ("/a$/", "a\n", 1.0, None, r"a$"),
    ("/a$/", "a\n\n", 0.0, None, r"a$"),
    ("/^a$/", "a", 1.0, None, r"^a$"),
    ("/a$$/", "a\n", 1.0, None, r"a$$"),
    ("/(a|b$)/", "b\n", 1.0, None, r"(a|b$)"),
    ("/^a$|^b$/", "b\n", 1.0, None, r"^a$|^b$"),
    ("/(a$)/", "a\n", 1.0, None, r"(a$)"),
    ("/(a$|b)\n/", "a\n", 1.0, "$ followed by more pattern", r"(a$|b)\n"),
    ("/(a$)\n/", "a\n", 1.0, "$ followed by more pattern", r"(a$)\n"),
    ("/a$/D", "a\n", 0.0, None, r"a\Z"),
    ("/a$/m", "a\nb", 1.0, None, r"(?m)a$"),
    ("/^b$/m", "a\nb\n", 1.0, None, r"(?m)^b$"),
    ("/a\\Z/", "a\n", 1.0, None, r"a(?=\n?\Z)"),
    ("/a\\Z/", "a\nb", 0.0, None, r"a(?=\n?\Z)"),
    ("/a\\z/", "a\n", 0.0, None, r"a\Z"),
    ("/a$\\n/", "a\n", 1.0, "$ followed by more pattern", r"a$\n"),
    ("/a\\Z\\n/", "a\n", 1.0, "\\Z followed by more pattern", None),
    ("/(?m)a$/", "a\n", 1.0, "inline (?m)", r"(?m)a$"),
    # PCRE escapes Rust lacks or reads otherwise
    ("/\\h/", "\t", 1.0, "\\h and \\H", None),
    ("/\\v/", "\n", 1.0, "\\v and \\V", None),
    ("/[\\v]/", "\n", 1.0, "inside a character class", None),
    ("/\\R/", "\r\n", 1.0, "\\R", None),
    ("/^\\X$/u", "e\u0301", 1.0, "\\X", r"^\X$"),
    ("/\\Qa.b\\E/", "axb", 0.0, "\\Q...\\E", None),
    ("/\\101/", "A", 1.0, "octal escape", r"\101"),
    ("/a\\Kb/", "ab", 1.0, "\\K", r"a\Kb"),
    ("/\\Ga/", "ba", 0.0, "\\G", r"\Ga"),
    ("/\\u0041/", "A", ERROR, "\\u, \\U", None),
    ("/\\</", "<", 1.0, "\\< and \\>", r"<"),
    ("/\\e/", "\x1b", 1.0, "\\e and \\cX", None),
    ("/\\x41\\x{42}/", "AB", 1.0, None, r"\x41\x42"),
    ("/\\$/", "$", 1.0, None, r"\$"),
    # groups: branch reset, conditionals, recursion, backreferences, names
    ("/(?|(a)|(b))\\1/", "bb", 1.0, "branch reset", r"(?|(a)|(b))\1"),
    ("/(a)?(?(1)b|c)/", "c", 1.0, "conditional group", r"(a)?(?(1)b|c)"),
    ("/^(a(?1)?b)$/", "aabb", 1.0, "recursion", r"^(a(?1)?b)$"),
    ("/\\((?R)?\\)/", "(())", 1.0, "recursion", r"\((?R)?\)"),
    ("/^\\((?R)?\\)$/", "(())", 0.0, "recursion", r"^\((?R)?\)$"),
    ("/(?P<n>a)(?P>n)/", "ab", 0.0, "recursion", r"(?P<n>a)(?P>n)"),
    ("/(?P<n>a)(?P=n)/", "aa", 1.0, "(?P=name)", r"(?P<n>a)(?P=n)"),
    ("/(?<n>a)\\k<n>/", "aa", 1.0, "backreference", None),
    ("/(?'n'a)/", "a", 1.0, "(?'name'", None),
    ("/(?<n>a)b/", "ab", 1.0, None, r"(?<n>a)b"),
    ("/(?=a)a/", "a", 1.0, "look-around", r"(?=a)a"),
    ("/a(?#note)b/", "ab", 1.0, "comment group", r"a(?#note)b"),
    ("/(*UTF)a/", "a", 1.0, "verb", None),
    ("/(?u)a/", "a", ERROR, "inline flag", None),
    ("/(?i)a/", "A", 1.0, None, r"(?i)a"),
    # character classes
    ("/[:alpha:]/", "a", ERROR, "POSIX class outside brackets", None),
    ("/[[:alpha:]]/u", "é", 1.0, None, r"[[:alpha:]]"),
    ("/^[[:digit:]]+$/u", "٣4", 1.0, None, None),  # UCP: \p{Nd}; the module: ASCII
    ("/[[:^digit:]]/u", "5", 0.0, None, r"[[:^digit:]]"),
    ("/[[:punct:]]/u", "!", 1.0, "[:punct:]", None),
    ("/[a&&b]/", "&", 1.0, "set operations", r"[a&&b]"),
    ("/[a~~b]/", "~", 1.0, "set operations", r"[a~~b]"),
    ("/[a[b]]/", "[]", 1.0, "nested class", None),
    ("/[]a]/", "]", 1.0, None, r"[]a]"),
    ("/[^]a]/", "b", 1.0, None, r"[^]a]"),
    ("/[$]/", "$", 1.0, None, r"[$]"),
    ("/[ a]/x", " ", 1.0, "whitespace inside a character class", None),
    ("/[ a]/", " ", 1.0, None, r"[ a]"),
    ("/(?x)a b/", "ab", 1.0, "inline flag", r"(?x)a b"),
    ("/(?x:a b) c/", "ab c", 1.0, "inline flag", r"(?x:a b) c"),
    # whitespace is ignored in extended mode, so this is a++ (possessive), never Rust's (a+)+
    ("/a+ +a/x", "aaa", 0.0, "possessive quantifier (++)", r"(?x)a+ +a"),
    ("/a b # c\n d/x", "abd", 1.0, None, "(?x)a b # c\n d"),
    ("/a # c++ (?>\n/x", "a", 1.0, None, "(?x)a # c++ (?>\n"),
    # Unicode properties: PCRE's spellings only
    ("/\\p{L}/u", "é", 1.0, None, r"\p{L}"),
    ("/\\pL/u", "é", 1.0, None, r"\pL"),
    ("/\\p{Greek}/u", "\u03b1", 1.0, None, r"\p{Greek}"),
    ("/\\p{L&}/u", "a", 1.0, "Unicode property", r"\p{L&}"),
    ("/\\p{^L}/u", "1", 1.0, "negated property", r"\p{^L}"),
    ("/\\p{sc=Greek}/u", "\u03b1", 1.0, "Unicode property", None),
    ("/^.$/u", "é", 1.0, None, r"^.$"),
]


def _frame(rows: list[tuple[str, str]]) -> pl.DataFrame:
    n = len(rows)
    return pl.DataFrame(
        {
            "sample_id": [f"s{i}" for i in range(n)],
            "input": ["{}"] * n,
            "expected_output": [p for p, _ in rows],
            "expected_type": ["string"] * n,
            "metadata": ["{}"] * n,
            "tags": [[] for _ in range(n)],
            "row_hash": ["h"] * n,
            "actual_output": [s for _, s in rows],
        },
        schema_overrides={"tags": pl.List(pl.String)},
    )


def _regex(rows: list[tuple[str, str]]) -> list[tuple[float | None, str | None]]:
    out = ef.score(_frame(rows), [ef.metrics.regex()])
    return [(s, e) for s, e in out.select("score", "error").iter_rows()]


@pytest.mark.parametrize(
    ("pattern", "subject", "verdict", "oracle"),
    [(p, s, v, o) for p, s, v, _, o in TABLE if o is not None],
)
def test_the_table_agrees_with_the_regex_module_where_it_reads_pcre(
    pattern: str, subject: str, verdict: float, oracle: str
) -> None:
    assert float(bool(pyregex.search("(?V0)" + oracle, subject))) == verdict, pattern


def test_every_row_scores_as_pcre_or_is_refused_naming_the_construct() -> None:
    got = _regex([(p, s) for p, s, _, _, _ in TABLE])
    for (pattern, subject, verdict, construct, _), (score, error) in zip(TABLE, got, strict=True):
        case = f"{pattern!r} on {subject!r}"
        if construct is None:
            assert error is None, f"{case}: {error}"
            assert score == verdict, case
        else:
            assert score is None, f"{case} scored {score}; PCRE gives {verdict}"
            assert construct in error, f"{case}: {error}"
            assert "is not supported" in error, error
            assert "regex metric could not evaluate expected_output" in error, error


def test_a_refused_pattern_is_only_its_rows_error() -> None:
    got = _regex([("/a++/", "aa"), ("/a+/", "aa"), ("/a++/", "b")])
    assert [s for s, _ in got] == [None, 1.0, None]
    assert got[0][1] == (
        "Sample 's0' regex metric could not evaluate expected_output against actual output. "
        "PCRE error: a possessive quantifier (++) is not supported: the linear-time engine "
        "evalframe uses would read it differently from PCRE."
    )


# --- a random grammar of constructs, with the regex module as the PCRE oracle ----------------

# (PCRE spelling, the regex module's spelling of the same meaning)
_ATOMS = [
    ("a", "a"),
    ("b", "b"),
    (".", "."),
    ("\\d", "\\d"),
    ("[ab]", "[ab]"),
    ("[^a]", "[^a]"),
    ("\\n", "\\n"),
    ("[[:digit:]]", "[[:digit:]]"),
    ("[&&]", "[&&]"),
]
_QUANTS = ["", "*", "+", "?", "{1,2}", "*?", "+?", "??", "++", "*+", "?+", "{1,2}+"]
_ANCHORS = [("", ""), ("$", "$"), ("\\Z", "(?=\\n?\\Z)"), ("\\z", "\\Z")]


@st.composite
def _patterns(draw: st.DrawFn) -> tuple[str, str]:
    pcre: list[str] = ["^"] if draw(st.booleans()) else []
    python = list(pcre)
    for _ in range(draw(st.integers(1, 4))):
        a_pcre, a_py = draw(st.sampled_from(_ATOMS))
        if draw(st.booleans()):
            wrap = draw(st.sampled_from(["(?:{})", "(?>{})", "({})"]))
            a_pcre, a_py = wrap.format(a_pcre), wrap.format(a_py)
        q = draw(st.sampled_from(_QUANTS))
        pcre.append(a_pcre + q)
        python.append(a_py + q)
    end_pcre, end_py = draw(st.sampled_from(_ANCHORS))
    return "".join(pcre) + end_pcre, "".join(python) + end_py


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cases=st.lists(
        st.tuples(_patterns(), st.text(alphabet="ab1&\n", max_size=6)), min_size=1, max_size=20
    )
)
def test_random_patterns_score_as_pcre_or_are_refused(
    cases: list[tuple[tuple[str, str], str]],
) -> None:
    got = _regex([(f"/{p}/", s) for (p, _), s in cases])
    for ((pcre, python), subject), (score, error) in zip(cases, got, strict=True):
        want = float(bool(pyregex.search("(?V0)" + python, subject)))
        assert score is None or score == want, (pcre, subject, json.dumps(error))
        if score is None:
            assert "is not supported" in (error or ""), (pcre, error)
