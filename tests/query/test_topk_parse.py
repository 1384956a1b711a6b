"""Parsing and printing top-k / bottom-k queries and their ALTERs."""

from __future__ import annotations

import pytest

import tsmon.query as A
from tsmon.query import (
    AlterTopK,
    QuerySyntaxError,
    TopKDef,
    compile_query,
    format_objects,
    format_query,
    parse_queries,
    parse_query,
)

# The statements of the brief, in one file with the other kinds and comments.
FILE = """
QUERY hot ON host*.cpu WHEN mean(5m) > 0.9          -- a watch query
QUERY path AS SUM(r1.queue, r2.queue) WITHIN 5       -- a bounded aggregate
QUERY popular AS TOP 10 OF doc:* BY hits WITHIN 5
QUERY recent AS TOP 10 OF doc:* BY hits OVER 15m WITHIN 0
QUERY idle AS BOTTOM 1 OF server* BY load OVER 15m WITHIN 2.5
ALTER QUERY popular TOP 20 WITHIN 10
ALTER QUERY popular TOP 20
ALTER QUERY idle BOTTOM 3 WITHIN 0
ALTER QUERY path WITHIN 1 IMMEDIATELY
"""


def test_the_statements_of_the_brief() -> None:
    hot, path, popular, recent, idle, alter1, alter2, alter3, width = parse_queries(FILE)
    assert isinstance(hot, A.QueryDef) and isinstance(path, A.AggregateDef)
    assert popular == TopKDef("popular", False, 10, "doc:*", "hits", None, 5.0)
    assert recent == TopKDef("recent", False, 10, "doc:*", "hits", 900_000, 0.0)
    assert idle == TopKDef("idle", True, 1, "server*", "load", 900_000, 2.5)
    assert alter1 == AlterTopK("popular", False, 20, 10.0)
    assert alter2 == AlterTopK("popular", False, 20, None)
    assert alter3 == AlterTopK("idle", True, 3, 0.0)
    assert width == A.AlterPrecision("path", 1.0, immediately=True)


def test_field_types() -> None:
    _, _, popular, recent, *_ = parse_queries(FILE)
    assert type(popular.k) is int and type(popular.eps) is float
    assert popular.window_ms is None and type(recent.window_ms) is int
    assert type(recent.eps) is float and recent.eps == 0
    alter = parse_query("ALTER QUERY popular TOP 20 WITHIN 10")
    assert type(alter.k) is int and type(alter.eps) is float


def test_positions_and_source_text() -> None:
    statements = parse_queries(FILE)
    idle, alter = statements[4], statements[6]
    assert (idle.line, idle.column) == (6, 1)
    assert idle.text == "QUERY idle AS BOTTOM 1 OF server* BY load OVER 15m WITHIN 2.5"
    assert (alter.line, alter.column) == (8, 1)
    assert alter.text == "ALTER QUERY popular TOP 20"


def test_keywords_are_case_insensitive_and_statements_span_lines() -> None:
    q = parse_query(
        "query Popular as\n  top 10 -- k\n  of `doc:*`\n  by Hits\n  Over 1h\n  wItHiN .5"
    )
    assert q == TopKDef("Popular", False, 10, "doc:*", "Hits", 3_600_000, 0.5)
    assert q.text.endswith("wItHiN .5")
    for spelling in ["bottom", "BOTTOM", "Bottom", "bOtToM"]:
        assert parse_query(f"QUERY q AS {spelling} 3 OF x BY y WITHIN 0").bottom
        assert parse_query(f"alter QUERY q {spelling} 3").bottom
    for spelling in ["top", "TOP", "Top"]:
        assert not parse_query(f"Query q As {spelling} 3 oF x bY y oVeR 1s within 0").bottom


def test_names_metrics_and_patterns_are_case_sensitive_text() -> None:
    q = parse_query("QUERY Q AS TOP 1 OF Doc* BY HITS WITHIN 0")
    assert (q.name, q.objects, q.metric) == ("Q", "Doc*", "HITS")
    assert q.object_of("Doc1.HITS") == "Doc1"
    assert q.object_of("doc1.HITS") is None and q.object_of("Doc1.hits") is None


# ---- lexing ------------------------------------------------------------------------------------

OBJECTS = [
    ("doc:*", "doc:*"),
    ("server*", "server*"),
    ("host[0-9].eu", "host[0-9].eu"),
    ("web[!3]?", "web[!3]?"),
    ("aws.cpu-utilisation_5f5533", "aws.cpu-utilisation_5f5533"),
    ("20*", "20*"),  # numbers need no backquotes after OF
    ("7", "7"),
    ("2*x", "2*x"),
    ("`a--b`", "a--b"),
    ("`-x`", "-x"),
    ("`my docs*`", "my docs*"),
    ("`température`", "température"),
    ("`doc:*`", "doc:*"),  # backquotes only delimit
    ("of", "of"),  # keywords are fine as objects: only a pattern can follow OF
    ("BY", "BY"),
]


