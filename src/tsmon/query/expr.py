"""Expressions (``WHEN mean(5m) > 0.9``, ``EMIT abs(value - last)``): their syntax-tree
nodes, how they are built from lark trees, and their canonical text.

The builder reports every semantic error through a ``fail`` callback
(:data:`~tsmon.query.tokens.Fail`) at the offending token; :func:`format_expr` writes text
that parses back to an equal tree, with only the parentheses it needs.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from lark import Token, Tree

from tsmon.core.units import format_duration_ms
from tsmon.core.view import STATS
from tsmon.core.window_spec import WindowKind, WindowSpec
from tsmon.query.grammar import STAT_ALIASES
from tsmon.query.nodes import Node
from tsmon.query.tokens import Fail, duration_ms, finite_number, format_number, format_window, pos
from tsmon.query.tokens import window_spec as read_window

#: Scalar functions -> number of arguments.
FUNCTIONS: dict[str, int] = {"abs": 1}
ARITH_OPS = ("+", "-", "*", "/", "%")
COMPARE_OPS = ("<", "<=", ">", ">=", "==", "!=")
#: Comparison spellings -> canonical operator.
COMPARE_ALIASES: dict[str, str] = {"=": "==", "<>": "!=", **{op: op for op in COMPARE_OPS}}


@dataclass(frozen=True, kw_only=True)
class Expr(Node):
    """Base of expression nodes."""


@dataclass(frozen=True)
class Number(Expr):
    """A numeric literal (never negative; ``-3`` is ``Neg(Number(3.0))``)."""

    value: float


@dataclass(frozen=True)
class Duration(Expr):
    """A duration literal such as ``5m`` used as a number: its value in seconds."""

    ms: int

    @property
    def seconds(self) -> float:
        """The constant's value.

        Examples
        --------
        >>> Duration(300_000).seconds
        300.0
        """
        return self.ms / 1000.0


@dataclass(frozen=True)
class Value(Expr):
    """The triggering point's value, spelled ``value`` or ``last``."""

    spelling: str = "value"


@dataclass(frozen=True)
class Timestamp(Expr):
    """``ts``: the triggering point's timestamp in seconds since the epoch (float), everywhere."""


@dataclass(frozen=True)
class TimestampMs(Expr):
    """``ts_ms``: the timestamp in exact int64 epoch milliseconds; only a whole EMIT item."""


@dataclass(frozen=True)
class SeriesName(Expr):
    """``series``: the trigger series' name; only allowed as a whole EMIT item."""


#: Nodes that are not numbers and may only be a whole EMIT item, never part of an expression.
WHOLE_ITEM_ONLY: tuple[type[Expr], ...] = (SeriesName, TimestampMs)


@dataclass(frozen=True)
class Stat(Expr):
    """A window statistic such as ``mean(5m)``; ``name`` is canonical (``avg`` -> ``mean``)."""

    name: str
    window: WindowSpec


@dataclass(frozen=True)
class Call(Expr):
    """A scalar function call such as ``abs(x)``."""

    func: str
    args: tuple[Expr, ...]


@dataclass(frozen=True)
class Neg(Expr):
    """Unary minus."""

    operand: Expr


@dataclass(frozen=True)
class Pos(Expr):
    """Unary plus (kept so canonical text mirrors the source)."""

    operand: Expr


@dataclass(frozen=True)
class BinOp(Expr):
    """Arithmetic: ``op`` is one of ``+ - * / %``."""

    op: str
    left: Expr
    right: Expr


@dataclass(frozen=True)
class Compare(Expr):
    """A comparison; ``op`` is canonical (``=`` -> ``==``, ``<>`` -> ``!=``)."""

    op: str
    left: Expr
    right: Expr


@dataclass(frozen=True)
class Not(Expr):
    """Logical NOT."""

    operand: Expr


@dataclass(frozen=True)
class BoolOp(Expr):
    """Logical ``and`` / ``or`` of two operands."""

    op: str
    left: Expr
    right: Expr


_NAMES: dict[str, type[Expr]] = {
    "value": Value,
    "ts": Timestamp,
    "ts_ms": TimestampMs,
    "series": SeriesName,
}


# ---- building -----------------------------------------------------------------------------------


def build_expr(tree: Tree | Token, fail: Fail) -> Expr:
    """The expression of a lark tree of rule ``expr`` (or of one of its tokens).

    Examples
    --------
    >>> from tsmon.query.grammar import parse_tree
    >>> def fail(detail, where):
    ...     raise ValueError(detail)
    >>> build_expr(parse_tree("-value % 2", "expr"), fail)
    BinOp(op='%', left=Neg(operand=Value(spelling='value')), right=Number(value=2.0))
    >>> build_expr(parse_tree("mean > 1", "expr"), fail)
    Traceback (most recent call last):
    ...
    ValueError: mean needs a window, e.g. mean(5m) or mean(100 points)
    """
    kind = tree.data if isinstance(tree, Tree) else tree.type
    kids = tree.children if isinstance(tree, Tree) else []
    at = pos(tree)
    if kind == "number":
        return Number(finite_number(kids[0], fail), **at)
    if kind == "duration":
        return Duration(duration_ms(kids[0], fail), **at)
    if kind == "name":
        return _name(kids[0], fail)
    if kind == "bare_stat":
        stat = STAT_ALIASES[kids[0].lower()]
        if stat != "last":
            fail(f"{stat} needs a window, e.g. {stat}(5m) or {stat}(100 points)", kids[0])
        return Value("last", **at)
    if kind == "stat":
        window = read_window(kids[1], fail)
        if kids[2] is not None:
            if window.kind is WindowKind.LANDMARK:
                fail(
                    f"BEFORE takes a count or time window, e.g. {kids[0]}(1h before); "
                    f"a window since an instant cannot leave the point out",
                    kids[2],
                )
            window = dataclasses.replace(window, before=True)
        return Stat(STAT_ALIASES[kids[0].lower()], window, **at)
    if kind == "call":
        return _call(kids[0], kids[1], fail)
    if kind in ("unary", "bool_not"):
        operand = build_expr(kids[-1], fail)
        if kind == "bool_not":
            return Not(operand, **at)
        return (Neg if kids[0] == "-" else Pos)(operand, **at)
    if kind in ("arith", "compare"):
        left, op, right = kids
        lhs, rhs = build_expr(left, fail), build_expr(right, fail)
        if kind == "compare":
            return Compare(COMPARE_ALIASES[str(op)], lhs, rhs, **at)
        return BinOp(str(op), lhs, rhs, **at)
    if kind in ("bool_and", "bool_or"):
        return BoolOp(kind[5:], build_expr(kids[0], fail), build_expr(kids[1], fail), **at)
    raise AssertionError(f"unhandled grammar rule {kind}")  # pragma: no cover


