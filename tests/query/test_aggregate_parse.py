"""Parsing and printing bounded-aggregate queries and precision changes."""

from __future__ import annotations

import pytest

import tsmon.query as A
from tsmon.query import (
    QuerySyntaxError,
    compile_query,
    format_query,
    format_series,
    parse_queries,
    parse_query,
)


def terms(*pairs: tuple[float, str]) -> tuple[A.Term, ...]:
    return tuple(A.Term(c, s) for c, s in pairs)


# The statements of the brief, in one file with watch queries and comments.
FILE = """
QUERY hot ON host*.cpu WHEN mean(5m) > 0.9        -- a watch query
QUERY path AS SUM(r1.queue, r2.queue, r7.queue) WITHIN 5
QUERY avg3 AS AVG(a.x, b.x, c.x) WITHIN 2
QUERY diff AS SUM(2*a.x - b.x) WITHIN 0.5
QUERY mix  AS AVG(0.5*a.x + 1.5 * b.x, -c.x) WITHIN 0.1
QUERY low  AS MIN(s1.t, s2.t, s3.t) WITHIN 0.5
QUERY all  AS MAX(host*.cpu) WITHIN 1          -- a glob
ALTER QUERY diff WITHIN 1
ALTER QUERY diff WITHIN 0.1 IMMEDIATELY
"""


def test_the_statements_of_the_spec() -> None:
    hot, path, avg3, diff, mix, low, all_, alter, shrink = parse_queries(FILE)
    assert isinstance(hot, A.QueryDef) and hot.triggers == ("host*.cpu",)
    ones = (1.0, "r1.queue"), (1.0, "r2.queue"), (1.0, "r7.queue")
    assert path == A.AggregateDef("path", "sum", terms(*ones), 5.0)
    assert avg3 == A.AggregateDef("avg3", "avg", terms((1, "a.x"), (1, "b.x"), (1, "c.x")), 2.0)
    assert diff == A.AggregateDef("diff", "sum", terms((2, "a.x"), (-1, "b.x")), 0.5)
    assert mix == A.AggregateDef("mix", "avg", terms((0.5, "a.x"), (1.5, "b.x"), (-1, "c.x")), 0.1)
    assert low == A.AggregateDef("low", "min", terms((1, "s1.t"), (1, "s2.t"), (1, "s3.t")), 0.5)
    assert all_ == A.AggregateDef("all", "max", terms((1, "host*.cpu")), 1.0)
    assert alter == A.AlterPrecision("diff", 1.0, immediately=False)
    assert shrink == A.AlterPrecision("diff", 0.1, immediately=True)


def test_positions_and_source_text() -> None:
    _, path, *_, shrink = parse_queries(FILE)
    assert (path.line, path.column) == (3, 1)
    assert path.text == "QUERY path AS SUM(r1.queue, r2.queue, r7.queue) WITHIN 5"
    assert [(t.line, t.column) for t in path.terms] == [(3, 19), (3, 29), (3, 39)]
    assert (shrink.line, shrink.column) == (10, 1)
    assert shrink.text == "ALTER QUERY diff WITHIN 0.1 IMMEDIATELY"


# ---- lexing: names against arithmetic ---------------------------------------------------------

