"""Errors raised while reading query text, with a line:column and a caret under the culprit."""

from __future__ import annotations

from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

# Lark terminal name -> what the user is told was expected. Dict order is display order.
FRIENDLY_TERMINALS: dict[str, str] = {
    "_RPAR": "')'",
    "_COMMA": "','",
    "WINDOW": "a window like 5m or 100 points",
    "NUMBER": "a number",
    "DURATION": "a duration like 5m",
    "STAT_NAME": "a statistic like mean(5m)",
    "NAME": "a name",
    "SERIES": "a series name or pattern",
    "AGG_NAME": "a series name",
    "QUOTED_NAME": "a series name",
    "AGG_NUMBER": "a number",
    "AGG_FUNC": "AVG, SUM, MIN or MAX",
    "COUNT": "COUNT",
    "_SUM": "SUM",
    "_APPROX": "APPROX",
    "_INNER": "INNER",
    "_POINT": "POINT",
    "_RANGE": "RANGE",
    "SCALAR": "a number",
    "POINTS": "a count like 1024 points",
    "COMPARISON": "a comparison like > or <=",
    "INDEPENDENT": "AVG, MIN or MAX",
    "RELATIVE": "a percentage like 1%",
    "_LSQB": "'['",
    "_RSQB": "']'",
    "_DOTDOT": "'..'",
    "_PLUSMINUS": "'±' or '+-'",
    "WIDTH": "a width like 0.5",
    "OBJECTS": "an object name or pattern",
    "METRIC": "a metric name like hits",
    "RANK": "a whole number like 10",
    "PROBABILITY": "a probability like 0.9",
    "LANDMARK": "an instant like 2026-01-01T00:00:00Z or START",
    "_LPAR": "'('",
    "PLUS": "'+'",
    "MINUS": "'-'",
    "_NOT": "NOT",
    "OPERATOR": "an operator like + * or >",
    "ARITH_OPERATOR": "an arithmetic operator like + or *",
    "STAR": "'*'",
    "SLASH": "'/'",
    "PERCENT": "'%'",
    "COMP_OP": "a comparison like > or <=",
    "_AND": "AND",
    "_OR": "OR",
    "_CONFIDENCE": "CONFIDENCE",
    "_QUERY": "QUERY",
    "_ALTER": "ALTER",
    "_ON": "ON",
    "_AS": "AS",
    "_WHEN": "WHEN",
    "_EMIT": "EMIT",
    "_SINCE": "SINCE",
    "_WITHIN": "WITHIN",
    "TOP": "TOP",
    "BOTTOM": "BOTTOM",
    "_OF": "OF",
    "_BY": "BY",
    "_OVER": "OVER",
    "IMMEDIATELY": "IMMEDIATELY",
    "BEFORE": "BEFORE",
    "_AT": "AT",
    "_MAX": "MAX",
    "_SEMI": "';'",
    "$END": "end of input",
}
_OPERATORS = frozenset({"PLUS", "MINUS", "STAR", "SLASH", "PERCENT", "COMP_OP"})
# Operators of expressions only (never in an aggregate's arguments): their presence tells the
# two kinds of "after an operand" states apart.
_EXPRESSION_ONLY = frozenset({"PERCENT", "COMP_OP"})
_OPERAND_STARTS = frozenset({"NUMBER", "DURATION", "STAT_NAME", "NAME"})
_IGNORED = frozenset({"WS", "COMMENT"})


class QuerySyntaxError(ValueError):
    """Query text that cannot be read: a parse error or a semantic error in one statement.

    Parameters
    ----------
    detail : str
        What is wrong, without the position (e.g. ``"unknown function 'meen'"``).
    line, column : int
        1-based position of the offending token.
    source : str
        The full query text; the offending line is quoted in the message with a caret.
    expected : list of str, optional
        Human-readable tokens the parser would have accepted (empty for semantic errors).

    Examples
    --------
    >>> err = QuerySyntaxError("unknown name 'x'", 1, 12, "QUERY q ON x")
    >>> print(err)
    line 1:12: unknown name 'x'
      QUERY q ON x
                 ^
    >>> err.line, err.column, err.expected
    (1, 12, [])
    """

    def __init__(
        self,
        detail: str,
        line: int,
        column: int,
        source: str = "",
        expected: list[str] | None = None,
    ) -> None:
        self.detail = detail
        self.line = line
        self.column = column
        self.expected = list(expected or [])
        lines = source.splitlines()
        context = ""
        if 1 <= line <= len(lines):
            text = lines[line - 1]
            pad = "".join("\t" if ch == "\t" else " " for ch in text[: max(column - 1, 0)])
            context = f"\n  {text}\n  {pad}^"
        super().__init__(f"line {line}:{column}: {detail}{context}")


