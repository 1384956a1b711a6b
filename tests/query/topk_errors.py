"""Malformed top-k statements: exact positions, expected tokens and readable messages (the cases
of the contract tests in test_contract.py)."""

from __future__ import annotations

RANK = "a whole number like 10"
OBJECTS = "an object name or pattern"
METRIC = "a metric name like hits"
DURATION = "a duration like 5m"
WIDTH = "a width like 0.5"
END = ["QUERY", "ALTER", "';'", "end of input"]
Q = "QUERY q AS TOP 3 OF d* BY h"  # a prefix ending at column 28

# (text, line, column, tokens that must be in .expected, text the message must contain)
PARSE_ERRORS = [
    # AS: aggregate or top-k
    ("QUERY q AS", 1, 11, ["AVG, SUM, MIN or MAX", "TOP", "BOTTOM"], "got end of input"),
    ("QUERY q AS MIDDLE 3 OF x BY y WITHIN 0", 1, 12, ["TOP", "BOTTOM"], "got 'MIDDLE'"),
    ("QUERY q AS TOP10 OF x BY y WITHIN 0", 1, 12, ["TOP", "BOTTOM"], "got 'TOP10'"),
    ("QUERY q AS TOPS 10 OF x BY y WITHIN 0", 1, 12, ["TOP"], "got 'TOPS'"),
    # k
    ("QUERY q AS TOP OF x BY y WITHIN 0", 1, 16, [RANK], "expected a whole number like 10 but"),
    ("QUERY q AS BOTTOM ten OF x BY y WITHIN 0", 1, 19, [RANK], "got 'ten'"),
    ("QUERY q AS TOP - 3 OF x BY y WITHIN 0", 1, 16, [RANK], "got '-'"),
    ("QUERY q AS TOP", 1, 15, [RANK], "expected a whole number like 10 but got end of input"),
    # OF objects
    ("QUERY q AS TOP 3 x BY y WITHIN 0", 1, 18, ["OF"], "expected OF but got 'x'"),
    ("QUERY q AS TOP 3 OF", 1, 20, [OBJECTS], "expected an object name or pattern but got end"),
    ("QUERY q AS TOP 3 OF -x BY y WITHIN 0", 1, 21, [OBJECTS], "got '-x'"),
    ("QUERY q AS TOP 3 OF `` BY y WITHIN 0", 1, 21, [OBJECTS], "got '`'"),
    ("QUERY q AS TOP 3 OF a, b BY y WITHIN 0", 1, 22, ["BY"], "expected BY but got ','"),
    # a missing pattern: BY is read as the pattern, so the parser stops at the metric
    ("QUERY q AS TOP 3 OF BY h WITHIN 0", 1, 24, ["BY"], "expected BY but got 'h'"),
    # BY metric
    ("QUERY q AS TOP 3 OF d* h WITHIN 0", 1, 24, ["BY"], "expected BY but got 'h'"),
    ("QUERY q AS TOP 3 OF d* BY", 1, 26, [METRIC], "expected a metric name like hits but got"),
    ("QUERY q AS TOP 3 OF d* BY 7h WITHIN 0", 1, 27, [METRIC], "got '7h'"),
    ("QUERY q AS TOP 3 OF d* BY `h` WITHIN 0", 1, 27, [METRIC], "got '`h`'"),
    (f"{Q}.x WITHIN 0", 1, 28, ["OVER", "WITHIN"], "expected one of WITHIN, OVER but got '.x'"),
    (f"{Q}-x WITHIN 0", 1, 28, ["OVER", "WITHIN"], "got '-x'"),
    # OVER duration
    (f"{Q} OVER 15 WITHIN 0", 1, 34, [DURATION], "expected a duration like 5m but got '15'"),
    (f"{Q} OVER -5m WITHIN 0", 1, 34, [DURATION], "got '-5m'"),
    (f"{Q} OVER 5 points WITHIN 0", 1, 34, [DURATION], "got '5 points'"),
    (f"{Q} OVER WITHIN 0", 1, 34, [DURATION], "got 'WITHIN'"),
    (f"{Q} OVER 15M WITHIN 0", 1, 34, [DURATION], "got '15M'"),  # units are lower case
    # WITHIN is required, and comes last
    (Q, 1, 28, ["WITHIN", "OVER"], "expected one of WITHIN, OVER but got end of input"),
    (f"{Q}\n-- no tolerance\n", 1, 28, ["WITHIN", "OVER"], "but got end of input"),
    (f"{Q} OVER 5m", 1, 36, ["WITHIN"], "expected WITHIN but got end of input"),
    (f"{Q} WITHIN", 1, 35, [WIDTH], "got end of input"),
    (f"{Q} WITHIN - 1", 1, 36, [WIDTH], "got '-'"),
    (f"{Q} WITHIN 1 OVER 5m", 1, 38, END, "got 'OVER'"),
    (f"{Q} WITHIN 1 IMMEDIATELY", 1, 38, END, "got 'IMMEDIATELY'"),
    (f"{Q} WITHIN 1 BY x", 1, 38, END, "got 'BY'"),
    # ALTER QUERY name WITHIN w | TOP k [WITHIN e] | BOTTOM k [WITHIN e]
    ("ALTER QUERY q", 1, 14, ["WITHIN", "TOP", "BOTTOM"], "expected one of WITHIN, TOP, BOTTOM"),
    ("ALTER QUERY q MIDDLE 3", 1, 15, ["WITHIN", "TOP", "BOTTOM"], "got 'MIDDLE'"),
    ("ALTER QUERY q TOP", 1, 18, [RANK], "expected a whole number like 10 but got end of input"),
    ("ALTER QUERY q BOTTOM WITHIN 1", 1, 22, [RANK], "got 'WITHIN'"),
    ("ALTER QUERY q TOP 3 WITHIN", 1, 27, [WIDTH], "got end of input"),
    ("ALTER QUERY q TOP 3 IMMEDIATELY", 1, 21, ["WITHIN", *END], "got 'IMMEDIATELY'"),
    ("ALTER QUERY q TOP 3 WITHIN 1 IMMEDIATELY", 1, 30, END, "got 'IMMEDIATELY'"),
    ("ALTER QUERY q TOP 3 OF x BY y", 1, 21, ["WITHIN", *END], "got 'OF'"),
    ("ALTER QUERY q TOP 3 WITHIN 1 TOP 4", 1, 30, END, "got 'TOP'"),
    ("ALTER q TOP 3", 1, 7, ["QUERY"], "expected QUERY but got 'q'"),
    # positions on later lines
    (
        "QUERY a ON x\n\nQUERY q AS\n  TOP 3 OF\n  d* BY h OVER\n  3 WITHIN 0",
        6,
        3,
        [DURATION],
        "'3'",
    ),
]

