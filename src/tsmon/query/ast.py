"""Syntax tree of the query language: frozen dataclasses that remember where they came from.

Positions (``line``, ``column``, 1-based) are keyword-only and excluded from equality and
hashing, so two trees parsed from differently laid-out text compare equal when they mean the
same thing.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, fields

from tsmon.core.window_spec import WindowSpec
from tsmon.query.patterns import series_matches

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


#: Aggregates of a bounded-aggregate query (``QUERY name AS SUM(...) WITHIN 5``).
AGGREGATES: tuple[str, ...] = ("avg", "sum", "min", "max")
#: Aggregates that take weights; MIN and MAX take plain series only.
WEIGHTED_AGGREGATES: tuple[str, ...] = ("avg", "sum")


@dataclass(frozen=True)
class Term(Node):
    """One series of an aggregate with its pooled weight ``K_i,j`` (1 for MIN and MAX).

    ``series`` is a series name or an fnmatch glob (it is a glob when it contains ``*``, ``?``
    or ``[``); globs are expanded by :func:`tsmon.query.aggregate.resolve_aggregate`. The
    position is that of the series' first mention.

    Examples
    --------
    >>> Term(-2.0, "b.x")
    Term(coefficient=-2.0, series='b.x')
    """

    coefficient: float
    series: str


@dataclass(frozen=True)
class AggregateDef(Node):
    """One ``QUERY name AS AGG(...) WITHIN delta`` statement: a bounded-aggregate query.

    The answer is an interval ``[lo, hi]`` of width at most ``delta`` holding the exact
    aggregate of the series' current values (Olston, Jiang & Widom 2003):

    * ``sum``: ``Σ K_i·V_i``; ``avg``: ``(1/|S|)·Σ K_i·V_i`` with ``|S|`` the number of
      distinct series (Appendix B); weights may be negative but never 0;
    * ``min`` / ``max``: the least / greatest ``V_i``; every weight is 1 (Appendix A).

    ``terms`` are pooled: one :class:`Term` per distinct series spelling, in order of first
    mention, with the weights of all its mentions summed (so ``SUM(a, a)`` equals ``SUM(2*a)``;
    for MIN and MAX a repeated series counts once). A glob is pooled by its spelling here;
    :func:`tsmon.query.aggregate.resolve_aggregate` pools again after expanding it.
    ``text`` is the statement's source text.

    Examples
    --------
    >>> q = AggregateDef("diff", "sum", (Term(2.0, "a.x"), Term(-1.0, "b.x")), 0.5)
    >>> q.weights, q.delta
    ({'a.x': 2.0, 'b.x': -1.0}, 0.5)
    """

    name: str
    aggregate: str
    terms: tuple[Term, ...]
    delta: float
    text: str = field(default="", compare=False, repr=False)

    @property
    def weights(self) -> dict[str, float]:
        """Series (or glob) spelling -> weight, in the order of the terms."""
        return {term.series: term.coefficient for term in self.terms}


@dataclass(frozen=True)
class AlterPrecision(Node):
    """``ALTER QUERY name WITHIN delta [IMMEDIATELY]``: a new width for an aggregate query.

    It defines no query; it changes the precision constraint of one registered earlier (in
    the same file or before). Following §3.4 of the paper, a larger ``delta`` takes effect at
    the next bound growth; a smaller one is reached gradually, as bounds shrink, unless
    ``immediately`` is set, which asks the coordinator to shrink bounds at once (explicit
    shrink messages). ``IMMEDIATELY`` makes no difference when ``delta`` grows.

    Examples
    --------
    >>> AlterPrecision("diff", 0.1, immediately=True)
    AlterPrecision(name='diff', delta=0.1, immediately=True)
    """

    name: str
    delta: float
    immediately: bool = False
    text: str = field(default="", compare=False, repr=False)


#: The largest k of a top-k query (``QUERY name AS TOP k OF ...``).
MAX_TOPK: int = 1_000_000


@dataclass(frozen=True)
class TopKDef(Node):
    """One ``QUERY name AS TOP|BOTTOM k OF objects BY metric [OVER d] WITHIN eps`` statement.

    A distributed top-k query (Babcock & Olston 2003): the answer is the ``k`` objects with
    the largest metric (the smallest when ``bottom``), correct within ``eps``: no object left
    out of the answer is more than ``eps`` better than an object in it (``eps == 0`` asks for
    the exact top k).

    The objects are the names matching the fnmatch pattern ``objects`` (case-sensitive, like
    every series pattern, see :mod:`tsmon.query.patterns`); the value of object ``o`` is read
    from the series ``f"{o}.{metric}"``. ``window_ms`` is the ``OVER`` sliding window in
    milliseconds, or None when the metric counts from when the query started. ``text`` is the
    statement's source text.

    Examples
    --------
    >>> q = TopKDef("popular", False, 10, "doc:*", "hits", 900_000, 0.0)
    >>> q.series_of("doc:7"), q.object_of("doc:7.hits"), q.object_of("img:7.hits")
    ('doc:7.hits', 'doc:7', None)
    >>> q == TopKDef("popular", False, 10, "doc:*", "hits", 900_000, 0.0, text="QUERY ...")
    True
    """

    name: str
    bottom: bool
    k: int
    objects: str
    metric: str
    window_ms: int | None
    eps: float
    text: str = field(default="", compare=False, repr=False)

    def series_of(self, obj: str) -> str:
        """The series holding the metric of object ``obj``: ``f"{obj}.{metric}"``.

        Examples
        --------
        >>> TopKDef("idle", True, 1, "server*", "load", None, 2.5).series_of("server3")
        'server3.load'
        """
        return f"{obj}.{self.metric}"

    def object_of(self, series: str) -> str | None:
        """The object whose metric ``series`` holds, or None when it holds no object's metric.

        The inverse of :meth:`series_of`: ``series`` must be ``"<o>.<metric>"`` with ``o``
        matching :attr:`objects` (case-sensitive fnmatch). The metric holds no ``.``, so the
        split is unique.

        Examples
        --------
        >>> q = TopKDef("p", False, 3, "doc.*", "hits", None, 0.0)
        >>> q.object_of("doc.a.hits"), q.object_of("doc.a.HITS"), q.object_of("Doc.a.hits")
        ('doc.a', None, None)
        >>> q.object_of("doc.a.xhits"), q.object_of("hits")
        (None, None)
        """
        suffix = "." + self.metric
        if not series.endswith(suffix):
            return None
        obj = series[: -len(suffix)]
        return obj if series_matches(obj, (self.objects,)) else None


@dataclass(frozen=True)
class AlterTopK(Node):
    """``ALTER QUERY name TOP|BOTTOM k [WITHIN eps]``: a new k (and tolerance) for a top-k query.

    It defines no query; it changes one registered earlier (in the same file or before). The
    direction is restated (``bottom`` is True for ``BOTTOM``); ``eps`` is None when the
    statement has no ``WITHIN``, keeping the query's tolerance.

    Examples
    --------
    >>> AlterTopK("popular", False, 20, None), AlterTopK("idle", True, 3, 0.0)
    (AlterTopK(name='popular', bottom=False, k=20, eps=None),
     AlterTopK(name='idle', bottom=True, k=3, eps=0.0))
    """

    name: str
    bottom: bool
    k: int
    eps: float | None
    text: str = field(default="", compare=False, repr=False)


#: Extrema over time of a standing query (``QUERY name AS MAX OVER 30m OF SUM(...) ...``).
EXTREMA: tuple[str, ...] = ("max", "min")


@dataclass(frozen=True)
class StandingDef(Node):
    """One ``QUERY name AS ... WITHIN eps CONFIDENCE p`` statement: a standing aggregate query.

    Standing queries with probabilistic deferral (Zhu & Ravishankar 2004): the linear
    aggregate ``A = Σ a_i·S_i`` of the series' current values (``aggregate`` is ``"sum"``, or
    ``"avg"``, which divides by the number of distinct series) is re-evaluated only when a
    drifting-Brownian-motion model of ``A`` says that ``|A(t) - A(t_eval)|`` may exceed ``eps``
    with a probability above ``1 - confidence`` (§4.2). ``terms`` are pooled as in
    :class:`AggregateDef` (one :class:`Term` per distinct series spelling, globs included).

    * ``eps`` is > 0: an absolute tolerance in the units of ``A``, or, when ``relative``
      (``WITHIN 1%``), the fraction ``p / 100`` of ``|A|`` (so ``0 < eps < 1``, Equation 9);
    * ``confidence`` is the belief threshold ``p``, ``0 < p < 1``;
    * ``extremum`` (``"max"`` / ``"min"``) asks for the largest / smallest value of ``A`` over
      a window instead (§4.3, Theorem 1): a sliding ``window`` (canonical text such as
      ``"30m"`` or ``"100 points"``, ``MAX OVER 30m OF ...``) or a landmark window, from the
      instant ``landmark_ms`` (epoch ms, ``MAX SINCE 2026-01-01T00:00:00Z OF ...``) or from when
      the query started (``since_start``, ``MAX SINCE START OF ...``). Exactly one of the
      three is set when ``extremum`` is, none otherwise.

    ``text`` is the statement's source text.

    Examples
    --------
    >>> q = StandingDef("port", "sum", (Term(0.3, "ibm.px"), Term(0.7, "msft.px")), 0.5, False, 0.9)
    >>> q.weights, q.eps, q.relative, q.confidence, q.extremum
    ({'ibm.px': 0.3, 'msft.px': 0.7}, 0.5, False, 0.9, None)
    >>> peak = StandingDef("peak", "avg", (Term(1.0, "a.px"),), 0.01, True, 0.95, "max", "30m")
    >>> peak.window, peak.landmark_ms, peak.since_start
    ('30m', None, False)
    >>> peak == StandingDef(
    ...     "peak", "avg", (Term(1.0, "a.px"),), 0.01, True, 0.95, "max", "30m", text="QUERY ..."
    ... )
    True
    """

    name: str
    aggregate: str
    terms: tuple[Term, ...]
    eps: float
    relative: bool
    confidence: float
    extremum: str | None = None
    window: str | None = None
    landmark_ms: int | None = None
    since_start: bool = False
    text: str = field(default="", compare=False, repr=False)

    @property
    def weights(self) -> dict[str, float]:
        """Series (or glob) spelling -> weight, in the order of the terms.

        Examples
        --------
        >>> StandingDef("d", "sum", (Term(2.0, "a.x"), Term(-1.0, "b.x")), 1.0, False, 0.9).weights
        {'a.x': 2.0, 'b.x': -1.0}
        """
        return {term.series: term.coefficient for term in self.terms}


#: Queries answered from a SWAT tree (``QUERY name AS INNER|POINT|RANGE(...)``).
WAVELET_KINDS: tuple[str, ...] = ("inner", "point", "range")
#: The default ``N`` of a SWAT tree (``OVER 1024 points``): the series' last N values.
DEFAULT_SWAT_POINTS: int = 1024
#: Aggregates answered from an exponential histogram (``QUERY name AS APPROX COUNT|SUM(...)``).
APPROX_KINDS: tuple[str, ...] = ("count", "sum")
#: The largest ``R`` of ``APPROX SUM(...) ... MAX R``: 2**53, the integers a float holds exactly.
MAX_SUM_VALUE: int = 2**53
#: Dependent aggregates of a correlated-aggregate query (``COUNT|SUM(x > AVG)``).
DEPENDENT_AGGREGATES: tuple[str, ...] = ("count", "sum")
#: Independent aggregates of a correlated-aggregate query -> the comparison each one takes.
INDEPENDENT_AGGREGATES: dict[str, str] = {"avg": ">", "min": "<=", "max": ">="}


@dataclass(frozen=True)
class WaveletDef(Node):
    """One ``QUERY name AS INNER|POINT|RANGE(series, ...)`` statement: a wavelet query.

    It is answered from a SWAT tree (Bulut & Singh 2003, a wavelet summary of the series'
    last ``window_points`` values, ``OVER N points``, a power of two >= 2). Positions count
    back from the newest value: 0 is the newest, ``window_points - 1`` the oldest kept.

    * ``inner``: the inner product ``Σ weights[j] · x[indices[j]]`` (``INNER(s, W [AT I])``;
      the parser fills in ``indices`` as ``0 .. len(W) - 1`` when AT is left out);
    * ``point``: the value ``x[position]`` (``POINT(s, i)``);
    * ``range``: the positions ``lo .. hi`` (``span``, inclusive) whose value lies within
      ``value ± radius`` (``RANGE(s, lo..hi, v ± r)``).

    ``within`` is the precision δ > 0 an INNER or POINT answer must meet (``WITHIN δ``), None
    for the finest the tree holds; a RANGE has none. ``text`` is the statement's source text.

    Examples
    --------
    >>> q = WaveletDef("recent", "inner", "temp.v", weights=(8.0, 4.0), indices=(0, 1), within=20.0)
    >>> q.window_points, q.position, q.span, q
    (1024, None, None, WaveletDef(name='recent', kind='inner', series='temp.v', window_points=1024,
        weights=(8.0, 4.0), indices=(0, 1), position=None, span=None, value=None, radius=None,
        within=20.0))
    >>> near = WaveletDef("near", "range", "temp.v", 256, span=(0, 64), value=30.0, radius=2.0)
    >>> near == WaveletDef("near", "range", "temp.v", 256, span=(0, 64), value=30.0, radius=2.0,
    ...                    text="QUERY near ...")
    True
    """

    name: str
    kind: str
    series: str
    window_points: int = DEFAULT_SWAT_POINTS
    weights: tuple[float, ...] = ()
    indices: tuple[int, ...] = ()
    position: int | None = None
    span: tuple[int, int] | None = None
    value: float | None = None
    radius: float | None = None
    within: float | None = None
    text: str = field(default="", compare=False, repr=False)


@dataclass(frozen=True)
class ApproxDef(Node):
    """One ``QUERY name AS APPROX COUNT|SUM(...) OVER N points WITHIN p%`` statement.

    A basic count or sum over a sliding window of the series' last ``window_points`` values,
    answered from an exponential histogram (Datar, Gionis, Indyk & Motwani 2002) within the
    relative error ``eps`` (``WITHIN p%``, ``eps = p / 100``, ``0 < eps < 1``):

    * ``count``: how many of the values satisfy ``value <op> threshold``
      (``APPROX COUNT(s > 0)``; ``op`` is canonical, ``=`` -> ``==``, ``<>`` -> ``!=``);
    * ``sum``: the sum of the values, which must be integers in ``[0, max_value]``
      (``APPROX SUM(s) ... MAX R``).

    ``text`` is the statement's source text.

    Examples
    --------
    >>> ApproxDef("errs", "count", "errors.n", 10_000, 0.01, ">", 0.0)
    ApproxDef(name='errs', kind='count', series='errors.n', window_points=10000, eps=0.01, op='>',
        threshold=0.0, max_value=None)
    >>> ApproxDef("bytes", "sum", "bytes.n", 10_000, 0.005, max_value=1500).max_value
    1500
    """

    name: str
    kind: str
    series: str
    window_points: int
    eps: float
    op: str | None = None
    threshold: float | None = None
    max_value: int | None = None
    text: str = field(default="", compare=False, repr=False)


@dataclass(frozen=True)
class CorrelatedDef(Node):
    """One ``QUERY name AS COUNT|SUM(series <cmp> AVG|MIN|MAX) [OVER N points]`` statement.

    A correlated aggregate (Gehrke, Korn & Srivastava 2001): the ``dependent`` aggregate (the
    count, or the sum, of the values) over the values selected by the ``independent`` one:

    * ``avg``: the values above the average, ``x > AVG`` (``eps`` is 0);
    * ``min``: the values within a factor of the minimum, ``x <= (1 + eps) · MIN``, written
      ``x <= c * MIN`` with ``c = 1 + eps >= 1``;
    * ``max``: the values within a factor of the maximum, ``x >= (1 - eps) · MAX``, written
      ``x >= c * MAX`` with ``c = 1 - eps``, ``0 < c <= 1``.

    ``window_points`` is the sliding window of ``OVER N points``, or None for a landmark
    window, since the query started. ``text`` is the statement's source text.

    Examples
    --------
    >>> q = CorrelatedDef("fast", "count", "calls.dur", "min", 0.1, 500)
    >>> q.comparison, q
    ('<=', CorrelatedDef(name='fast', dependent='count', series='calls.dur', independent='min',
        eps=0.1, window_points=500))
    """

    name: str
    dependent: str
    series: str
    independent: str
    eps: float = 0.0
    window_points: int | None = None
    text: str = field(default="", compare=False, repr=False)

    @property
    def comparison(self) -> str:
        """The comparison the independent aggregate takes: ``>`` (AVG), ``<=`` (MIN), ``>=`` (MAX).

        Examples
        --------
        >>> CorrelatedDef("heavy", "sum", "calls.dur", "avg").comparison
        '>'
        """
        return INDEPENDENT_AGGREGATES[self.independent]


#: Queries answered from stream summaries (wavelets, exponential and correlated histograms).
SummaryDef = WaveletDef | ApproxDef | CorrelatedDef

#: Anything :func:`tsmon.query.parser.parse_queries` returns.
Statement = (
    QueryDef
    | AggregateDef
    | AlterPrecision
    | TopKDef
    | AlterTopK
    | StandingDef
    | WaveletDef
    | ApproxDef
    | CorrelatedDef
)
