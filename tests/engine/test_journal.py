"""The in-process quarantine's restore point (engine/journal.py): a snapshot now and then and
the inputs of the clean steps since, replayed, against the exact oracle of a copy pickled before
every step (what the hosts did before, and still do once their nodes are handed out).

Steps raise at random batches: a node on a series ``poison`` (after changing its state), a
node holding a series ``cursed`` on any control (its retry with the control alone raises too),
and the coordinator on a heartbeat of exactly :data:`HUB_POISON` points (after its whole step),
which quarantines that source's rows; the batches' clocks vary (points stamped after the
clock's ``max_future`` are dead letters). Outputs, dead letters, errors, answers and control must
equal the oracle's after every batch, and so must the states at the end (:func:`same_state`).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tsmon.engine import journal
from tsmon.engine.batched import BatchedRuntime
from tsmon.engine.hub import CoordinatorNode
from tsmon.engine.node import SourceNode, new_node
from tsmon.engine.settings import DAY_MS, RegisterSettings
from tsmon.engine.standing_settings import StandingSettings

CLOCK = 1_700_000_000_000
HUB_POISON = 3  # points of one source in a batch that make the coordinator's step raise
QUERIES = """
QUERY s AS SUM(a.x, b.x) WITHIN 1
QUERY top AS TOP 1 OF * BY x WITHIN 0
QUERY st AS AVG(a.x, c.x) WITHIN 5% CONFIDENCE 0.9
QUERY hot ON *.x WHEN max(1s) > 5 EMIT series, max(1s)
"""
HOME = {"a.x": "n1", "b.x": "n2", "c.x": "n3"}  # the series bounded queries pin
CLEAN = [*HOME, "d.x"]


class Faulty(SourceNode):
    """A source node with bugs: a step raises after changing the state on a series 'poison',
    and on any control once the node holds a series 'cursed'."""

    def step_columns(self, control: Any, *columns: Any, clock_ms: int | None = None) -> list[dict]:
        cursed = "cursed.x" in self.newest_ts
        out = super().step_columns(control, *columns, clock_ms=clock_ms)
        if "poison.x" in list(columns[0]):  # the series column
            raise RuntimeError("a bug on poison")
        if cursed and control:
            raise RuntimeError("a bug on control")
        return out


class FaultyHub(CoordinatorNode):
    """A coordinator with a bug: its step raises, after changing its state, on a heartbeat of
    a source that received :data:`HUB_POISON` points."""

    def step(self, batch_id: int, outputs: Any) -> dict[str, list[dict]]:
        control = super().step(batch_id, outputs)
        if any(
            r["kind"] == "heartbeat" and r["payload"]["received"] == HUB_POISON for r in outputs
        ):
            raise RuntimeError("a bug in the coordinator")
        return control


def runtime(oracle: bool) -> BatchedRuntime:
    rt = BatchedRuntime(
        1_000,
        0.1,
        0,
        queries=QUERIES,
        source_of=HOME,
        registers=RegisterSettings(retention="1h"),
        standing_settings=StandingSettings(tick_ms=1_000, k=5),
    )

    def faulty(key: str) -> Any:
        node = new_node(key, rt.settings)
        return Faulty(key, rt.settings) if type(node) is SourceNode else node

    rt.new_node = faulty
    rt.hub().__class__ = FaultyHub  # the same hub, with the bug
    if oracle:  # handed out: a copy before every step, the restore point before the journal
        assert rt.nodes == {} and isinstance(rt.coordinator, FaultyHub)
    return rt


def observed(rt: BatchedRuntime) -> str:
    """What a batch shows: rows, dead letters, errors, counts, answers of every kind, control."""
    answers = {kind: rt.answers(kind) for kind in ("bounded", "topk", "standing", "summary")}
    shown = (rt.last_outputs, rt.quarantined, rt.errors, rt.rows, answers, rt.control)
    return repr(shown)


def same_state(mine: BatchedRuntime, oracle: BatchedRuntime, batches: int) -> None:
    """The states are the same: what the nodes and the coordinator count and know, and what
    they do on clean batches of every series from there (their pickles may differ in bytes:
    unused slots of numpy buffers are not initialized)."""

    def known(rt: BatchedRuntime) -> str:  # read without handing the objects out
        nodes = {key: rt.node(key) for key in sorted(oracle.nodes)}
        sources = {
            k: (n.now_ms, n.newest_ts, n.points, n.stale, n.clamped)
            if isinstance(n, SourceNode)
            else type(n).__name__
            for k, n in nodes.items()
        }
        hub = rt.hub()
        return repr((sources, hub.counts, hub.learned, hub.source_now, hub.last_batch_id))

    assert known(mine) == known(oracle)
    for b in range(batches, batches + 4):
        points = [(HOME.get(s, "n1"), s, 1_000 * (b + 1), float(b % 3)) for s in CLEAN]
        mine.run_batch(points, CLOCK)
        oracle.run_batch(points, CLOCK)
        assert observed(mine) == observed(oracle)


point = st.tuples(st.sampled_from(CLEAN), st.sampled_from(["n1", "n2", "n3"]), st.integers(-5, 9))
fault = st.one_of(st.none(), st.none(), st.tuples(st.sampled_from(["poison.x", "cursed.x"]), point))
late = st.one_of(st.none(), st.integers(0, 3))  # the clock: points stamped > ts + late are future
batch = st.tuples(st.lists(point, max_size=HUB_POISON + 1), fault, late)
batches = st.lists(batch, min_size=1, max_size=40)


@settings(max_examples=60, deadline=None)
@given(
    batches,
    st.sampled_from([1, 5, journal.EVERY, journal.EVERY]),
    st.sampled_from([3, journal.BOUND, journal.BOUND]),
)
def test_a_journal_restores_what_a_copy_before_every_step_restores(
    batches: list[tuple[list[tuple[str, str, int]], Any, int | None]], every: int, bound: int
) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(journal, "EVERY", every)
        patch.setattr(journal, "BOUND", bound)
        mine, oracle = runtime(False), runtime(True)
        for b, (clean, bad, ahead) in enumerate(batches):
            ts = 1_000 * (b + 1)
            clock = CLOCK if ahead is None else ts + ahead - DAY_MS
            batch = clean if bad is None else [*clean, (bad[0], *bad[1][1:])]
            points = [
                (HOME.get(s, src), s, ts + i, float(v)) for i, (s, src, v) in enumerate(batch)
            ]
            assert repr(mine.run_batch(points, clock)) == repr(oracle.run_batch(points, clock))
            assert observed(mine) == observed(oracle)
        same_state(mine, oracle, len(batches))


def test_a_node_step_that_raises_after_clean_ones_comes_back_to_the_state_before_it() -> None:
    mine, oracle = runtime(False), runtime(True)  # the journal's snapshot: before batch 0
    for b in range(12):
        series = "poison.x" if b == 10 else "a.x"
        points = [("n1", series, 1_000 * (b + 1), 1.0 + b), ("n2", "b.x", 1_000 * (b + 1), 2.0)]
        mine.run_batch(points, CLOCK)
        oracle.run_batch(points, CLOCK)
        assert observed(mine) == observed(oracle)
        if b == 10:  # restored by replaying batches 0..9 on the snapshot
            assert mine.errors == ["source 'n1': RuntimeError: a bug on poison"]
            assert mine.node("n1").newest_ts == {"a.x": 10_000}
    same_state(mine, oracle, 12)
