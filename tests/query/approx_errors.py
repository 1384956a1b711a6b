"""Malformed approximate aggregates (APPROX COUNT|SUM): exact positions, expected tokens and
readable messages (the cases of the contract tests in test_contract.py)."""

from __future__ import annotations

NUMBER = "a number"
PERCENT = "a percentage like 1%"
COMPARISON = "a comparison like > or <="
INDEPENDENT = "AVG, MIN or MAX"
END = ["QUERY", "ALTER", "';'", "end of input"]
AS = ["AVG, SUM, MIN or MAX", "COUNT", "APPROX", "INNER", "POINT", "RANGE", "TOP", "BOTTOM"]
C = "QUERY q AS APPROX COUNT(x > 0)"  # a prefix ending at column 31
S = "QUERY q AS APPROX SUM(x) OVER 10 points WITHIN 1%"  # a prefix ending at column 50


# (text, line, column, tokens that must be in .expected, text the message must contain)
PARSE_ERRORS = [
    ("QUERY q AS APPROXCOUNT(x > 0)", 1, 12, AS, "got 'APPROXCOUNT'"),
    # APPROX COUNT|SUM(...) OVER N points WITHIN p% [MAX R]: OVER, WITHIN and MAX are required
    ("QUERY q AS APPROX", 1, 18, ["COUNT", "SUM"], "expected one of COUNT, SUM but got end"),
    ("QUERY q AS APPROX AVG(x) OVER 10 points WITHIN 1%", 1, 19, ["COUNT", "SUM"], "'AVG'"),
    ("QUERY q AS APPROX COUNT x > 0", 1, 25, ["'('"], "expected '(' but got 'x'"),
    ("QUERY q AS APPROX COUNT(x >) OVER 10 points", 1, 28, [NUMBER, INDEPENDENT], "got ')'"),
    ("QUERY q AS APPROX COUNT(x, y > 0)", 1, 26, ["')'", COMPARISON], "got ','"),
    (C, 1, 31, ["OVER"], "expected OVER but got end of input"),
    (f"{C} WITHIN 1%", 1, 32, ["OVER"], "expected OVER but got 'WITHIN'"),
    (f"{C} OVER 10 points", 1, 46, ["WITHIN"], "expected WITHIN but got end of input"),
    (f"{C} OVER 10 points WITHIN", 1, 53, [PERCENT], "expected a percentage like 1% but"),
    (f"{C} OVER 10 points WITHIN 1% MAX 5", 1, 57, END, "got 'MAX'"),
    (S, 1, 50, ["MAX"], "expected MAX but got end of input"),
    (f"{S}\n-- no R\n", 1, 50, ["MAX"], "expected MAX but got end of input"),
    (f"{S} MAX", 1, 54, [NUMBER], "expected a number but got end of input"),
    (f"{S} MAX lots", 1, 55, [NUMBER], "expected a number but got 'lots'"),
    ("QUERY q AS APPROX SUM(x) OVER 10 points MAX 5 WITHIN 1%", 1, 41, ["WITHIN"], "'MAX'"),
    ("QUERY q AS APPROX SUM(x, y) OVER 10 points", 1, 24, ["')'", COMPARISON], "got ','"),
]


