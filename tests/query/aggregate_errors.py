"""Malformed aggregate statements: exact positions, expected tokens and readable messages (the
cases of the contract tests in test_contract.py)."""

from __future__ import annotations

SERIES = "a series name"
WIDTH = "a width like 0.5"

# (text, line, column, tokens that must be in .expected, text the message must contain)
PARSE_ERRORS = [
    ("QUERY q AS AVG() WITHIN 2", 1, 16, [SERIES, "a number", "'-'"], "got ')'"),
    ("QUERY q AS MEDIAN(a) WITHIN 1", 1, 12, ["AVG, SUM, MIN or MAX"], "got 'MEDIAN'"),
    ("QUERY q AS AVG(a.x)", 1, 20, ["WITHIN"], "expected WITHIN but got end of input"),
    ("QUERY q AS AVG(a.x)\n-- more\n", 1, 20, ["WITHIN"], "expected WITHIN but got end"),
    ("QUERY q AS SUM a WITHIN 1", 1, 16, ["'('"], "expected one of '(', SINCE, OVER but got 'a'"),
    ("QUERY q AS SUM(a,) WITHIN 1", 1, 18, [SERIES], "got ')'"),
    ("QUERY q AS SUM(a b) WITHIN 1", 1, 18, ["')'", "','", "'+'", "'-'", "'/'"], "got 'b'"),
    ("QUERY q AS SUM(a WITHIN 1", 1, 18, ["')'", "','"], "got 'WITHIN'"),
    ("QUERY q AS SUM(2*3*a) WITHIN 1", 1, 18, [SERIES], "expected a series name but got '3"),
    ("QUERY q AS SUM(a - -b) WITHIN 1", 1, 20, [SERIES], "got '-"),
    ("QUERY q AS SUM(a /) WITHIN 1", 1, 19, ["a number"], "expected a number but got ')'"),
    ("QUERY q AS SUM(2 / a) WITHIN 1", 1, 18, ["')'", "'*'"], "got '/'"),
    ("QUERY q AS SUM(``) WITHIN 1", 1, 16, [SERIES], "got '`'"),
    ("QUERY q AS SUM(a) WITHIN", 1, 25, [WIDTH], "expected a width like 0.5 but got end"),
    ("QUERY q AS SUM(a) WITHIN - 1", 1, 26, [WIDTH], "got '-'"),
    ("QUERY q AS SUM(a) WITHIN 1 EMIT x", 1, 28, ["QUERY", "ALTER", "';'"], "got 'EMIT'"),
    ("QUERY q AS SUM(a) WITHIN 1 IMMEDIATELY", 1, 28, ["';'"], "got 'IMMEDIATELY'"),
    ("ALTER q WITHIN 1", 1, 7, ["QUERY"], "expected QUERY but got 'q'"),
    # TOP|BOTTOM k (ALTER of a top-k query) may follow the name too.
    ("ALTER QUERY q", 1, 14, ["WITHIN"], "expected one of WITHIN, TOP, BOTTOM but got end"),
    ("ALTER QUERY q WITHIN 1 NOW", 1, 24, ["IMMEDIATELY", "';'"], "got 'NOW'"),
    ("ALTER QUERY q WITHIN 5 ms", 1, 24, ["IMMEDIATELY"], "got 'ms'"),
]