@pytest.mark.parametrize(("written", "pattern"), OBJECTS)
def test_objects_lexing(written: str, pattern: str) -> None:
    q = parse_query(f"QUERY q AS TOP 3 OF {written} BY hits WITHIN 1")
    assert q.objects == pattern
    assert parse_query(format_query(q)) == q


def test_a_double_minus_after_the_pattern_starts_a_comment() -> None:
    q = parse_query("QUERY q AS TOP 3 OF a--b\n BY hits WITHIN 1")
    assert q.objects == "a"


@pytest.mark.parametrize("metric", ["hits", "_x", "load_5m", "Hits2", "over", "within", "by"])
def test_metrics_are_identifiers_even_keywords(metric: str) -> None:
    q = parse_query(f"QUERY q AS BOTTOM 3 OF x* BY {metric} OVER 5m WITHIN 1")
    assert q.metric == metric and q.window_ms == 300_000
    assert q.series_of("x1") == f"x1.{metric}"


@pytest.mark.parametrize(
    ("k", "want"), [("1", 1), ("010", 10), ("+5", 5), ("1000000", 1_000_000), ("0001", 1)]
)
def test_k_in_plain_digits(k: str, want: int) -> None:
    assert parse_query(f"QUERY q AS TOP {k} OF x BY y WITHIN 0").k == want
    assert parse_query(f"ALTER QUERY q BOTTOM {k}").k == want


@pytest.mark.parametrize(
    ("window", "ms"),
    [("15m", 900_000), ("1h", 3_600_000), ("30s", 30_000), ("250ms", 250), ("1.5h", 5_400_000)],
)
def test_over_takes_a_duration(window: str, ms: int) -> None:
    assert parse_query(f"QUERY q AS TOP 3 OF x BY y OVER {window} WITHIN 0").window_ms == ms


@pytest.mark.parametrize(
    ("eps", "want"), [("0", 0.0), ("-0", 0.0), ("0.0", 0.0), ("+5", 5.0), ("1e-3", 1e-3)]
)
def test_within_takes_a_tolerance_of_zero_or_more(eps: str, want: float) -> None:
    q = parse_query(f"QUERY q AS TOP 3 OF x BY y WITHIN {eps}")
    assert q.eps == want and str(q.eps) == str(want)  # -0 reads as 0, not -0.0


def test_new_keywords_stay_usable_as_names_elsewhere() -> None:
    top, bottom, of, alter = parse_queries(
        "QUERY top ON of.by, over\n"
        "QUERY bottom AS SUM(top, bottom.x, over) WITHIN 1\n"
        "QUERY of AS TOP 1 OF top BY bottom WITHIN 0\n"
        "ALTER QUERY bottom WITHIN 2"
    )
    assert top.triggers == ("of.by", "over")
    assert bottom.weights == {"top": 1.0, "bottom.x": 1.0, "over": 1.0}
    assert of == TopKDef("of", False, 1, "top", "bottom", None, 0.0)
    assert alter == A.AlterPrecision("bottom", 2.0)
    q = parse_query("QUERY q ON x EMIT value AS top, ts AS over")
    assert [item.alias for item in q.emit] == ["top", "over"]


# ---- series and objects ------------------------------------------------------------------------


def test_series_of_and_object_of() -> None:
    q = parse_query("QUERY popular AS TOP 10 OF doc:* BY hits WITHIN 5")
    assert q.series_of("doc:42") == "doc:42.hits"
    assert q.object_of("doc:42.hits") == "doc:42"
    assert q.object_of("doc:42.views") is None
    assert q.object_of("img:42.hits") is None
    assert q.object_of("doc:42hits") is None
    assert q.object_of("doc:a.b.hits") == "doc:a.b"  # the metric has no '.', so one split
    literal = parse_query("QUERY one AS BOTTOM 1 OF db1 BY load WITHIN 0")
    assert literal.object_of("db1.load") == "db1" and literal.object_of("db12.load") is None


# ---- ALTER ... WITHIN is unchanged ------------------------------------------------------------


def test_alter_within_still_gives_alter_precision() -> None:
    assert parse_query("ALTER QUERY d WITHIN 0.5") == A.AlterPrecision("d", 0.5, False)
    assert parse_query("alter query d within 2 immediately") == A.AlterPrecision("d", 2.0, True)
    with pytest.raises(QuerySyntaxError, match="WITHIN takes a width > 0"):
        parse_query("ALTER QUERY d WITHIN 0")  # unlike a top-k tolerance


