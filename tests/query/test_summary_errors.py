"""Malformed queries answered from stream summaries: exact positions, expected tokens and
readable messages."""

from __future__ import annotations

import pytest
from test_query_errors import check_parse_error

from tsmon.query import QuerySyntaxError, parse_queries

NUMBER = "a number"
SERIES = "a series name"
POINTS = "a count like 1024 points"
PERCENT = "a percentage like 1%"
WIDTH = "a width like 0.5"
COMPARISON = "a comparison like > or <="
INDEPENDENT = "AVG, MIN or MAX"
END = ["QUERY", "ALTER", "';'", "end of input"]
AS = ["AVG, SUM, MIN or MAX", "COUNT", "APPROX", "INNER", "POINT", "RANGE", "TOP", "BOTTOM"]
W = "QUERY q AS INNER(t.v, [8, 4])"  # a prefix ending at column 30
C = "QUERY q AS APPROX COUNT(x > 0)"  # a prefix ending at column 31
S = "QUERY q AS APPROX SUM(x) OVER 10 points WITHIN 1%"  # a prefix ending at column 50

# (text, line, column, tokens that must be in .expected, text the message must contain)
PARSE_ERRORS = [
    # after AS: every kind of query that starts there
    ("QUERY q AS", 1, 11, AS, "expected one of AVG, SUM, MIN or MAX, COUNT, APPROX, INNER, POINT"),
    ("QUERY q AS INNER2(t.v, [8])", 1, 12, AS, "got 'INNER2'"),
    ("QUERY q AS APPROXCOUNT(x > 0)", 1, 12, AS, "got 'APPROXCOUNT'"),
    # INNER(series, [w, ...] [AT [i, ...]])
    ("QUERY q AS INNER", 1, 17, ["'('"], "expected '(' but got end of input"),
    ("QUERY q AS INNER(", 1, 18, [SERIES], "expected a series name but got end of input"),
    ("QUERY q AS INNER(t.v", 1, 21, ["','"], "expected ',' but got end of input"),
    ("QUERY q AS INNER(t.v, 8)", 1, 23, ["'['"], "expected '[' but got '8'"),
    ("QUERY q AS INNER(t.v, [])", 1, 24, [NUMBER], "expected a number but got ']'"),
    ("QUERY q AS INNER(t.v, [8,])", 1, 26, [NUMBER], "expected a number but got ']'"),
    ("QUERY q AS INNER(t.v, [8 4])", 1, 26, ["','", "']'"], "expected one of ',', ']' but"),
    ("QUERY q AS INNER(t.v, [8, x])", 1, 27, [NUMBER], "expected a number but got 'x"),
    ("QUERY q AS INNER(t.v, [8, 4]", 1, 29, ["')'", "AT"], "expected one of ')', AT but got end"),
    ("QUERY q AS INNER(t.v, [8, 4] [0, 1])", 1, 30, ["')'", "AT"], "got '[0'"),
    ("QUERY q AS INNER(t.v, [8, 4] AT)", 1, 32, ["'['"], "expected '[' but got ')'"),
    ("QUERY q AS INNER(t.v, [8, 4] AT [0, 1]", 1, 39, ["')'"], "expected ')' but got end"),
    # OVER N points, then WITHIN d, each at most once and in that order
    (f"{W} OVER", 1, 35, [POINTS], "expected a count like 1024 points but got end of input"),
    (f"{W} OVER points", 1, 36, [POINTS], "got 'points'"),
    (f"{W} OVER 4 points OVER 8 points", 1, 45, ["WITHIN", *END], "got 'OVER'"),
    (f"{W} WITHIN", 1, 37, [WIDTH], "expected a width like 0.5 but got end of input"),
    (f"{W} WITHIN 1 OVER 4 points", 1, 40, END, "expected one of QUERY, ALTER, ';', end of"),
    (f"{W} WITHIN 1 CONFIDENCE 0.9", 1, 40, END, "got 'CONFIDENCE'"),
    # POINT(series, i) and RANGE(series, lo..hi, v ± r)
    ("QUERY q AS POINT(t.v)", 1, 21, ["','"], "expected ',' but got ')'"),
    ("QUERY q AS POINT(t.v, x)", 1, 23, [NUMBER], "expected a number but got 'x'"),
    ("QUERY q AS POINT(t.v, 1, 2)", 1, 24, ["')'"], "expected ')' but got ','"),
    ("QUERY q AS RANGE(t.v, 0 64, 30 ± 2)", 1, 25, ["'..'"], "expected '..' but got '64'"),
    ("QUERY q AS RANGE(t.v, 0..64)", 1, 28, ["','"], "expected ',' but got ')'"),
    ("QUERY q AS RANGE(t.v, 0..64, 30)", 1, 32, ["'±' or '+-'"], "expected '±' or '+-' but"),
    ("QUERY q AS RANGE(t.v, 0..64, 30 + 2)", 1, 33, ["'±' or '+-'"], "got '+'"),
    ("QUERY q AS RANGE(t.v, 0..64, ± 2)", 1, 30, [NUMBER], "expected a number but got '±'"),
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
    # positions on later lines
    (
        "QUERY a ON x\n\nQUERY q AS\n  RANGE(t.v,\n  0..64,\n  30 plus 2)",
        6,
        6,
        ["'±' or '+-'"],
        "got 'plus'",
    ),
]

