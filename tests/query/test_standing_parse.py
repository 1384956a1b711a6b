"""Parsing and printing standing aggregate queries (QUERY ... WITHIN eps CONFIDENCE p)."""

from __future__ import annotations

import pytest

import tsmon.query as A
from tsmon.core.window_spec import WindowSpec
from tsmon.query import (
    AggregateDef,
    QuerySyntaxError,
    StandingDef,
    compile_query,
    format_query,
    parse_queries,
    parse_query,
)

T = A.Term
NEW_YEAR_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z

# The statements of the brief, in one file with the other kinds and comments.
FILE = """
QUERY hot ON host*.cpu WHEN mean(5m) > 0.9          -- a watch query
QUERY path AS SUM(r1.queue, r2.queue) WITHIN 5       -- a bounded aggregate
QUERY port AS SUM(0.3*ibm.px + 0.7*msft.px) WITHIN 0.5 CONFIDENCE 0.9
QUERY idx AS AVG(a.px, b.px, c.px) WITHIN 1% CONFIDENCE 0.95
QUERY peak AS MAX OVER 30m OF AVG(a.px, b.px) WITHIN 0.5 CONFIDENCE 0.9
QUERY low AS MIN OVER 100 points OF SUM(a.px - b.px) WITHIN 2 CONFIDENCE 0.8
QUERY high AS MAX SINCE 2026-01-01T00:00:00Z OF SUM(a.px) WITHIN 0.5 CONFIDENCE 0.9
QUERY top AS MAX SINCE START OF AVG(a.px, b.px) WITHIN 0.5 CONFIDENCE 0.9
QUERY popular AS TOP 10 OF doc:* BY hits WITHIN 5    -- a top-k query
ALTER QUERY port WITHIN 0.25
"""

AB = (T(1.0, "a.px"), T(1.0, "b.px"))


def test_the_statements_of_the_brief() -> None:
    hot, path, port, idx, peak, low, high, top, popular, alter = parse_queries(FILE)
    assert isinstance(hot, A.QueryDef) and isinstance(path, AggregateDef)
    assert isinstance(popular, A.TopKDef)
    assert port == StandingDef(
        "port", "sum", (T(0.3, "ibm.px"), T(0.7, "msft.px")), 0.5, False, 0.9
    )
    assert idx == StandingDef(
        "idx", "avg", (T(1.0, "a.px"), T(1.0, "b.px"), T(1.0, "c.px")), 0.01, True, 0.95
    )
    assert peak == StandingDef(
        "peak", "avg", AB, 0.5, False, 0.9, "max", WindowSpec.time(1_800_000)
    )
    assert low == StandingDef(
        "low",
        "sum",
        (T(1.0, "a.px"), T(-1.0, "b.px")),
        2.0,
        False,
        0.8,
        "min",
        WindowSpec.count(100),
    )
    assert high == StandingDef(
        "high", "sum", (T(1.0, "a.px"),), 0.5, False, 0.9, "max", landmark_ms=NEW_YEAR_MS
    )
    assert top == StandingDef("top", "avg", AB, 0.5, False, 0.9, "max", since_start=True)
    assert alter == A.AlterPrecision("port", 0.25)


def test_field_types_and_defaults() -> None:
    port, idx, peak, high, top = (
        s for s in parse_queries(FILE) if isinstance(s, StandingDef) and s.name != "low"
    )
    assert type(port.eps) is float and type(port.confidence) is float
    assert (port.extremum, port.window, port.landmark_ms, port.since_start) == (
        None,
        None,
        None,
        False,
    )
    assert idx.relative and idx.eps == 0.01
    assert type(peak.window) is WindowSpec and peak.landmark_ms is None and not peak.since_start
    assert type(high.landmark_ms) is int and high.window is None and not high.since_start
    assert top.since_start and top.window is None and top.landmark_ms is None
    assert port.weights == {"ibm.px": 0.3, "msft.px": 0.7}


def test_positions_and_source_text() -> None:
    statements = parse_queries(FILE)
    peak, high = statements[4], statements[6]
    assert (peak.line, peak.column) == (6, 1)
    assert peak.text == "QUERY peak AS MAX OVER 30m OF AVG(a.px, b.px) WITHIN 0.5 CONFIDENCE 0.9"
    assert (high.line, high.column) == (8, 1)
    assert high.terms[0].line == 8 and high.terms[0].column == 53


