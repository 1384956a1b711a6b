"""Syntax tree of the query language: frozen dataclasses that remember where they came from.

Positions (``line``, ``column``, 1-based) are keyword-only and excluded from equality and
hashing, so two trees parsed from differently laid-out text compare equal when they mean the
same thing.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, fields

from tsmon.core.window_spec import WindowSpec

#: Statistic spellings accepted in queries -> canonical statistic names.
STAT_ALIASES: dict[str, str] = {
    "count": "count",
    "sum": "sum",
    "mean": "mean",
    "avg": "mean",
    "var": "var",
    "variance": "var",
    "stddev": "stddev",
    "std": "stddev",
    "min": "min",
    "max": "max",
    "first": "first",
    "last": "last",
    "rate": "rate",
    "slope": "slope",
    "coverage": "coverage",
}
#: Canonical statistic names, in documentation order.
STATS: tuple[str, ...] = tuple(dict.fromkeys(STAT_ALIASES.values()))
#: Scalar functions -> number of arguments.
FUNCTIONS: dict[str, int] = {"abs": 1}
ARITH_OPS = ("+", "-", "*", "/", "%")
COMPARE_OPS = ("<", "<=", ">", ">=", "==", "!=")
#: Comparison spellings -> canonical operator.
COMPARE_ALIASES: dict[str, str] = {"=": "==", "<>": "!=", **{op: op for op in COMPARE_OPS}}


@dataclass(frozen=True, kw_only=True)
class Node:
    """Base of all tree nodes; carries the 1-based source position of the node's first token."""

    line: int = field(default=0, compare=False, repr=False)
    column: int = field(default=0, compare=False, repr=False)

    def children(self) -> tuple[Node, ...]:
        """Direct sub-nodes, left to right.

        Examples
        --------
        >>> BinOp("+", Number(1.0), Value()).children()
        (Number(value=1.0), Value(spelling='value'))
        """
        out: list[Node] = []
        for f in fields(self):
            item = getattr(self, f.name)
            if isinstance(item, Node):
                out.append(item)
            elif isinstance(item, tuple):
                out.extend(x for x in item if isinstance(x, Node))
        return tuple(out)

    def walk(self) -> Iterator[Node]:
        """This node and all nodes below it, depth first (pre-order).

        Examples
        --------
        >>> [type(n).__name__ for n in Call("abs", (Neg(Value()),)).walk()]
        ['Call', 'Neg', 'Value']
        """
        stack: list[Node] = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children()))


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


@dataclass(frozen=True)
class EmitItem(Node):
    """One EMIT item: an expression and its optional ``AS`` alias."""

    expr: Expr
    alias: str | None = None


@dataclass(frozen=True)
class QueryDef(Node):
    """One ``QUERY name ON ...`` statement.

    ``emit`` is empty when the statement has no EMIT clause (the compiler then emits
    ``series, value``); ``since_ms`` is the positive look-back of ``SINCE -<duration>``.
    ``text`` is the statement's source text.

    Examples
    --------
    >>> q = QueryDef("q", ("x.*",), None, (), None, text="QUERY q ON x.*")
    >>> q == QueryDef("q", ("x.*",), None, (), None)
    True
    """

    name: str
    triggers: tuple[str, ...]
    when: Expr | None
    emit: tuple[EmitItem, ...]
    since_ms: int | None
    text: str = field(default="", compare=False, repr=False)
