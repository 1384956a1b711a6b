"""Parsing and compiling well-formed queries."""

from __future__ import annotations

import numpy as np
import pytest

import tsmon.query as A
from tsmon.core.window_spec import WindowSpec
from tsmon.query import (
    ArrayBindings,
    QuerySyntaxError,
    compile_query,
    format_expr,
    format_query,
    parse_expr,
    parse_queries,
    parse_query,
    query_key,
)

FIVE_M, ONE_H = WindowSpec.time(300_000), WindowSpec.time(3_600_000)

FILE = """
-- hot CPUs
QUERY hot_cpu ON host*.cpu, db?.cpu WHEN mean(5m) > 0.9 AND stddev(100 points) < 0.05
      EMIT series, mean(5m), max(1h) AS peak SINCE -1h
query spikes on nab.* when abs(last - mean(1h)) > 3 * stddev(1h)   -- lower-case keywords
QUERY all_points ON x.y            -- no WHEN: fires on every point; no EMIT: default payload
Query a ON aws.cpu-utilisation_5f5533; QUERY b ON realTweets.Twitter_volume_AAPL;;
QUERY c ON router7.queue_ms, host:[abc]1 WHEN last(1 point) = value
"""


def test_multi_statement_file() -> None:
    queries = parse_queries(FILE)
    assert [q.name for q in queries] == ["hot_cpu", "spikes", "all_points", "a", "b", "c"]
    hot, spikes, all_points, a, b, c = queries
    assert hot.triggers == ("host*.cpu", "db?.cpu")
    assert hot.since_ms == 3_600_000
    assert (hot.line, hot.column) == (3, 1)
    assert hot.text.splitlines()[-1].strip() == "EMIT series, mean(5m), max(1h) AS peak SINCE -1h"
    assert [i.alias for i in hot.emit] == [None, None, "peak"]
    assert spikes.when == A.Compare(
        ">",
        A.Call("abs", (A.BinOp("-", A.Value("last"), A.Stat("mean", ONE_H)),)),
        A.BinOp("*", A.Number(3.0), A.Stat("stddev", ONE_H)),
    )
    assert all_points.when is None and all_points.emit == () and all_points.since_ms is None
    assert all_points.text == "QUERY all_points ON x.y"
    assert a.triggers == ("aws.cpu-utilisation_5f5533",)
    assert b.triggers == ("realTweets.Twitter_volume_AAPL",)
    assert c.triggers == ("router7.queue_ms", "host:[abc]1")
    assert c.when == A.Compare("==", A.Stat("last", WindowSpec.count(1)), A.Value())


def test_empty_file_and_comment_only_file() -> None:
    assert parse_queries("") == []
    assert parse_queries("-- nothing\n  ;  -- still nothing\n") == []


def test_keywords_and_stat_names_are_case_insensitive() -> None:
    lower = parse_query(
        "query q on x when avg(5m) > 1 and not value < 0 or ts >= 1 emit value as v"
    )
    upper = parse_query(
        "QUERY q ON x WHEN MEAN(5m) > 1 AND NOT VALUE < 0 OR TS >= 1 EMIT value AS v"
    )
    assert lower == upper
    assert lower.when.left.left.left == A.Stat("mean", FIVE_M)


@pytest.mark.parametrize(
    ("text", "window"),
    [
        ("1 point", WindowSpec.count(1)),
        ("1 points", WindowSpec.count(1)),
        ("100 POINTS", WindowSpec.count(100)),
        ("250ms", WindowSpec.time(250)),
        ("1.5h", WindowSpec.time(5_400_000)),
        ("2d", WindowSpec.time(172_800_000)),
        ("since 2024-01-01T00:00:00Z", WindowSpec.landmark(1_704_067_200_000)),
        ("SINCE 2024-01-01", WindowSpec.landmark(1_704_067_200_000)),
        ("since 2024-01-01T01:00:00+01:00", WindowSpec.landmark(1_704_067_200_000)),
        ("since 2024-01-01T00:00:00.250Z", WindowSpec.landmark(1_704_067_200_250)),
    ],
)
def test_windows(text: str, window: WindowSpec) -> None:
    assert parse_expr(f"count({text})") == A.Stat("count", window)


@pytest.mark.parametrize(
    ("alias", "canonical"),
    [("avg", "mean"), ("variance", "var"), ("std", "stddev"), ("var", "var"), ("rate", "rate")],
)
def test_stat_aliases(alias: str, canonical: str) -> None:
    assert parse_expr(f"{alias}(5m)") == A.Stat(canonical, FIVE_M)