SEMANTIC_ERRORS = [
    # WITHIN: a finite plain number > 0
    ("ALTER QUERY q WITHIN -1", 1, 22, "WITHIN takes a width > 0 (the largest answer interval"),
    ("ALTER QUERY q WITHIN 0", 1, 22, "WITHIN takes a width > 0"),
    ("ALTER QUERY q WITHIN -0.0", 1, 22, "got -0.0"),
    ("QUERY q AS SUM(a) WITHIN 0", 1, 26, "WITHIN takes a width > 0"),
    ("ALTER QUERY q WITHIN inf", 1, 22, "WITHIN takes a finite number > 0, got 'inf'"),
    ("ALTER QUERY q WITHIN -Infinity", 1, 22, "finite number > 0, got '-Infinity'"),
    ("ALTER QUERY q WITHIN nan", 1, 22, "finite number > 0, got 'nan'"),
    ("ALTER QUERY q WITHIN 1e309", 1, 22, "width '1e309' is too large"),
    ("ALTER QUERY q WITHIN 5ms", 1, 22, "WITHIN takes a plain number, in the units of the series'"),
    ("ALTER QUERY q WITHIN 2h", 1, 22, "got '2h'"),
    ("ALTER QUERY q WITHIN abc", 1, 22, "WITHIN takes a number > 0, e.g. WITHIN 0.5, got 'abc'"),
    ("ALTER QUERY q WITHIN 1_000", 1, 22, "got '1_000'"),
    # a relative tolerance (p%) belongs to standing queries (QUERY ... CONFIDENCE p)
    ("QUERY q AS SUM(a) WITHIN 1%", 1, 26, "WITHIN 1% is a relative tolerance, which only"),
    # MIN / MAX take plain series, pointing at the offending sign, weight or operator
    ("QUERY q AS MIN(2*a, b) WITHIN 1", 1, 16, "MIN takes plain series names separated by ','"),
    ("QUERY q AS MIN(a, -b) WITHIN 1", 1, 19, "(no signs, weights or sums), e.g. MIN(a.x, b.x)"),
    ("QUERY q AS MIN(+a) WITHIN 1", 1, 16, "MIN takes plain series names"),
    ("QUERY q AS MAX(a + b) WITHIN 1", 1, 18, "MAX takes plain series names"),
    ("QUERY q AS MAX(a / 2) WITHIN 1", 1, 18, "MAX takes plain series names"),
    ("QUERY q AS MAX(a * 2) WITHIN 1", 1, 18, "MAX takes plain series names"),
    # terms of AVG / SUM
    ("QUERY q AS SUM(a * 2) WITHIN 1", 1, 18, "write the weight before the series: 2 * a."),
    ("QUERY q AS SUM(a, 5) WITHIN 1", 1, 19, "a bare number (5) cannot be a term"),
    (
        "QUERY q AS SUM(a - a) WITHIN 1",
        1,
        16,
        "the weights of 'a' add up to 0 (it appears at 1:16, 1:20)",
    ),
    (
        "QUERY q AS AVG(2*a.x - b.x,\n b.x - a.x, a.x) WITHIN 1",
        1,
        24,
        "weights of 'b.x' add up to 0",
    ),
    ("QUERY q AS SUM(0*a) WITHIN 1", 1, 18, "'a' has weight 0; drop the term"),
    ("QUERY q AS SUM(a / 0) WITHIN 1", 1, 20, "division by zero in the weight of 'a'"),
    ("QUERY q AS SUM(1e999*a) WITHIN 1", 1, 16, "number '1e999' is too large"),
    ("QUERY q AS SUM(1e300*a / 1e-300) WITHIN 1", 1, 16, "the weight of 'a' is too large"),
    ("QUERY q AS SUM(1e308*a, 1e308*a) WITHIN 1", 1, 22, "the weights of 'a' add up to more than"),
    # names
    ("QUERY q AS SUM(a) WITHIN 1\nQUERY Q AS MAX(b) WITHIN 1", 2, 1, "duplicate query name 'Q'"),
    ("QUERY q ON x\nALTER QUERY Q WITHIN 1", 2, 1, "query 'q' (line 1:1) is a watch query"),
    ("QUERY q AS SUM(a) WITHIN 1 ALTER QUERY q WITHIN 2", 1, 28, "new line or after ';'"),
    ("ALTER QUERY q WITHIN " + "9" * 5000, 1, 22, "is too large"),
]

# Huge values: the message's first line stays short (the value is abbreviated).
ABBREVIATED = [("ALTER QUERY q WITHIN " + "9" * 5000, 200)]
