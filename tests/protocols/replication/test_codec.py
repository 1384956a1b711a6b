"""The replication codec: every message survives strict JSON exactly; bad input names its field."""

from __future__ import annotations

import dataclasses
import json
import math
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tsmon.protocols.replication import (
    SLOTS,
    Answer,
    Approx,
    Decache,
    Insert,
    Query,
    ReadRequest,
    Refresh,
    Segment,
    Update,
)
from tsmon.protocols.replication.codec import TYPES, from_dict, to_dict

ints = st.integers(-(2**63), 2**63)
small = st.integers(0, 2**40)
floats = st.floats(allow_nan=True, allow_infinity=True)  # incl. -0.0, subnormals, nan, inf
qids = st.tuples(small, small)
segments = st.builds(Segment, st.integers(0, 40), st.sampled_from(SLOTS))


@st.composite
def approxes(draw: st.DrawFn) -> Approx:
    n = draw(st.integers(1, 8))
    lo = draw(st.lists(floats, min_size=n, max_size=n))
    hi = draw(st.lists(floats, min_size=n, max_size=n))
    return Approx(tuple(lo), tuple(hi))


@st.composite
def queries(draw: st.DrawFn) -> Query:
    n = draw(st.integers(0, 6))
    return Query(
        draw(ints),
        draw(ints),
        draw(qids),
        draw(small),
        tuple(draw(st.lists(small, min_size=n, max_size=n))),
        tuple(draw(st.lists(floats, min_size=n, max_size=n))),
        draw(floats),
        tuple(draw(st.lists(small, max_size=4))),
    )


messages = st.one_of(
    queries(),
    st.builds(
        Answer,
        ints,
        ints,
        qids,
        floats,
        floats,
        small,
        st.lists(small, max_size=4).map(tuple),
        st.booleans(),
    ),
    st.builds(Update, ints, ints, segments, approxes()),
    st.builds(Insert, ints, ints, segments, approxes()),
    st.builds(Decache, ints, ints, segments),
    st.builds(
        ReadRequest,
        ints,
        ints,
        qids,
        small,
        st.lists(small, max_size=5).map(tuple),
        st.lists(st.lists(st.tuples(ints, floats), max_size=3).map(tuple), max_size=3).map(tuple),
    ),
    st.builds(
        Refresh, ints, ints, small, small, floats, floats, st.none() | qids, st.none() | floats
    ),
)


def bits(x):
    """``x`` with every float as its bit pattern (``-0.0 != 0.0``; any nan is one nan)."""
    if dataclasses.is_dataclass(x):
        return type(x).__name__, tuple(bits(getattr(x, f.name)) for f in dataclasses.fields(x))
    if isinstance(x, tuple):
        return type(x).__name__, tuple(bits(y) for y in x)
    if isinstance(x, float):
        return "nan" if math.isnan(x) else struct.pack(">d", x)
    return type(x).__name__, x


@given(messages)
def test_round_trip_is_exact_through_strict_json(message):
    d = to_dict(message)
    assert d["type"] in TYPES and TYPES[d["type"]] is type(message)
    text = json.dumps(d, allow_nan=False)  # strict JSON: nan and inf travel as strings
    back = from_dict(json.loads(text))
    assert bits(back) == bits(message)
    assert to_dict(back) == json.loads(text)


def test_defaulted_fields_may_be_left_out():
    answer = {"type": "answer", "sender": 0, "receiver": 1, "qid": [1, 0], "site": 0}
    assert from_dict(answer | {"value": 2, "bound": 0.5}) == Answer(0, 1, (1, 0), 2.0, 0.5, 0)
    refresh = {"type": "refresh", "sender": 0, "receiver": 2, "item": 1, "count": 3}
    assert from_dict(refresh | {"value": 1.5, "width": "Infinity"}) == Refresh(
        0, 2, 1, 3, 1.5, math.inf
    )


def test_to_dict_refuses_other_objects():
    with pytest.raises(TypeError, match="not a replication message"):
        to_dict(Segment(0, "R"))  # type: ignore[arg-type]


UPDATE = to_dict(Update(0, 1, Segment(2, "S"), Approx((1.0, 2.0), (3.0, 4.0))))
QUERY = to_dict(Query(1, 0, (1, 4), 9, (0, 3), (1.0, -2.0), 0.5, (1,)))
REFRESH = to_dict(Refresh(0, 2, 4, 50, 61.0, 4.0, (2, 7), None))


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ([1, 2], "is a dict"),
        ({"sender": 0}, r"type: not a replication message type None"),
        (UPDATE | {"type": "upsert"}, "'upsert'"),
        (UPDATE | {"extra": 1}, r"Update: unknown field\(s\) \['extra'\]"),
        ({k: v for k, v in UPDATE.items() if k != "approx"}, r"Update\.approx: missing"),
        (UPDATE | {"sender": "0"}, r"Update\.sender: expected an integer, got '0'"),
        (UPDATE | {"receiver": True}, r"Update\.receiver: expected an integer"),
        (UPDATE | {"receiver": 1.0}, r"Update\.receiver: expected an integer"),
        (UPDATE | {"segment": [2]}, r"Update\.segment: expected 2 items"),
        (UPDATE | {"segment": [-1, "S"]}, r"Update\.segment\[0\]: a level is >= 0"),
        (UPDATE | {"segment": [1, "Q"]}, r"Update\.segment\[1\]: a slot kind"),
        (UPDATE | {"segment": "R0"}, r"Update\.segment: expected a list"),
        (UPDATE | {"approx": [1.0, 2.0]}, r"Update\.approx: expected \{'lo'"),
        (UPDATE | {"approx": {"lo": [1.0], "hi": [2.0, 3.0]}}, r"Update\.approx\.hi: expected 1"),
        (UPDATE | {"approx": {"lo": [], "hi": []}}, r"Update\.approx\.lo: a data range"),
        (UPDATE | {"approx": {"lo": [1.0, "x"], "hi": [2, 3]}}, r"Update\.approx\.lo\[1\]"),
        (QUERY | {"qid": [1]}, r"Query\.qid: expected 2 items"),
        (QUERY | {"positions": [0, 1.5]}, r"Query\.positions\[1\]: expected an integer"),
        (QUERY | {"weights": [1.0, None]}, r"Query\.weights\[1\]: expected a number"),
        (QUERY | {"delta": "inf"}, r"Query\.delta: expected a number .*'inf'"),
        (QUERY | {"route": 1}, r"Query\.route: expected a list, got 1"),
        (
            to_dict(Answer(0, 1, (1, 0), 1.0, 0.0, 0)) | {"exact": 1},
            r"Answer\.exact: expected true",
        ),
        (REFRESH | {"qid": [2, "7"]}, r"Refresh\.qid\[1\]: expected an integer"),
        (REFRESH | {"center": [1.0]}, r"Refresh\.center: expected a number"),
        (
            to_dict(ReadRequest(2, 0, (2, 7), 50, (4,), (((0, 1.0),),))) | {"reads": [[[0]]]},
            r"ReadRequest\.reads\[0\]\[0\]: expected 2 items",
        ),
    ],
)
def test_malformed_input_names_the_field(data, match):
    with pytest.raises(ValueError, match=match):
        from_dict(data)