def test_precedence() -> None:
    e = parse_expr("NOT -value * 2 + 1 > 3 AND ts < 1 OR value % 2 = 1")
    assert format_expr(e) == "NOT -value * 2 + 1 > 3 AND ts < 1 OR value % 2 == 1"
    assert isinstance(e, A.BoolOp) and e.op == "or"
    assert isinstance(e.left, A.BoolOp) and e.left.op == "and"
    assert isinstance(e.left.left, A.Not)
    cmp = e.left.left.operand
    assert isinstance(cmp, A.Compare) and cmp.op == ">"
    assert cmp.left == A.BinOp("+", A.BinOp("*", A.Neg(A.Value()), A.Number(2.0)), A.Number(1.0))
    assert parse_expr("1 - 2 - 3") == A.BinOp(
        "-", A.BinOp("-", A.Number(1), A.Number(2)), A.Number(3)
    )
    assert parse_expr("value <> 1").op == "!="


def test_numbers_and_durations() -> None:
    assert parse_expr("1e9") == A.Number(1e9)
    assert parse_expr("2.5e-3") == A.Number(2.5e-3)
    assert parse_expr(".5") == A.Number(0.5)
    assert parse_expr("rate(5m) * 1h") == A.BinOp(
        "*", A.Stat("rate", FIVE_M), A.Duration(3_600_000)
    )
    assert A.Duration(250).seconds == 0.25


def test_positions_are_recorded_but_ignored_by_equality() -> None:
    q = parse_query("QUERY q ON x\n  WHEN   mean(5m) > 1")
    assert (q.when.line, q.when.column) == (2, 10)
    assert (q.when.right.line, q.when.right.column) == (2, 21)
    assert q == parse_query("QUERY q ON x WHEN mean(5m)>1")


def test_canonical_statement_text() -> None:
    text = format_query(parse_queries(FILE)[0])
    assert text == (
        "QUERY hot_cpu ON host*.cpu, db?.cpu WHEN mean(5m) > 0.9 AND stddev(100 points) < 0.05 "
        "EMIT series, mean(5m), max(1h) AS peak SINCE -1h"
    )
    assert parse_query(text) == parse_queries(FILE)[0]


def test_names_that_look_like_keywords_in_other_places() -> None:
    q = parse_query(
        "QUERY android ON notes.x, on_call WHEN value > 1 AND ts > 0 EMIT value AS nothing"
    )
    assert q.name == "android" and q.triggers == ("notes.x", "on_call")
    assert q.emit[0].alias == "nothing"


# ---- compiled form ------------------------------------------------------------------------


def test_needs_and_windows() -> None:
    q = compile_query(parse_queries(FILE)[0])
    assert q.needs == {("mean", FIVE_M), ("stddev", WindowSpec.count(100)), ("max", ONE_H)}
    assert q.windows == {FIVE_M, WindowSpec.count(100), ONE_H}
    assert q.name == "hot_cpu" and q.since_ms == 3_600_000
    assert q.triggers == ("host*.cpu", "db?.cpu")
    assert q.text.startswith("QUERY hot_cpu ON") and q.text.endswith("SINCE -1h")
    bare = compile_query("QUERY q ON x WHEN abs(last - value) > 1")
    assert bare.needs == frozenset() and bare.windows == frozenset()
    last = compile_query("QUERY q ON x WHEN last(5m) > last EMIT avg(5m), mean(1 point) AS m")
    assert last.needs == {("last", FIVE_M), ("mean", FIVE_M), ("mean", WindowSpec.count(1))}


@pytest.mark.parametrize(
    ("series", "hit"),
    [
        ("host1.cpu", True),
        ("host.cpu", True),
        ("host1.mem", False),
        ("Host1.cpu", False),
        ("db1.cpu", True),
        ("db12.cpu", False),
        ("web2.mem", True),
        ("web3.mem", False),
    ],
)
def test_glob_matching(series: str, hit: bool) -> None:
    q = compile_query("QUERY q ON host*.cpu, db?.cpu, web[12].mem")
    assert q.matches(series) is hit


def test_default_payload_and_all_true_condition() -> None:
    q = compile_query("QUERY all_points ON x.y")
    b = ArrayBindings("x.y", [1000, 2000, 3000], [1.0, np.nan, 3.0])
    assert q.condition(b).tolist() == [True, True, True]
    assert [label for label, _ in q.payload] == ["series", "value"]
    series, value = (f(b) for _, f in q.payload)
    assert series.tolist() == ["x.y"] * 3
    np.testing.assert_array_equal(value, [1.0, np.nan, 3.0])


