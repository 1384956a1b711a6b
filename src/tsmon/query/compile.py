"""Compile parsed queries into vectorized evaluators over numpy arrays of triggering points.

Evaluation semantics: arithmetic is float64 with numpy floating-point warnings silenced
(``x/0`` gives ``inf`` or ``nan``, ``x % 0`` gives ``nan``); every comparison involving NaN is
False (``!=`` included); a number used as a condition is true where it is non-zero and not NaN;
booleans used as numbers are 0/1; ``AND``/``OR``/``NOT`` work elementwise.

Time: ``ts`` is the triggering point's timestamp in **seconds** since the epoch (float64), the
same everywhere -- in ``WHEN``, inside ``EMIT`` expressions and as a whole ``EMIT ts`` item --
so it matches duration literals, which are seconds too (``ts - 1700000000 > 5m``). For the exact
timestamp, ``EMIT ts_ms`` gives int64 epoch **milliseconds**; ``ts_ms`` is only allowed as a
whole EMIT item (optionally ``AS name``), never inside an expression, because a float64 result
could not keep it exact. Example: at a point stamped 5000 ms, ``EMIT ts, ts + 0 AS t2, ts_ms``
gives ``5.0, 5.0, 5000``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from tsmon.core.window_spec import WindowSpec
from tsmon.query.aggregate import AggregateDef, AlterPrecision
from tsmon.query.approx import ApproxDef
from tsmon.query.correlated import CorrelatedDef
from tsmon.query.errors import QuerySyntaxError
from tsmon.query.expr import (
    BinOp,
    BoolOp,
    Call,
    Compare,
    Duration,
    Expr,
    Neg,
    Not,
    Number,
    Pos,
    SeriesName,
    Stat,
    Timestamp,
    TimestampMs,
    Value,
    format_expr,
)
from tsmon.query.parser import parse_query
from tsmon.query.patterns import series_matches
from tsmon.query.standing import StandingDef
from tsmon.query.topk import AlterTopK, TopKDef
from tsmon.query.watch import EmitItem, QueryDef
from tsmon.query.wavelet import WaveletDef


class Bindings(Protocol):
    """What an evaluator reads: the triggering points and their window stats."""

    series: str | np.ndarray  # the trigger series (of every point, or one name per point)
    ts_ms: np.ndarray  # int64, one per triggering point
    value: np.ndarray  # float64, the triggering points' values

    def stat(self, name: str, window: WindowSpec) -> np.ndarray:
        """float64 per point, NaN where undefined; ``name`` is a canonical statistic."""
        ...


Evaluator = Callable[[Bindings], np.ndarray]


@dataclass
class ArrayBindings:
    """:class:`Bindings` backed by ready-made arrays, keyed by ``(stat, window)``.

    Examples
    --------
    >>> b = ArrayBindings("x", [1000, 2000], [1.0, 5.0], {("mean", WindowSpec.count(2)): [1, 3]})
    >>> b.stat("mean", WindowSpec.count(2))
    array([1., 3.])
    """

    series: str
    ts_ms: np.ndarray
    value: np.ndarray
    stats: Mapping[tuple[str, WindowSpec], object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.ts_ms = np.asarray(self.ts_ms, dtype=np.int64)
        self.value = np.asarray(self.value, dtype=np.float64)

    def stat(self, name: str, window: WindowSpec) -> np.ndarray:
        """The bound values of ``name`` over ``window``."""
        try:
            return np.asarray(self.stats[(name, window)], dtype=np.float64)
        except KeyError:
            raise KeyError(f"no values bound for {name}({window}); add them to stats") from None


def _num(values: np.ndarray) -> np.ndarray:
    return values.astype(np.float64) if values.dtype == np.bool_ else values


def _truthy(values: np.ndarray) -> np.ndarray:
    if values.dtype == np.bool_:
        return values
    return (values != 0) & ~np.isnan(values)


def _not_equal(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    return np.not_equal(left, right) & ~np.isnan(left) & ~np.isnan(right)


_ARITH = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.true_divide, "%": np.mod}
COMPARISONS = {
    "<": np.less,
    "<=": np.less_equal,
    ">": np.greater,
    ">=": np.greater_equal,
    "==": np.equal,
    "!=": _not_equal,
}
_FUNCTIONS = {"abs": np.abs}


def _constant(number: float) -> Evaluator:
    constant = np.float64(number)  # a scalar the operators broadcast; made an array at the top
    return lambda b: constant  # type: ignore[return-value]


def _build(expr: Expr) -> Evaluator:
    if isinstance(expr, Number):
        return _constant(expr.value)
    if isinstance(expr, Duration):
        return _constant(expr.seconds)
    if isinstance(expr, Value):
        return lambda b: np.asarray(b.value, dtype=np.float64)
    if isinstance(expr, Timestamp):
        return lambda b: np.asarray(b.ts_ms, dtype=np.int64) / 1000.0
    if isinstance(expr, TimestampMs):
        return lambda b: np.asarray(b.ts_ms, dtype=np.int64)
    if isinstance(expr, SeriesName):
        return lambda b: np.full(len(b.value), b.series, dtype=object)
    if isinstance(expr, Stat):
        name, window = expr.name, expr.window
        return lambda b: np.asarray(b.stat(name, window), dtype=np.float64)
    if isinstance(expr, Call):
        func, args = _FUNCTIONS[expr.func], [_build(arg) for arg in expr.args]
        return lambda b: func(*(_num(arg(b)) for arg in args))
    if isinstance(expr, Neg):
        operand = _build(expr.operand)
        return lambda b: np.negative(_num(operand(b)))
    if isinstance(expr, Pos):
        operand = _build(expr.operand)
        return lambda b: _num(operand(b))
    if isinstance(expr, Not):
        operand = _build(expr.operand)
        return lambda b: ~_truthy(operand(b))
    left, right = _build(expr.left), _build(expr.right)  # type: ignore[attr-defined]
    if isinstance(expr, BinOp):
        arith = _ARITH[expr.op]
        return lambda b: arith(_num(left(b)), _num(right(b)))
    if isinstance(expr, Compare):
        compare = COMPARISONS[expr.op]
        return lambda b: compare(_num(left(b)), _num(right(b)))
    if isinstance(expr, BoolOp):
        both = np.logical_and if expr.op == "and" else np.logical_or
        return lambda b: both(_truthy(left(b)), _truthy(right(b)))
    raise TypeError(f"cannot compile {type(expr).__name__}")  # pragma: no cover


def compile_expr(expr: Expr) -> Evaluator:
    """Compile an expression once into a function of :class:`Bindings`.

    The result is a float64 array for numeric expressions and a bool array for comparisons
    and logic (``series`` gives an object array of the series name, ``ts_ms`` int64).

    Examples
    --------
    >>> from tsmon.query import parse_expr
    >>> f = compile_expr(parse_expr("value / (ts - 1) > 1 OR value % 0"))
    >>> f(ArrayBindings("x", [1000, 2000, 3000], [0.0, 2.0, 3.0]))
    array([False,  True,  True])
    """
    evaluate = _build(expr)

    def evaluator(b: Bindings) -> np.ndarray:
        with np.errstate(all="ignore"):
            out = evaluate(b)
        return out if isinstance(out, np.ndarray) else np.full(len(b.value), out)

    return evaluator


_DEFAULT_PAYLOAD = (EmitItem(SeriesName()), EmitItem(Value()))


@dataclass(frozen=True)
class CompiledQuery:
    """A query ready to run: trigger patterns, the windows it reads, and its evaluators.

    Examples
    --------
    >>> q = compile_query("QUERY hot ON host*.cpu WHEN mean(5m) > 0.9 EMIT series, max(1h) AS peak")
    >>> sorted((name, str(w)) for name, w in q.needs)
    [('max', '1h'), ('mean', '5m')]
    >>> b = ArrayBindings("host1.cpu", [0, 1000], [0.5, 0.99], {
    ...     ("mean", WindowSpec.time(300_000)): [0.5, 0.95],
    ...     ("max", WindowSpec.time(3_600_000)): [0.5, 0.99]})
    >>> q.condition(b), [label for label, _ in q.payload], q.payload[1][1](b)
    (array([False,  True]), ['series', 'peak'], array([0.5 , 0.99]))
    """

    name: str
    text: str
    triggers: tuple[str, ...]
    since_ms: int | None
    needs: frozenset[tuple[str, WindowSpec]]
    windows: frozenset[WindowSpec]
    condition: Evaluator = field(repr=False, compare=False)
    payload: tuple[tuple[str, Evaluator], ...] = field(repr=False, compare=False)
    query: QueryDef = field(repr=False, compare=False)

    def matches(self, series: str) -> bool:
        """Whether ``series`` matches one of the trigger patterns (case-sensitive fnmatch).

        Examples
        --------
        >>> q = compile_query("QUERY q ON db?.cpu, web[12].mem")
        >>> q.matches("db1.cpu"), q.matches("db10.cpu"), q.matches("web2.mem")
        (True, False, True)
        """
        return series_matches(series, self.triggers)

    def __reduce__(self) -> tuple[Any, tuple[QueryDef]]:
        """Pickle as the parsed statement and compile again on load (the evaluators are
        closures): source nodes on Spark keep their queries in pickled state."""
        return compile_query, (self.query,)


def _not_a_watch_query(statement: object) -> Exception:
    """The error for compiling anything but a watch query (``QUERY name ON ...``)."""
    if isinstance(statement, AggregateDef):
        what = (
            f"QUERY {statement.name} AS {statement.aggregate.upper()}(...) is a bounded-aggregate "
            "query (resolve it with tsmon.query.aggregate.resolve_aggregate)"
        )
    elif isinstance(statement, AlterPrecision):
        what = f"ALTER QUERY {statement.name} changes the width of an aggregate query"
    elif isinstance(statement, TopKDef):
        direction = "BOTTOM" if statement.bottom else "TOP"
        what = f"QUERY {statement.name} AS {direction} {statement.k} OF ... is a top-k query"
    elif isinstance(statement, AlterTopK):
        what = f"ALTER QUERY {statement.name} changes the k of a top-k query"
    elif isinstance(statement, StandingDef):
        what = (
            f"QUERY {statement.name} AS ... CONFIDENCE {statement.confidence:g} is a standing query"
        )
    elif isinstance(statement, WaveletDef):
        what = (
            f"QUERY {statement.name} AS {statement.kind.upper()}(...) is a wavelet query "
            "(answered from a SWAT tree)"
        )
    elif isinstance(statement, ApproxDef):
        what = (
            f"QUERY {statement.name} AS APPROX {statement.kind.upper()}(...) is an "
            "approximate-aggregate query (answered from an exponential histogram)"
        )
    elif isinstance(statement, CorrelatedDef):
        what = (
            f"QUERY {statement.name} AS {statement.dependent.upper()}(... "
            f"{statement.comparison} {statement.independent.upper()}) is a correlated-aggregate "
            "query"
        )
    else:
        return TypeError(f"compile_query takes a QueryDef or query text, got {statement!r}")
    return QuerySyntaxError(
        f"{what}; compile_query compiles watch queries (QUERY name ON ...) only",
        statement.line or 1,
        statement.column or 1,
    )


def compile_query(query: QueryDef | str) -> CompiledQuery:
    """Compile a parsed statement (or the text of one) into a :class:`CompiledQuery`.

    Examples
    --------
    >>> q = compile_query("QUERY all ON x.y")
    >>> b = ArrayBindings("x.y", [5, 6], [1.0, 2.0])
    >>> q.condition(b), [(label, f(b).tolist()) for label, f in q.payload]
    (array([ True,  True]), [('series', ['x.y', 'x.y']), ('value', [1.0, 2.0])])

    ``ts`` is seconds wherever it appears; ``ts_ms`` is exact int64 milliseconds:

    >>> q = compile_query("QUERY t ON x EMIT ts, ts + 0 AS t2, ts_ms")
    >>> b = ArrayBindings("x", [5000], [1.0])
    >>> [(label, f(b).tolist()) for label, f in q.payload]
    [('ts', [5.0]), ('t2', [5.0]), ('ts_ms', [5000])]

    Aggregate statements (``QUERY name AS ...``, ``ALTER QUERY``) are not watch queries:

    >>> try:
    ...     compile_query("QUERY s AS SUM(a, b) WITHIN 1")
    ... except QuerySyntaxError as err:
    ...     print(err)
    line 1:1: QUERY s AS SUM(...) is a bounded-aggregate query (resolve it with
    tsmon.query.aggregate.resolve_aggregate); compile_query compiles watch queries
    (QUERY name ON ...) only
    """
    if isinstance(query, str):
        query = parse_query(query)
    if not isinstance(query, QueryDef):
        raise _not_a_watch_query(query)
    exprs = [item.expr for item in query.emit]
    if query.when is not None:
        exprs.append(query.when)
    needs = frozenset(
        (node.name, node.window) for expr in exprs for node in expr.walk() if isinstance(node, Stat)
    )
    if query.when is None:
        condition: Evaluator = lambda b: np.ones(len(b.value), dtype=np.bool_)  # noqa: E731
    else:
        evaluate = compile_expr(query.when)
        condition = lambda b: _truthy(evaluate(b))  # noqa: E731
    items = query.emit or _DEFAULT_PAYLOAD
    payload = tuple(
        (item.alias if item.alias is not None else format_expr(item.expr), compile_expr(item.expr))
        for item in items
    )
    return CompiledQuery(
        name=query.name,
        text=query.text,
        triggers=query.triggers,
        since_ms=query.since_ms,
        needs=needs,
        windows=frozenset(window for _, window in needs),
        condition=condition,
        payload=payload,
        query=query,
    )
