"""The LALR parser of ``grammar.lark``, built once per process, and the regexes of its terminals.

The statistic spellings of ``STAT_NAME`` are filled in from :data:`STAT_ALIASES`, whose
canonical names are :data:`tsmon.core.view.STATS` (the statistics windows compute): the one
list of statistic names.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from lark import Lark, Tree
from lark.exceptions import UnexpectedInput

from tsmon.core.view import STATS
from tsmon.query.errors import QuerySyntaxError, from_lark

#: Statistic spellings accepted in queries -> canonical statistic names (:data:`STATS`).
STAT_ALIASES: dict[str, str] = {
    **{name: name for name in STATS},
    "avg": "mean",
    "variance": "var",
    "std": "stddev",
}


def grammar_text() -> str:
    """The text of ``grammar.lark`` with the statistic spellings filled in.

    Examples
    --------
    >>> "@STAT_SPELLINGS@" in grammar_text(), "|stddev|" in grammar_text()
    (False, True)
    """
    template = Path(__file__).with_name("grammar.lark").read_text(encoding="utf-8")
    spellings = sorted(STAT_ALIASES, key=lambda s: (-len(s), s))  # longest first: variance|var
    return template.replace("@STAT_SPELLINGS@", "|".join(spellings))


@cache
def lark_parser() -> Lark:
    """The LALR parser (contextual lexer) of the query language, built on first use."""
    return Lark(
        grammar_text(),
        start=["start", "expr"],
        parser="lalr",
        lexer="contextual",
        propagate_positions=True,
        maybe_placeholders=True,
    )


def parse_tree(text: str, start: str) -> Tree:
    """The lark tree of ``text`` from rule ``start``; a :class:`QuerySyntaxError` on bad input.

    Examples
    --------
    >>> str(parse_tree("value > 1", "expr").data)
    'compare'
    """
    try:
        return lark_parser().parse(text, start=start)
    except UnexpectedInput as exc:
        raise from_lark(exc, text) from None
    except RecursionError:
        raise QuerySyntaxError("expression is nested too deeply", 1, 1, text) from None


@cache
def terminal_pattern(name: str) -> re.Pattern[str]:
    """The compiled regex of a terminal of ``grammar.lark``, its one definition.

    Examples
    --------
    >>> bool(terminal_pattern("AGG_NAME").fullmatch("aws.cpu-utilisation_5f5533"))
    True
    """
    return re.compile(lark_parser().get_terminal(name).pattern.to_regexp())