SEMANTIC_ERRORS = [
    # one series, not a pattern, at the series
    ("QUERY q AS INNER(t*.v, [8])", 1, 18, "INNER takes one series, not a pattern, got 't*.v'"),
    ("QUERY q AS POINT(`db?`, 1)", 1, 18, "POINT takes one series, not a pattern, got 'db?'"),
    ("QUERY q AS COUNT(web[12].x > AVG)", 1, 18, "(a '*', '?' or '[' makes a glob)"),
    ("QUERY q AS APPROX SUM(x*) OVER 9 points WITHIN 1% MAX 5", 1, 23, "APPROX SUM takes one"),
    # INNER: weights are numbers; AT gives one distinct position per weight
    ("QUERY q AS INNER(t.v, [8, 4ms])", 1, 27, "INNER takes weights that are plain numbers like"),
    ("QUERY q AS INNER(t.v, [8, 1e999])", 1, 27, "number '1e999' is too large"),
    (
        "QUERY q AS INNER(t.v, [8, 4] AT [0, 1, 2])",
        1,
        33,
        "INNER takes one position per weight: 2 weights, 3 positions after AT",
    ),
    ("QUERY q AS INNER(t.v, [8, 4, 2] AT [0, 1])", 1, 36, "3 weights, 2 positions after AT"),
    (
        "QUERY q AS INNER(t.v, [8, 4] AT [1, 1])",
        1,
        37,
        "position 1 appears twice after AT (first at 1:34); give each position one weight",
    ),
    ("QUERY q AS INNER(t.v, [8, 4, 2] AT [3, 0, 03])", 1, 43, "position 3 appears twice"),
    (
        "QUERY q AS INNER(t.v, [8, 4] AT [0, -1])",
        1,
        37,
        "AT takes positions, whole numbers >= 0 (0 is the newest value), got -1",
    ),
    ("QUERY q AS INNER(t.v, [8, 4] AT [0, 1.5])", 1, 37, "whole numbers >= 0 (0 is the newest"),
    ("QUERY q AS INNER(t.v, [8, 4] AT [0, 1e1])", 1, 37, "AT takes positions in plain digits"),
    ("QUERY q AS INNER(t.v, [8, 4] AT [0, 1x])", 1, 37, "got '1x'"),
    # positions are < N, the default N (1024) included, reported at the position
    (
        "QUERY q AS INNER(t.v, [8, 4] AT [0, 1024])",
        1,
        37,
        "position 1024 is out of range: OVER 1024 points (the default) keeps positions 0 .. 1023 "
        "(0 is the newest value)",
    ),
    (
        "QUERY q AS INNER(t.v, [8, 4] AT [0, 4]) OVER 4 points",
        1,
        37,
        "position 4 is out of range: OVER 4 points keeps positions 0 .. 3",
    ),
    (
        "QUERY q AS INNER(t.v, [8, 4, 3]) OVER 2 points",
        1,
        23,
        "INNER takes at most 2 weights, one per position of OVER 2 points, got 3",
    ),
    ("QUERY q AS POINT(t.v, 1024)", 1, 23, "position 1024 is out of range: OVER 1024 points (the"),
    ("QUERY q AS POINT(t.v, 2) OVER 2 points", 1, 23, "keeps positions 0 .. 1"),
    ("QUERY q AS RANGE(t.v, 0..1024, 30 ± 2)", 1, 26, "position 1024 is out of range"),
    ("QUERY q AS RANGE(t.v, 0..8, 30 ± 2) OVER 8 points", 1, 26, "keeps positions 0 .. 7"),
    # POINT and RANGE positions
    (
        "QUERY q AS POINT(t.v, -1)",
        1,
        23,
        "POINT takes a position, a whole number >= 0 (0 is the newest value), got -1",
    ),
    ("QUERY q AS POINT(t.v, 2.5)", 1, 23, "POINT takes a position, a whole number >= 0"),
    ("QUERY q AS POINT(t.v, 1e2)", 1, 23, "POINT takes a position in plain digits: write 100"),
    ("QUERY q AS RANGE(t.v, 64..0, 30 ± 2)", 1, 23, "RANGE takes positions lo..hi with lo <= hi"),
    ("QUERY q AS RANGE(t.v, -1..64, 30 ± 2)", 1, 23, "RANGE takes positions lo..hi, whole numb"),
    ("QUERY q AS RANGE(t.v, 0...64, 30 ± 2)", 1, 26, "got .64"),
    # RANGE: a number v, a radius r >= 0, no WITHIN
    ("QUERY q AS RANGE(t.v, 0..64, 3O ± 2)", 1, 30, "RANGE takes a value v that is a plain"),
    ("QUERY q AS RANGE(t.v, 0..64, 30 ± -2)", 1, 35, "RANGE takes a radius r >= 0 (the values"),
    ("QUERY q AS RANGE(t.v, 0..64, 30 +- -1e-300)", 1, 36, "got -1e-300"),
    ("QUERY q AS RANGE(t.v, 0..64, 30 ± 1e400)", 1, 35, "number '1e400' is too large"),
    (
        "QUERY q AS RANGE(t.v, 0..64, 30 ± 2) WITHIN 1",
        1,
        38,
        "RANGE takes no WITHIN: its answer is the positions whose value is within v ± r",
    ),
    # OVER N points: a whole number, a power of two >= 2 for SWAT trees
    (
        f"{W} OVER 1000 points",
        1,
        36,
        "a SWAT tree keeps a power of two >= 2 of the last values, got OVER 1000 points; write "
        "OVER 512 points or OVER 1024 points",
    ),
    (f"{W} OVER 1 point", 1, 36, "got OVER 1 point; write OVER 2 points"),
    (f"{W} OVER 0 points", 1, 36, "OVER takes a whole number of points >= 1, got '0 points'"),
    (f"{W} OVER 2.5 points", 1, 36, "got '2.5 points'"),
    (f"{W} OVER -4 points", 1, 36, "got '-4 points'"),
    (
        f"{W} OVER 2199023255552 points",
        1,
        36,
        "OVER 2199023255552 points is too large; a summary keeps at most 1099511627776 points",
    ),
    (f"{W} OVER 1e3 points", 1, 36, "write OVER 1000 points in plain digits, not OVER 1e3"),
    (f"{W} OVER 1024", 1, 36, "write OVER 1024 points, not OVER 1024"),
    (f"{W} OVER 5m", 1, 36, "OVER takes a count of values like 1024 points, not a duration"),
    (f"{W} OVER 4x points", 1, 36, "OVER takes a count like 1024 points, got '4x points'"),
    (f"{C} OVER 0 points WITHIN 1%", 1, 37, "whole number of points >= 1"),
    (f"{C} OVER 10 WITHIN 1%", 1, 37, "write OVER 10 points, not OVER 10"),
    (f"{C} OVER 1h WITHIN 1%", 1, 37, "like 1000 points, not a duration, got '1h'"),
    # WITHIN of INNER and POINT: a precision > 0 in the series' units
    (f"{W} WITHIN 0", 1, 38, "WITHIN takes a precision > 0 (how far INNER's answer may be"),
    (f"{W} WITHIN -1", 1, 38, "got -1"),
    (
        f"{W} WITHIN 1%",
        1,
        38,
        "INNER takes a precision in the units of the series' values, a plain number > 0 like "
        "WITHIN 0.5, got WITHIN 1%; a relative error (p%) is for APPROX COUNT|SUM",
    ),
    ("QUERY q AS POINT(t.v, 5) WITHIN inf", 1, 33, "WITHIN takes a finite number > 0"),
    ("QUERY q AS POINT(t.v, 5) WITHIN 5ms", 1, 33, "in the units of the series' values"),
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
    # errors are reported left to right (a position after N is read)
    ("QUERY q AS POINT(t.v, -1) OVER 3 points", 1, 23, "POINT takes a position"),
    ("QUERY q AS POINT(t.v, 5) OVER 3 points", 1, 31, "got OVER 3 points"),
    ("QUERY q AS POINT(t.v, 5) OVER 4 points WITHIN 0", 1, 47, "WITHIN takes a precision > 0"),
    ("QUERY q AS POINT(t.v, 5) OVER 4 points WITHIN 1", 1, 23, "position 5 is out of range"),
    ("QUERY q AS COUNT(x* > 2 * AVG) OVER 0 points", 1, 18, "COUNT takes one series"),
    # names: one namespace; these queries cannot be altered
    (
        "QUERY q AS POINT(a, 0)\nALTER QUERY q WITHIN 1",
        2,
        1,
        "query 'q' (line 1:1) is a wavelet query (QUERY ... AS INNER|POINT|RANGE(...)), answered "
        "from a stream summary, and cannot be altered; to change it, remove the query and "
        "define it again",
    ),
    (
        "QUERY q AS APPROX SUM(a) OVER 5 points WITHIN 1% MAX 3\n-- later\nALTER QUERY Q TOP 3",
        3,
        1,
        "query 'q' (line 1:1) is an approximate-aggregate query (QUERY ... AS APPROX "
        "COUNT|SUM(...)), answered from a stream summary, and cannot be altered",
    ),
    (
        "QUERY q AS COUNT(a > AVG)\nALTER QUERY q WITHIN 1 IMMEDIATELY",
        2,
        1,
        "query 'q' (line 1:1) is a correlated-aggregate query (QUERY ... AS COUNT|SUM(x > AVG))",
    ),
    ("QUERY q AS RANGE(a, 0..1, 0 ± 1)\nALTER QUERY q BOTTOM 2 WITHIN 0", 2, 1, "cannot be"),
    ("QUERY q AS INNER(a, [1])\nQUERY Q ON x", 2, 1, "duplicate query name 'Q' (first defined"),
    ("QUERY q AS POINT(a, 0) ALTER QUERY q WITHIN 1", 1, 24, "new line or after ';'"),
]


