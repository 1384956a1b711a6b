"""Malformed correlated aggregates (COUNT|SUM(x > AVG)), and the statements after AS that start
like no query: exact positions, expected tokens and readable messages (the cases of the
contract tests in test_contract.py)."""

from __future__ import annotations

SERIES = "a series name"
POINTS = "a count like 1024 points"
COMPARISON = "a comparison like > or <="
INDEPENDENT = "AVG, MIN or MAX"
END = ["QUERY", "ALTER", "';'", "end of input"]
AS = ["AVG, SUM, MIN or MAX", "COUNT", "APPROX", "INNER", "POINT", "RANGE", "TOP", "BOTTOM"]


# (text, line, column, tokens that must be in .expected, text the message must contain)
PARSE_ERRORS = [
    # after AS: every kind of query that starts there
    ("QUERY q AS", 1, 11, AS, "expected one of AVG, SUM, MIN or MAX, COUNT, APPROX, INNER, POINT"),
    ("QUERY q AS INNER2(t.v, [8])", 1, 12, AS, "got 'INNER2'"),
    # correlated aggregates: COUNT|SUM(series op [c *] AVG|MIN|MAX) [OVER N points]
    ("QUERY q AS COUNT", 1, 17, ["'('"], "expected '(' but got end of input"),
    ("QUERY q AS COUNT(", 1, 18, [SERIES], "expected a series name but got end of input"),
    ("QUERY q AS COUNT(5 > AVG)", 1, 18, [SERIES], "expected a series name but got '5'"),
    ("QUERY q AS COUNT(x, y)", 1, 19, ["')'", COMPARISON], "expected one of ')', a comparison"),
    ("QUERY q AS COUNT(x > 0.9 *)", 1, 27, [INDEPENDENT], "expected AVG, MIN or MAX but got"),
    ("QUERY q AS COUNT(x > AVG", 1, 25, ["')'"], "expected ')' but got end of input"),
    ("QUERY q AS COUNT(x > AVG) OVER", 1, 31, [POINTS], "got end of input"),
    ("QUERY q AS COUNT(x > AVG) OVER 5 points CONFIDENCE .9", 1, 41, END, "'CONFIDENCE'"),
    ("QUERY q AS SUM(x >= x * MAX)", 1, 23, ["')'"], "expected ')' but got '*'"),
    # a comparison fits a plain series only, not a weighted term or a standing query's aggregate
    ("QUERY q AS SUM(2*x > AVG)", 1, 20, ["')'", "','", "'+'", "'-'"], "got '>'"),
    ("QUERY q AS MAX OVER 5m OF SUM(x > AVG) WITHIN 1 CONFIDENCE 0.9", 1, 33, ["')'"], "'>'"),
    ("QUERY q AS SUM(x > AVG) WITHIN 1 CONFIDENCE 0.9", 1, 34, END, "got 'CONFIDENCE'"),
]