LEXING = [
    # `*` after a number is a weight, with or without spaces
    ("SUM(2*a.x - b.x)", [(2, "a.x"), (-1, "b.x")]),
    ("SUM(2 * a.x - b.x)", [(2, "a.x"), (-1, "b.x")]),
    ("SUM(2 *a.x-b.x)", [(2, "a.x-b.x")]),  # a '-' between two names is part of the name
    ("SUM(2* a.x -b.x)", [(2, "a.x"), (-1, "b.x")]),
    ("SUM(a.x- b.x)", [(1, "a.x"), (-1, "b.x")]),
    ("SUM(a.x+b.x)", [(1, "a.x"), (1, "b.x")]),
    # NAB names contain '-'; globs contain '*'
    ("AVG(aws.cpu-utilisation_5f5533, b.x)", [(1, "aws.cpu-utilisation_5f5533"), (1, "b.x")]),
    ("MAX(host*.cpu)", [(1, "host*.cpu")]),
    ("SUM(2*host*.cpu)", [(2, "host*.cpu")]),
    ("SUM(a.x*2)", [(1, "a.x*2")]),  # a glob: weights go first
    ("MAX(*.cpu, db?.cpu, web[!3].mem)", [(1, "*.cpu"), (1, "db?.cpu"), (1, "web[!3].mem")]),
    # numbers: float literals as weights, names starting with digits
    ("SUM(1e-3*a, .5*b, 2.*c, 1E+2 * d)", [(1e-3, "a"), (0.5, "b"), (2, "c"), (100, "d")]),
    (
        "SUM(20.cpu, 7eleven.x, 1e5.x, 0d, 5points)",
        [(1, s) for s in ["20.cpu", "7eleven.x"]] + [(1, "1e5.x"), (1, "0d"), (1, "5points")],
    ),
    ("SUM(-0d, +1m)", [(-1, "0d"), (1, "1m")]),
    # division after the series
    ("SUM(a.x / 2, 3*b.x/4)", [(0.5, "a.x"), (0.75, "b.x")]),
    ("SUM(a.x/2 - b.x)", [(0.5, "a.x"), (-1, "b.x")]),
    # backquotes: anything but a backquote or a line break
    ("SUM(`a-b.x` - `a--b`, `1*.cpu`, `7`)", [(1, "a-b.x"), (-1, "a--b"), (1, "1*.cpu"), (1, "7")]),
    ("AVG(`my series`, `température`)", [(1, "my series"), (1, "température")]),
    # keywords are fine as series inside the parentheses
    ("SUM(on, within, query, sum)", [(1, "on"), (1, "within"), (1, "query"), (1, "sum")]),
]


@pytest.mark.parametrize(("args", "want"), LEXING)
def test_lexing_rule(args: str, want: list[tuple[float, str]]) -> None:
    q = parse_query(f"QUERY q AS {args} WITHIN 1")
    assert isinstance(q, A.AggregateDef)
    assert q.weights == {s: float(c) for c, s in want}
    assert parse_query(format_query(q)) == q


def test_numbers_are_read_as_far_as_they_go() -> None:
    """`0e+2*x` is the weight 0e+2 (= 0) times x; a space keeps the series 0e apart."""
    with pytest.raises(QuerySyntaxError, match="'x' has weight 0"):
        parse_query("QUERY q AS SUM(0e+2*x) WITHIN 1")
    assert parse_query("QUERY q AS SUM(0e +2*x) WITHIN 1").weights == {"0e": 1.0, "x": 2.0}


def test_statements_may_span_lines_with_comments_and_any_case() -> None:
    q = parse_query(
        "query Diff as sum(  -- weights\n  2 * a.x  -- first\n  - b.x\n)\nwithin .5  -- done"
    )
    assert q == A.AggregateDef("Diff", "sum", terms((2, "a.x"), (-1, "b.x")), 0.5)
    assert parse_query("alter query q within 1 immediately") == A.AlterPrecision("q", 1.0, True)
    assert parse_query("QUERY q AS avg(a) WITHIN 1").aggregate == "avg"


# ---- pooling ----------------------------------------------------------------------------------


def test_terms_of_all_arguments_pool() -> None:
    def weights(args: str) -> dict[str, float]:
        return parse_query(f"QUERY q AS SUM({args}) WITHIN 1").weights

    assert weights("a, b") == weights("a + b") == {"a": 1.0, "b": 1.0}
    assert weights("a, a") == weights("2*a") == {"a": 2.0}
    assert weights("a - 2*b, b, c") == {"a": 1.0, "b": -1.0, "c": 1.0}
    assert list(weights("c, a - b, a")) == ["c", "a", "b"]  # order of first mention
    assert weights("0.1*x + 0.2*x") == {"x": 0.30000000000000004}  # rounded once, exactly
    assert weights("`a.x` + a.x") == {"a.x": 2.0}  # backquotes do not change the name


def test_min_and_max_count_a_series_once() -> None:
    q = parse_query("QUERY q AS MIN(a, b, a) WITHIN 1")
    assert q.terms == terms((1, "a"), (1, "b"))


def test_pooled_terms_keep_the_first_position() -> None:
    q = parse_query("QUERY q AS SUM(b,\n a, 2*b) WITHIN 1")
    assert [(t.series, t.line, t.column) for t in q.terms] == [("b", 1, 16), ("a", 2, 2)]