def _name(token: Token, fail: Fail) -> Expr:
    word = token.lower()
    if word in _NAMES:
        return _NAMES[word](**pos(token))
    if word in FUNCTIONS:
        fail(f"{word} is a function; call it like {word}(value)", token)
    fail(
        f"unknown name '{token}'; use value, last, ts, a number, a duration like 5m, "
        "or a statistic like mean(5m)",
        token,
    )


def _call(token: Token, args: Tree | None, fail: Fail) -> Expr:
    func = token.lower()
    if func not in FUNCTIONS:
        known = ", ".join([*FUNCTIONS, *STATS])
        fail(f"unknown function '{token}'; functions are {known}", token)
    params = tuple(build_expr(arg, fail) for arg in args.children) if args is not None else ()
    arity = FUNCTIONS[func]
    if len(params) != arity:
        plural = "" if arity == 1 else "s"
        fail(f"{func} takes exactly {arity} argument{plural}, got {len(params)}", token)
    return Call(func, params, **pos(token))


def check_no_series(expr: Expr, fail: Fail) -> None:
    """Reject ``series`` and ``ts_ms`` anywhere but as a whole EMIT item."""
    for node in expr.walk():
        if isinstance(node, SeriesName):
            fail("'series' is a string; it can only be a whole EMIT item", node)
        if isinstance(node, TimestampMs):
            fail(
                "'ts_ms' (int64 milliseconds) can only be a whole EMIT item; "
                "use ts (seconds) in expressions",
                node,
            )


# ---- writing ------------------------------------------------------------------------------------

# Binding strength, loosest first; mirrors the grammar's precedence levels.
_OR, _AND, _NOT, _CMP, _ADD, _MUL, _UNARY, _ATOM = range(1, 9)
_LEVEL = {"or": _OR, "and": _AND, "+": _ADD, "-": _ADD, "*": _MUL, "/": _MUL, "%": _MUL}


def _level(expr: Expr) -> int:
    if isinstance(expr, (BoolOp, BinOp)):
        return _LEVEL[expr.op]
    if isinstance(expr, Not):
        return _NOT
    if isinstance(expr, Compare):
        return _CMP
    if isinstance(expr, (Neg, Pos)):
        return _UNARY
    return _ATOM


def _wrap(expr: Expr, minimum: int) -> str:
    text = format_expr(expr)
    return f"({text})" if _level(expr) < minimum else text


def format_expr(expr: Expr) -> str:
    """Canonical text of an expression, with only the parentheses it needs.

    Examples
    --------
    >>> from tsmon.query import parse_expr
    >>> format_expr(parse_expr("ABS( last-avg(1h) ) > 3*STD(1h) or not (value = 1)"))
    'abs(last - mean(1h)) > 3 * stddev(1h) OR NOT value == 1'
    """
    if isinstance(expr, Number):
        return format_number(expr.value)
    if isinstance(expr, Duration):
        return format_duration_ms(expr.ms)
    if isinstance(expr, Value):
        return expr.spelling
    if isinstance(expr, Timestamp):
        return "ts"
    if isinstance(expr, TimestampMs):
        return "ts_ms"
    if isinstance(expr, SeriesName):
        return "series"
    if isinstance(expr, Stat):
        return f"{expr.name}({format_window(expr.window)})"
    if isinstance(expr, Call):
        return f"{expr.func}({', '.join(format_expr(arg) for arg in expr.args)})"
    if isinstance(expr, (Neg, Pos)):
        sign = "-" if isinstance(expr, Neg) else "+"
        inner = expr.operand
        # Nested signs get parentheses: "--" would start a comment.
        minimum = _ATOM if isinstance(inner, (Neg, Pos)) else _UNARY
        return sign + _wrap(inner, minimum)
    if isinstance(expr, Not):
        return "NOT " + _wrap(expr.operand, _NOT)
    if isinstance(expr, Compare):
        return f"{_wrap(expr.left, _ADD)} {expr.op} {_wrap(expr.right, _ADD)}"
    if isinstance(expr, (BinOp, BoolOp)):
        level = _LEVEL[expr.op]
        op = expr.op.upper()
        return f"{_wrap(expr.left, level)} {op} {_wrap(expr.right, level + 1)}"
    raise TypeError(f"cannot format {type(expr).__name__}; pass an expression node")