SEMANTIC_ERRORS = [
    # k: a whole number 1 .. 1000000 in plain digits, reported at the k token
    ("QUERY q AS TOP 0 OF x BY y WITHIN 1", 1, 16, "TOP takes a whole number k >= 1 (how many"),
    ("QUERY q AS TOP 000 OF x BY y WITHIN 1", 1, 16, "k >= 1 (how many objects to report), got"),
    ("QUERY q AS BOTTOM -3 OF x BY y WITHIN 1", 1, 19, "BOTTOM takes a whole number k >= 1"),
    ("QUERY q AS TOP -0 OF x BY y WITHIN 1", 1, 16, "k >= 1 (how many objects to report), got -0"),
    ("QUERY q AS TOP 2.5 OF x BY y WITHIN 1", 1, 16, "TOP takes a whole number k (how many"),
    ("QUERY q AS TOP .5 OF x BY y WITHIN 1", 1, 16, "got '.5'; write e.g. TOP 10"),
    ("QUERY q AS TOP 10.0 OF x BY y WITHIN 1", 1, 16, "write k in plain digits: TOP 10, not TOP"),
    ("QUERY q AS TOP 1e3 OF x BY y WITHIN 1", 1, 16, "write k in plain digits: TOP 1000, not"),
    ("QUERY q AS TOP 1e+3 OF x BY y WITHIN 1", 1, 16, "not TOP 1e+3"),
    ("QUERY q AS TOP 1000001 OF x BY y WITHIN 1", 1, 16, "k '1000001' is too large; TOP takes k"),
    (
        "QUERY q AS TOP 2e6 OF x BY y WITHIN 1",
        1,
        16,
        "k '2e6' is too large; TOP takes k <= 1000000",
    ),
    ("QUERY q AS TOP 1e999 OF x BY y WITHIN 1", 1, 16, "k '1e999' is too large"),
    (
        "QUERY q AS TOP 10x OF x BY y WITHIN 1",
        1,
        16,
        "TOP takes a whole number k like 10, got '10x'",
    ),
    ("QUERY q AS TOP 1_000 OF x BY y WITHIN 1", 1, 16, "got '1_000'"),
    ("QUERY q AS TOP 5.5.5 OF x BY y WITHIN 1", 1, 16, "got '5.5.5'"),
    ("ALTER QUERY q TOP 0", 1, 19, "TOP takes a whole number k >= 1"),
    ("ALTER QUERY q bottom 2.5 WITHIN 1", 1, 22, "BOTTOM takes a whole number k (how many"),
    ("ALTER QUERY q TOP 1000001", 1, 19, "is too large; TOP takes k <= 1000000"),
    # OVER: a duration > 0, at most 36525d
    ("QUERY q AS TOP 3 OF x BY y OVER 0s WITHIN 1", 1, 33, "duration must be > 0 ms"),
    ("QUERY q AS TOP 3 OF x BY y OVER 36526d WITHIN 1", 1, 33, "duration '36526d' is too long"),
    # WITHIN: a finite plain number >= 0, reported at the number
    ("QUERY q AS TOP 3 OF x BY y WITHIN -1", 1, 35, "WITHIN takes a tolerance >= 0 (how much"),
    ("QUERY q AS TOP 3 OF x BY y WITHIN -1e-300", 1, 35, "tolerance >= 0"),
    (
        "QUERY q AS TOP 3 OF x BY y WITHIN inf",
        1,
        35,
        "WITHIN takes a finite number >= 0, got 'inf'",
    ),
    ("QUERY q AS TOP 3 OF x BY y WITHIN -Infinity", 1, 35, "finite number >= 0, got '-Infinity'"),
    ("QUERY q AS TOP 3 OF x BY y WITHIN nan", 1, 35, "finite number >= 0, got 'nan'"),
    ("QUERY q AS TOP 3 OF x BY y WITHIN 1e309", 1, 35, "tolerance '1e309' is too large"),
    ("QUERY q AS TOP 3 OF x BY y WITHIN 5ms", 1, 35, "plain number, in the units of the metric"),
    ("QUERY q AS TOP 3 OF x BY y WITHIN abc", 1, 35, "WITHIN takes a number >= 0, e.g. WITHIN 5"),
    ("ALTER QUERY q TOP 3 WITHIN -2", 1, 28, "WITHIN takes a tolerance >= 0"),
    ("ALTER QUERY q TOP 3 WITHIN 2h", 1, 28, "in the units of the metric, got '2h'"),
    # names: duplicates, and ALTERs that do not fit the query of the same file
    ("QUERY q AS TOP 1 OF x BY y WITHIN 0\nQUERY Q ON x", 2, 1, "duplicate query name 'Q'"),
    ("QUERY q ON x\nALTER QUERY Q TOP 3", 2, 1, "query 'q' (line 1:1) is a watch query (QUERY"),
    ("QUERY q ON x\nALTER QUERY q TOP 3", 2, 1, "has no k; ALTER QUERY ... TOP|BOTTOM k changes"),
    (
        "QUERY q AS SUM(a) WITHIN 1\nALTER QUERY q BOTTOM 3 WITHIN 0",
        2,
        1,
        "query 'q' (line 1:1) is a bounded-aggregate query (QUERY ... AS AGG(...)) and has no k",
    ),
    (
        "QUERY q AS TOP 3 OF x BY y WITHIN 0\n-- later\nALTER QUERY q BOTTOM 5",
        3,
        1,
        "query 'q' (line 1:1) is a TOP k query; write ALTER QUERY q TOP 5 (ALTER changes k,",
    ),
    (
        "QUERY q AS BOTTOM 3 OF x BY y WITHIN 0\nALTER QUERY Q TOP 5 WITHIN 1",
        2,
        1,
        "is a BOTTOM k query; write ALTER QUERY Q BOTTOM 5",
    ),
    (
        "QUERY q AS TOP 3 OF x BY y WITHIN 0\nALTER QUERY q WITHIN 1",
        2,
        1,
        "is a top-k query and has no width; change its tolerance with ALTER QUERY q TOP 3 WITHIN",
    ),
    ("QUERY q AS TOP 3 OF x BY y WITHIN 0 ALTER QUERY q TOP 4", 1, 37, "new line or after ';'"),
    ("ALTER QUERY q TOP " + "9" * 5000, 1, 19, "is too large"),
]

# Huge values: the message's first line stays short (the value is abbreviated).
ABBREVIATED = [("ALTER QUERY q TOP " + "9" * 5000, 200)]