# ---- names -------------------------------------------------------------------------------------


def test_alters_define_no_name_and_may_come_first() -> None:
    statements = parse_queries(
        "ALTER QUERY p TOP 3\nQUERY p AS TOP 1 OF x BY y WITHIN 0\nALTER QUERY P TOP 5 WITHIN 1"
    )
    assert [type(s).__name__ for s in statements] == ["AlterTopK", "TopKDef", "AlterTopK"]


@pytest.mark.parametrize(
    "text",
    [
        "QUERY d ON x\nQUERY D AS TOP 1 OF x BY y WITHIN 0",
        "QUERY d AS TOP 1 OF x BY y WITHIN 0\nQUERY d AS SUM(a) WITHIN 1",
        "QUERY d AS TOP 1 OF x BY y WITHIN 0; QUERY d AS BOTTOM 2 OF x BY y WITHIN 0",
    ],
)
def test_top_k_queries_share_the_one_namespace(text: str) -> None:
    with pytest.raises(QuerySyntaxError, match="duplicate query name"):
        parse_queries(text)


def test_parse_query_returns_top_k_statements() -> None:
    assert isinstance(parse_query("QUERY d AS TOP 1 OF x BY y WITHIN 0"), TopKDef)
    assert isinstance(parse_query("ALTER QUERY d TOP 1"), AlterTopK)
    with pytest.raises(QuerySyntaxError, match="exactly one"):
        parse_query("QUERY d AS TOP 1 OF x BY y WITHIN 0\nALTER QUERY d TOP 2")


# ---- canonical text ---------------------------------------------------------------------------

CANONICAL = [
    (
        "query popular as top 010 of doc:* by hits within 5.0",
        "QUERY popular AS TOP 10 OF doc:* BY hits WITHIN 5",
    ),
    (
        "QUERY p AS TOP 10 OF `doc:*` BY hits OVER 60m WITHIN 0.0",
        "QUERY p AS TOP 10 OF doc:* BY hits OVER 1h WITHIN 0",
    ),
    (
        "QUERY idle AS bottom +1 OF server* BY load OVER 900s WITHIN 25e-1",
        "QUERY idle AS BOTTOM 1 OF server* BY load OVER 15m WITHIN 2.5",
    ),
    (
        "QUERY q AS TOP 3 OF `a--b` BY h OVER 1500ms WITHIN 1e20",
        "QUERY q AS TOP 3 OF `a--b` BY h OVER 1500ms WITHIN 1e+20",
    ),
    ("alter query popular top 20 within 10", "ALTER QUERY popular TOP 20 WITHIN 10"),
    ("ALTER QUERY popular TOP 20", "ALTER QUERY popular TOP 20"),
    ("ALTER QUERY idle bottom 3 WITHIN -0", "ALTER QUERY idle BOTTOM 3 WITHIN 0"),
]


@pytest.mark.parametrize(("text", "canonical"), CANONICAL)
def test_canonical_text(text: str, canonical: str) -> None:
    parsed = parse_query(text)
    assert format_query(parsed) == canonical
    assert parse_query(canonical) == parsed


def test_patterns_that_cannot_be_written() -> None:
    for pattern in ["", "a`b", "a\nb", "a\rb"]:
        with pytest.raises(ValueError, match=r"objects pattern .* cannot be written"):
            format_objects(pattern)


# ---- what compiles ----------------------------------------------------------------------------


def test_compile_query_refuses_top_k_statements_with_a_position() -> None:
    statement = parse_queries("QUERY w ON x\nQUERY t AS BOTTOM 2 OF x BY y WITHIN 0")[1]
    with pytest.raises(QuerySyntaxError, match=r"^line 2:1: QUERY t AS BOTTOM 2 OF \.\.\. is a"):
        compile_query(statement)
    with pytest.raises(QuerySyntaxError, match="ALTER QUERY t changes the k of a top-k query"):
        compile_query("ALTER QUERY t TOP 3")


def test_a_quoted_pattern_is_not_offered_as_a_series_name() -> None:
    with pytest.raises(QuerySyntaxError) as info:
        parse_queries("QUERY q AS TOP 3 OF")
    assert info.value.expected == ["an object name or pattern"]


def test_alter_precision_of_an_aggregate_is_still_fine_next_to_top_k_queries() -> None:
    statements = parse_queries(
        "QUERY s AS SUM(a) WITHIN 1\nQUERY t AS TOP 1 OF x BY y WITHIN 0\n"
        "ALTER QUERY s WITHIN 2 IMMEDIATELY\nALTER QUERY t TOP 2 WITHIN 1"
    )
    assert [type(s).__name__ for s in statements] == [
        "AggregateDef",
        "TopKDef",
        "AlterPrecision",
        "AlterTopK",
    ]
