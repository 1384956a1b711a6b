"""Hypothesis strategies for standing queries: canonical trees and the many ways to write them."""

from __future__ import annotations

from dataclasses import dataclass

from aggregate_strategies import series_names, weights
from hypothesis import strategies as st
from watch_strategies import names

import tsmon.query as A
from tsmon.core.timestamps import MAX_INSTANT_MS, MIN_INSTANT_MS, format_instant_ms
from tsmon.core.units import MAX_DURATION_MS, UNIT_MS, parse_duration_ms
from tsmon.core.window_spec import MAX_POINTS, WindowSpec
from tsmon.query import format_number, format_percent, format_series, format_terms

#: Absolute tolerances: finite numbers > 0.
absolute_eps = st.one_of(
    st.sampled_from([0.5, 2.0, 1e-3, 1e20, 5e-324, 1.7976931348623157e308]),
    st.floats(min_value=0, exclude_min=True, allow_infinity=False, allow_nan=False),
)
#: Relative tolerances (fractions of |A|): every float in (0, 1) can be written as p%.
relative_eps = st.one_of(
    st.sampled_from([0.01, 0.07, 0.125, 0.5, 1e-5, 5e-324, 0.9999999999999999, 0.1 + 0.2]),
    st.floats(min_value=0, max_value=1, exclude_min=True, exclude_max=True),
)
#: Confidences: floats in (0, 1).
confidences = st.one_of(
    st.sampled_from([0.9, 0.95, 0.8, 0.5, 0.99, 5e-324, 0.9999999999999999]),
    st.floats(min_value=0, max_value=1, exclude_min=True, exclude_max=True),
)
#: Sliding windows in canonical text: durations and counts, limits included.
sliding_windows = st.one_of(
    st.integers(1, MAX_DURATION_MS).map(WindowSpec.time),
    st.sampled_from([1, 500, 1_800_000, 3_600_000, MAX_DURATION_MS]).map(WindowSpec.time),
    st.integers(1, MAX_POINTS).map(WindowSpec.count),
    st.sampled_from([1, 100, MAX_POINTS]).map(WindowSpec.count),
)
landmarks = st.one_of(
    st.integers(MIN_INSTANT_MS, MAX_INSTANT_MS),
    st.sampled_from([MIN_INSTANT_MS, -1, 0, 1_767_225_600_000, MAX_INSTANT_MS]),
)


@st.composite
def standing_defs(draw: st.DrawFn) -> A.StandingDef:
    """Canonical (pooled) standing queries of every shape."""
    aggregate = draw(st.sampled_from(A.WEIGHTED_AGGREGATES))
    series = draw(st.lists(series_names, min_size=1, max_size=4, unique=True))
    if draw(st.booleans()):
        coefficients = draw(st.lists(weights, min_size=len(series), max_size=len(series)))
    else:
        coefficients = [1.0] * len(series)
    terms = tuple(A.Term(c, s) for c, s in zip(coefficients, series, strict=True))
    relative = draw(st.booleans())
    eps = draw(relative_eps if relative else absolute_eps)
    fields: dict[str, object] = {}
    shape = draw(st.sampled_from(["current", "over", "since", "start"]))
    if shape != "current":
        fields["extremum"] = draw(st.sampled_from(A.EXTREMA))
    if shape == "over":
        fields["window"] = draw(sliding_windows)
    elif shape == "since":
        fields["landmark_ms"] = draw(landmarks)
    elif shape == "start":
        fields["since_start"] = True
    return A.StandingDef(draw(names), aggregate, terms, eps, relative, draw(confidences), **fields)


# ---- raw source text --------------------------------------------------------------------------


@dataclass(frozen=True)
class RawStanding:
    """A drawn statement's text and the tree it must parse to."""

    text: str
    statement: A.StandingDef


_SPACE = st.sampled_from([" ", "  ", "\n", "\t", " -- note\n", "\n\n  "])


