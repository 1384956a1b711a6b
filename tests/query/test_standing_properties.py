"""Property tests of standing queries beyond the contract (test_contract.py): CONFIDENCE turns
any bounded SUM/AVG into a standing query with the same terms, and tolerances and confidences
parse or fail at their token."""

from __future__ import annotations

import math
import re
from decimal import Decimal

import pytest
from aggregate_strategies import RawAggregate, raw_aggregates
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import tsmon.query as A
from tsmon.query import (
    QuerySyntaxError,
    format_percent,
    parse_query,
)


@given(raw_aggregates(), st.sampled_from(["", "MAX OVER 5m OF ", "min since start of "]))
@settings(max_examples=300)
def test_confidence_turns_a_bounded_sum_or_avg_into_a_standing_query(
    raw: RawAggregate, window: str
) -> None:
    assume(raw.aggregate in A.WEIGHTED_AGGREGATES)
    try:
        bounded = parse_query(raw.text)
    except QuerySyntaxError as err:  # weights adding up to 0, or overflowing
        with pytest.raises(QuerySyntaxError) as info:
            parse_query(raw.text + " CONFIDENCE 0.9")
        assert (info.value.line, info.value.column, info.value.detail) == (
            err.line,
            err.column,
            err.detail,
        )
        return
    head, rest = re.fullmatch(r"(\S+ \S+ \S+ )(.*)", raw.text, re.S).groups()
    standing = parse_query(f"{head}{window}{rest} CONFIDENCE 0.9")
    assert isinstance(standing, A.StandingDef)
    assert standing.terms == bounded.terms and standing.weights == bounded.weights
    assert list(standing.weights) == list(bounded.weights)
    assert (standing.aggregate, standing.eps, standing.relative) == (
        bounded.aggregate,
        bounded.delta,
        False,
    )
    assert standing.confidence == 0.9
    assert standing.extremum == (window.split()[0].lower() if window else None)


_NUMBERS = st.one_of(
    st.from_regex(r"[+-]?[0-9]{0,4}(\.[0-9]{0,3})?([eE][+-]?[0-9]{1,4})?", fullmatch=True),
    st.sampled_from(["inf", "-inf", "nan", "Infinity", "5ms", "1h", "1_0", "0x1", "9" * 400]),
    st.floats().map(repr),
)


@given(_NUMBERS, st.booleans())
@settings(max_examples=500)
def test_any_tolerance_parses_or_fails_at_its_token(number: str, percent: bool) -> None:
    eps = number + ("%" if percent else "")
    text = f"QUERY q AS SUM(a) WITHIN {eps} CONFIDENCE 0.9"
    try:
        parsed = parse_query(text)
    except QuerySyntaxError as err:
        # at or after the tolerance token (`E-0` fails at `-0`), or where it should be
        assert err.line == 1 and 26 <= err.column <= len(text), str(err)
        return
    assert parsed.relative == percent
    assert math.isfinite(parsed.eps) and parsed.eps > 0
    if percent:
        assert 0 < Decimal(number) < 100 and parsed.eps < 1
        assert parsed.eps == float(Decimal(number) / 100)
        assert parse_query(f"QUERY q AS SUM(a) WITHIN {format_percent(parsed.eps)}% CONFIDENCE .9")
    else:
        assert parsed.eps == float(number)


@given(_NUMBERS, st.sampled_from(["", "%"]))
@settings(max_examples=500)
def test_any_confidence_is_strictly_between_0_and_1_or_fails_at_its_token(
    number: str, suffix: str
) -> None:
    p = number + suffix
    text = f"QUERY q AS AVG(a, b) WITHIN 1 CONFIDENCE {p}"
    try:
        parsed = parse_query(text)
    except QuerySyntaxError as err:
        assert err.line == 1 and (41 if p else 40) <= err.column <= len(text) + 1, str(err)
        return
    assert not suffix
    assert 0 < parsed.confidence < 1 and parsed.confidence == float(number)
    assert 0 < Decimal(number) < 1


@given(st.floats(min_value=0, max_value=1, exclude_min=True, exclude_max=True))
@settings(max_examples=1000)
def test_every_fraction_below_one_has_a_percent_that_reads_back_as_it(fraction: float) -> None:
    text = format_percent(fraction)
    assert float(Decimal(text) / 100) == fraction or _exact(text) == fraction
    parsed = parse_query(f"QUERY q AS SUM(a) WITHIN {text}% CONFIDENCE 0.5")
    assert parsed.eps == fraction and parsed.relative


def _exact(text: str) -> float:
    """``text`` / 100 rounded once (Decimal division rounds to 28 digits first)."""
    sign, digits, exponent = Decimal(text).as_tuple()
    return float(Decimal((sign, digits, exponent - 2)))
