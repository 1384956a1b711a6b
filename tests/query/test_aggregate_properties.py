"""Property tests of bounded aggregates beyond the contract (test_contract.py): weights pool
exactly, widths parse or fail, and resolving agrees with a from-scratch expansion using the
engine's glob rule."""

from __future__ import annotations

import math
from fnmatch import fnmatchcase

import pytest
from aggregate_strategies import (
    raw_aggregates,
    reference_pool,
    series_names,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import tsmon.query as A
from tsmon.query import (
    QueryResolveError,
    QuerySyntaxError,
    compile_query,
    format_query,
    parse_query,
    resolve_aggregate,
)


@given(st.data())
@settings(max_examples=300)
def test_written_terms_pool_like_a_from_scratch_pooling(data: st.DataObject) -> None:
    raw = data.draw(raw_aggregates())
    want = reference_pool(raw.aggregate, [(t.coefficient, t.series) for t in raw.terms])
    if want is None:  # some series' weights add up to 0, or overflow
        with pytest.raises(QuerySyntaxError, match="weight"):
            parse_query(raw.text)
        return
    parsed = parse_query(raw.text)
    assert isinstance(parsed, A.AggregateDef), raw.text
    assert parsed.aggregate == raw.aggregate and parsed.delta == raw.delta
    assert parsed.weights == want, raw.text
    assert list(parsed.weights) == list(want)  # order of first mention
    assert parse_query(format_query(parsed)) == parsed


@given(
    st.one_of(
        st.from_regex(r"[+-]?[0-9]{0,4}(\.[0-9]{0,3})?([eE][+-]?[0-9]{1,4})?", fullmatch=True),
        st.sampled_from(["inf", "-inf", "nan", "Infinity", "5ms", "1h", "1_0", "0x1", "9" * 400]),
        st.floats().map(repr),
    )
)
@settings(max_examples=300)
def test_any_width_parses_to_a_positive_finite_number_or_is_a_syntax_error(width: str) -> None:
    text = f"ALTER QUERY q WITHIN {width}"
    try:
        parsed = parse_query(text)
    except QuerySyntaxError as err:
        assert err.line == 1 and 1 <= err.column <= len(text) + 1, str(err)
        return
    assert math.isfinite(parsed.delta) and parsed.delta > 0
    assert parsed.delta == float(width)


# ---- resolving ----------------------------------------------------------------------------------


def _reference_resolve(defn: A.AggregateDef, series: list[str]) -> dict[str, float] | None:
    """Expand every term with fnmatchcase and pool from scratch; None when it must fail."""
    known = list(dict.fromkeys(series))
    pairs: list[tuple[float, str]] = []
    for term in defn.terms:
        glob = any(ch in term.series for ch in "*?[")
        found = sorted(s for s in known if fnmatchcase(s, term.series)) if glob else []
        if not glob:
            found = [term.series] if term.series in known else []
        if not found:
            return None
        pairs.extend((term.coefficient, s) for s in found)
    return reference_pool(defn.aggregate, pairs)


universe = st.lists(
    st.one_of(series_names, st.from_regex(r"(host|db)[0-9]{1,2}\.(cpu|mem)", fullmatch=True)),
    min_size=0,
    max_size=12,
)


@st.composite
def defs_over(draw: st.DrawFn, series: list[str]) -> A.AggregateDef:
    """Aggregates whose terms are mostly existing series and globs over them."""
    spellings = st.one_of(
        st.sampled_from(series) if series else series_names,
        st.sampled_from(["host*.cpu", "db?.mem", "*", "host1*", "[hd]*", "nothing*"]),
        series_names,
    )
    aggregate = draw(st.sampled_from(A.AGGREGATES))
    spelled = draw(st.lists(spellings, min_size=1, max_size=4, unique=True))
    weighted = aggregate in A.WEIGHTED_AGGREGATES
    coefficients = st.sampled_from([1.0, -1.0, 2.0, 0.5]) if weighted else st.just(1.0)
    terms = tuple(A.Term(draw(coefficients), s) for s in spelled)
    return A.AggregateDef("q", aggregate, terms, 1.0)


@given(st.data())
@settings(max_examples=300)
def test_resolving_matches_a_from_scratch_expansion(data: st.DataObject) -> None:
    series = data.draw(universe)
    defn = data.draw(defs_over(series))
    want = _reference_resolve(defn, series)
    if want is None:
        with pytest.raises(QueryResolveError) as info:
            resolve_aggregate(defn, iter(series))
        assert info.value.query == "q" and "term '" in str(info.value)
        return
    got = resolve_aggregate(defn, iter(series))
    assert (got.name, got.aggregate, got.delta) == ("q", defn.aggregate, defn.delta)
    assert got.weights == want
    assert list(got.weights) == list(want)  # written order, globs' matches sorted
    assert all(w != 0 and math.isfinite(w) for w in got.weights.values())


small_globs = st.from_regex(r"[ab.*?\[\]!-]{1,5}", fullmatch=True).filter(
    lambda p: any(ch in p for ch in "*?[")
)


@given(small_globs, st.lists(st.from_regex(r"[abAB.-]{1,4}", fullmatch=True), max_size=8))
@settings(max_examples=300)
def test_a_glob_term_selects_the_series_an_on_trigger_matches(
    pattern: str, series: list[str]
) -> None:
    """One glob rule for watch triggers and aggregate terms (case-sensitive fnmatch)."""
    watch = compile_query(A.QueryDef("w", (pattern,), None, (), None))
    triggered = sorted({s for s in series if watch.matches(s)})
    defn = A.AggregateDef("a", "max", (A.Term(1.0, pattern),), 1.0)
    if not triggered:
        with pytest.raises(QueryResolveError, match="matches no series"):
            resolve_aggregate(defn, series)
        return
    assert list(resolve_aggregate(defn, series).weights) == triggered
