"""Hypothesis strategies for top-k statements: canonical trees and the many ways to write them."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st
from watch_strategies import names

import tsmon.query as A
from tsmon.core.units import MAX_DURATION_MS, UNIT_MS
from tsmon.query import format_number, format_objects

_C = r"[A-Za-z0-9_.:*?\[\]!]"
#: Object patterns: plain ones (one OBJECTS token), real-looking ones, and arbitrary text that
#: the printer must backquote (spaces, '--', a leading or trailing '-', unicode).
objects = st.one_of(
    st.from_regex(rf"{_C}{{1,6}}(-{_C}{{1,4}}){{0,2}}", fullmatch=True),
    st.sampled_from(
        [
            "doc:*",
            "server*",
            "host[0-9]",
            "db?",
            "20*",
            "7",
            "1e5",
            "a-b",
            "-x",
            "x-",
            "a--b",
            "of",
            "by",
            "within",
            "top",
            "my docs*",
            "*",
        ]
    ),
    st.text(st.characters(exclude_characters="`\r\n"), min_size=1, max_size=8),
)
#: Metrics are identifiers; keywords are fine (only a metric can follow BY).
metrics = st.one_of(
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True),
    st.sampled_from(["hits", "load", "over", "within", "by", "of", "top", "BOTTOM", "_"]),
)
ks = st.one_of(st.integers(1, A.MAX_TOPK), st.sampled_from([1, 2, 10, A.MAX_TOPK]))
windows_ms = st.one_of(
    st.none(),
    st.sampled_from([1, 1000, 900_000, 3_600_000, MAX_DURATION_MS]),
    st.integers(1, MAX_DURATION_MS),
)
#: Tolerances: 0 is allowed (the exact top k); -0.0 is drawn as 0.0.
epsilons = st.one_of(
    st.sampled_from([0.0, 5.0, 2.5, 0.1, 1e-3, 1e20, 5e-324, 1.7976931348623157e308]),
    st.floats(min_value=0, allow_infinity=False, allow_nan=False).map(abs),
)

topk_defs = st.builds(A.TopKDef, names, st.booleans(), ks, objects, metrics, windows_ms, epsilons)
alter_topks = st.builds(A.AlterTopK, names, st.booleans(), ks, st.one_of(st.none(), epsilons))
#: Any statement of the top-k family.
topk_statements = st.one_of(topk_defs, alter_topks)


# ---- raw source text --------------------------------------------------------------------------


@dataclass(frozen=True)
class RawTopK:
    """A drawn statement's text and the tree it must parse to."""

    text: str
    statement: A.TopKDef | A.AlterTopK


_SPACE = st.sampled_from([" ", "  ", "\n", "\t", " -- note\n", "\n\n  "])


def _case(draw: st.DrawFn, word: str) -> str:
    return draw(st.sampled_from([word.lower(), word.upper(), word.capitalize()]))


def _k_text(draw: st.DrawFn, k: int) -> str:
    """k in plain digits, maybe with leading zeros or a '+'."""
    return draw(st.sampled_from(["", "0", "00", "+"])) + str(k)


def _eps_text(draw: st.DrawFn, eps: float) -> str:
    """Any spelling that reads back as ``eps``: repr, canonical, ``+``, exponents."""
    spellings = [format_number(eps), repr(eps), "+" + format_number(eps)]
    if eps == 0:
        spellings += ["0.0", "-0", ".0", "0e5", "-0.0"]
    elif eps == int(eps) and eps < 1e15:
        spellings += [f"{int(eps)}.", f"{int(eps)}.000", f"{int(eps)}e0"]
    return draw(st.sampled_from(spellings))


def _window_text(draw: st.DrawFn, window_ms: int) -> str:
    """Any unit that divides the window exactly, e.g. 900000 ms as 15m, 900s or 900000ms."""
    units = [unit for unit, ms in UNIT_MS.items() if window_ms % ms == 0]
    unit = draw(st.sampled_from(units))
    return f"{window_ms // UNIT_MS[unit]}{unit}"


def _objects_text(draw: st.DrawFn, pattern: str) -> str:
    canonical = format_objects(pattern)
    if canonical.startswith("`") or not draw(st.booleans()):
        return canonical
    return f"`{pattern}`"


@st.composite
def raw_topks(draw: st.DrawFn) -> RawTopK:
    """Top-k statements written the way people do: any case, spacing, comments and spellings."""
    statement = draw(topk_statements)
    sp = lambda: draw(_SPACE)  # noqa: E731
    word = lambda w: _case(draw, w)  # noqa: E731
    direction = word("bottom" if statement.bottom else "top")
    rank = f"{direction}{sp()}{_k_text(draw, statement.k)}"
    if isinstance(statement, A.AlterTopK):
        text = f"{word('alter')}{sp()}{word('query')}{sp()}{statement.name}{sp()}{rank}"
        if statement.eps is not None:
            text += f"{sp()}{word('within')}{sp()}{_eps_text(draw, statement.eps)}"
        return RawTopK(text, statement)
    text = (
        f"{word('query')}{sp()}{statement.name}{sp()}{word('as')}{sp()}{rank}{sp()}"
        f"{word('of')}{sp()}{_objects_text(draw, statement.objects)}{sp()}"
        f"{word('by')}{sp()}{statement.metric}"
    )
    if statement.window_ms is not None:
        text += f"{sp()}{word('over')}{sp()}{_window_text(draw, statement.window_ms)}"
    text += f"{sp()}{word('within')}{sp()}{_eps_text(draw, statement.eps)}"
    return RawTopK(text, statement)
