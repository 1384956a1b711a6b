"""Malformed standing queries: exact positions, expected tokens and readable messages (the cases
of the contract tests in test_contract.py)."""

from __future__ import annotations

WINDOW = "a window like 5m or 100 points"
LANDMARK = "an instant like 2026-01-01T00:00:00Z or START"
PROBABILITY = "a probability like 0.9"
WIDTH = "a width like 0.5"
END = ["QUERY", "ALTER", "';'", "end of input"]
S = "QUERY q AS SUM(a) WITHIN 1"  # a prefix ending at column 27
M = "QUERY q AS MAX OVER 5m OF SUM(a)"  # a prefix ending at column 33

# (text, line, column, tokens that must be in .expected, text the message must contain)
PARSE_ERRORS = [
    # after AS AGG: '(' for an aggregate, OVER or SINCE for a windowed MAX|MIN
    ("QUERY q AS MAX", 1, 15, ["'('", "OVER", "SINCE"], "expected one of '(', SINCE, OVER but"),
    ("QUERY q AS MAX 5m OF SUM(a) WITHIN 1 CONFIDENCE 0.9", 1, 16, ["OVER", "SINCE"], "'5m'"),
    ("QUERY q AS MAX WITHIN 5m OF SUM(a)", 1, 16, ["'('", "OVER", "SINCE"], "got 'WITHIN'"),
    # OVER <window>
    ("QUERY q AS MAX OVER", 1, 20, [WINDOW], "expected a window like 5m or 100 points but got"),
    ("QUERY q AS MAX OVER 5 OF SUM(a) WITHIN 1 CONFIDENCE 0.9", 1, 21, [WINDOW], "got '5'"),
    ("QUERY q AS MAX OVER 30 m OF SUM(a) WITHIN 1 CONFIDENCE 0.9", 1, 21, [WINDOW], "got '30'"),
    ("QUERY q AS MAX OVER -5m OF SUM(a) WITHIN 1 CONFIDENCE 0.9", 1, 21, [WINDOW], "got '-5m'"),
    ("QUERY q AS MAX OVER 5M OF SUM(a) WITHIN 1 CONFIDENCE 0.9", 1, 21, [WINDOW], "got '5M'"),
    ("QUERY q AS MAX OVER OF SUM(a) WITHIN 1 CONFIDENCE 0.9", 1, 21, [WINDOW], "got 'OF'"),
    ("QUERY q AS MAX OVER 100 pts OF SUM(a) WITHIN 1 CONFIDENCE .9", 1, 21, [WINDOW], "'100'"),
    # SINCE <landmark>
    ("QUERY q AS MAX SINCE", 1, 21, [LANDMARK], "expected an instant like 2026-01-01T00:00:00Z"),
    ("QUERY q AS MAX SINCE now OF SUM(a) WITHIN 1 CONFIDENCE 0.9", 1, 22, [LANDMARK], "'now'"),
    ("QUERY q AS MAX SINCE OF SUM(a) WITHIN 1 CONFIDENCE 0.9", 1, 22, [LANDMARK], "got 'OF'"),
    ("QUERY q AS MAX SINCE started OF SUM(a) WITHIN 1 CONFIDENCE .9", 1, 22, [LANDMARK], "'st"),
    # OF <aggregate>
    ("QUERY q AS MAX OVER 5m", 1, 23, ["OF"], "expected OF but got end of input"),
    ("QUERY q AS MAX OVER 5m SUM(a) WITHIN 1 CONFIDENCE 0.9", 1, 24, ["OF"], "got 'SUM'"),
    ("QUERY q AS MAX OVER 5m OF", 1, 26, ["AVG, SUM, MIN or MAX"], "got end of input"),
    ("QUERY q AS MAX OVER 5m OF TOP 3", 1, 27, ["AVG, SUM, MIN or MAX"], "got 'TOP'"),
    ("QUERY q AS MAX OVER 5m OF MAX OVER 1h", 1, 31, ["'('"], "expected '(' but got 'OVER'"),
    ("QUERY q AS MAX OVER 5m OF SUM(a) b", 1, 34, ["WITHIN"], "expected WITHIN but got 'b'"),
    # WITHIN and CONFIDENCE are required after a window, CONFIDENCE comes last
    (M, 1, 33, ["WITHIN"], "expected WITHIN but got end of input"),
    (f"{M} WITHIN", 1, 40, [WIDTH], "expected a width like 0.5 but got end of input"),
    (f"{M} WITHIN 1", 1, 42, ["CONFIDENCE"], "expected CONFIDENCE but got end of input"),
    (f"{M} WITHIN 1\n-- none\n", 1, 42, ["CONFIDENCE"], "expected CONFIDENCE but got end"),
    (f"{M} WITHIN 1 IMMEDIATELY", 1, 43, ["CONFIDENCE"], "got 'IMMEDIATELY'"),
    (f"{M} CONFIDENCE 0.9 WITHIN 1", 1, 34, ["WITHIN"], "expected WITHIN but got 'CONFIDENCE'"),
    # after WITHIN of an aggregate: CONFIDENCE, or the end of the statement
    (f"{S} EMIT x", 1, 28, ["CONFIDENCE", *END], "expected one of CONFIDENCE, QUERY, ALTER"),
    (f"{S} % CONFIDENCE 0.9", 1, 28, ["CONFIDENCE"], "got '%'"),  # `1%` is one token
    (f"{S} CONFIDENCE", 1, 38, [PROBABILITY], "expected a probability like 0.9 but got end"),
    (f"{S} CONFIDENCE - 0.9", 1, 39, [PROBABILITY], "got '-'"),
    (f"{S} CONFIDENCE 0.9 0.8", 1, 43, END, "got '0.8'"),
    (f"{S} CONFIDENCE 0.9 IMMEDIATELY", 1, 43, END, "got 'IMMEDIATELY'"),
    (f"{S} CONFIDENCE 0.9 CONFIDENCE 0.8", 1, 43, END, "got 'CONFIDENCE'"),
    ("ALTER QUERY q WITHIN 1 CONFIDENCE 0.9", 1, 24, ["IMMEDIATELY", *END], "got 'CONFIDENCE'"),
    ("QUERY q AS TOP 3 OF x BY y WITHIN 0 CONFIDENCE 0.9", 1, 37, END, "got 'CONFIDENCE'"),
    # positions on later lines
    (
        "QUERY a ON x\n\nQUERY q AS\n  MIN OVER\n  30 OF SUM(a)\n  WITHIN 1 CONFIDENCE 0.9",
        5,
        3,
        [WINDOW],
        "'30'",
    ),
]

