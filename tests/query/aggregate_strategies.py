"""Hypothesis strategies for bounded-aggregate statements, and from-scratch reference pooling."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction

from hypothesis import strategies as st
from watch_strategies import names

import tsmon.query as A
from tsmon.query import format_number, format_series

# ---- pieces -----------------------------------------------------------------------------------

_C = r"[A-Za-z0-9_.:*?\[\]!]"
#: Names as they come: plain ones (one token inside AGG(...)), real-looking ones, and arbitrary
#: text that the printer must backquote (spaces, '--', leading digits and '*', unicode).
series_names = st.one_of(
    st.from_regex(rf"{_C}{{1,6}}(-{_C}{{1,4}}){{0,2}}", fullmatch=True),
    st.sampled_from(
        [
            "aws.cpu-utilisation_5f5533",
            "host*.cpu",
            "router7.queue_ms",
            "realTweets.Twitter_volume_AAPL",
            "a.x-b.x",
            "20.cpu",
            "1*.cpu",
            "2*x",
            "7",
            "1e5",
            "-x",
            "x-",
            "a--b",
            "on",
            "within",
            "my series",
        ]
    ),
    st.text(st.characters(exclude_characters="`\r\n"), min_size=1, max_size=8),
)
weights = st.one_of(
    st.sampled_from([1.0, -1.0, 2.0, 0.5, -0.25, 1e-3, 1e20, 3.0]),
    st.floats(allow_nan=False, allow_infinity=False).filter(lambda x: x != 0),
)
deltas = st.one_of(
    st.sampled_from([5.0, 0.5, 0.1, 1e-3, 2.5e-3, 1e9, 5e-324, 1.7976931348623157e308]),
    st.floats(min_value=0, exclude_min=True, allow_infinity=False, allow_nan=False),
)
aggregates = st.sampled_from(A.AGGREGATES)


def _case(draw: st.DrawFn, word: str) -> str:
    return draw(st.sampled_from([word.lower(), word.upper(), word.capitalize()]))


# ---- canonical trees --------------------------------------------------------------------------


@st.composite
def aggregate_defs(draw: st.DrawFn) -> A.AggregateDef:
    """Canonical (pooled) aggregate statements: distinct series, non-zero weights."""
    aggregate = draw(aggregates)
    series = draw(st.lists(series_names, min_size=1, max_size=5, unique=True))
    if aggregate in A.WEIGHTED_AGGREGATES and draw(st.booleans()):
        coefficients = draw(st.lists(weights, min_size=len(series), max_size=len(series)))
    else:
        coefficients = [1.0] * len(series)
    terms = tuple(A.Term(c, s) for c, s in zip(coefficients, series, strict=True))
    return A.AggregateDef(draw(names), aggregate, terms, draw(deltas))


alters = st.builds(A.AlterPrecision, names, deltas, st.booleans())
#: Any statement of the aggregate family.
aggregate_statements = st.one_of(aggregate_defs(), alters)


# ---- raw source text --------------------------------------------------------------------------


@dataclass(frozen=True)
class RawTerm:
    """One term as written: ``sign * (weight / divisor) * series``."""

    sign: int
    weight: float
    divisor: float
    series: str

    @property
    def coefficient(self) -> float:
        value = self.weight / self.divisor
        return -value if self.sign < 0 else value


@dataclass(frozen=True)
class RawAggregate:
    """A drawn aggregate statement: its text and the terms it was written from."""

    text: str
    aggregate: str
    terms: tuple[RawTerm, ...]
    delta: float


_SPACE = st.sampled_from(["", " ", "  ", "\n", " -- note\n"])
# A bare name like `0e` right before `+2*` would be read as part of the number 0e+2.
_NUMBER_START = re.compile(r"(\d+(\.\d*)?|\.\d+)[eE]")


def _series_text(draw: st.DrawFn, series: str) -> str:
    """The name bare or in backquotes (both read the same) when bare is possible."""
    canonical = format_series(series)
    if canonical.startswith("`") or not draw(st.booleans()):
        return canonical
    return f"`{series}`"


def _term_text(draw: st.DrawFn, term: RawTerm, weighted: bool) -> str:
    text = _series_text(draw, term.series)
    if term.weight != 1 or (weighted and draw(st.booleans())):
        star = draw(st.sampled_from(["*", " * ", " *", "* "]))
        text = f"{format_number(term.weight)}{star}{text}"
    if term.divisor != 1:
        text += draw(st.sampled_from(["/", " / ", " /"])) + format_number(term.divisor)
    return text


def _operator_text(draw: st.DrawFn, sign: int, previous: str) -> str:
    """``+`` or ``-`` after the term written as ``previous``.

    A '-' touching a name character on both sides would join two names, so it gets a space on
    one side at least; a '+' right after a bare name such as ``0e`` would extend it into a
    number (``0e+2*x`` is 0e+2 times x), so it gets a space before it (the documented rules).
    """
    if sign > 0 and _NUMBER_START.fullmatch(previous.rsplit("*", 1)[-1].strip()):
        return draw(st.sampled_from([" + ", " +"]))
    if sign > 0:
        return draw(st.sampled_from([" + ", "+", " +", "+ "]))
    if previous.endswith("`"):
        return draw(st.sampled_from([" - ", "-", " -", "- "]))
    return draw(st.sampled_from([" - ", " -", "- "]))


@st.composite
def raw_aggregates(draw: st.DrawFn, series_pool: list[str] | None = None) -> RawAggregate:
    """Statements written the way people do: repeated series, signs, weights before the
    series, divisions after it, several arguments, random case, spacing and comments.

    Series come from a small pool so that repeats (which pool) are common.
    """
    aggregate = draw(aggregates)
    weighted = aggregate in A.WEIGHTED_AGGREGATES
    pool = series_pool or draw(st.lists(series_names, min_size=1, max_size=4, unique=True))
    small = st.sampled_from([1.0, 2.0, 0.5, 3.0, 1e-3, 1.5, 4.0])
    args: list[list[RawTerm]] = []
    for _ in range(draw(st.integers(1, 3))):
        arg = []
        for _ in range(draw(st.integers(1, 3) if weighted else st.just(1))):
            arg.append(
                RawTerm(
                    draw(st.sampled_from([1, -1])) if weighted else 1,
                    draw(st.one_of(small, weights.map(abs))) if weighted else 1.0,
                    draw(st.one_of(st.just(1.0), small)) if weighted else 1.0,
                    draw(st.sampled_from(pool)),
                )
            )
        args.append(arg)
    space = draw(_SPACE)
    texts = []
    for arg in args:
        text, previous = "", ""
        for i, term in enumerate(arg):
            if i == 0:
                sign = {1: draw(st.sampled_from(["", "+"])) if weighted else "", -1: "-"}
                text += sign[term.sign]
            else:
                text += _operator_text(draw, term.sign, previous)
            previous = _term_text(draw, term, weighted)
            text += previous
        texts.append(text)
    delta = draw(deltas)
    text = (
        f"{_case(draw, 'query')} {draw(names)} {_case(draw, 'as')} {space}"
        f"{_case(draw, aggregate)}({space}{(space + ',' + ' ').join(texts)}{space})"
        f"{space}{_case(draw, 'within')} {format_number(delta)}"
    )
    terms = tuple(term for arg in args for term in arg)
    return RawAggregate(text, aggregate, terms, delta)


# ---- reference pooling ------------------------------------------------------------------------


def reference_pool(aggregate: str, pairs: list[tuple[float, str]]) -> dict[str, float] | None:
    """Pool ``(weight, series)`` pairs from scratch: exact rational sums rounded once, in
    order of first mention; MIN/MAX count each series once with weight 1.

    Returns None when a weight overflows a float, or some series' weights add up to 0 or
    beyond the float range (each is an error).
    """
    if aggregate not in A.WEIGHTED_AGGREGATES:
        return dict.fromkeys((series for _, series in pairs), 1.0)
    if not all(math.isfinite(weight) for weight, _ in pairs):
        return None
    exact: dict[str, Fraction] = {}
    for weight, series in pairs:
        exact[series] = exact.get(series, Fraction(0)) + Fraction(weight)
    try:
        pooled = {series: float(total) for series, total in exact.items()}
    except OverflowError:
        return None
    if any(total == 0 for total in exact.values()):
        return None
    return pooled