def test_keywords_are_case_insensitive_and_statements_span_lines() -> None:
    q = parse_query(
        "query Peak as\n  max -- the largest\n  Over 1h\n  of avg(a.px,\n b.px)\n"
        "  wItHiN .5 -- absolute\n  cOnFiDeNcE .9"
    )
    assert q == StandingDef("Peak", "avg", AB, 0.5, False, 0.9, "max", WindowSpec.time(3_600_000))
    assert q.text.endswith("cOnFiDeNcE .9")
    for spelling in ["confidence", "CONFIDENCE", "Confidence"]:
        assert isinstance(parse_query(f"QUERY q AS SUM(a) WITHIN 1 {spelling} 0.5"), StandingDef)
    for spelling in ["since start", "SINCE START", "Since Start", "since sTaRt"]:
        assert parse_query(
            f"QUERY q AS min {spelling} of sum(a) within 1 confidence .5"
        ).since_start
    for spelling in ["max", "MAX", "Max"]:
        q = parse_query(f"QUERY q AS {spelling} OVER 5 POINTS OF Sum(a) Within 1 Confidence .5")
        assert (q.extremum, str(q.window), q.aggregate) == ("max", "5 points", "sum")


def test_names_and_series_are_case_sensitive_text() -> None:
    q = parse_query("QUERY Port AS SUM(IBM.px, ibm.px) WITHIN 1 CONFIDENCE 0.9")
    assert q.name == "Port" and q.weights == {"IBM.px": 1.0, "ibm.px": 1.0}


# ---- aggregates: the arguments, pooling and lexing of bounded aggregates ----------------------


@pytest.mark.parametrize(
    ("args", "weights"),
    [
        ("a, a", {"a": 2.0}),
        ("2*a.x - b.x", {"a.x": 2.0, "b.x": -1.0}),
        ("0.5*a.x + 1.5 * b.x, -c.x / 2", {"a.x": 0.5, "b.x": 1.5, "c.x": -0.5}),
        ("host*.cpu, `my series`", {"host*.cpu": 1.0, "my series": 1.0}),
        ("aws.cpu-utilisation_5f5533", {"aws.cpu-utilisation_5f5533": 1.0}),
    ],
)
def test_arguments_pool_like_bounded_aggregates(args: str, weights: dict[str, float]) -> None:
    bounded = parse_query(f"QUERY q AS SUM({args}) WITHIN 1")
    current = parse_query(f"QUERY q AS SUM({args}) WITHIN 1 CONFIDENCE 0.9")
    windowed = parse_query(f"QUERY q AS MIN OVER 5m OF SUM({args}) WITHIN 1 CONFIDENCE 0.9")
    assert bounded.weights == current.weights == windowed.weights == weights
    assert bounded.terms == current.terms == windowed.terms


def test_avg_keeps_its_aggregate() -> None:
    q = parse_query("QUERY q AS AVG(a, 3*b) WITHIN 1 CONFIDENCE 0.9")
    assert q.aggregate == "avg" and q.weights == {"a": 1.0, "b": 3.0}


# ---- WITHIN, CONFIDENCE ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("within", "eps", "relative"),
    [
        ("0.5", 0.5, False),
        ("+2", 2.0, False),
        ("1e-3", 1e-3, False),
        ("1%", 0.01, True),
        ("7%", 0.07, True),  # 7/100, not 7 * 0.01
        ("12.5%", 0.125, True),
        ("0.001%", 1e-5, True),
        ("99.9%", 0.999, True),
        ("+1.0%", 0.01, True),
        ("1e1%", 0.1, True),
    ],
)
def test_within_takes_a_number_or_a_percentage(within: str, eps: float, relative: bool) -> None:
    q = parse_query(f"QUERY q AS SUM(a) WITHIN {within} CONFIDENCE 0.9")
    assert (q.eps, q.relative) == (eps, relative)


