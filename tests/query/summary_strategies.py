"""Hypothesis strategies for queries answered from stream summaries (wavelets, exponential and
correlated-aggregate histograms): canonical trees and the many ways to write them."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, localcontext

from aggregate_strategies import series_names
from hypothesis import strategies as st
from standing_strategies import relative_eps
from watch_strategies import names

import tsmon.query as A
from tsmon.core.window_spec import MAX_POINTS
from tsmon.query import (
    format_coefficient,
    format_number,
    format_percent,
    format_series,
)
from tsmon.query.patterns import is_glob

#: One series each (a summary is kept per series): no glob characters.
summary_series = series_names.filter(lambda s: not is_glob(s))
#: Finite floats of any sign: weights, RANGE values, APPROX COUNT thresholds.
reals = st.one_of(
    st.sampled_from([0.0, 1.0, -1.0, 8.0, 0.5, -0.25, 30.0, 1e20, -1e-300, 5e-324]),
    st.floats(allow_nan=False, allow_infinity=False),
)
#: Finite floats >= 0 (RANGE radii); -0.0 is drawn as 0.0.
radii = st.one_of(
    st.sampled_from([0.0, 2.0, 0.5, 1e-3, 1e300]),
    st.floats(min_value=0, allow_infinity=False, allow_nan=False).map(abs),
)
#: Finite floats > 0 (WITHIN precisions of INNER and POINT).
precisions = st.one_of(
    st.sampled_from([20.0, 0.5, 1e-3, 5e-324, 1.7976931348623157e308]),
    st.floats(min_value=0, exclude_min=True, allow_infinity=False, allow_nan=False),
)
#: N of a SWAT tree: powers of two 2 .. 2**40, the default 1024 often.
swat_points = st.one_of(
    st.just(A.DEFAULT_SWAT_POINTS),
    st.integers(1, 40).map(lambda k: 2**k),
    st.sampled_from([2, 4, 256, 2**40]),
)
#: N of exponential histograms and sliding correlated aggregates: 1 .. 2**40.
any_points = st.one_of(
    st.integers(1, MAX_POINTS), st.sampled_from([1, 2, 500, 1000, 10_000, MAX_POINTS])
)
max_values = st.one_of(st.integers(1, A.MAX_SUM_VALUE), st.sampled_from([1, 1500, A.MAX_SUM_VALUE]))


def _positions(draw: st.DrawFn, n: int) -> st.SearchStrategy[int]:
    return st.one_of(st.integers(0, n - 1), st.sampled_from([0, n - 1]))


@st.composite
def wavelet_defs(draw: st.DrawFn) -> A.WaveletDef:
    """Canonical wavelet queries of every kind, within their limits."""
    kind = draw(st.sampled_from(A.WAVELET_KINDS))
    n = draw(swat_points)
    fields: dict[str, object] = {}
    if kind == "inner":
        size = draw(st.integers(1, min(n, 6)))
        fields["weights"] = tuple(draw(st.lists(reals, min_size=size, max_size=size)))
        if draw(st.booleans()):
            fields["indices"] = tuple(range(size))
        else:
            indices = st.lists(_positions(draw, n), min_size=size, max_size=size, unique=True)
            fields["indices"] = tuple(draw(indices))
    elif kind == "point":
        fields["position"] = draw(_positions(draw, n))
    else:
        lo, hi = sorted(draw(st.lists(_positions(draw, n), min_size=2, max_size=2)))
        fields.update(span=(lo, hi), value=draw(reals), radius=draw(radii))
    if kind != "range":
        fields["within"] = draw(st.one_of(st.none(), precisions))
    return A.WaveletDef(draw(names), kind, draw(summary_series), n, **fields)


@st.composite
def approx_defs(draw: st.DrawFn) -> A.ApproxDef:
    """Canonical APPROX COUNT|SUM queries."""
    kind = draw(st.sampled_from(A.APPROX_KINDS))
    fields: dict[str, object] = {}
    if kind == "count":
        fields.update(op=draw(st.sampled_from(A.COMPARE_OPS)), threshold=draw(reals))
    else:
        fields["max_value"] = draw(max_values)
    series = draw(summary_series)
    return A.ApproxDef(draw(names), kind, series, draw(any_points), draw(relative_eps), **fields)


#: eps of ``<= c * MIN``: any finite float >= 0 (c = 1 + eps).
min_eps = st.one_of(
    st.sampled_from([0.0, 0.1, 0.5, 1.0, 1e-20, 5e-324, 1e300, 1.7976931348623157e308]),
    st.floats(min_value=0, allow_infinity=False, allow_nan=False).map(abs),
)
#: eps of ``>= c * MAX``: floats in [0, 1) (c = 1 - eps > 0).
max_eps = st.one_of(
    st.sampled_from([0.0, 0.1, 0.5, 1e-20, 5e-324, 0.9999999999999999]),
    st.floats(min_value=0, max_value=1, exclude_max=True).map(abs),
)


@st.composite
def correlated_defs(draw: st.DrawFn) -> A.CorrelatedDef:
    """Canonical correlated aggregates: eps is 0 for AVG."""
    independent = draw(st.sampled_from(list(A.INDEPENDENT_AGGREGATES)))
    eps = {"avg": st.just(0.0), "min": min_eps, "max": max_eps}[independent]
    return A.CorrelatedDef(
        draw(names),
        draw(st.sampled_from(A.DEPENDENT_AGGREGATES)),
        draw(summary_series),
        independent,
        draw(eps),
        draw(st.one_of(st.none(), any_points)),
    )


summary_defs = st.one_of(wavelet_defs(), approx_defs(), correlated_defs())


# ---- raw source text --------------------------------------------------------------------------


@dataclass(frozen=True)
class RawSummary:
    """A drawn statement's text and the tree it must parse to."""

    text: str
    statement: A.WaveletDef | A.ApproxDef | A.CorrelatedDef