SEMANTIC_ERRORS = [
    # CONFIDENCE: 0 < p < 1, reported at the number
    (f"{S} CONFIDENCE 1", 1, 39, "CONFIDENCE takes a probability p with 0 < p < 1 (how likely"),
    (f"{S} CONFIDENCE 0", 1, 39, "with 0 < p < 1 (how likely the answer must be to stay within"),
    (f"{S} CONFIDENCE 1.0", 1, 39, "0 < p < 1"),
    (f"{S} CONFIDENCE 0.0", 1, 39, "got 0.0"),
    (f"{S} CONFIDENCE -0", 1, 39, "got -0"),
    (f"{S} CONFIDENCE 1.5", 1, 39, "CONFIDENCE takes a probability p with 0 < p < 1"),
    (f"{S} CONFIDENCE -0.5", 1, 39, "got -0.5"),
    (f"{S} CONFIDENCE 95", 1, 39, "got 95"),
    (f"{S} CONFIDENCE 1e999", 1, 39, "got 1e999"),
    (f"{S} CONFIDENCE inf", 1, 39, "CONFIDENCE takes a finite probability 0 < p < 1, got 'inf'"),
    (f"{S} CONFIDENCE -Infinity", 1, 39, "finite probability 0 < p < 1, got '-Infinity'"),
    (f"{S} CONFIDENCE nan", 1, 39, "CONFIDENCE takes a finite probability"),
    (f"{S} CONFIDENCE high", 1, 39, "CONFIDENCE takes a probability like 0.9 (0 < p < 1), got"),
    (f"{S} CONFIDENCE 0.9s", 1, 39, "got '0.9s'; write e.g. CONFIDENCE 0.9"),
    (f"{S} CONFIDENCE 90%", 1, 39, "not a percentage: write CONFIDENCE 0.9, not CONFIDENCE 90%"),
    (f"{S} CONFIDENCE 99.5%", 1, 39, "write CONFIDENCE 0.995, not CONFIDENCE 99.5%"),
    (f"{S} CONFIDENCE 150%", 1, 39, "write CONFIDENCE 0.9, not CONFIDENCE 150%"),
    (f"{S} CONFIDENCE 0.99999999999999999", 1, 39, "is too close to 1 to be told apart from it"),
    (f"{S} CONFIDENCE 1e-400", 1, 39, "CONFIDENCE 1e-400 is too close to 0"),
    # WITHIN: a number > 0, or a percentage > 0% and < 100%, reported at the tolerance
    ("QUERY q AS SUM(a) WITHIN 0 CONFIDENCE 0.9", 1, 26, "WITHIN takes a tolerance > 0 (how far"),
    ("QUERY q AS SUM(a) WITHIN -0 CONFIDENCE 0.9", 1, 26, "got -0"),
    ("QUERY q AS SUM(a) WITHIN -1 CONFIDENCE 0.9", 1, 26, "or a percentage like 1%, got -1"),
    ("QUERY q AS SUM(a) WITHIN 100% CONFIDENCE 0.9", 1, 26, "> 0% and < 100% (a fraction of"),
    ("QUERY q AS SUM(a) WITHIN 150% CONFIDENCE 0.9", 1, 26, "relative tolerance > 0% and < 100%"),
    ("QUERY q AS SUM(a) WITHIN 0% CONFIDENCE 0.9", 1, 26, "relative tolerance > 0% and < 100%"),
    ("QUERY q AS SUM(a) WITHIN -1% CONFIDENCE 0.9", 1, 26, "< 100% (a fraction of |A|, the"),
    ("QUERY q AS SUM(a) WITHIN 1e-999% CONFIDENCE 0.9", 1, 26, "is too small to be told apart"),
    ("QUERY q AS SUM(a) WITHIN 99.99999999999999999% CONFIDENCE .9", 1, 26, "too close to 100%"),
    ("QUERY q AS SUM(a) WITHIN x% CONFIDENCE 0.9", 1, 26, "a percentage like 1%, got 'x%'"),
    ("QUERY q AS SUM(a) WITHIN inf CONFIDENCE 0.9", 1, 26, "WITHIN takes a finite number > 0"),
    ("QUERY q AS SUM(a) WITHIN 1e309 CONFIDENCE 0.9", 1, 26, "tolerance '1e309' is too large"),
    ("QUERY q AS SUM(a) WITHIN 5ms CONFIDENCE 0.9", 1, 26, "in the units of the aggregate"),
    (f"{M} WITHIN 0 CONFIDENCE 0.9", 1, 41, "WITHIN takes a tolerance > 0"),
    # a relative tolerance anywhere else
    (
        "QUERY q AS SUM(a) WITHIN 1%",
        1,
        26,
        "WITHIN 1% is a relative tolerance, which only standing",
    ),
    ("ALTER QUERY q WITHIN 5%", 1, 22, "only standing queries take (QUERY name AS SUM(...) WITHIN"),
    ("QUERY q AS TOP 3 OF x BY y WITHIN 5%", 1, 35, "write a plain number >= 0, e.g. WITHIN 5"),
    # a bounded MIN/MAX with CONFIDENCE, at the function
    (
        "QUERY q AS MAX(a.x, b.x) WITHIN 1 CONFIDENCE 0.9",
        1,
        12,
        "MAX(...) takes no CONFIDENCE: a standing query watches a linear aggregate, SUM(...) or "
        "AVG(...); for the largest value of one over time write MAX OVER 30m OF SUM(...) or MAX "
        "SINCE START OF SUM(...), or drop CONFIDENCE for a bounded MAX(...)",
    ),
    ("QUERY q AS\n min(a) WITHIN 1 CONFIDENCE 0.9", 2, 2, "MIN(...) takes no CONFIDENCE"),
    ("QUERY q AS MIN(2*a) WITHIN 1% CONFIDENCE 2", 1, 12, "for the smallest value of one over"),
    # the aggregates around OF
    (
        "QUERY q AS SUM OVER 5m OF SUM(a) WITHIN 1 CONFIDENCE 0.9",
        1,
        12,
        "a window (OVER or SINCE) follows MAX or MIN, the largest or smallest value of the "
        "aggregate over time, e.g. MAX OVER 30m OF SUM(a.x, b.x); got SUM",
    ),
    ("QUERY q AS avg SINCE START OF SUM(a) WITHIN 1 CONFIDENCE 0.9", 1, 12, "got avg"),
    (
        "QUERY q AS MAX OVER 5m OF MIN(a) WITHIN 1 CONFIDENCE 0.9",
        1,
        27,
        "MAX ... OF takes a linear aggregate, SUM(...) or AVG(...), got MIN(...)",
    ),
    ("QUERY q AS MIN SINCE START OF max(a) WITHIN 1 CONFIDENCE 0.9", 1, 31, "got MAX(...)"),
    # bad windows, at the window
    (f"{M[:20]}0s OF SUM(a) WITHIN 1 CONFIDENCE 0.9", 1, 21, "duration must be > 0 ms"),
    (f"{M[:20]}36526d OF SUM(a) WITHIN 1 CONFIDENCE 0.9", 1, 21, "duration '36526d' is too long"),
    (f"{M[:20]}0 points OF SUM(a) WITHIN 1 CONFIDENCE .9", 1, 21, "whole number of points > 0"),
    (f"{M[:20]}2.5 points OF SUM(a) WITHIN 1 CONFIDENCE .9", 1, 21, "got '2.5 points'"),
    (
        f"{M[:20]}1099511627777 points OF SUM(a) WITHIN 1 CONFIDENCE 0.9",
        1,
        21,
        "a count window holds at most 1099511627776 points",
    ),
    (
        f"{M[:20]}since 2026-01-01 OF SUM(a) WITHIN 1 CONFIDENCE 0.9",
        1,
        21,
        "OVER takes a sliding window, a duration like 30m or a count like 100 points; for a "
        "landmark window write MAX SINCE <instant> OF ...",
    ),
    # bad landmarks, at the landmark
    (
        "QUERY q AS MIN SINCE 2026-13-01 OF SUM(a) WITHIN 1 CONFIDENCE 0.9",
        1,
        22,
        "cannot read instant '2026-13-01'",
    ),
    (
        "QUERY q AS MAX SINCE 1700000000000 OF SUM(a) WITHIN 1 CONFIDENCE 0.9",
        1,
        22,
        "cannot read instant '1700000000000'; write an ISO-8601 date or time, e.g. SINCE 2026",
    ),
    (
        "QUERY q AS MAX SINCE 2026-01-01T25:00Z OF SUM(a) WITHIN 1 CONFIDENCE 0.9",
        1,
        22,
        "cannot read instant",
    ),
    (
        "QUERY q AS MAX SINCE 3000-01-01 OF SUM(a) WITHIN 1 CONFIDENCE 0.9",
        1,
        22,
        "instant '3000-01-01' is outside the supported range 1677-09-21T00:12:43.146Z ..",
    ),
    (
        "QUERY q AS MAX SINCE -1h OF SUM(a) WITHIN 1 CONFIDENCE 0.9",
        1,
        22,
        "SINCE takes an instant like 2026-01-01T00:00:00Z or START, got '-1h'; for a sliding "
        "window write MAX OVER 1h OF ...",
    ),
    ("QUERY q AS MIN SINCE 5m OF SUM(a) WITHIN 1 CONFIDENCE 0.9", 1, 22, "write MIN OVER 5m OF"),
    (
        "QUERY q AS MAX SINCE -2026-01-01 OF SUM(a) WITHIN 1 CONFIDENCE 0.9",
        1,
        22,
        "SINCE takes an ISO-8601 instant like 2026-01-01T00:00:00Z, or START (when the query "
        "started), got '-2026-01-01'",
    ),
    # terms: the errors of bounded aggregates
    ("QUERY q AS SUM(a - a) WITHIN 1 CONFIDENCE 0.9", 1, 16, "the weights of 'a' add up to 0"),
    ("QUERY q AS MAX OVER 1h OF AVG(a, 5) WITHIN 1 CONFIDENCE .9", 1, 34, "a bare number (5)"),
    ("QUERY q AS SUM(a / 0) WITHIN 1 CONFIDENCE 0.9", 1, 20, "division by zero"),
    # errors are reported left to right
    ("QUERY q AS SUM(a - a) WITHIN 0 CONFIDENCE 2", 1, 16, "the weights of 'a' add up to 0"),
    ("QUERY q AS SUM(a) WITHIN 0 CONFIDENCE 2", 1, 26, "WITHIN takes a tolerance > 0"),
    # names: one namespace; ALTERs that do not fit the query of the same file
    (
        "QUERY q AS SUM(a) WITHIN 1 CONFIDENCE 0.9\nQUERY Q ON x",
        2,
        1,
        "duplicate query name 'Q' (first defined at line 1:1)",
    ),
    (
        "QUERY q AS SUM(a) WITHIN 1 CONFIDENCE 0.9\nALTER QUERY q TOP 3",
        2,
        1,
        "query 'q' (line 1:1) is a standing query (QUERY ... WITHIN ... CONFIDENCE p) and has no "
        "k; ALTER QUERY ... TOP|BOTTOM k changes top-k queries",
    ),
    (
        "QUERY q AS AVG(a) WITHIN 2.5% CONFIDENCE 0.9\n-- later\nALTER QUERY Q WITHIN 1",
        3,
        1,
        "query 'q' (line 1:1) has a relative tolerance (WITHIN 2.5%) and ALTER QUERY ... WITHIN "
        "sets an absolute one; to change a relative tolerance, remove the query and define it "
        "again",
    ),
    (f"{S} CONFIDENCE 0.9 ALTER QUERY q WITHIN 2", 1, 43, "new line or after ';'"),
]

# Huge values: the message's first line stays short (the value is abbreviated).
ABBREVIATED = [
    (f"{S} CONFIDENCE 0.{'9' * 5000}", 300),
    (f"{S} CONFIDENCE {'9' * 5000}%", 300),
    (f"QUERY q AS SUM(a) WITHIN {'9' * 5000}% CONFIDENCE 0.9", 300),
    (f"QUERY q AS SUM(a) WITHIN 0.{'0' * 5000}1% CONFIDENCE 0.9", 300),
    (f"QUERY q AS MAX SINCE {'1' * 5000} OF SUM(a) WITHIN 1 CONFIDENCE .9", 300),
]