@pytest.mark.parametrize(("text", "line", "column", "expected", "found"), PARSE_ERRORS)
def test_parse_errors(text: str, line: int, column: int, expected: list[str], found: str) -> None:
    check_parse_error(text, line, column, expected, found)


@pytest.mark.parametrize(("text", "line", "column", "detail"), SEMANTIC_ERRORS)
def test_semantic_errors(text: str, line: int, column: int, detail: str) -> None:
    with pytest.raises(QuerySyntaxError) as info:
        parse_queries(text)
    err = info.value
    assert (err.line, err.column) == (line, column), str(err)
    assert str(err).startswith(f"line {line}:{column}: ")
    assert detail in str(err), str(err)
    assert err.expected == []


@pytest.mark.parametrize(
    "text",
    [
        f"QUERY q AS POINT(t.v, {'9' * 5000})",
        f"QUERY q AS INNER(t.v, [1] AT [{'9' * 3000}])",
        f"QUERY q AS RANGE(t.v, {'1' * 50}..2, 0 ± 1)",
        f"QUERY q AS RANGE(t.v, 0..1, 0 ± {'9' * 5000})",
        f"QUERY q AS INNER(t.v, [1]) OVER {'9' * 5000} points",
        f"QUERY q AS INNER(t.v, [1]) WITHIN {'9' * 5000}%",
        f"{C} OVER 10 points WITHIN 0.{'0' * 5000}1",
        f"{C} OVER 10 points WITHIN {'9' * 5000}%",
        f"{S} MAX {'9' * 5000}",
        f"QUERY q AS SUM(x <= {'9' * 5000} * MIN)",
        f"QUERY q AS SUM(x >= 0.{'0' * 5000}1 * MAX)",
        f"QUERY q AS SUM(x >= {'9' * 5000} * MAX)",
        f"QUERY q AS COUNT(x > {'9' * 5000})",
        f"QUERY q AS COUNT(x > {'y' * 5000})",
    ],
)
def test_huge_values_are_abbreviated(text: str) -> None:
    with pytest.raises(QuerySyntaxError) as info:
        parse_queries(text)
    assert len(str(info.value).splitlines()[0]) < 400, str(info.value)