_SPACE = st.sampled_from([" ", "  ", "\n", "\t", " -- note\n", "\n\n  "])
_GAP = st.sampled_from(["", " ", "\n  ", " -- note\n"])  # where nothing is needed
_OP_SPELLINGS = {"==": ["==", "="], "!=": ["!=", "<>"]}


def _case(draw: st.DrawFn, word: str) -> str:
    return draw(st.sampled_from([word.lower(), word.upper(), word.capitalize()]))


def _number_text(draw: st.DrawFn, value: float) -> str:
    """Any spelling that reads back as ``value``: canonical, repr, ``+``, exponents, ``.5``."""
    text = format_number(value)
    spellings = [text, repr(value)]
    if not text.startswith("-"):
        spellings.append("+" + text)
    if value == int(value) and abs(value) < 1e15:
        spellings += [f"{int(value)}.", f"{int(value)}.000", f"{int(value)}e0"]
    if 0 < value < 1:
        spellings.append(text.lstrip("0"))  # .5 for 0.5
    return draw(st.sampled_from(spellings))


def _int_text(draw: st.DrawFn, value: int) -> str:
    """A whole number in plain digits, maybe with leading zeros or a '+'."""
    return draw(st.sampled_from(["", "0", "00", "+"])) + str(value)


def _points_text(draw: st.DrawFn, n: int) -> str:
    gap = draw(st.sampled_from([" ", "  ", "\t", "\n"]))  # inside one token: no comment
    return f"{_int_text(draw, n)}{gap}{draw(st.sampled_from(['points', 'point', 'POINTS']))}"


def _percent_text(draw: st.DrawFn, fraction: float) -> str:
    canonical = format_percent(fraction)
    spellings = [canonical, "+" + canonical]
    if "e" not in canonical:
        spellings += ["0" + canonical, canonical + ("0" if "." in canonical else ".0")]
    return draw(st.sampled_from(spellings)) + "%"


def _series_text(draw: st.DrawFn, series: str) -> str:
    canonical = format_series(series)
    quoted = not canonical.startswith("`") and draw(st.booleans())
    return f"`{series}`" if quoted else canonical


def _vector_text(draw: st.DrawFn, items: list[str]) -> str:
    sep = draw(st.sampled_from([", ", ",", " ,\n"]))
    return f"[{draw(_GAP)}{sep.join(items)}{draw(_GAP)}]"


def _op_text(draw: st.DrawFn, series: str, op: str) -> tuple[str, str]:
    """The comparison and the space before it: none is needed, but after a bare name `!` and
    `=` would join it (`x!=0` is the series `x!` and `=`), so `!=` and names ending with `!`
    keep one."""
    spelling = draw(st.sampled_from(_OP_SPELLINGS.get(op, [op])))
    joins = spelling.startswith("!") or series.endswith("!")
    before = " " if joins else draw(st.sampled_from(["", " ", "\n"]))
    return spelling, before


