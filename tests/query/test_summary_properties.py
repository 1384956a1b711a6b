"""Property tests of the queries answered from stream summaries beyond the contract
(test_contract.py): they cannot be altered, a comparison inside SUM makes a correlated
aggregate, and numbers, counts and coefficients parse or fail at their token."""

from __future__ import annotations

import math
from dataclasses import replace
from decimal import Decimal
from fractions import Fraction

from hypothesis import example, given, settings
from hypothesis import strategies as st
from summary_strategies import (
    max_eps,
    min_eps,
    summary_defs,
    summary_series,
)

import tsmon.query as A
from tsmon.core.window_spec import MAX_POINTS
from tsmon.query import (
    QuerySyntaxError,
    format_coefficient,
    format_query,
    format_series,
    parse_queries,
    parse_query,
)


@given(summary_defs, st.sampled_from([A.AlterPrecision("x", 1.0), A.AlterTopK("x", True, 3, None)]))
def test_summary_queries_cannot_be_altered(statement: A.SummaryDef, alter: A.Statement) -> None:
    alter = replace(alter, name=statement.name.upper())
    text = f"{format_query(statement)}\n{format_query(alter)}"
    try:
        parse_queries(text)
    except QuerySyntaxError as err:
        assert (err.line, err.column) == (2, 1)
        assert "cannot be altered" in err.detail
    else:
        raise AssertionError(f"an ALTER of a summary query parsed: {text}")


@given(summary_series, st.sampled_from(["SUM", "sum", "Sum"]), st.sampled_from(["", " WITHIN 1"]))
def test_a_comparison_inside_sum_makes_a_correlated_aggregate(
    series: str, func: str, within: str
) -> None:
    name = format_series(series)
    bounded = parse_query(f"QUERY q AS {func}({name}) WITHIN 1")
    assert type(bounded) is A.AggregateDef and bounded.weights == {series: 1.0}
    correlated = f"QUERY q AS {func}({name} > AVG)"
    assert parse_query(correlated) == A.CorrelatedDef("q", "sum", series, "avg")
    with_bounds = f"QUERY q AS {func}({name} > AVG){within} CONFIDENCE 0.9"
    try:
        parse_query(with_bounds)
    except QuerySyntaxError as err:
        assert err.line == 1 and err.column == len(correlated) + len(within) + 2
    else:
        raise AssertionError(f"a standing correlated aggregate parsed: {with_bounds}")


# ---- numbers ----------------------------------------------------------------------------------

_WORDS = st.one_of(
    st.from_regex(r"[+-]?[0-9]{0,4}(\.[0-9]{0,3})?([eE][+-]?[0-9]{1,4})?", fullmatch=True),
    st.sampled_from(["inf", "-inf", "nan", "5ms", "1h", "1_0", "0x1", "9" * 400, "1e999", "-0"]),
    st.floats().map(repr),
    st.integers(-10, 2**41).map(str),
)


@given(_WORDS)
@settings(max_examples=500)
def test_any_position_is_a_whole_number_below_n_or_fails_at_its_token(word: str) -> None:
    text = f"QUERY q AS POINT(a, {word}) OVER 64 points"
    try:
        parsed = parse_query(text)
    except QuerySyntaxError as err:
        assert err.line == 1 and 21 <= err.column <= len(text), str(err)
        return
    assert word.lstrip("+").isdigit() and int(word) == parsed.position and parsed.position < 64


@given(_WORDS)
@settings(max_examples=500)
def test_any_over_is_a_power_of_two_for_swat_trees_or_fails_at_its_token(word: str) -> None:
    for text, swat in [
        (f"QUERY q AS RANGE(a, 0..1, 0 ± 1) OVER {word} points", True),
        (f"QUERY q AS COUNT(a > AVG) OVER {word} points", False),
    ]:
        try:
            parsed = parse_query(text)
        except QuerySyntaxError as err:
            assert err.line == 1 and text.index("OVER") + 1 < err.column <= len(text), str(err)
            continue
        n = parsed.window_points
        assert word.lstrip("+").isdigit() and int(word) == n and 1 <= n <= MAX_POINTS
        assert not swat or (n >= 2 and n & (n - 1) == 0)


@given(_WORDS, st.sampled_from(["min", "max"]))
@example("200E306", "min")  # between the largest float and 1e309: an OverflowError once
@settings(max_examples=500)
def test_any_coefficient_parses_to_its_exact_eps_or_fails_at_its_token(
    word: str, independent: str
) -> None:
    op = A.INDEPENDENT_AGGREGATES[independent]
    text = f"QUERY q AS COUNT(a {op} {word} * {independent})"
    try:
        parsed = parse_query(text)
    except QuerySyntaxError as err:
        assert err.line == 1 and 18 <= err.column <= len(text), str(err)
        return
    c = Fraction(Decimal(word))
    assert parsed.eps == float(c - 1 if independent == "min" else 1 - c)
    assert math.isfinite(parsed.eps) and parsed.eps >= 0
    assert (c >= 1) if independent == "min" else (0 < c <= 1 and parsed.eps < 1)


@given(st.one_of(min_eps.map(lambda e: ("min", e)), max_eps.map(lambda e: ("max", e))))
@settings(max_examples=1000)
def test_every_eps_has_a_coefficient_that_reads_back_as_it(case: tuple[str, float]) -> None:
    independent, eps = case
    c = format_coefficient(independent, eps)
    op = A.INDEPENDENT_AGGREGATES[independent]
    parsed = parse_query(f"QUERY q AS SUM(a {op} {c} * {independent.upper()})")
    assert parsed.eps == eps
    if eps in (0.1, 0.5, 0.25):
        assert len(c) <= 4  # the short decimal, not 1.1000000000000000055511151231257827