@pytest.mark.parametrize(
    ("p", "want"), [("0.9", 0.9), (".95", 0.95), ("+0.5", 0.5), ("5e-1", 0.5), ("1e-9", 1e-9)]
)
def test_confidence_takes_a_probability(p: str, want: float) -> None:
    assert parse_query(f"QUERY q AS SUM(a) WITHIN 1 CONFIDENCE {p}").confidence == want


# ---- windows -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("window", "canonical"),
    [
        ("30m", "30m"),
        ("1h", "1h"),
        ("60m", "1h"),
        ("500ms", "500ms"),
        ("1.5h", "90m"),
        ("100 points", "100 points"),
        ("0100  POINTS", "100 points"),
        ("1 point", "1 point"),
        ("1 points", "1 point"),
        ("36525d", "36525d"),
        ("1099511627776 points", "1099511627776 points"),
    ],
)
def test_over_takes_a_duration_or_a_count(window: str, canonical: str) -> None:
    q = parse_query(f"QUERY q AS MAX OVER {window} OF SUM(a) WITHIN 1 CONFIDENCE 0.9")
    assert str(q.window) == canonical


@pytest.mark.parametrize(
    ("landmark", "ms"),
    [
        ("2026-01-01T00:00:00Z", NEW_YEAR_MS),
        ("2026-01-01", NEW_YEAR_MS),
        ("2026-01-01T01:00:00+01:00", NEW_YEAR_MS),
        ("2026-01-01T00:00:00.250Z", NEW_YEAR_MS + 250),
        ("1677-09-21T00:12:43.146Z", -9_223_372_036_854),
        ("2262-04-11T23:47:16.854Z", 9_223_372_036_854),
    ],
)
def test_since_takes_an_iso_instant(landmark: str, ms: int) -> None:
    q = parse_query(f"QUERY q AS MIN SINCE {landmark} OF AVG(a) WITHIN 1 CONFIDENCE 0.9")
    assert q.landmark_ms == ms and not q.since_start and q.window is None


def test_a_double_minus_after_the_landmark_starts_a_comment() -> None:
    q = parse_query("QUERY q AS MAX SINCE 2026-01-01--new year\n OF SUM(a) WITHIN 1 CONFIDENCE .9")
    assert q.landmark_ms == NEW_YEAR_MS


# ---- the bounded aggregate is unchanged --------------------------------------------------------


def test_without_confidence_an_aggregate_stays_bounded() -> None:
    for func in ["SUM", "AVG", "MIN", "MAX"]:
        q = parse_query(f"QUERY q AS {func}(a.x, b.x) WITHIN 0.5")
        assert type(q) is AggregateDef
        assert q == AggregateDef("q", func.lower(), (T(1.0, "a.x"), T(1.0, "b.x")), 0.5)


def test_new_keywords_stay_usable_as_names_elsewhere() -> None:
    confidence, start, over = parse_queries(
        "QUERY confidence ON start.x, confidence\n"
        "QUERY start AS SUM(confidence, start, of) WITHIN 1 CONFIDENCE 0.9\n"
        "QUERY over AS MAX SINCE START OF SUM(since, over) WITHIN 1 CONFIDENCE 0.9"
    )
    assert confidence.triggers == ("start.x", "confidence")
    assert start.weights == {"confidence": 1.0, "start": 1.0, "of": 1.0}
    assert over.since_start and over.weights == {"since": 1.0, "over": 1.0}
    q = parse_query("QUERY q ON x EMIT value AS confidence, ts AS start")
    assert [item.alias for item in q.emit] == ["confidence", "start"]


# ---- names and ALTER ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "QUERY d ON x\nQUERY D AS SUM(a) WITHIN 1 CONFIDENCE 0.9",
        "QUERY d AS SUM(a) WITHIN 1 CONFIDENCE 0.9\nQUERY d AS SUM(a) WITHIN 1",
        "QUERY d AS MAX OVER 5m OF SUM(a) WITHIN 1 CONFIDENCE 0.9; QUERY d AS TOP 1 OF x BY y "
        "WITHIN 0",
    ],
)
def test_standing_queries_share_the_one_namespace(text: str) -> None:
    with pytest.raises(QuerySyntaxError, match="duplicate query name"):
        parse_queries(text)