def test_payload_labels_and_types() -> None:
    q = compile_query(
        "QUERY q ON x EMIT series, ts, ts AS t, ts * 1, ts_ms, ts_ms AS exact, "
        "abs(last - mean(1h)), value > 1 AS big"
    )
    labels = [label for label, _ in q.payload]
    assert labels == [
        "series",
        "ts",
        "t",
        "ts * 1",
        "ts_ms",
        "exact",
        "abs(last - mean(1h))",
        "big",
    ]
    b = ArrayBindings("x", [1500, 2500], [0.5, 4.0], {("mean", ONE_H): [1.0, 1.0]})
    out = {label: f(b) for label, f in q.payload}
    # ts is float seconds everywhere, whole item or not; ts_ms is exact int64 milliseconds.
    for label in ["ts", "t", "ts * 1"]:
        assert out[label].dtype == np.float64 and out[label].tolist() == [1.5, 2.5], label
    for label in ["ts_ms", "exact"]:
        assert out[label].dtype == np.int64 and out[label].tolist() == [1500, 2500], label
    assert out["abs(last - mean(1h))"].tolist() == [0.5, 3.0]
    assert out["big"].tolist() == [False, True]


def test_condition_semantics() -> None:
    b = ArrayBindings("x", [0, 1000, 2000, 3000], [np.nan, 0.0, 2.0, -1.0])
    cond = lambda text: compile_query(f"QUERY q ON x WHEN {text}").condition(b).tolist()  # noqa: E731
    assert cond("value") == [False, False, True, True]
    assert cond("value != 0") == [False, False, True, True]
    assert cond("NOT value != 0") == [True, True, False, False]
    assert cond("value / 0 > 0") == [False, False, True, False]
    assert cond("(value > 1) + (value < 0) = 1") == [False, False, True, True]
    assert cond("value > 1 OR ts = 1") == [False, True, True, False]
    assert cond("1m = 60 AND 250ms = 0.25") == [True] * 4


def test_ts_is_seconds_in_every_position_and_ts_ms_is_exact() -> None:
    """The finding: ``EMIT ts, ts + 0`` gave 5000 and 5.0; both are 5.0 now."""
    q = compile_query("QUERY q ON x WHEN ts >= 5 EMIT ts, ts + 0 AS t2, ts_ms AS ms")
    big = 1_700_000_000_123  # exact in int64; ts keeps it to float64 precision
    b = ArrayBindings("x", [4999, 5000, big], [1.0, 1.0, 1.0])
    assert q.condition(b).tolist() == [False, True, True]
    out = {label: f(b).tolist() for label, f in q.payload}
    assert out == {
        "ts": [4.999, 5.0, big / 1000],
        "t2": [4.999, 5.0, big / 1000],
        "ms": [4999, 5000, big],
    }


def test_ts_ms_round_trips_as_an_emit_item() -> None:
    q = parse_query("QUERY q ON x EMIT ts_ms, TS_MS AS t")
    assert [item.expr for item in q.emit] == [A.TimestampMs(), A.TimestampMs()]
    assert format_query(q) == "QUERY q ON x EMIT ts_ms, ts_ms AS t"
    assert parse_query(format_query(q)) == q


def test_query_key_is_the_duplicate_name_rule() -> None:
    assert query_key("Hot_CPU") == query_key("hot_cpu") == "hot_cpu"
    assert query_key("a") != query_key("b")
    names = [q.name for q in parse_queries("QUERY a ON x\nQUERY b ON x")]
    assert len({query_key(n) for n in names}) == 2
    with pytest.raises(QuerySyntaxError, match="duplicate query name 'A'"):
        parse_queries("QUERY a ON x\nQUERY A ON x")


def test_unknown_function_lists_the_functions() -> None:
    with pytest.raises(QuerySyntaxError) as info:
        parse_query("QUERY q ON x WHEN meen(5m) > 1")
    for name in ["abs", "mean", "stddev", "coverage", "slope", "rate"]:
        assert name in str(info.value)


def test_deep_nesting_is_a_syntax_error_not_a_crash() -> None:
    text = "QUERY q ON x WHEN " + "abs(" * 3000 + "1" + ")" * 3000
    with pytest.raises(QuerySyntaxError, match="nested too deeply"):
        parse_query(text)


def test_limits_are_inclusive() -> None:
    q = parse_query(
        "QUERY q ON x WHEN mean(36525d) + count(1099511627776 points) + first(since "
        "2262-04-11T23:47:16.854Z) + last(since 1677-09-21T00:12:43.146Z) > 1 SINCE -36525d"
    )
    assert q.since_ms == 36_525 * 86_400_000
    assert sorted(str(s.window) for s in q.when.walk() if hasattr(s, "window")) == [
        "1099511627776 points",
        "36525d",
        "since 1677-09-21T00:12:43.146Z",
        "since 2262-04-11T23:47:16.854Z",
    ]
