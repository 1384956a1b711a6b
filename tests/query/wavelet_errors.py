"""Malformed wavelet queries (INNER, POINT, RANGE): exact positions, expected tokens and readable
messages (the cases of the contract tests in test_contract.py)."""

from __future__ import annotations

NUMBER = "a number"
SERIES = "a series name"
POINTS = "a count like 1024 points"
WIDTH = "a width like 0.5"
END = ["QUERY", "ALTER", "';'", "end of input"]
AS = ["AVG, SUM, MIN or MAX", "COUNT", "APPROX", "INNER", "POINT", "RANGE", "TOP", "BOTTOM"]
W = "QUERY q AS INNER(t.v, [8, 4])"  # a prefix ending at column 30


# (text, line, column, tokens that must be in .expected, text the message must contain)
PARSE_ERRORS = [
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
    # errors are reported left to right (a position after N is read)
    ("QUERY q AS POINT(t.v, -1) OVER 3 points", 1, 23, "POINT takes a position"),
    ("QUERY q AS POINT(t.v, 5) OVER 3 points", 1, 31, "got OVER 3 points"),
    ("QUERY q AS POINT(t.v, 5) OVER 4 points WITHIN 0", 1, 47, "WITHIN takes a precision > 0"),
    ("QUERY q AS POINT(t.v, 5) OVER 4 points WITHIN 1", 1, 23, "position 5 is out of range"),
    # names: one namespace; these queries cannot be altered
    (
        "QUERY q AS POINT(a, 0)\nALTER QUERY q WITHIN 1",
        2,
        1,
        "query 'q' (line 1:1) is a wavelet query (QUERY ... AS INNER|POINT|RANGE(...)), answered "
        "from a stream summary, and cannot be altered; to change it, remove the query and "
        "define it again",
    ),
    ("QUERY q AS RANGE(a, 0..1, 0 ± 1)\nALTER QUERY q BOTTOM 2 WITHIN 0", 2, 1, "cannot be"),
    ("QUERY q AS INNER(a, [1])\nQUERY Q ON x", 2, 1, "duplicate query name 'Q' (first defined"),
    ("QUERY q AS POINT(a, 0) ALTER QUERY q WITHIN 1", 1, 24, "new line or after ';'"),
]


# Huge values: the message's first line stays short (the value is abbreviated).
ABBREVIATED = [
    (f"QUERY q AS POINT(t.v, {'9' * 5000})", 400),
    (f"QUERY q AS INNER(t.v, [1] AT [{'9' * 3000}])", 400),
    (f"QUERY q AS RANGE(t.v, {'1' * 50}..2, 0 ± 1)", 400),
    (f"QUERY q AS RANGE(t.v, 0..1, 0 ± {'9' * 5000})", 400),
    (f"QUERY q AS INNER(t.v, [1]) OVER {'9' * 5000} points", 400),
    (f"QUERY q AS INNER(t.v, [1]) WITHIN {'9' * 5000}%", 400),
]