def _case(draw: st.DrawFn, word: str) -> str:
    return draw(st.sampled_from([word.lower(), word.upper(), word.capitalize()]))


def _number_text(draw: st.DrawFn, value: float) -> str:
    """Any spelling that reads back as ``value``: canonical, repr, ``+``, exponents."""
    spellings = [format_number(value), repr(value), "+" + format_number(value)]
    if value == int(value) and value < 1e15:
        spellings += [f"{int(value)}.", f"{int(value)}.000", f"{int(value)}e0"]
    if value < 1:
        spellings.append(format_number(value).lstrip("0") or "0")  # .9 for 0.9
    return draw(st.sampled_from(spellings))


def _percent_text(draw: st.DrawFn, fraction: float) -> str:
    """``p%`` for a relative tolerance: canonical, or with zeros and a sign added."""
    canonical = format_percent(fraction)
    spellings = [canonical, "+" + canonical]
    if "e" not in canonical:
        spellings += ["0" + canonical, canonical + ("0" if "." in canonical else ".0")]
    return draw(st.sampled_from(spellings)) + "%"


def _window_text(draw: st.DrawFn, window: str) -> str:
    """A window as written after OVER: any unit that divides a span, ``point(s)`` for counts."""
    count, _, _ = window.partition(" ")
    if window.endswith(("point", "points")):
        zeros = draw(st.sampled_from(["", "0"]))
        gap = draw(st.sampled_from([" ", "  ", "\t", "\n"]))  # inside one token: no comment
        return f"{zeros}{count}{gap}{draw(st.sampled_from(['points', 'point', 'POINTS']))}"
    span_ms = parse_duration_ms(window)
    units = [unit for unit, ms in UNIT_MS.items() if span_ms % ms == 0]
    unit = draw(st.sampled_from(units))
    return f"{span_ms // UNIT_MS[unit]}{unit}"


def _landmark_text(draw: st.DrawFn, millis: int) -> str:
    canonical = format_instant_ms(millis)
    return draw(st.sampled_from([canonical, canonical[:-1] + "+00:00", canonical[:-1] + "z"]))


def _terms_text(draw: st.DrawFn, terms: tuple[A.Term, ...]) -> str:
    """The canonical arguments, or, when every weight is 1, each series quoted at will."""
    if all(term.coefficient == 1 for term in terms):
        parts = []
        for term in terms:
            canonical = format_series(term.series)
            quoted = not canonical.startswith("`") and draw(st.booleans())
            parts.append(f"`{term.series}`" if quoted else canonical)
        return draw(st.sampled_from([", ", ",", " ,\n"])).join(parts)
    return format_terms(terms)


@st.composite
def raw_standings(draw: st.DrawFn) -> RawStanding:
    """Standing queries written the way people do: any case, spacing, comments and spellings."""
    statement = draw(standing_defs())
    sp = lambda: draw(_SPACE)  # noqa: E731
    word = lambda w: _case(draw, w)  # noqa: E731
    text = f"{word('query')}{sp()}{statement.name}{sp()}{word('as')}{sp()}"
    if statement.extremum is not None:
        text += f"{word(statement.extremum)}{sp()}"
        if statement.window is not None:
            text += f"{word('over')}{sp()}{_window_text(draw, str(statement.window))}"
        elif statement.landmark_ms is not None:
            text += f"{word('since')}{sp()}{_landmark_text(draw, statement.landmark_ms)}"
        else:
            text += f"{word('since')}{sp()}{word('start')}"
        text += f"{sp()}{word('of')}{sp()}"
    text += f"{word(statement.aggregate)}({_terms_text(draw, statement.terms)})"
    if statement.relative:
        eps = _percent_text(draw, statement.eps)
    else:
        eps = _number_text(draw, statement.eps)
    text += f"{sp()}{word('within')}{sp()}{eps}"
    text += f"{sp()}{word('confidence')}{sp()}{_number_text(draw, statement.confidence)}"
    return RawStanding(text, statement)
