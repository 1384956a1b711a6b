"""Messages survive the dict form exactly, through strict JSON too; malformed dicts are refused."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tsmon.protocols.filters.codec import from_dict, to_dict
from tsmon.protocols.filters.messages import Growth, Message, Shrink, StreamedUpdate

ids = st.text(max_size=12)
ints = st.integers(-(2**63), 2**63 - 1)
values = st.floats(allow_nan=False)  # ±inf included; nan is checked apart (nan != nan)
widths = st.one_of(st.floats(0, 1e300), st.just(math.inf))

messages = st.one_of(
    st.builds(
        StreamedUpdate,
        ids,
        values,
        ints,
        width_seq=st.none() | ints,
        forced=st.booleans(),
        seq=ints,
        shadow=st.none() | ints,  # set once the period was chosen online (tuning)
    ),
    *(
        st.builds(
            kind,
            ids,
            widths,
            ints,
            seq=ints,
            adaptive=st.booleans(),
            period_ms=st.none() | st.integers(1, 2**62),
            uniform=st.none() | widths,
        )
        for kind in (Growth, Shrink)
    ),
)


@given(messages)
def test_round_trip_is_exact(message: Message) -> None:
    d = to_dict(message)
    back = from_dict(d)
    assert back == message and type(back) is type(message)
    for key in ("ts_ms", "seq"):
        assert type(d[key]) is int
    x = message.value if isinstance(message, StreamedUpdate) else message.width
    y = back.value if isinstance(back, StreamedUpdate) else back.width
    assert math.copysign(1, x) == math.copysign(1, y)  # even the sign of zero


@given(messages)
def test_round_trip_through_strict_json(message: Message) -> None:
    text = json.dumps(to_dict(message), allow_nan=False)
    assert from_dict(json.loads(text)) == message


def test_nan_and_infinities_are_strings() -> None:
    d = to_dict(StreamedUpdate("a", math.nan, 0))
    assert d["value"] == "nan" and math.isnan(from_dict(d).value)
    assert to_dict(Growth("a", math.inf, 0, seq=1))["width"] == "inf"
    assert from_dict(to_dict(StreamedUpdate("a", -math.inf, 0))).value == -math.inf


GOOD = {"type": "shrink", "object_id": "a", "width": 1.0, "ts_ms": 0, "seq": 1, "adaptive": True}


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"type": "grow"}, "message type"),
        ({"seq": 1.0}, "seq must be an int"),
        ({"ts_ms": True}, "ts_ms must be an int"),
        ({"width": "wide"}, "width must be a number"),
        ({"adaptive": 1}, "adaptive must be a bool"),
        ({"object_id": 3}, "object_id must be a str"),
        ({"extra": 0}, "unexpected keys"),
    ],
)
def test_malformed_dicts_are_refused(change: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        from_dict({**GOOD, **change})


def test_missing_key_is_named() -> None:
    d = dict(GOOD)
    del d["ts_ms"]
    with pytest.raises(ValueError, match=r"missing keys \['ts_ms'\]"):
        from_dict(d)


def test_other_objects_cannot_be_encoded() -> None:
    with pytest.raises(TypeError, match="cannot encode"):
        to_dict("growth")  # type: ignore[arg-type]