# ---- names: duplicates and ALTER --------------------------------------------------------------


def test_an_alter_defines_no_name() -> None:
    statements = parse_queries(
        "ALTER QUERY d WITHIN 2\nQUERY d AS SUM(a) WITHIN 1\nALTER QUERY D WITHIN 3 IMMEDIATELY"
    )
    assert [type(s).__name__ for s in statements] == [
        "AlterPrecision",
        "AggregateDef",
        "AlterPrecision",
    ]


@pytest.mark.parametrize(
    "text",
    [
        "QUERY d ON x\nQUERY D AS SUM(a) WITHIN 1",
        "QUERY d AS SUM(a) WITHIN 1\nQUERY d ON x",
        "QUERY d AS SUM(a) WITHIN 1; QUERY d AS MAX(a) WITHIN 1",
    ],
)
def test_watch_and_aggregate_queries_share_one_namespace(text: str) -> None:
    with pytest.raises(QuerySyntaxError, match="duplicate query name"):
        parse_queries(text)


def test_parse_query_returns_any_statement_kind() -> None:
    assert isinstance(parse_query("QUERY d AS SUM(a) WITHIN 1"), A.AggregateDef)
    assert isinstance(parse_query("ALTER QUERY d WITHIN 1"), A.AlterPrecision)
    with pytest.raises(QuerySyntaxError, match="exactly one"):
        parse_query("QUERY d AS SUM(a) WITHIN 1\nALTER QUERY d WITHIN 2")


# ---- canonical text ---------------------------------------------------------------------------

CANONICAL = [
    ("query p as sum(r1.q,r2.q) within 5.0", "QUERY p AS SUM(r1.q, r2.q) WITHIN 5"),
    ("QUERY d AS SUM(2*a.x-b.x) WITHIN .5", "QUERY d AS SUM(2 * a.x-b.x) WITHIN 0.5"),
    ("QUERY d AS SUM(2*a.x - b.x) WITHIN 5e-1", "QUERY d AS SUM(2 * a.x - b.x) WITHIN 0.5"),
    ("QUERY d AS AVG(-a, b / 4) WITHIN 1", "QUERY d AS AVG(-a + 0.25 * b) WITHIN 1"),
    ("QUERY d AS SUM(-2*a) WITHIN 1", "QUERY d AS SUM(-2 * a) WITHIN 1"),
    ("QUERY m AS MAX(`a-b`, `a--b`, `7`) WITHIN 1", "QUERY m AS MAX(a-b, `a--b`, `7`) WITHIN 1"),
    ("ALTER QUERY d WITHIN 1e20 immediately", "ALTER QUERY d WITHIN 1e+20 IMMEDIATELY"),
]


@pytest.mark.parametrize(("text", "canonical"), CANONICAL)
def test_canonical_text(text: str, canonical: str) -> None:
    parsed = parse_query(text)
    assert format_query(parsed) == canonical
    assert parse_query(canonical) == parsed


def test_names_that_cannot_be_written() -> None:
    for name in ["", "a`b", "a\nb"]:
        with pytest.raises(ValueError, match="cannot be written"):
            format_series(name)


# ---- what compiles ----------------------------------------------------------------------------


def test_compile_query_refuses_aggregate_statements_with_a_position() -> None:
    with pytest.raises(QuerySyntaxError, match=r"^line 2:1: QUERY s AS SUM\(\.\.\.\) is a bounded"):
        compile_query(parse_queries("QUERY w ON x\nQUERY s AS SUM(a) WITHIN 1")[1])
    with pytest.raises(QuerySyntaxError, match="ALTER QUERY s changes the width"):
        compile_query("ALTER QUERY s WITHIN 1")
    with pytest.raises(TypeError, match="takes a QueryDef or query text"):
        compile_query(42)  # type: ignore[arg-type]


def test_expected_lists_inside_aggregates_are_not_collapsed_into_operators() -> None:
    with pytest.raises(QuerySyntaxError) as info:
        parse_queries("QUERY q AS SUM(a b) WITHIN 1")
    assert "an arithmetic operator like + or *" not in info.value.expected
    assert info.value.expected.count("a series name") == 0
