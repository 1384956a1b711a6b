"""Malformed watch queries: exact positions, expected tokens and readable messages (the cases
of the contract tests in test_contract.py)."""

from __future__ import annotations

WINDOW = "a window like 5m or 100 points"
OPERATOR = "an operator like + * or >"

# (text, line, column, tokens that must be in .expected, text the message must contain)
PARSE_ERRORS = [
    ("QUERY q ON x\n  EMIT abs(value WHEN", 2, 18, ["')'", "','", OPERATOR, "AND"], "got 'WHEN'"),
    ("QUERY q ON x WHEN mean() > 1", 1, 24, [WINDOW], "got ')'"),
    ("QUERY q ON x WHEN mean(5m > 1", 1, 27, ["')'", "BEFORE"], "expected one of ')', BEFORE"),
    ("QUERY q ON x WHEN mean(5m after) > 1", 1, 27, ["BEFORE"], "got 'after'"),
    (
        "QUERY q ON x WHEN",
        1,
        18,
        ["a number", "'('", "NOT", "a statistic like mean(5m)"],
        "got end of input",
    ),
    (
        "QUERY q ON x WHEN value >",
        1,
        26,
        ["a number", "a duration like 5m", "'-'"],
        "got end of input",
    ),
    ("QUERY q ON x WHEN (value > 1", 1, 29, ["')'"], "expected ')' but got end of input"),
    # ON starts a watch query, AS an aggregate query.
    ("QUERY q x", 1, 9, ["ON", "AS"], "expected one of ON, AS but got 'x'"),
    ("QUERY q ON x, WHEN value > 1", 1, 20, ["','", "WHEN", "EMIT", "SINCE"], "got 'value'"),
    ("SELECT * FROM x", 1, 1, ["QUERY", "';'"], "got 'SELECT'"),
    ("QUERY q ON x WHEN value @ 2", 1, 25, ["AND", "OR", "EMIT"], "got '@'"),  # `#`: a comment
    ("QUERY q ON x EMIT value AS", 1, 27, ["a name"], "got end of input"),
    ("QUERY q ON x WHEN mean(100 pints) > 1", 1, 24, [WINDOW], "got '100'"),
    ("-- comment\nQUERY q ON x WHEN value > 1 > 2 -- chained", 2, 29, ["AND", "EMIT"], "got '>'"),
    ("QUERY q ON x SINCE -", 1, 21, ["a duration like 5m"], "got end of input"),
    ("QUERY 7 ON x", 1, 7, ["a name"], "got '7'"),
]

SEMANTIC_ERRORS = [
    (
        "QUERY q ON x WHEN mean(since 2024-01-01 before) > 1",
        1,
        41,
        "BEFORE takes a count or time window",
    ),
    ("QUERY q ON x WHEN meen(5m) > 1", 1, 19, "unknown function 'meen'; functions are abs, count"),
    ("QUERY q ON x WHEN mean > 1", 1, 19, "mean needs a window"),
    ("QUERY q ON x WHEN 1 < STD", 1, 23, "stddev needs a window"),
    ("QUERY q ON x WHEN abs(1, 2) > 1", 1, 19, "abs takes exactly 1 argument, got 2"),
    ("QUERY q ON x WHEN abs() > 1", 1, 19, "abs takes exactly 1 argument, got 0"),
    ("QUERY q ON x WHEN mean(0 points) > 1", 1, 24, "whole number of points > 0"),
    ("QUERY q ON x WHEN mean(1.5 points) > 1", 1, 24, "whole number of points > 0"),
    ("QUERY q ON x WHEN mean(0m) > 1", 1, 24, "duration must be > 0 ms"),
    ("QUERY q ON x WHEN value > 0s", 1, 27, "duration must be > 0 ms"),
    ("QUERY q ON x\n-- again\nQUERY Q ON y", 3, 1, "duplicate query name 'Q'"),
    ("QUERY q ON x EMIT mean(5m), avg(5m)", 1, 29, "duplicate EMIT label 'mean(5m)'"),
    ("QUERY q ON x EMIT value AS v, ts AS v", 1, 31, "duplicate EMIT label 'v'"),
    ("QUERY q ON x SINCE 1h", 1, 20, "SINCE takes a negative duration"),
    ("QUERY q ON x SINCE +1h", 1, 20, "SINCE takes a negative duration"),
    ("QUERY q ON x WHEN mean(since 2024-13-01) > 1", 1, 24, "cannot read instant '2024-13-01'"),
    ("QUERY q ON x WHEN value > 1 QUERY r ON y", 1, 29, "new line or after ';'"),
    ("QUERY q ON x WHEN series == 1", 1, 19, "can only be a whole EMIT item"),
    ("QUERY q ON x EMIT abs(series)", 1, 23, "can only be a whole EMIT item"),
    ("QUERY q ON x WHEN foo > 1", 1, 19, "unknown name 'foo'"),
    ("QUERY q ON WHEN", 1, 12, "expected a series name or pattern but got 'WHEN'"),
    ("QUERY q ON x WHEN ts_ms > 1", 1, 19, "'ts_ms' (int64 milliseconds) can only be a whole EMIT"),
    ("QUERY q ON x EMIT ts_ms + 1 AS t", 1, 19, "use ts (seconds) in expressions"),
    # Limits: durations <= 36525d, counts <= 2**40 points, instants in pandas' range.
    ("QUERY q ON x WHEN mean(36526d) > 1", 1, 24, "duration '36526d' is too long; the limit"),
    ("QUERY q ON x WHEN mean(99999999999999w) > 1", 1, 24, "is 36525d (100 years"),
    ("QUERY q ON x WHEN mean(1099511627777 points) > 1", 1, 24, "at most 1099511627776 points"),
    ("QUERY q ON x\n WHEN mean(since 2262-04-12) > 1", 2, 12, "outside the supported range"),
    ("QUERY q ON x WHEN mean(since 1677-09-21T00:00:00Z) > 1", 1, 24, "1677-09-21T00:12:43.146Z"),
    ("QUERY q ON x WHEN value > 1e309", 1, 27, "number '1e309' is too large"),
]

HUGE = "9" * 400
# Findings: each of these raised a bare OverflowError (or parsed, then crashed the engine).
TOO_LARGE = [
    (f"QUERY q ON x WHEN mean({HUGE}ms) > 1", 1, 24, "is too long; the limit is 36525d"),
    (f"QUERY q ON x WHEN value > {HUGE}s", 1, 27, "is too long; the limit is 36525d"),
    (f"QUERY q ON x\nSINCE -{HUGE}h", 2, 8, "is too long; the limit is 36525d"),
    ("QUERY q ON x WHEN mean(99999999999999w) > 1", 1, 24, "3155760000000 ms"),
    (f"QUERY q ON x WHEN count({'9' * 5000} points) > 1", 1, 25, "at most 1099511627776 points"),
    (f"QUERY q ON x WHEN value > {HUGE}", 1, 27, "is too large"),
]

# Huge values: the message's first line stays short (the value is abbreviated).
ABBREVIATED = [(text, 200) for text, *_ in TOO_LARGE]