def test_alter_within_changes_an_absolute_tolerance() -> None:
    _, alter, now = parse_queries(
        "QUERY s AS MAX OVER 1h OF SUM(a) WITHIN 1 CONFIDENCE 0.9\n"
        "ALTER QUERY S WITHIN 0.5\nALTER QUERY s WITHIN 0.25 IMMEDIATELY"
    )
    assert alter == A.AlterPrecision("S", 0.5)
    assert now == A.AlterPrecision("s", 0.25, immediately=True)


def test_parse_query_returns_standing_statements() -> None:
    assert isinstance(parse_query("QUERY d AS SUM(a) WITHIN 1 CONFIDENCE 0.9"), StandingDef)
    with pytest.raises(QuerySyntaxError, match="exactly one"):
        parse_query("QUERY d AS SUM(a) WITHIN 1 CONFIDENCE 0.9\nALTER QUERY d WITHIN 2")


# ---- canonical text ---------------------------------------------------------------------------

CANONICAL = [
    (
        "query port as sum(0.3*ibm.px + 0.7*msft.px) within 0.50 confidence .9",
        "QUERY port AS SUM(0.3 * ibm.px + 0.7 * msft.px) WITHIN 0.5 CONFIDENCE 0.9",
    ),
    (
        "QUERY idx AS AVG(a.px,b.px , `c.px`) WITHIN 1.0% CONFIDENCE 95e-2",
        "QUERY idx AS AVG(a.px, b.px, c.px) WITHIN 1% CONFIDENCE 0.95",
    ),
    (
        "QUERY peak AS max over 1800s of AVG(a.px, a.px) WITHIN 5e-1 CONFIDENCE 0.9",
        "QUERY peak AS MAX OVER 30m OF AVG(2 * a.px) WITHIN 0.5 CONFIDENCE 0.9",
    ),
    (
        "QUERY low AS MIN OVER 0100 point OF SUM(a.px - b.px) WITHIN 2. CONFIDENCE 0.8",
        "QUERY low AS MIN OVER 100 points OF SUM(a.px - b.px) WITHIN 2 CONFIDENCE 0.8",
    ),
    (
        "QUERY high AS MAX SINCE 2026-01-01T01:00+01:00 OF SUM(a.px) WITHIN 0.5 CONFIDENCE 0.9",
        "QUERY high AS MAX SINCE 2026-01-01T00:00:00Z OF SUM(a.px) WITHIN 0.5 CONFIDENCE 0.9",
    ),
    (
        "QUERY top AS max since start of avg(a.px, b.px) WITHIN 12.50% CONFIDENCE 0.9",
        "QUERY top AS MAX SINCE START OF AVG(a.px, b.px) WITHIN 12.5% CONFIDENCE 0.9",
    ),
    (
        "QUERY tiny AS SUM(`a--b`) WITHIN 0.00001% CONFIDENCE 1e-3",
        "QUERY tiny AS SUM(`a--b`) WITHIN 1e-05% CONFIDENCE 0.001",
    ),
]


@pytest.mark.parametrize(("text", "canonical"), CANONICAL)
def test_canonical_text(text: str, canonical: str) -> None:
    parsed = parse_query(text)
    assert format_query(parsed) == canonical
    assert parse_query(canonical) == parsed


# ---- what compiles ----------------------------------------------------------------------------


def test_compile_query_refuses_standing_statements_with_a_position() -> None:
    statement = parse_queries(
        "QUERY w ON x\nQUERY s AS MAX OVER 5m OF SUM(a) WITHIN 1 CONFIDENCE 0.9"
    )[1]
    with pytest.raises(
        QuerySyntaxError, match=r"^line 2:1: QUERY s AS \.\.\. CONFIDENCE 0\.9 is a standing query"
    ):
        compile_query(statement)
    with pytest.raises(QuerySyntaxError, match="compile_query compiles watch queries"):
        compile_query("QUERY s AS SUM(a) WITHIN 1% CONFIDENCE 0.5")


def test_a_tiny_relative_tolerance_written_in_full_is_fine() -> None:
    parsed = parse_queries(f"QUERY q AS SUM(a) WITHIN 0.{'0' * 300}1% CONFIDENCE 0.9")[0]
    assert parsed.relative and parsed.eps == 1e-303
