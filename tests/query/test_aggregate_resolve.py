"""Resolving aggregate queries against the series that exist."""

from __future__ import annotations

import pytest

import tsmon.query as A
from tsmon.query import (
    QueryResolveError,
    ResolvedAggregate,
    parse_query,
    resolve_aggregate,
)

SERIES = ["host2.cpu", "host1.cpu", "host10.cpu", "Host3.cpu", "db.cpu", "a.x", "b.x", "a-b.x"]


def resolve(text: str, series: list[str] = SERIES) -> ResolvedAggregate:
    defn = parse_query(text)
    assert isinstance(defn, A.AggregateDef)
    return resolve_aggregate(defn, series)


def test_literals_and_globs_in_a_deterministic_order() -> None:
    r = resolve("QUERY m AS MAX(db.cpu, host*.cpu) WITHIN 1")
    assert r == ResolvedAggregate(
        "m", "max", {"db.cpu": 1.0, "host1.cpu": 1.0, "host10.cpu": 1.0, "host2.cpu": 1.0}, 1.0
    )
    assert list(r.weights) == ["db.cpu", "host1.cpu", "host10.cpu", "host2.cpu"]
    assert r.objects == ("db.cpu", "host1.cpu", "host10.cpu", "host2.cpu")
    # the order of the series given does not matter
    assert list(resolve("QUERY m AS MAX(db.cpu, host*.cpu) WITHIN 1", SERIES[::-1]).weights) == [
        "db.cpu",
        "host1.cpu",
        "host10.cpu",
        "host2.cpu",
    ]


def test_globs_are_case_sensitive_fnmatch() -> None:
    assert list(resolve("QUERY m AS MIN(host?.cpu) WITHIN 1").weights) == ["host1.cpu", "host2.cpu"]
    assert list(resolve("QUERY m AS MIN(?ost3.cpu) WITHIN 1").weights) == ["Host3.cpu"]
    assert list(resolve("QUERY m AS MIN(host[!1].cpu) WITHIN 1").weights) == ["host2.cpu"]


def test_weights_pool_across_globs_and_literals() -> None:
    r = resolve("QUERY s AS SUM(host?.cpu, host1.cpu, -0.5 * db.cpu) WITHIN 2")
    assert r.weights == {"host1.cpu": 2.0, "host2.cpu": 1.0, "db.cpu": -0.5}
    assert r.aggregate == "sum" and r.delta == 2.0
    avg = resolve("QUERY a AS AVG(2*a.x - b.x) WITHIN 0.5")
    assert avg.weights == {"a.x": 2.0, "b.x": -1.0} and len(avg.objects) == 2  # |S| = 2


def test_min_and_max_count_overlapping_series_once() -> None:
    r = resolve("QUERY m AS MAX(host*.cpu, host1.cpu, *.cpu) WITHIN 1")
    assert list(r.weights) == ["host1.cpu", "host10.cpu", "host2.cpu", "Host3.cpu", "db.cpu"]
    assert set(r.weights.values()) == {1.0}


def test_names_with_dashes_resolve_as_written() -> None:
    assert resolve("QUERY q AS SUM(a-b.x) WITHIN 1").weights == {"a-b.x": 1.0}
    assert resolve("QUERY q AS SUM(`a-b.x`) WITHIN 1").weights == {"a-b.x": 1.0}
    assert resolve("QUERY q AS SUM(a.x - b.x) WITHIN 1").weights == {"a.x": 1.0, "b.x": -1.0}


def test_series_may_be_any_iterable_with_repeats() -> None:
    defn = parse_query("QUERY s AS SUM(x*) WITHIN 1")
    r = resolve_aggregate(defn, (name for name in ["x2", "x1", "x2"]))
    assert list(r.weights) == ["x1", "x2"]


def test_the_result_is_frozen_and_hashable() -> None:
    r = resolve("QUERY s AS SUM(a.x) WITHIN 1")
    assert hash(r) == hash(ResolvedAggregate("s", "sum", {"other": 5.0}, 1.0))
    with pytest.raises(AttributeError):
        r.delta = 2.0  # type: ignore[misc]


# ---- errors -----------------------------------------------------------------------------------


def _error(text: str, series: list[str] = SERIES) -> QueryResolveError:
    with pytest.raises(QueryResolveError) as info:
        resolve(text, series)
    return info.value


def test_an_unknown_literal_is_an_error_naming_query_term_and_position() -> None:
    err = _error("QUERY path AS SUM(host1.cpu,\n  host3.cpu) WITHIN 5")
    assert isinstance(err, ValueError)
    assert (err.query, err.term, err.line, err.column) == ("path", "host3.cpu", 2, 3)
    assert str(err).startswith("query 'path', term 'host3.cpu' at line 2:3: unknown series")
    assert "did you mean 'host2.cpu', 'host1.cpu', 'Host3.cpu'?" in str(err)  # case too


def test_an_unknown_name_with_a_dash_suggests_a_subtraction() -> None:
    err = _error("QUERY d AS SUM(a.x-b.x) WITHIN 1")
    assert "unknown series 'a.x-b.x'" in str(err)
    assert "to subtract, write 'a.x - b.x'" in str(err)


def test_a_glob_matching_nothing_is_an_error() -> None:
    err = _error("QUERY m AS MAX(web*.cpu) WITHIN 1")
    assert err.term == "web*.cpu"
    assert "pattern 'web*.cpu' matches no series (8 series exist)" in str(err)
    assert "matches no series" in str(_error("QUERY m AS MAX(HOST*) WITHIN 1"))  # case matters
    assert "(0 series exist)" in str(_error("QUERY m AS MAX(x*) WITHIN 1", []))


def test_a_weight_written_after_the_series_gets_a_hint() -> None:
    err = _error("QUERY s AS SUM(a.x*2) WITHIN 1")
    assert "pattern 'a.x*2' matches no series" in str(err)
    assert "to weight the series, write '2 * a.x'" in str(err)


def test_weights_that_cancel_after_expansion_are_an_error() -> None:
    err = _error("QUERY s AS SUM(host?.cpu - host1.cpu) WITHIN 1")
    assert err.term == "host?.cpu, host1.cpu"
    assert (
        "the weights of series 'host1.cpu' from 'host?.cpu' (1), 'host1.cpu' (-1) add up to 0"
        in str(err)
    )
    assert "narrow a pattern (e.g. host[!1].cpu)" in str(err)
    # ... and the narrowed pattern works
    ok = resolve("QUERY s AS SUM(host[!1].cpu - db.cpu) WITHIN 1")
    assert ok.weights == {"host2.cpu": 1.0, "db.cpu": -1.0}


def test_weights_that_overflow_after_expansion_are_an_error() -> None:
    err = _error("QUERY s AS SUM(1e308 * host?.cpu, 1e308 * host1.cpu) WITHIN 1")
    assert "add up to more than about 1.8e308" in str(err)


def test_a_hand_built_definition_is_checked() -> None:
    with pytest.raises(ValueError, match="unknown aggregate 'median'"):
        resolve_aggregate(A.AggregateDef("q", "median", (A.Term(1.0, "a.x"),), 1.0), SERIES)
    with pytest.raises(ValueError, match="has no terms"):
        resolve_aggregate(A.AggregateDef("q", "sum", (), 1.0), SERIES)
