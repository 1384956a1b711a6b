"""Parsing and printing queries answered from stream summaries: wavelets (INNER, POINT, RANGE),
exponential histograms (APPROX COUNT|SUM) and correlated aggregates (COUNT|SUM(x > AVG))."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

import tsmon.query as A
from tsmon import cli
from tsmon.cli import commands
from tsmon.query import (
    AggregateDef,
    ApproxDef,
    CorrelatedDef,
    QuerySyntaxError,
    StandingDef,
    WaveletDef,
    compile_query,
    format_query,
    parse_queries,
    parse_query,
)

# The statements of the brief, in one file with the other kinds and comments.
FILE = """
QUERY hot ON host*.cpu WHEN mean(5m) > 0.9          -- a watch query
QUERY recent AS INNER(temp.v, [8, 4, 2, 1]) WITHIN 20
QUERY recent2 AS INNER(temp.v, [8, 4, 2, 1] AT [0, 2, 4, 8]) OVER 1024 points
QUERY twelve AS POINT(temp.v, 12) WITHIN 0.5
QUERY near AS RANGE(temp.v, 0..64, 30 ± 2)
QUERY near2 AS RANGE(temp.v, 0..64, 30 +- 2) OVER 256 points
QUERY errs AS APPROX COUNT(errors.n > 0) OVER 10000 points WITHIN 1%
QUERY bytes AS APPROX SUM(bytes.n) OVER 10000 points WITHIN 0.5% MAX 1500
QUERY long AS COUNT(calls.dur > AVG) OVER 500 points
QUERY heavy AS SUM(calls.dur > AVG)
QUERY fast AS COUNT(calls.dur <= 1.1 * MIN) OVER 500 points
QUERY slow AS SUM(calls.dur >= 0.9 * MAX)
QUERY path AS SUM(r1.queue, r2.queue) WITHIN 5       -- a bounded aggregate
QUERY port AS SUM(0.3*ibm.px + 0.7*msft.px) WITHIN 0.5 CONFIDENCE 0.9
"""

W = (8.0, 4.0, 2.0, 1.0)


def test_the_statements_of_the_brief() -> None:
    q = {statement.name: statement for statement in parse_queries(FILE)}
    assert list(q)[:2] == ["hot", "recent"] and list(q)[-2:] == ["path", "port"]
    assert isinstance(q["hot"], A.QueryDef)
    assert isinstance(q["path"], AggregateDef) and isinstance(q["port"], StandingDef)
    assert q["recent"] == WaveletDef("recent", "inner", "temp.v", 1024, W, (0, 1, 2, 3), within=20)
    assert q["recent2"] == WaveletDef("recent2", "inner", "temp.v", 1024, W, (0, 2, 4, 8))
    assert q["twelve"] == WaveletDef("twelve", "point", "temp.v", position=12, within=0.5)
    assert q["near"] == WaveletDef("near", "range", "temp.v", span=(0, 64), value=30, radius=2)
    assert q["near2"] == WaveletDef(
        "near2", "range", "temp.v", 256, span=(0, 64), value=30.0, radius=2.0
    )
    assert q["errs"] == ApproxDef("errs", "count", "errors.n", 10_000, 0.01, ">", 0.0)
    assert q["bytes"] == ApproxDef("bytes", "sum", "bytes.n", 10_000, 0.005, max_value=1500)
    assert q["long"] == CorrelatedDef("long", "count", "calls.dur", "avg", 0.0, 500)
    assert q["heavy"] == CorrelatedDef("heavy", "sum", "calls.dur", "avg")
    assert q["fast"] == CorrelatedDef("fast", "count", "calls.dur", "min", 0.1, 500)
    assert q["slow"] == CorrelatedDef("slow", "sum", "calls.dur", "max", 0.1)


def test_field_types_and_defaults() -> None:
    statements = parse_queries(FILE)
    recent, twelve, near = statements[1], statements[3], statements[4]
    assert all(type(w) is float for w in recent.weights)
    assert all(type(i) is int for i in recent.indices)
    assert type(recent.window_points) is int and recent.window_points == A.DEFAULT_SWAT_POINTS
    assert recent.position is None and recent.span is None and recent.value is None
    assert twelve.weights == () and twelve.indices == () and type(twelve.position) is int
    assert near.within is None and type(near.value) is float and type(near.radius) is float
    errs, bytes_ = statements[6], statements[7]
    assert errs.max_value is None and type(errs.threshold) is float
    assert bytes_.op is None and bytes_.threshold is None and type(bytes_.max_value) is int
    heavy, slow = statements[9], statements[11]
    assert heavy.window_points is None and heavy.eps == 0.0 and heavy.comparison == ">"
    assert slow.comparison == ">=" and statements[10].comparison == "<="


def test_positions_and_source_text() -> None:
    statements = parse_queries(FILE)
    recent2, bytes_, slow = statements[2], statements[7], statements[11]
    assert (recent2.line, recent2.column) == (4, 1)
    assert recent2.text == (
        "QUERY recent2 AS INNER(temp.v, [8, 4, 2, 1] AT [0, 2, 4, 8]) OVER 1024 points"
    )
    assert (bytes_.line, bytes_.column) == (9, 1)
    assert bytes_.text.endswith("MAX 1500")
    assert (slow.line, slow.text) == (13, "QUERY slow AS SUM(calls.dur >= 0.9 * MAX)")


def test_keywords_are_case_insensitive_and_statements_span_lines() -> None:
    q = parse_query(
        "query Recent as\n  inner(temp.v, [8, 4] -- newest first\n  at [0, 2])\n"
        "  Over 16 POINTS\n  wItHiN .5"
    )
    assert q == WaveletDef("Recent", "inner", "temp.v", 16, (8.0, 4.0), (0, 2), within=0.5)
    assert q.text.endswith("wItHiN .5")
    for spelling in ["POINT", "point", "Point", "pOiNt"]:
        assert parse_query(f"QUERY q AS {spelling}(a, 3) over 4 Point").position == 3
    for spelling in ["range", "RANGE", "Range"]:
        assert parse_query(f"QUERY q AS {spelling}(a, 1..2, 0 ± 1)").kind == "range"
    for approx, count, over, within in [
        ("approx", "count", "over", "within"),
        ("APPROX", "COUNT", "OVER", "WITHIN"),
        ("Approx", "Count", "Over", "Within"),
    ]:
        q = parse_query(f"QUERY q AS {approx} {count}(a < 1) {over} 10 points {within} 2%")
        assert (q.kind, q.op, q.threshold, q.window_points, q.eps) == ("count", "<", 1.0, 10, 0.02)
    for spelling in ["sum", "SUM", "Sum"]:
        q = parse_query(f"QUERY q AS approx {spelling}(a) over 10 points within 2% mAx 7")
        assert (q.kind, q.max_value) == ("sum", 7)
    for dependent, independent in [("count", "avg"), ("COUNT", "Avg"), ("Sum", "AVG")]:
        q = parse_query(f"QUERY q AS {dependent}(a > {independent}) over 3 points")
        assert (q.dependent, q.independent) == (dependent.lower(), "avg")
    assert parse_query("QUERY q AS count(a <= 2 * min)").independent == "min"
    assert parse_query("QUERY q AS sum(a >= .5 * Max)").independent == "max"


def test_names_and_series_are_case_sensitive_text() -> None:
    q = parse_query("QUERY Near AS RANGE(Temp.V, 0..1, 0 ± 1)")
    assert q.name == "Near" and q.series == "Temp.V"


def test_series_are_written_as_inside_aggregates() -> None:
    assert parse_query("QUERY q AS POINT(`my series`, 0)").series == "my series"
    assert parse_query("QUERY q AS POINT(aws.cpu-utilisation_5f5533, 0)").series == (
        "aws.cpu-utilisation_5f5533"
    )
    assert parse_query("QUERY q AS COUNT(`7` > AVG)").series == "7"
    assert parse_query("QUERY q AS APPROX SUM(`a--b`) OVER 5 points WITHIN 1% MAX 9").series == (
        "a--b"
    )


# ---- wavelets ----------------------------------------------------------------------------------


def test_inner_positions_default_to_the_newest_values() -> None:
    q = parse_query("QUERY q AS INNER(a, [1, -0.5, 0, 2e3])")
    assert q.weights == (1.0, -0.5, 0.0, 2000.0) and q.indices == (0, 1, 2, 3)
    explicit = parse_query("QUERY q AS INNER(a, [1, -0.5, 0, 2e3] AT [0, 1, 2, 3])")
    assert explicit == q


def test_inner_positions_keep_their_order() -> None:
    q = parse_query("QUERY q AS INNER(a, [1, 2, 3] AT [7, 0, 3]) OVER 8 points")
    assert q.indices == (7, 0, 3) and q.weights == (1.0, 2.0, 3.0)


@pytest.mark.parametrize("n", [2, 4, 1024, 2**20, 2**40])
def test_over_takes_any_power_of_two_from_2(n: int) -> None:
    q = parse_query(f"QUERY q AS POINT(a, {n - 1}) OVER {n} points")
    assert (q.window_points, q.position) == (n, n - 1)


@pytest.mark.parametrize(
    ("text", "span", "value", "radius"),
    [
        ("0..64, 30 ± 2", (0, 64), 30.0, 2.0),
        ("0 .. 64, 30 +- 2", (0, 64), 30.0, 2.0),
        ("5..5, -1.5±0", (5, 5), -1.5, 0.0),
        ("0..1023, 1e3+-.5", (0, 1023), 1000.0, 0.5),
        ("007..+8, -0 ± -0", (7, 8), 0.0, 0.0),
    ],
)
def test_range_takes_a_span_a_value_and_a_radius(
    text: str, span: tuple[int, int], value: float, radius: float
) -> None:
    q = parse_query(f"QUERY q AS RANGE(a, {text})")
    assert (q.span, q.value, q.radius) == (span, value, radius)


def test_plus_minus_and_its_ascii_spelling_are_one() -> None:
    assert parse_query("QUERY q AS RANGE(a, 0..64, 30 ± 2)") == parse_query(
        "QUERY q AS RANGE(a, 0..64, 30 +- 2)"
    )


def test_within_is_the_precision_of_inner_and_point() -> None:
    assert parse_query("QUERY q AS INNER(a, [1]) WITHIN 1e-3").within == 0.001
    assert parse_query("QUERY q AS POINT(a, 0) OVER 2 points WITHIN +5").within == 5.0
    assert parse_query("QUERY q AS POINT(a, 0)").within is None


# ---- exponential histograms -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "canonical"),
    [
        ("<", "<"),
        ("<=", "<="),
        (">", ">"),
        (">=", ">="),
        ("==", "=="),
        ("=", "=="),
        ("!=", "!="),
        ("<>", "!="),
    ],
)
def test_approx_count_takes_every_comparison(op: str, canonical: str) -> None:
    q = parse_query(f"QUERY q AS APPROX COUNT(a {op} -2.5) OVER 100 points WITHIN 1%")
    assert (q.op, q.threshold) == (canonical, -2.5)


@pytest.mark.parametrize(
    ("within", "eps"),
    [
        ("1%", 0.01),
        ("7%", 0.07),  # 7/100, not 7 * 0.01
        ("0.5%", 0.005),
        ("12.5%", 0.125),
        ("99.9%", 0.999),
        ("+1.0%", 0.01),
        ("1e-3%", 1e-5),
    ],
)
def test_approx_within_is_a_percentage(within: str, eps: float) -> None:
    q = parse_query(f"QUERY q AS APPROX SUM(a) OVER 10 points WITHIN {within} MAX 1")
    assert q.eps == eps


def test_approx_limits_are_inclusive() -> None:
    q = parse_query(f"QUERY q AS APPROX SUM(a) OVER {2**40} points WITHIN 1% MAX {A.MAX_SUM_VALUE}")
    assert (q.window_points, q.max_value) == (2**40, 2**53)
    assert parse_query("QUERY q AS APPROX COUNT(a > 0) OVER 1 point WITHIN 1%").window_points == 1


# ---- correlated aggregates --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bound", "independent", "eps"),
    [
        ("AVG", "avg", 0.0),
        ("1.1 * MIN", "min", 0.1),  # c - 1 exactly, not 1.1 - 1 == 0.10000000000000009
        ("1.1*MIN", "min", 0.1),
        ("MIN", "min", 0.0),
        ("1 * MIN", "min", 0.0),
        ("3 * MIN", "min", 2.0),
        ("1.000001 * MIN", "min", 1e-6),
        ("0.9 * MAX", "max", 0.1),
        ("MAX", "max", 0.0),
        ("1.0 * MAX", "max", 0.0),
        (".25*MAX", "max", 0.75),
        ("1e-3 * MAX", "max", 0.999),
    ],
)
def test_correlated_bounds(bound: str, independent: str, eps: float) -> None:
    op = A.INDEPENDENT_AGGREGATES[independent]
    q = parse_query(f"QUERY q AS COUNT(calls.dur {op} {bound})")
    assert (q.independent, q.eps, q.window_points) == (independent, eps, None)


def test_correlated_comparisons_may_use_aliases_and_no_spaces() -> None:
    q = parse_query("QUERY q AS SUM(calls.dur>=0.9*MAX) OVER 500 points")
    assert q == CorrelatedDef("q", "sum", "calls.dur", "max", 0.1, 500)


# ---- the other kinds are unchanged ------------------------------------------------------------


def test_sum_without_a_comparison_stays_a_bounded_or_standing_aggregate() -> None:
    bounded, standing, windowed = parse_queries(
        "QUERY a AS SUM(a.x, b.x) WITHIN 0.5\n"
        "QUERY b AS SUM(a.x, b.x) WITHIN 0.5 CONFIDENCE 0.9\n"
        "QUERY c AS MAX OVER 5m OF SUM(a.x) WITHIN 1 CONFIDENCE 0.9"
    )
    assert type(bounded) is AggregateDef and bounded.weights == {"a.x": 1.0, "b.x": 1.0}
    assert type(standing) is StandingDef and type(windowed) is StandingDef
    assert type(parse_query("QUERY q AS SUM(a.x > AVG)")) is CorrelatedDef


def test_new_keywords_stay_usable_as_names_elsewhere() -> None:
    watch, bounded, inner, count = parse_queries(
        "QUERY inner ON approx.x, count, range\n"
        "QUERY approx AS SUM(inner, point, range, at, approx, count) WITHIN 1\n"
        "QUERY point AS INNER(count, [1] AT [0])\n"
        "QUERY count AS COUNT(avg > AVG)"
    )
    assert watch.triggers == ("approx.x", "count", "range")
    assert list(bounded.weights) == ["inner", "point", "range", "at", "approx", "count"]
    assert inner.series == "count" and count.series == "avg"
    q = parse_query("QUERY q ON x EMIT value AS inner, ts AS range")
    assert [item.alias for item in q.emit] == ["inner", "range"]


# ---- names and ALTER ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "QUERY d ON x\nQUERY D AS POINT(a, 0)",
        "QUERY d AS INNER(a, [1])\nQUERY d AS SUM(a) WITHIN 1",
        "QUERY d AS APPROX SUM(a) OVER 5 points WITHIN 1% MAX 3; QUERY d AS COUNT(a > AVG)",
        "QUERY d AS COUNT(a > AVG)\nQUERY d AS TOP 1 OF x BY y WITHIN 0",
        "QUERY d AS SUM(a) WITHIN 1 CONFIDENCE 0.9\nQUERY d AS RANGE(a, 0..1, 0 ± 1)",
    ],
)
def test_summary_queries_share_the_one_namespace(text: str) -> None:
    with pytest.raises(QuerySyntaxError, match="duplicate query name"):
        parse_queries(text)


def test_parse_query_returns_summary_statements() -> None:
    assert isinstance(parse_query("QUERY d AS POINT(a, 0)"), WaveletDef)
    with pytest.raises(QuerySyntaxError, match="exactly one"):
        parse_query("QUERY d AS POINT(a, 0)\nQUERY e AS POINT(a, 1)")


# ---- canonical text ---------------------------------------------------------------------------

CANONICAL = [
    (
        "query recent as inner(temp.v, [8., 4.0, +2, 1e0]) within 20.0",
        "QUERY recent AS INNER(temp.v, [8, 4, 2, 1]) WITHIN 20",
    ),
    (
        "QUERY r AS INNER(temp.v,[8,4] at [0,1]) OVER 1024 POINT",
        "QUERY r AS INNER(temp.v, [8, 4])",
    ),
    (
        "QUERY r AS INNER(`t.v`, [-.5] AT [02]) OVER 0256 points",
        "QUERY r AS INNER(t.v, [-0.5] AT [2]) OVER 256 points",
    ),
    ("QUERY t AS point(temp.v, +12) within .5", "QUERY t AS POINT(temp.v, 12) WITHIN 0.5"),
    (
        "QUERY near AS RANGE(temp.v, 0..64, 30.0 +- 2.)",
        "QUERY near AS RANGE(temp.v, 0..64, 30 ± 2)",
    ),
    (
        "QUERY e AS approx count(errors.n<>0) over 10000 points within 1.0%",
        "QUERY e AS APPROX COUNT(errors.n != 0) OVER 10000 points WITHIN 1%",
    ),
    (
        "QUERY b AS APPROX SUM( bytes.n ) OVER 1 points WITHIN 0.50% MAX 01500",
        "QUERY b AS APPROX SUM(bytes.n) OVER 1 point WITHIN 0.5% MAX 1500",
    ),
    ("QUERY l AS count(calls.dur>avg)", "QUERY l AS COUNT(calls.dur > AVG)"),
    (
        "QUERY f AS COUNT(calls.dur <= 1.10*min) OVER 500 POINTS",
        "QUERY f AS COUNT(calls.dur <= 1.1 * MIN) OVER 500 points",
    ),
    ("QUERY f AS SUM(calls.dur <= 1.0 * MIN)", "QUERY f AS SUM(calls.dur <= MIN)"),
    ("QUERY s AS sum(calls.dur >= 9e-1 * max)", "QUERY s AS SUM(calls.dur >= 0.9 * MAX)"),
]


@pytest.mark.parametrize(("text", "canonical"), CANONICAL)
def test_canonical_text(text: str, canonical: str) -> None:
    parsed = parse_query(text)
    assert format_query(parsed) == canonical
    assert parse_query(canonical) == parsed


# ---- what compiles, what `tsmon check` shows ---------------------------------------------------


@pytest.mark.parametrize(
    ("text", "what"),
    [
        ("QUERY w AS INNER(a, [1])", r"QUERY w AS INNER\(\.\.\.\) is a wavelet query"),
        (
            "QUERY w AS APPROX SUM(a) OVER 5 points WITHIN 1% MAX 3",
            r"QUERY w AS APPROX SUM\(\.\.\.\) is an approximate-aggregate query",
        ),
        (
            "QUERY w AS SUM(a <= 2 * MIN)",
            r"QUERY w AS SUM\(\.\.\. <= MIN\) is a correlated-aggregate query",
        ),
    ],
)
def test_compile_query_refuses_summary_statements_with_a_position(text: str, what: str) -> None:
    statement = parse_queries(f"QUERY x ON x\n{text}")[1]
    with pytest.raises(QuerySyntaxError, match=f"^line 2:1: {what}"):
        compile_query(statement)
    with pytest.raises(QuerySyntaxError, match="compile_query compiles watch queries"):
        compile_query(text)


def test_check_lists_summary_queries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(commands, "console", Console(width=300, highlight=False, markup=False))
    path = tmp_path / "summaries.tsq"
    path.write_text(FILE, encoding="utf-8")
    assert cli.main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert "14 statements OK" in out
    for cell in [
        "INNER(temp.v, [8, 4, 2, 1])",
        "WITHIN 20",
        "RANGE(temp.v, 0..64, 30 ± 2)",
        "256 points",
        "APPROX COUNT(errors.n > 0)",
        "WITHIN 0.5% MAX 1500",
        "COUNT(calls.dur <= 1.1 * MIN)",
        "since START",
    ]:
        assert cell in out, (cell, out)