SEMANTIC_ERRORS = [
    ("QUERY q AS COUNT(web[12].x > AVG)", 1, 18, "(a '*', '?' or '[' makes a glob)"),
    # COUNT without a comparison, at COUNT (a WITHIN after it does not hide the message)
    (
        "QUERY q AS COUNT(x)",
        1,
        12,
        "COUNT(...) takes a comparison with AVG, MIN or MAX: COUNT(x > AVG), COUNT(x <= 1.1 * "
        "MIN) or COUNT(x >= 0.9 * MAX); to count the values above a constant write APPROX "
        "COUNT(x > 0) OVER 1000 points WITHIN 1%",
    ),
    ("QUERY q AS\n  count(a.x) WITHIN 5", 2, 3, "COUNT(...) takes a comparison with AVG, MIN"),
    # correlated aggregates: COUNT|SUM, and the comparison each independent aggregate takes
    (
        "QUERY q AS COUNT(x > 5)",
        1,
        22,
        "a correlated aggregate compares with AVG, MIN or MAX, e.g. COUNT(x > AVG), got the "
        "constant 5; to count the values > 5 write APPROX COUNT(x > 5) OVER 1000 points",
    ),
    ("QUERY q AS SUM(x > 5)", 1, 20, "e.g. SUM(x > AVG), got the constant 5"),
    (
        "QUERY q AS AVG(x > AVG)",
        1,
        12,
        "a correlated aggregate is COUNT(...) or SUM(...), e.g. SUM(x > AVG), got AVG(...)",
    ),
    ("QUERY q AS MIN(x > AVG) WITHIN 1", 1, 12, "got MIN(...); a bounded MIN(...) takes series"),
    ("QUERY q AS SUM(x > SUM)", 1, 20, "compares with AVG, MIN or MAX, e.g. SUM(x > AVG), got"),
    ("QUERY q AS SUM(x > mean)", 1, 20, "got 'mean'"),
    (
        "QUERY q AS SUM(x < AVG)",
        1,
        18,
        "AVG takes the comparison >: SUM(x > AVG) (the values above the average), got <",
    ),
    ("QUERY q AS SUM(x >= AVG)", 1, 18, "AVG takes the comparison >"),
    ("QUERY q AS COUNT(x >= MIN)", 1, 20, "MIN takes the comparison <=: COUNT(x <= 1.1 * MIN)"),
    ("QUERY q AS COUNT(x < 1.1 * MIN)", 1, 20, "MIN takes the comparison <="),
    ("QUERY q AS COUNT(x <= MAX)", 1, 20, "MAX takes the comparison >=: COUNT(x >= 0.9 * MAX)"),
    ("QUERY q AS COUNT(x > 0.9 * MAX)", 1, 20, "MAX takes the comparison >="),
    # coefficients: none with AVG, c >= 1 with MIN, 0 < c <= 1 with MAX, at the coefficient
    (
        "QUERY q AS SUM(x > 2 * AVG)",
        1,
        20,
        "AVG takes no coefficient: SUM(x > AVG) (the values above the average), got 2 * AVG",
    ),
    ("QUERY q AS SUM(x > 1 * AVG)", 1, 20, "AVG takes no coefficient"),
    (
        "QUERY q AS SUM(x <= 0.5 * MIN)",
        1,
        21,
        "MIN takes a coefficient c >= 1 (x <= c * MIN: the values within a factor c >= 1 of the "
        "minimum), got 0.5",
    ),
    ("QUERY q AS SUM(x <= -1 * MIN)", 1, 21, "MIN takes a coefficient c >= 1"),
    ("QUERY q AS SUM(x <= 1x * MIN)", 1, 21, "got '1x'"),
    ("QUERY q AS SUM(x <= 1e400 * MIN)", 1, 21, "coefficient '1e400' is too large"),
    (
        "QUERY q AS SUM(x >= 1.5 * MAX)",
        1,
        21,
        "MAX takes a coefficient 0 < c <= 1 (x >= c * MAX: the values within a factor 0 < c <= 1 "
        "of the maximum), got 1.5",
    ),
    ("QUERY q AS SUM(x >= 0 * MAX)", 1, 21, "MAX takes a coefficient 0 < c <= 1"),
    ("QUERY q AS SUM(x >= -0.5 * MAX)", 1, 21, "got -0.5"),
    ("QUERY q AS SUM(x >= 1e-17 * MAX)", 1, 21, "coefficient '1e-17' is too close to 0 to be"),
    ("QUERY q AS SUM(x >= 1e-40 * MAX)", 1, 21, "coefficient '1e-40' is too close to 0"),
    # no WITHIN; OVER N points
    (
        "QUERY q AS SUM(x >= 0.9 * MAX) WITHIN 1",
        1,
        32,
        "a correlated aggregate takes no WITHIN: SUM(x >= ...) [OVER N points]",
    ),
    ("QUERY q AS COUNT(x > AVG) OVER 0 points", 1, 32, "whole number of points >= 1"),
    ("QUERY q AS COUNT(x > AVG) OVER 30m", 1, 32, "not a duration, got '30m'"),
    ("QUERY q AS COUNT(x!=AVG)", 1, 18, "'x!' ends with '!', a name character"),
    ("QUERY q AS COUNT(x* > 2 * AVG) OVER 0 points", 1, 18, "COUNT takes one series"),
    (
        "QUERY q AS COUNT(a > AVG)\nALTER QUERY q WITHIN 1 IMMEDIATELY",
        2,
        1,
        "query 'q' (line 1:1) is a correlated-aggregate query (QUERY ... AS COUNT|SUM(x > AVG))",
    ),
]


# Huge values: the message's first line stays short (the value is abbreviated).
ABBREVIATED = [
    (f"QUERY q AS SUM(x <= {'9' * 5000} * MIN)", 400),
    (f"QUERY q AS SUM(x >= 0.{'0' * 5000}1 * MAX)", 400),
    (f"QUERY q AS SUM(x >= {'9' * 5000} * MAX)", 400),
    (f"QUERY q AS COUNT(x > {'9' * 5000})", 400),
    (f"QUERY q AS COUNT(x > {'y' * 5000})", 400),
]
