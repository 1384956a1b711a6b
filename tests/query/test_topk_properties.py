"""Property tests of top-k statements beyond the contract (test_contract.py): k and ε parse or
fail at their token, and objects map to series and back."""

from __future__ import annotations

import math
from fnmatch import fnmatchcase

from hypothesis import given, settings
from hypothesis import strategies as st
from topk_strategies import (
    metrics,
    objects,
)

import tsmon.query as A
from tsmon.query import QuerySyntaxError, parse_query


@given(
    st.one_of(
        st.from_regex(r"[+-]?[0-9]{0,8}(\.[0-9]{0,3})?([eE][+-]?[0-9]{1,4})?", fullmatch=True),
        st.integers(-10, 2 * A.MAX_TOPK).map(str),
        st.sampled_from(["0", "00", "+0", "1_0", "10x", "0x10", "1e6", "ten", "inf", "9" * 500]),
    ),
    st.sampled_from(["TOP", "bottom"]),
)
@settings(max_examples=500)
def test_any_k_parses_to_a_whole_number_in_range_or_fails_at_its_token(k: str, word: str) -> None:
    text = f"ALTER QUERY q {word} {k}"
    try:
        parsed = parse_query(text)
    except QuerySyntaxError as err:
        at = 16 + len(word) if k else 15 + len(word)  # at the k token, or at the end
        assert (err.line, err.column) == (1, at), str(err)
        return
    assert isinstance(parsed, A.AlterTopK)
    assert type(parsed.k) is int and 1 <= parsed.k <= A.MAX_TOPK
    assert k.lstrip("+").isdigit() and parsed.k == int(k)


@given(
    st.one_of(
        st.from_regex(r"[+-]?[0-9]{0,4}(\.[0-9]{0,3})?([eE][+-]?[0-9]{1,4})?", fullmatch=True),
        st.sampled_from(["inf", "-inf", "nan", "Infinity", "5ms", "1h", "1_0", "0x1", "9" * 400]),
        st.floats().map(repr),
    )
)
@settings(max_examples=500)
def test_any_tolerance_parses_to_a_finite_number_at_least_0_or_fails_at_its_token(
    eps: str,
) -> None:
    text = f"QUERY q AS TOP 3 OF x BY y WITHIN {eps}"
    try:
        parsed = parse_query(text)
    except QuerySyntaxError as err:
        # at or after the tolerance token (`E-0` fails at `-0`), or at the end when empty
        assert err.line == 1 and (35 if eps else 34) <= err.column <= len(text) + 1, str(err)
        return
    assert math.isfinite(parsed.eps) and parsed.eps >= 0
    assert parsed.eps == float(eps) and math.copysign(1, parsed.eps) == 1  # never -0.0


# ---- objects and series -----------------------------------------------------------------------

small_patterns = st.from_regex(r"[ab.*?\[\]!-]{1,5}", fullmatch=True)
small_names = st.from_regex(r"[abAB.-]{0,5}", fullmatch=True)


@given(small_patterns, metrics, small_names)
@settings(max_examples=500)
def test_object_of_inverts_series_of_on_matching_objects(
    pattern: str, metric: str, obj: str
) -> None:
    q = A.TopKDef("q", False, 1, pattern, metric, None, 0.0)
    series = q.series_of(obj)
    assert series == f"{obj}.{metric}"
    if fnmatchcase(obj, pattern):
        assert q.object_of(series) == obj
    else:
        assert q.object_of(series) is None


@given(objects, metrics, st.text(max_size=12))
@settings(max_examples=500)
def test_object_of_agrees_with_a_from_scratch_split(pattern: str, metric: str, series: str) -> None:
    q = A.TopKDef("q", True, 1, pattern, metric, None, 0.0)
    head, dot, tail = series.rpartition(".")
    want = head if dot and tail == metric and fnmatchcase(head, pattern) else None
    assert q.object_of(series) == want
    if want is not None:
        assert q.series_of(want) == series
