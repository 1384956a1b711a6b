"""The kinds of statement as the contract tests (test_contract.py) see them: for each, the
strategy of its canonical trees, of the ways people write it, and its malformed cases.

One entry per module of :mod:`tsmon.query` that holds a kind (watch, aggregate, topk, standing,
wavelet, approx, correlated); the cases live next to the strategies, in ``<kind>_errors.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

import aggregate_errors
import approx_errors
import correlated_errors
import standing_errors
import topk_errors
import watch_errors
import wavelet_errors
from aggregate_strategies import aggregate_statements
from hypothesis import strategies as st
from standing_strategies import raw_standings, standing_defs
from summary_strategies import approx_defs, correlated_defs, raw_summaries, wavelet_defs
from topk_strategies import raw_topks, topk_statements
from watch_strategies import queries

import tsmon.query as A

#: (text, line, column, tokens that must be in .expected, text the message must contain)
ParseError = tuple[str, int, int, list[str], str]
#: (text, line, column, text the first line of the message must contain, or None)
SemanticError = tuple[str, int, int, str | None]


@dataclass(frozen=True)
class Kind:
    """One kind of statement: its strategies and its malformed cases."""

    name: str
    #: Canonical trees (what the printer writes must parse back to them).
    statements: st.SearchStrategy[A.Statement]
    #: Examples drawn per round-trip property.
    examples: int
    #: Any spelling (case, spacing, comments, aliases) with the tree it means, or None.
    spellings: st.SearchStrategy | None
    parse_errors: list[ParseError]
    semantic_errors: list[SemanticError]
    #: (text, longest first line): a huge value in the message is abbreviated.
    abbreviated: list[tuple[str, int]]


KINDS = [
    Kind(
        "watch",
        queries(),
        150,
        None,
        watch_errors.PARSE_ERRORS,
        watch_errors.SEMANTIC_ERRORS + watch_errors.TOO_LARGE,
        watch_errors.ABBREVIATED,
    ),
    Kind(
        "aggregate",
        aggregate_statements,
        300,
        None,
        aggregate_errors.PARSE_ERRORS,
        aggregate_errors.SEMANTIC_ERRORS,
        aggregate_errors.ABBREVIATED,
    ),
    Kind(
        "topk",
        topk_statements,
        500,
        raw_topks(),
        topk_errors.PARSE_ERRORS,
        topk_errors.SEMANTIC_ERRORS,
        topk_errors.ABBREVIATED,
    ),
    Kind(
        "standing",
        standing_defs(),
        500,
        raw_standings(),
        standing_errors.PARSE_ERRORS,
        standing_errors.SEMANTIC_ERRORS,
        standing_errors.ABBREVIATED,
    ),
    Kind(
        "wavelet",
        wavelet_defs(),
        500,
        raw_summaries(wavelet_defs()),
        wavelet_errors.PARSE_ERRORS,
        wavelet_errors.SEMANTIC_ERRORS,
        wavelet_errors.ABBREVIATED,
    ),
    Kind(
        "approx",
        approx_defs(),
        500,
        raw_summaries(approx_defs()),
        approx_errors.PARSE_ERRORS,
        approx_errors.SEMANTIC_ERRORS,
        approx_errors.ABBREVIATED,
    ),
    Kind(
        "correlated",
        correlated_defs(),
        500,
        raw_summaries(correlated_defs()),
        correlated_errors.PARSE_ERRORS,
        correlated_errors.SEMANTIC_ERRORS,
        correlated_errors.ABBREVIATED,
    ),
]

#: Any statement of any kind.
any_statement = st.one_of(*(kind.statements for kind in KINDS))


def conflicts(statements: list[A.Statement]) -> bool:
    """Whether parse_queries must reject a file of ``statements`` for its names: a from-scratch
    model of the parser's rules (duplicate names, and ALTERs that do not fit the kind)."""
    defined: dict[str, A.Statement] = {}
    for s in statements:
        key, first = A.query_key(s.name), defined.get(A.query_key(s.name))
        if isinstance(s, A.AlterPrecision | A.AlterTopK) and isinstance(
            first, A.WaveletDef | A.ApproxDef | A.CorrelatedDef
        ):
            return True
        if isinstance(s, A.AlterPrecision):
            if isinstance(first, A.QueryDef | A.TopKDef):
                return True
            if isinstance(first, A.StandingDef) and first.relative:
                return True
        elif isinstance(s, A.AlterTopK):
            if isinstance(first, A.QueryDef | A.AggregateDef | A.StandingDef):
                return True
            if isinstance(first, A.TopKDef) and first.bottom != s.bottom:
                return True
        elif first is not None:
            return True
        else:
            defined[key] = s
    return False
