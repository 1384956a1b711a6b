"""The grammar as a whole: LALR(1) without conflicts, and its statistic names are the one list
windows compute (:data:`tsmon.core.view.STATS`, with the spellings of
:data:`tsmon.query.STAT_ALIASES`)."""

from __future__ import annotations

import logging

import pytest
from lark import Lark
from lark import logger as lark_logger

from tsmon.core.view import STATS
from tsmon.query import STAT_ALIASES, Stat, parse_expr
from tsmon.query.grammar import grammar_text, terminal_pattern


def test_the_grammar_has_no_lalr_conflicts() -> None:
    """lark resolves shift/reduce conflicts silently (as shifts); it logs them at DEBUG."""
    messages: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            messages.append(record.getMessage())

    handler, level = Collect(), lark_logger.level
    lark_logger.addHandler(handler)
    lark_logger.setLevel(logging.DEBUG)
    try:
        Lark(grammar_text(), start=["start", "expr"], parser="lalr", lexer="contextual")
    finally:
        lark_logger.removeHandler(handler)
        lark_logger.setLevel(level)
    assert not [m for m in messages if "conflict" in m.lower() or "collision" in m.lower()]


def test_statistic_names_are_one_list() -> None:
    assert set(STAT_ALIASES.values()) == set(STATS)
    pattern = terminal_pattern("STAT_NAME")
    for spelling in [*STAT_ALIASES, "MEAN", "Std", "VARIANCE"]:
        assert pattern.fullmatch(spelling), spelling
    for word in ["means", "average", "stdev", "median", "var2", "counts", "lastly"]:
        assert not pattern.fullmatch(word), word


@pytest.mark.parametrize("spelling", sorted(STAT_ALIASES))
def test_every_statistic_spelling_reads_as_its_canonical_name(spelling: str) -> None:
    expr = parse_expr(f"{spelling.upper()}(5m) > 0")
    assert isinstance(expr.left, Stat) and expr.left.name == STAT_ALIASES[spelling]


def test_a_query_text_is_parsed_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every source node parses the job's text: the statements are kept by text, shared (they
    are immutable), each call gets its own list; an error is raised again, not kept."""
    from tsmon.query import QuerySyntaxError, parse_queries, parser

    calls: list[str] = []
    real = parser.parse_tree
    monkeypatch.setattr(
        parser, "parse_tree", lambda text, start: calls.append(text) or real(text, start)
    )
    text = "QUERY memo_once ON a.* WHEN mean(5m) > 1\nQUERY memo_twice AS SUM(a.x, b.x) WITHIN 1"
    first, second = parse_queries(text), parse_queries(text)
    assert calls == [text]
    assert first == second and first is not second
    assert all(a is b for a, b in zip(first, second, strict=True))
    first.clear()
    assert parse_queries(text) == second
    for _ in range(2):
        with pytest.raises(QuerySyntaxError):
            parse_queries("QUERY memo_bad ON")
    assert calls == [text, "QUERY memo_bad ON", "QUERY memo_bad ON"]