def friendly_expected(names: set[str] | frozenset[str] | list[str]) -> list[str]:
    """Turn lark terminal names into the sorted, human-readable list shown to users.

    After a complete operand of an expression the binary operators collapse into one entry
    (not inside an aggregate's arguments, where only some of them fit). Terminals with the same
    text are shown once.

    Examples
    --------
    >>> friendly_expected({"_RPAR", "_COMMA"})
    ["')'", "','"]
    >>> friendly_expected({"STAR", "COMP_OP", "PLUS", "MINUS", "_LPAR", "_RPAR"})
    ["')'", 'an operator like + * or >']
    >>> friendly_expected({"PLUS", "MINUS", "AGG_NUMBER", "AGG_NAME", "QUOTED_NAME"})
    ['a series name', 'a number', "'+'", "'-'"]
    """
    names = {n for n in names if n not in _IGNORED}
    if "OBJECTS" in names:  # after OF a backquoted name is an object pattern, not a series
        names.discard("QUOTED_NAME")
    if names & _EXPRESSION_ONLY and not names & _OPERAND_STARTS:
        # After a complete operand: any binary operator may follow ('(' only as the call of an
        # unknown function, so it is left out).
        group = "OPERATOR" if "COMP_OP" in names else "ARITH_OPERATOR"
        names = (names - _OPERATORS - {"_LPAR"}) | {group}
    shown = list(dict.fromkeys(text for name, text in FRIENDLY_TERMINALS.items() if name in names))
    return shown + sorted(n for n in names if n not in FRIENDLY_TERMINALS)


def _expectation(expected: list[str]) -> str:
    if not expected:
        return "unexpected input"
    if len(expected) == 1:
        return f"expected {expected[0]}"
    return f"expected one of {', '.join(expected)}"


def from_lark(exc: UnexpectedInput, source: str) -> QuerySyntaxError:
    """Convert a lark parse exception into a :class:`QuerySyntaxError`.

    Examples
    --------
    >>> from lark import Lark
    >>> from lark.exceptions import UnexpectedInput
    >>> try:
    ...     Lark('start: "a" ")"', parser="lalr").parse("a(")
    ... except UnexpectedInput as exc:
    ...     from_lark(exc, "a(").line
    1
    """
    if isinstance(exc, UnexpectedToken):
        token = exc.token
        expected = friendly_expected(_accepted(exc, exc.expected))
        if token.type == "$END":
            line, column = _end_position(source)
            found = "end of input"
        else:
            line, column = token.line, token.column
            found = f"'{token.value}'"
    elif isinstance(exc, UnexpectedCharacters):
        expected = friendly_expected(_accepted(exc, exc.allowed or ()))
        line, column = exc.line, exc.column
        found = f"'{exc.char}'"
    elif isinstance(exc, UnexpectedEOF):
        expected = friendly_expected(set(exc.expected))
        line, column = _end_position(source)
        found = "end of input"
    else:  # pragma: no cover - lark has no other UnexpectedInput subclasses today
        line, column = max(exc.line, 1), max(exc.column, 1)
        expected, found = [], "unexpected input"
    detail = f"{_expectation(expected)} but got {found}"
    return QuerySyntaxError(detail, line, column, source, expected)


def _accepted(exc: UnexpectedInput, fallback: object) -> set[str]:
    """Terminals that really can come next.

    LALR merges look-ahead sets, so ``exc.expected`` may list tokens that only fit in another
    context; the interactive parser's ``accepts()`` tries each one.
    """
    interactive = getattr(exc, "interactive_parser", None)
    if interactive is not None:
        try:
            return set(interactive.accepts())
        except Exception:  # pragma: no cover - fall back to lark's own (wider) set
            pass
    return set(fallback)  # type: ignore[call-overload]


def _end_position(source: str) -> tuple[int, int]:
    """1-based line and column just after the last meaningful character (comments skipped)."""
    lines = source.splitlines() or [""]
    for number in range(len(lines), 0, -1):
        code = _strip_comment(lines[number - 1]).rstrip()
        if code:
            return number, len(code) + 1
    return 1, 1


def _strip_comment(line: str) -> str:
    index = line.find("--")
    return line if index < 0 else line[:index]