SEMANTIC_ERRORS = [
    ("QUERY q AS APPROX SUM(x*) OVER 9 points WITHIN 1% MAX 5", 1, 23, "APPROX SUM takes one"),
    (f"{C} OVER 0 points WITHIN 1%", 1, 37, "whole number of points >= 1"),
    (f"{C} OVER 10 WITHIN 1%", 1, 37, "write OVER 10 points, not OVER 10"),
    (f"{C} OVER 1h WITHIN 1%", 1, 37, "like 1000 points, not a duration, got '1h'"),
    # APPROX COUNT: a comparison with a number
    (
        "QUERY q AS APPROX COUNT(x) OVER 10 points WITHIN 1%",
        1,
        19,
        "APPROX COUNT takes a comparison: APPROX COUNT(x > 0) counts the values above 0",
    ),
    (
        "QUERY q AS APPROX COUNT(x > AVG) OVER 10 points WITHIN 1%",
        1,
        29,
        "APPROX COUNT compares with a constant, like APPROX COUNT(x > 0); for a correlated "
        "aggregate write COUNT(x > AVG), without APPROX",
    ),
    (f"{C[:-2]}2 * MIN) OVER 9 points WITHIN 1%", 1, 33, "write COUNT(x <= 1.1 * MIN)"),
    (f"{C[:-2]}inf) OVER 9 points WITHIN 1%", 1, 29, "compares with a finite number, got 'inf'"),
    (f"{C[:-2]}y) OVER 9 points WITHIN 1%", 1, 29, "compares with a number like 0, got 'y'"),
    (f"{C[:-2]}5ms) OVER 9 points WITHIN 1%", 1, 29, "with a plain number like 0, got '5ms'"),
    (
        "QUERY q AS APPROX COUNT(x!=0) OVER 10 points WITHIN 1%",
        1,
        25,
        "'x!' ends with '!', a name character; to compare with !=, put a space before it: x != ",
    ),
    # APPROX: WITHIN p% with 0 < p < 100
    (
        f"{C} OVER 10 points WITHIN 0.01",
        1,
        54,
        "APPROX COUNT takes a relative error as a percentage: write WITHIN 1%, not WITHIN 0.01",
    ),
    (f"{C} OVER 10 points WITHIN 1", 1, 54, "as a percentage like WITHIN 1%, got 1"),
    (f"{C} OVER 10 points WITHIN 100%", 1, 54, "relative error > 0% and < 100% (a fraction"),
    (f"{C} OVER 10 points WITHIN 0%", 1, 54, "> 0% and < 100%"),
    (f"{C} OVER 10 points WITHIN -1%", 1, 54, "got -1%"),
    (f"{C} OVER 10 points WITHIN x%", 1, 54, "WITHIN takes a percentage like 1%, got 'x%'"),
    (f"{C} OVER 10 points WITHIN 1e-999%", 1, 54, "too small to be told apart from 0%"),
    (f"{S[:-2]}99.99999999999999999% MAX 1", 1, 48, "too close to 100% to be told apart"),
    # APPROX SUM: no comparison; MAX R with 1 <= R <= 2**53
    (
        "QUERY q AS APPROX SUM(x > 0) OVER 10 points WITHIN 1% MAX 5",
        1,
        25,
        "APPROX SUM takes no comparison: APPROX SUM(x) sums the last N values",
    ),
    (
        f"{S} MAX 0",
        1,
        55,
        "MAX takes R, a whole number >= 1 (the largest value: values are whole numbers 0 .. R), "
        "got 0",
    ),
    (f"{S} MAX -5", 1, 55, "MAX takes R, a whole number >= 1"),
    (f"{S} MAX 2.5", 1, 55, "got 2.5"),
    (f"{S} MAX 1e3", 1, 55, "MAX takes R in plain digits: write 1000, not 1e3"),
    (f"{S} MAX 9007199254740993", 1, 55, "MAX '9007199254740993' is too large; MAX takes R <="),
    (
        "QUERY q AS APPROX SUM(a) OVER 5 points WITHIN 1% MAX 3\n-- later\nALTER QUERY Q TOP 3",
        3,
        1,
        "query 'q' (line 1:1) is an approximate-aggregate query (QUERY ... AS APPROX "
        "COUNT|SUM(...)), answered from a stream summary, and cannot be altered",
    ),
]


# Huge values: the message's first line stays short (the value is abbreviated).
ABBREVIATED = [
    (f"{C} OVER 10 points WITHIN 0.{'0' * 5000}1", 400),
    (f"{C} OVER 10 points WITHIN {'9' * 5000}%", 400),
    (f"{S} MAX {'9' * 5000}", 400),
]
