"""Standing queries with probabilistic deferral, ``QUERY name AS SUM|AVG(...) WITHIN eps
CONFIDENCE p`` and ``QUERY name AS MAX|MIN OVER|SINCE ... OF SUM|AVG(...) WITHIN eps
CONFIDENCE p``: their syntax-tree node, builder (the aggregate, the window, ε and p) and
canonical text.

The syntax is in ``grammar.lark`` ("Standing aggregate queries"): an ``aggregate_body`` with a
CONFIDENCE clause, or a ``standing_body``. The arguments of the aggregate are read and pooled
as those of bounded aggregates (:func:`~tsmon.query.terms.pooled_terms`), windows as those of
statistics (:func:`~tsmon.query.tokens.window_spec`). Every error is a
:class:`~tsmon.query.errors.QuerySyntaxError` at the offending token, raised by the ``fail``
callback the parser passes in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

from lark import Token, Tree

from tsmon.core.timestamps import format_instant_ms
from tsmon.core.units import abbreviate
from tsmon.core.window_spec import WindowKind, WindowSpec
from tsmon.query.nodes import Node
from tsmon.query.terms import WEIGHTED_AGGREGATES, Term, format_terms, pooled_terms
from tsmon.query.tokens import (
    DURATION,
    NOT_FINITE,
    NUMBER,
    Fail,
    format_number,
    format_percent,
    instant_ms,
    percent_fraction,
    pos,
    shift,
    source_text,
    window_spec,
    within_number,
)

_START = "start"

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
      a window instead (§4.3, Theorem 1): a sliding ``window`` (a
      :class:`~tsmon.core.window_spec.WindowSpec`, ``MAX OVER 30m OF ...``) or a landmark
      window, from the instant ``landmark_ms`` (epoch ms, ``MAX SINCE 2026-01-01T00:00:00Z OF
      ...``) or from when the query started (``since_start``, ``MAX SINCE START OF ...``).
      Exactly one of the three is set when ``extremum`` is, none otherwise.

    ``text`` is the statement's source text.

    Examples
    --------
    >>> from tsmon.query.terms import Term
    >>> q = StandingDef("port", "sum", (Term(0.3, "ibm.px"), Term(0.7, "msft.px")), 0.5, False, 0.9)
    >>> q.weights, q.eps, q.relative, q.confidence, q.extremum
    ({'ibm.px': 0.3, 'msft.px': 0.7}, 0.5, False, 0.9, None)
    >>> from tsmon.core.window_spec import WindowSpec
    >>> half = WindowSpec.time(1_800_000)
    >>> peak = StandingDef("peak", "avg", (Term(1.0, "a.px"),), 0.01, True, 0.95, "max", half)
    >>> str(peak.window), peak.landmark_ms, peak.since_start
    ('30m', None, False)
    >>> peak == StandingDef(
    ...     "peak", "avg", (Term(1.0, "a.px"),), 0.01, True, 0.95, "max", half, text="QUERY ..."
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
    window: WindowSpec | None = None
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


# ---- building -----------------------------------------------------------------------------------


def tolerance(token: Token, fail: Fail) -> tuple[float, bool]:
    """The ``(eps, relative)`` of a standing query's ``WITHIN``: a plain number > 0, or a
    percentage ``p%`` with ``0 < p < 100``, read as the fraction ``p / 100`` (rounded once).

    Examples
    --------
    >>> def fail(detail, where):
    ...     raise ValueError(detail)
    >>> tolerance(Token("WIDTH", "0.5"), fail), tolerance(Token("WIDTH", "1%"), fail)
    ((0.5, False), (0.01, True))
    >>> tolerance(Token("WIDTH", "7%"), fail)  # 7/100, not 7 * 0.01 == 0.07000000000000001
    (0.07, True)
    >>> tolerance(Token("WIDTH", "100%"), fail)
    Traceback (most recent call last):
    ...
    ValueError: WITHIN takes a relative tolerance > 0% and < 100% (a fraction of |A|, the
        aggregate's absolute value), got 100%
    """
    text = str(token)
    shown = abbreviate(text)
    if not text.endswith("%"):
        value = within_number(
            token, fail, bound="> 0", units="the aggregate", example="0.5", noun="tolerance"
        )
        if value <= 0:
            fail(
                "WITHIN takes a tolerance > 0 (how far the aggregate may drift from its last "
                f"evaluated value), or a percentage like 1%, got {shown}",
                token,
            )
        return value, False
    if not NUMBER.fullmatch(text[:-1]):
        fail(f"WITHIN takes a number like 0.5 or a percentage like 1%, got '{shown}'", token)
    out_of_range = (
        "WITHIN takes a relative tolerance > 0% and < 100% (a fraction of |A|, the "
        f"aggregate's absolute value), got {shown}"
    )
    return percent_fraction(token, fail, noun="tolerance", out_of_range=out_of_range), True


def confidence(token: Token, fail: Fail) -> float:
    """The ``p`` of ``CONFIDENCE p``: a plain number with ``0 < p < 1``.

    Examples
    --------
    >>> def fail(detail, where):
    ...     raise ValueError(detail)
    >>> confidence(Token("PROBABILITY", "0.95"), fail), confidence(Token("PROBABILITY", ".9"), fail)
    (0.95, 0.9)
    >>> confidence(Token("PROBABILITY", "1"), fail)
    Traceback (most recent call last):
    ...
    ValueError: CONFIDENCE takes a probability p with 0 < p < 1 (how likely the answer must
        be to stay within the WITHIN tolerance), got 1
    >>> confidence(Token("PROBABILITY", "90%"), fail)
    Traceback (most recent call last):
    ...
    ValueError: CONFIDENCE takes a probability as a plain number, not a percentage: write
        CONFIDENCE 0.9, not CONFIDENCE 90%
    """
    text = str(token)
    shown = abbreviate(text)
    if text.endswith("%") and NUMBER.fullmatch(text[:-1]):
        fraction = shift(Decimal(text[:-1]), -2)
        write = f"{fraction.normalize():f}" if 0 < fraction < 1 else "0.9"
        fail(
            "CONFIDENCE takes a probability as a plain number, not a percentage: write "
            f"CONFIDENCE {abbreviate(write)}, not CONFIDENCE {shown}",
            token,
        )
    if not NUMBER.fullmatch(text):
        if text.lstrip("+-").lower() in NOT_FINITE:
            fail(f"CONFIDENCE takes a finite probability 0 < p < 1, got '{shown}'", token)
        fail(
            f"CONFIDENCE takes a probability like 0.9 (0 < p < 1), got '{shown}'; "
            "write e.g. CONFIDENCE 0.9",
            token,
        )
    if not 0 < Decimal(text) < 1:
        fail(
            "CONFIDENCE takes a probability p with 0 < p < 1 (how likely the answer must be to "
            f"stay within the WITHIN tolerance), got {shown}",
            token,
        )
    value = float(text)
    if not 0 < value < 1:
        bound = "0" if value == 0 else "1"
        fail(f"CONFIDENCE {shown} is too close to {bound} to be told apart from it", token)
    return value


def _window(outer: Token, tree: Tree, fail: Fail) -> dict[str, object]:
    """The StandingDef fields of ``OVER <window>`` / ``SINCE <instant>|START``."""
    token = tree.children[0]
    word = outer.upper()
    if tree.data == "over_window":
        spec = window_spec(token, fail)
        if spec.kind is WindowKind.LANDMARK:
            fail(
                "OVER takes a sliding window, a duration like 30m or a count like 100 points; "
                f"for a landmark window write {word} SINCE <instant> OF ...",
                token,
            )
        return {"window": spec}
    text = str(token)
    if text.casefold() == _START:
        return {"since_start": True}
    if DURATION.fullmatch(text):
        fail(
            f"SINCE takes an instant like 2026-01-01T00:00:00Z or START, got '{abbreviate(text)}';"
            f" for a sliding window write {word} OVER {text.lstrip('+-')} OF ...",
            token,
        )
    if not text[:1].isdigit():
        fail(
            "SINCE takes an ISO-8601 instant like 2026-01-01T00:00:00Z, or START (when the "
            f"query started), got '{abbreviate(text)}'",
            token,
        )
    example = "SINCE 2026-01-01T00:00:00Z"
    return {"landmark_ms": instant_ms(text, token, fail, example=example)}


def _linear(func: Token, fail: Fail, *, outer: Token | None) -> str:
    """The aggregate of ``func``: SUM or AVG (a standing query watches a linear aggregate)."""
    aggregate = func.lower()
    if aggregate in WEIGHTED_AGGREGATES:
        return aggregate
    name = func.upper()
    if outer is not None:
        fail(
            f"{outer.upper()} ... OF takes a linear aggregate, SUM(...) or AVG(...), "
            f"got {name}(...)",
            func,
        )
    largest = "largest" if aggregate == "max" else "smallest"
    fail(
        f"{name}(...) takes no CONFIDENCE: a standing query watches a linear aggregate, "
        f"SUM(...) or AVG(...); for the {largest} value of one over time write {name} OVER 30m "
        f"OF SUM(...) or {name} SINCE START OF SUM(...), or drop CONFIDENCE for a bounded "
        f"{name}(...)",
        func,
    )
    raise AssertionError("unreachable")  # pragma: no cover


def standing_def(tree: Tree, source: str, fail: Fail) -> StandingDef:
    """``QUERY name AS [MAX|MIN OVER|SINCE ... OF] SUM|AVG(...) WITHIN eps CONFIDENCE p``.

    Examples
    --------
    >>> from tsmon.query import parse_query
    >>> parse_query("QUERY peak AS MAX OVER 30m OF AVG(a.px, b.px) WITHIN 0.5 CONFIDENCE 0.9")
    StandingDef(name='peak', aggregate='avg', terms=(Term(coefficient=1.0, series='a.px'),
        Term(coefficient=1.0, series='b.px')), eps=0.5, relative=False, confidence=0.9,
        extremum='max', window=WindowSpec(kind=<WindowKind.TIME: 'time'>, size=1800000),
        landmark_ms=None, since_start=False)
    """
    name, body = tree.children
    fields: dict[str, object] = {}
    if body.data == "aggregate_body":
        func, *args, within, clause = body.children
        aggregate = _linear(func, fail, outer=None)
    else:
        outer, window, func, *args, within, clause = body.children
        extremum = outer.lower()
        if extremum not in EXTREMA:
            fail(
                "a window (OVER or SINCE) follows MAX or MIN, the largest or smallest value of "
                f"the aggregate over time, e.g. MAX OVER 30m OF SUM(a.x, b.x); got {outer}",
                outer,
            )
        fields = {"extremum": extremum, **_window(outer, window, fail)}
        aggregate = _linear(func, fail, outer=outer)
    terms = pooled_terms(args, aggregate, fail)
    eps, relative = tolerance(within.children[0], fail)
    return StandingDef(
        str(name),
        aggregate,
        terms,
        eps,
        relative,
        confidence(clause.children[0], fail),
        **fields,  # type: ignore[arg-type]
        text=source_text(tree, source),
        **pos(tree),
    )


# ---- writing ------------------------------------------------------------------------------------


def _format_tolerance(eps: float, relative: bool) -> str:
    return f"{format_percent(eps)}%" if relative else format_number(eps)


def format_standing(query: StandingDef) -> str:
    """Canonical text of ``QUERY name AS [MAX|MIN OVER|SINCE ... OF] SUM|AVG(...) WITHIN eps
    CONFIDENCE p``.

    Examples
    --------
    >>> from tsmon.query.terms import Term
    >>> port = (Term(0.3, "ibm.px"), Term(0.7, "msft.px"))
    >>> format_standing(StandingDef("port", "sum", port, 0.5, False, 0.9))
    'QUERY port AS SUM(0.3 * ibm.px + 0.7 * msft.px) WITHIN 0.5 CONFIDENCE 0.9'
    >>> two = (Term(1.0, "a.px"), Term(1.0, "b.px"))
    >>> format_standing(StandingDef("low", "avg", two, 0.02, True, 0.8, "min", "100 points"))
    'QUERY low AS MIN OVER 100 points OF AVG(a.px, b.px) WITHIN 2% CONFIDENCE 0.8'
    >>> format_standing(StandingDef("top", "avg", two, 0.5, False, 0.9, "max", since_start=True))
    'QUERY top AS MAX SINCE START OF AVG(a.px, b.px) WITHIN 0.5 CONFIDENCE 0.9'
    >>> high = StandingDef("high", "sum", two[:1], 0.5, False, 0.9, "max", None, 1767225600000)
    >>> format_standing(high)
    'QUERY high AS MAX SINCE 2026-01-01T00:00:00Z OF SUM(a.px) WITHIN 0.5 CONFIDENCE 0.9'
    """
    text = f"QUERY {query.name} AS "
    if query.extremum is not None:
        if query.window is not None:
            window = f"OVER {query.window}"
        elif query.landmark_ms is not None:
            window = f"SINCE {format_instant_ms(query.landmark_ms)}"
        else:
            window = "SINCE START"
        text += f"{query.extremum.upper()} {window} OF "
    return (
        f"{text}{query.aggregate.upper()}({format_terms(query.terms)}) "
        f"WITHIN {_format_tolerance(query.eps, query.relative)} "
        f"CONFIDENCE {format_number(query.confidence)}"
    )