def _coefficient_text(draw: st.DrawFn, independent: str, eps: float) -> str:
    """``c * MIN|MAX`` (bare when c is 1), canonical or as the exact decimal ``1 ± eps``."""
    word = _case(draw, independent)
    if independent == "avg":
        return word
    if eps == 0:
        return draw(st.sampled_from([word, f"1 * {word}", f"1.0*{word}", f"+1e0 *{word}"]))
    sign = 1 if independent == "min" else -1
    with localcontext() as context:
        context.prec = 1000
        exact = str(Decimal(1) + sign * Decimal(repr(eps)))
    c = draw(st.sampled_from([format_coefficient(independent, eps), exact]))
    return f"{c}{draw(st.sampled_from(['*', ' * ', ' *']))}{word}"


def _wavelet_args(draw: st.DrawFn, s: A.WaveletDef) -> str:
    if s.kind == "inner":
        text = _vector_text(draw, [_number_text(draw, w) for w in s.weights])
        if s.indices != tuple(range(len(s.weights))) or draw(st.booleans()):
            positions = _vector_text(draw, [_int_text(draw, i) for i in s.indices])
            text += f"{draw(_SPACE)}{_case(draw, 'at')}{draw(_GAP)}{positions}"
        return text
    if s.kind == "point":
        return _int_text(draw, s.position)  # type: ignore[arg-type]
    lo, hi = s.span  # type: ignore[misc]
    dots = draw(st.sampled_from(["..", " .. ", " ..", ".. "]))
    pm = draw(st.sampled_from(["±", "+-"]))
    pm = draw(st.sampled_from([pm, f" {pm} ", f"{pm} ", f" {pm}"]))
    value, radius = _number_text(draw, s.value), _number_text(draw, s.radius)  # type: ignore[arg-type]
    return f"{_int_text(draw, lo)}{dots}{_int_text(draw, hi)},{draw(_GAP)}{value}{pm}{radius}"


@st.composite
def raw_summaries(
    draw: st.DrawFn, defs: st.SearchStrategy[A.SummaryDef] = summary_defs
) -> RawSummary:
    """Summary queries (drawn from ``defs``) written the way people do: any case, spacing,
    comments and spellings."""
    statement = draw(defs)
    sp = lambda: draw(_SPACE)  # noqa: E731
    gap = lambda: draw(_GAP)  # noqa: E731
    word = lambda w: _case(draw, w)  # noqa: E731
    text = f"{word('query')}{sp()}{statement.name}{sp()}{word('as')}{sp()}"
    series = _series_text(draw, statement.series)
    if isinstance(statement, A.WaveletDef):
        args = _wavelet_args(draw, statement)
        text += f"{word(statement.kind)}({gap()}{series},{gap()}{args}{gap()})"
        n = statement.window_points
        if n != A.DEFAULT_SWAT_POINTS or draw(st.booleans()):
            text += f"{sp()}{word('over')}{sp()}{_points_text(draw, n)}"
        if statement.within is not None:
            text += f"{sp()}{word('within')}{sp()}{_number_text(draw, statement.within)}"
    elif isinstance(statement, A.ApproxDef):
        if statement.kind == "count":
            op, before = _op_text(draw, statement.series, statement.op)  # type: ignore[arg-type]
            threshold = _number_text(draw, statement.threshold)  # type: ignore[arg-type]
            call = f"{word('count')}({series}{before}{op}{gap()}{threshold})"
        else:
            call = f"{word('sum')}({gap()}{series}{gap()})"
        text += f"{word('approx')}{sp()}{call}{sp()}{word('over')}{sp()}"
        text += f"{_points_text(draw, statement.window_points)}{sp()}{word('within')}{sp()}"
        text += _percent_text(draw, statement.eps)
        if statement.max_value is not None:
            text += f"{sp()}{word('max')}{sp()}{_int_text(draw, statement.max_value)}"
    else:
        op, before = _op_text(draw, statement.series, statement.comparison)
        bound = _coefficient_text(draw, statement.independent, statement.eps)
        text += f"{word(statement.dependent)}({series}{before}{op}{gap()}{bound}{gap()})"
        if statement.window_points is not None:
            text += f"{sp()}{word('over')}{sp()}{_points_text(draw, statement.window_points)}"
    return RawSummary(text, statement)
