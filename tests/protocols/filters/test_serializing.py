"""The serializing queue bounded per object (beyond §4): whatever is folded, the record in
force at any time holds the newest value sent at or before it, and each object keeps at most
``backlog`` records waiting."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tsmon.protocols.filters.messages import StreamedUpdate
from tsmon.protocols.filters.serializing import SerializingQueue

OBJECTS = ["a", "b", "c"]


@st.composite
def scripts(draw: st.DrawFn) -> tuple[int, list[tuple[list[StreamedUpdate], int]]]:
    """Rounds of (updates pushed, the horizon released to after them)."""
    backlog = draw(st.integers(2, 6))
    ts = dict.fromkeys(OBJECTS, 0)
    seq = dict.fromkeys(OBJECTS, 0)
    horizon, rounds = 0, []
    for _ in range(draw(st.integers(1, 25))):
        pushed = []
        for _ in range(draw(st.integers(0, 12))):
            obj = draw(st.sampled_from(OBJECTS))
            ts[obj] += draw(st.integers(0, 50))  # per object in time order, ties allowed
            seq[obj] += 1
            value = draw(st.floats(-100, 100, allow_nan=False))
            pushed.append(StreamedUpdate(obj, value, ts[obj], seq=seq[obj]))
        horizon += draw(st.integers(0, 80))
        rounds.append((pushed, horizon))
    return backlog, rounds


@settings(max_examples=200, deadline=None)
@given(scripts())
def test_the_record_in_force_holds_the_newest_value_and_the_queue_stays_bounded(script) -> None:
    backlog, rounds = script
    queue = SerializingQueue(latency_ms=0, backlog=backlog)
    sent: dict[str, list[tuple[int, int, float]]] = {o: [] for o in OBJECTS}
    in_force: dict[str, tuple[float, float]] = {}
    pushed = 0
    for updates, horizon in rounds:
        for u in updates:
            queue.push(u, arrival_ms=u.ts_ms)
            sent[u.object_id].append((u.ts_ms, u.seq, u.value))
        pushed += len(updates)
        for record in queue.release(horizon):
            assert record.lo <= record.first <= record.hi and record.lo <= record.last <= record.hi
            in_force[record.object_id] = (record.lo, record.hi)
        queue.trim()
        for obj in OBJECTS:
            due = [v for t, _, v in sent[obj] if t <= horizon]
            if due:  # the newest value at or before the horizon is within the record in force
                lo, hi = in_force[obj]
                assert lo <= due[-1] <= hi
            assert len(queue._of.get(obj, [])) <= backlog
        assert len(queue._heap) <= 2 * backlog * len(OBJECTS)
    waiting = sum(r.updates for rs in queue._of.values() for r in rs)
    assert queue.released + waiting == pushed  # nothing dropped
    assert pushed - queue.released - len(queue) == sum(
        r.updates - 1 for rs in queue._of.values() for r in rs
    )
