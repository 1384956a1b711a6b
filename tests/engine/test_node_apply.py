"""The source node's vectorized choice of the points that apply equals the per-point loop it
replaced (stale points, clamping, keep_first duplicates, new series)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tsmon.engine.node import Columns, SourceNode
from tsmon.engine.settings import HostSettings, RegisterSettings

NAMES = ("a", "b", "c", "d")


def loop_oracle(
    series: list[str],
    ts: list[int],
    now_ms: int,
    newest_ts: dict[str, int],
    keep_first: bool,
) -> tuple[list[bool], list[int], list[str], int, int, dict[str, int]]:
    """The per-point loop, as the node ran it before it was vectorized."""
    newest_ts = dict(newest_ts)
    applied, at_ms, new, clamped = [], [], set(), 0
    for name, t in zip(series, ts, strict=True):
        newest = newest_ts.get(name)
        if newest is None:
            new.add(name)
        elif t < newest or (t == newest and keep_first):
            applied.append(False)
            at_ms.append(0)
            continue
        if t < now_ms:
            clamped += 1
        now_ms = max(now_ms, t)
        newest_ts[name] = t
        applied.append(True)
        at_ms.append(now_ms)
    return applied, at_ms, sorted(new), clamped, now_ms, newest_ts


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(NAMES), st.integers(0, 30)), max_size=40),
    st.dictionaries(st.sampled_from(NAMES), st.integers(0, 30)),
    st.integers(0, 30),
    st.booleans(),
)
def test_vectorized_apply_equals_the_loop(
    points: list[tuple[str, int]], stored: dict[str, int], now_ms: int, keep_first: bool
) -> None:
    points = sorted(points, key=lambda p: p[1])  # (ts, seq) order, seq = arrival
    series = [p[0] for p in points]
    ts = [p[1] for p in points]
    registers = RegisterSettings(duplicates="keep_first" if keep_first else "keep_last")
    node = SourceNode("n", HostSettings(period_ms=1_000, shrink=0.1, registers=registers))
    node.now_ms, node.newest_ts = now_ms, dict(stored)
    value = np.arange(len(ts), dtype=np.float64)
    batch, new = node._apply(Columns(series, np.array(ts, dtype=np.int64), value))
    applied, at_ms, new_ref, clamped, now_ref, newest_ref = loop_oracle(
        series, ts, now_ms, stored, keep_first
    )
    assert batch.applied.tolist() == applied
    assert batch.at_ms.tolist() == at_ms
    assert batch.series == series and batch.ts.tolist() == ts
    assert (new, node.clamped, node.now_ms, node.newest_ts) == (
        new_ref,
        clamped,
        now_ref,
        newest_ref,
    )


def test_a_null_series_name_is_a_dead_letter_as_an_empty_one():
    """A null series in ``step_columns`` (a column of objects, as pandas gives a null string)
    is rejected as ``bad_series``, as an empty name is; the other points are taken."""
    settings_ = HostSettings(1_000, 0.1, registers=RegisterSettings())
    ts, value, seq = np.array([1, 2, 3, 4]), np.array([1.0, 2.0, 3.0, 4.0]), np.arange(4)

    def step(missing: str | None) -> list[dict]:
        series = np.array(["a.x", missing, "a.y", missing], dtype=object)
        return SourceNode("a", settings_).step_columns([], series, ts, value, seq)

    got, empty = step(None), step("")
    assert [r["payload"]["reason"] for r in got if r["kind"] == "dead"] == ["bad_series"] * 2
    assert [r for r in got if r["kind"] != "dead"] == [r for r in empty if r["kind"] != "dead"]
    assert got[-1]["payload"]["series"] == ["a.x", "a.y"]
