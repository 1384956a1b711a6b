"""Decimal epoch numbers' text, random (:func:`decimal_texts`), and the ms they are read
as by exact fractions (:func:`decimal_oracle`): shared by the in-process and Spark tests."""

from __future__ import annotations

from fractions import Fraction
from math import floor

from hypothesis import strategies as st

from tsmon.core.timestamps import EPOCH_UNITS, TRIMMED


@st.composite
def decimal_texts(draw: st.DrawFn) -> str:
    """Decimal epoch numbers' text: a sign, digits with a point (long fractions, runs of 9s
    that round up), an exponent or not, between characters Spark trims."""
    digits = "0123456789"
    whole = draw(
        st.one_of(
            st.text(digits, max_size=4),
            st.text(digits, min_size=9, max_size=32),
            st.sampled_from(["1704067200", "9223372036854775", "9223372036854775807", "9" * 29]),
        )
    )
    fraction = draw(
        st.one_of(
            st.text(digits, max_size=22),
            st.builds(lambda n, end: "9" * n + end, st.integers(0, 14), st.sampled_from("459")),
            st.builds(lambda n: "0" * n + "5", st.integers(0, 12)),
        )
    )
    point = "." if not whole or fraction or draw(st.booleans()) else ""
    whole = whole if whole or fraction else "0"
    exponent = draw(
        st.one_of(
            st.just(""),
            st.builds(
                lambda e, n, s, sign: f"{e}{sign}{n:0{s}d}",
                st.sampled_from("eE"),
                st.integers(0, 45),
                st.integers(1, 4),
                st.sampled_from(["", "+", "-"]),
            ),
        )
    )
    pad = st.sampled_from(["", " ", "\x01", "\x7f", "\t\x7f "])
    sign = draw(st.sampled_from(["", "+", "-"]))
    return f"{draw(pad)}{sign}{whole}{point}{fraction}{exponent}{draw(pad)}"


def decimal_oracle(text: str, unit: str) -> int | None:
    """The rule of docs/inputs.md by exact fractions: rounded half up to 9 places (None from
    10**29 on), times the unit's factor, floored, None beyond int64, then divided, floored."""
    times, per = EPOCH_UNITS[unit]
    exact = Fraction(text.strip(TRIMMED)) * 10**9
    nanos = floor(abs(exact) + Fraction(1, 2)) * (1 if exact >= 0 else -1)
    if abs(nanos) >= 10**38:
        return None
    whole = floor(Fraction(nanos * times, 10**9))
    return whole // per if -(2**63) <= whole < 2**63 else None
