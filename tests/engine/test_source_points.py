"""An in-process batch checked once and split by source into columns (engine/source_points.py).

The oracle is the check point by point (:func:`check_points`: the runtime's checks, then
:func:`~tsmon.engine.node.parse_data` by source), which the runtime ran on every batch before:
the quick checks must raise the same ``ValueError`` or give the same points, in the same
order. A runtime stepping its nodes over columns must show what one stepping them over data
rows shows, batch for batch.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tsmon.engine.batched import BatchedRuntime
from tsmon.engine.node import SourceNode, parse_data
from tsmon.engine.settings import RegisterSettings
from tsmon.engine.source_points import check_points, split_points
from tsmon.kinds.standing.partition import PARTITION_PREFIX

BOUNDED = "QUERY s AS SUM(a, b) WITHIN 1"
WATCH = "QUERY hot ON * WHEN last > 5 EMIT series, last"
SOURCE_OF = {"a": "n1", "b": "n2"}  # pinned by the bounded query
HUB = BatchedRuntime(10, 0.1, 0, queries=BOUNDED, source_of=SOURCE_OF).hub()


class Name(str):
    """A str subclass: a str all the same."""


Point = namedtuple("Point", "source series ts value")

SOURCES = ["n1", "n2", "n3"]
ODD_SOURCES = ["", Name("n1"), f"{PARTITION_PREFIX}0", 7, None, ["n1"], "n1", "n2"]
SERIES = ["a", "b", "c", "d"]
ODD_SERIES = ["", Name("c"), 5, None, b"c"]
ODD_TS = [True, np.int64(1_000), np.int32(7), 2**70, -(2**70), 2**63 - 1, 1.5, "5", None]
ODD_VALUES = [True, np.float64(2.5), np.int64(3), 10**400, float("nan"), float("inf"), "1", None]


good_point = st.tuples(
    st.sampled_from(SOURCES),
    st.sampled_from(SERIES),
    st.integers(0, 5_000),
    st.one_of(st.floats(-10, 10), st.integers(-10, 10)),
).map(lambda p: (SOURCE_OF.get(p[1], p[0]), *p[1:]))  # a and b at their home but now and then
ODD = (ODD_SOURCES, ODD_SERIES, ODD_TS, ODD_VALUES)
SHAPES = ("list", "named", "short", "dict")


@st.composite
def batch(draw: st.DrawFn) -> list[Any]:
    """Good points, and up to three odd items or shapes put in at random places."""
    points: list[Any] = draw(st.lists(good_point, max_size=10))
    for _ in range(draw(st.integers(0, 3)) if points else 0):
        i = draw(st.integers(0, len(points) - 1))
        if type(points[i]) is not tuple or len(points[i]) != 4:  # odd already
            continue
        field = draw(st.integers(0, 4))
        fields = list(points[i])
        if field < 4:
            fields[field] = draw(st.sampled_from(ODD[field]))
            points[i] = tuple(fields)
        else:
            points[i] = shaped(fields, draw(st.sampled_from(SHAPES)))
    return points


def shaped(fields: list[Any], shape: str) -> Any:
    return {
        "list": list(fields),
        "named": Point(*fields),
        "short": tuple(fields[:3]),
        "dict": dict(zip(Point._fields, fields, strict=True)),
    }[shape]


def outcome(call: Any) -> Any:
    try:
        return call()
    except (ValueError, TypeError, OverflowError) as e:
        return type(e), str(e)


@settings(max_examples=1500, deadline=None)
@given(batch(), st.integers(0, 100))
def test_the_quick_checks_give_what_the_check_point_by_point_gives(
    points: list[Any], seq0: int
) -> None:
    expected = outcome(lambda: check_points(points, seq0, HUB))
    got = outcome(lambda: split_points(points, seq0, HUB))
    if expected is not None:  # the same error
        assert got == expected
        return
    groups: dict[str, list[dict[str, Any]]] = {}
    for n, (source, series, ts, value) in enumerate(points):
        row = {"series": series, "ts": ts, "value": value, "seq": seq0 + n}
        groups.setdefault(source, []).append(row)
    assert list(got) == sorted(groups)
    beyond = any(not -(2**63) <= int(p[2]) < 2**63 for p in points)  # then every node: rows
    for source, data in got.items():
        rows = groups[source]
        assert repr(data.rows()) == repr(rows) and data.size == len(rows)  # as given
        assert (data.columns is None) == beyond
        if beyond:
            continue
        series, ts, value, seq = data.columns
        assert (ts.dtype, value.dtype, seq.dtype) == (np.int64, np.float64, np.int64)
        assert all(c.base is None for c in data.columns)  # its own: no view of the batch
        columns = list(zip(series.tolist(), ts.tolist(), value.tolist(), seq.tolist(), strict=True))
        assert columns == parse_data(rows, source)
        assert [type(s) for s in series] == [type(p[0]) for p in parse_data(rows, source)]


class RowsNode(SourceNode):
    """A source node without the columnar entry: the runtime steps it over data rows."""

    step_columns = None


def batches() -> st.SearchStrategy[list[list[tuple[str, str, int, float]]]]:
    good = st.tuples(
        st.sampled_from(["n1", "n2", "n3"]),
        st.sampled_from(["c", "d", "e"]),
        st.integers(0, 40).map(lambda t: 1_000 * t),  # ties, late and stale points
        st.floats(-10, 10),
    )
    home = st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 40), st.floats(-10, 10)).map(
        lambda p: (SOURCE_OF[p[0]], p[0], 1_000 * p[1], p[2])
    )
    return st.lists(st.lists(st.one_of(good, home), max_size=15), min_size=1, max_size=6)


@settings(max_examples=40, deadline=None)
@given(batches(), st.sampled_from(["keep_last", "keep_first", None]))
def test_a_runtime_shows_the_same_over_columns_and_over_rows(
    feed: list[list[tuple[str, str, int, float]]], duplicates: str | None
) -> None:
    registers = None if duplicates is None else RegisterSettings("1h", None, "5s", duplicates)
    runtimes = [
        BatchedRuntime(1_000, 0.1, 0, queries=f"{BOUNDED}\n{WATCH}" if registers else BOUNDED,
                       source_of=SOURCE_OF, registers=registers)
        for _ in range(2)
    ]  # fmt: skip
    runtimes[1].new_node = lambda key: RowsNode(key, runtimes[1].settings)
    for batch in feed:
        shown = []
        for rt in runtimes:
            rt.run_batch(batch, clock_ms=10**6)
            shown.append(repr((rt.last_outputs, rt.rows, rt.answers(), rt.control)))
        assert shown[0] == shown[1]
    assert all(type(n) is RowsNode for n in runtimes[1].nodes.values())


def test_a_timestamp_beyond_int64_is_a_dead_letter_among_good_points() -> None:
    rt = BatchedRuntime(1_000, 0.1, 0, queries="QUERY s AS SUM(a) WITHIN 1", max_future_ms=None)
    rt.run_batch([("n", "a", 2**70, 1.0), ("n", "a", 1_000, 2.0), ("m", "b", 1_000, 3.0)])
    dead = [(r["source"], r["payload"]["reason"]) for r in rt.last_outputs if r["kind"] == "dead"]
    assert dead == [("n", "bad_timestamp")]
    beats = {r["source"]: r["payload"] for r in rt.last_outputs if r["kind"] == "heartbeat"}
    assert (beats["n"]["received"], beats["n"]["points"], beats["m"]["points"]) == (2, 1, 1)


def test_a_bad_point_names_itself_and_no_node_steps() -> None:
    rt = BatchedRuntime(1_000, 0.1, 0, queries="QUERY s AS SUM(a) WITHIN 1")
    with pytest.raises(ValueError, match=r"source 'n', data row 1: ts and seq must be ints"):
        rt.run_batch([("m", "b", 1_000, 3.0), ("n", "a", 1, 1.0), ("n", "a", True, 2.0)])
    assert rt.batch_id == -1 and rt.nodes == {}
