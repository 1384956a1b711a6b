"""Property tests of watch queries beyond the contract (test_contract.py): expressions and
windows round-trip through their text, and vectorized evaluation matches a scalar model."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from watch_strategies import all_windows, exprs, reference, source_text, truthy

import tsmon.query as A
from tsmon.core.units import UNIT_MS
from tsmon.core.window_spec import WindowSpec
from tsmon.query import (
    ArrayBindings,
    QuerySyntaxError,
    compile_query,
    format_expr,
    format_query,
    format_window,
    parse_expr,
    parse_query,
)
from tsmon.query.compile import compile_expr


@given(exprs)
@settings(max_examples=300)
def test_canonical_expression_text_parses_back_to_the_same_tree(expr: A.Expr) -> None:
    text = format_expr(expr)
    assert "--" not in text
    parsed = parse_expr(text)
    assert parsed == expr, text
    assert format_expr(parsed) == text


@given(st.data())
@settings(max_examples=200)
def test_parse_print_parse_is_stable_on_raw_source(data: st.DataObject) -> None:
    expr = data.draw(exprs)
    text = data.draw(source_text(expr))
    parsed = parse_expr(text)
    assert parsed == expr, text
    assert parse_expr(format_expr(parsed)) == parsed


@given(all_windows)
@settings(max_examples=300)
def test_every_window_round_trips_through_its_text(window: WindowSpec) -> None:
    text = str(window)
    assert format_window(window) == text  # one formatter
    parsed = parse_expr(f"count({text})")
    assert parsed == A.Stat("count", window), text
    assert str(parsed.window) == text


# Digit strings of any length, some beyond what int() reads (4300 digits) or a float holds.
digit_strings = st.one_of(
    st.text("0123456789", min_size=1, max_size=40),
    st.builds(lambda n, d: d * n, st.integers(300, 5000), st.sampled_from("19")),
)
fractions = st.one_of(st.just(""), st.text("0123456789", min_size=1, max_size=20).map(".{}".format))


@given(
    digit_strings,
    fractions,
    st.sampled_from([*UNIT_MS, " points", " point", " POINTS"]),
    st.sampled_from(["mean({})", "value > {}", "SINCE -{}"]),
)
@settings(max_examples=400)
def test_any_digit_string_parses_or_is_a_syntax_error(
    digits: str, fraction: str, unit: str, where: str
) -> None:
    text = "QUERY q ON x " + ("" if where.startswith("SINCE") else "WHEN ")
    text += where.format(digits + fraction + unit) + ("" if where != "mean({})" else " > 1")
    try:
        parsed = parse_query(text)
    except QuerySyntaxError as err:
        assert err.line == 1 and 1 <= err.column <= len(text)
        return
    # Whatever parsed is within the limits, and prints back to text that parses the same.
    assert parse_query(format_query(parsed)) == parsed


special = st.sampled_from([0.0, -0.0, 1.0, -1.0, 2.0, 0.5, math.nan, math.inf, -math.inf])
point_values = st.one_of(special, st.floats(), st.integers(-5, 5).map(float))


@st.composite
def bindings_for(draw: st.DrawFn, expr: A.Expr) -> tuple[ArrayBindings, list[dict]]:
    n = draw(st.integers(1, 6))
    needs = {(node.name, node.window) for node in expr.walk() if isinstance(node, A.Stat)}
    stats = {key: draw(st.lists(point_values, min_size=n, max_size=n)) for key in needs}
    values = draw(st.lists(point_values, min_size=n, max_size=n))
    ts = draw(st.lists(st.integers(-(10**13), 10**13), min_size=n, max_size=n))
    b = ArrayBindings("s", ts, values, stats)
    per_point = [{key: column[i] for key, column in stats.items()} for i in range(n)]
    return b, per_point


@given(st.data())
@settings(max_examples=400)
def test_vectorized_evaluation_matches_scalar_reference(data: st.DataObject) -> None:
    expr = data.draw(exprs)
    b, per_point = data.draw(bindings_for(expr))
    got = compile_expr(expr)(b)
    want = [
        reference(expr, float(b.value[i]), int(b.ts_ms[i]), per_point[i])
        for i in range(len(per_point))
    ]
    assert got.shape == (len(want),)
    assert (got.dtype == np.bool_) == isinstance(want[0], bool), (format_expr(expr), got.dtype)
    np.testing.assert_array_equal(got.astype(np.float64), np.array(want, dtype=np.float64))

    query = compile_query(A.QueryDef("q", ("s",), expr, (A.EmitItem(expr, "x"),), None))
    assert query.condition(b).tolist() == [truthy(w) for w in want]
    np.testing.assert_array_equal(query.payload[0][1](b).astype(np.float64), np.array(want, float))
    assert query.needs == {(n.name, n.window) for n in expr.walk() if isinstance(n, A.Stat)}
