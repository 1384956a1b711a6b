"""Every point a source node gets is accepted or a dead letter, stale ones too (docs/time.md):
a point older than its series' newest is stored late by the registers, or a dead letter
(``too_late``, ``duplicate``), or, without registers, a dead letter ``too_late``. The
heartbeat's ``received`` = ``accepted`` + the node's dead rows, checked against an
independent model of the rules."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from tsmon.engine.batched import BatchedRuntime
from tsmon.engine.settings import RegisterSettings

POINT = st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 40), st.integers(-5, 5))
REGISTERS = st.one_of(
    st.none(),
    st.builds(
        lambda lateness, policy: RegisterSettings(
            retention=None, allowed_lateness=lateness, duplicates=policy
        ),
        st.integers(0, 20),
        st.sampled_from(["keep_last", "keep_first"]),
    ),
)


def model(batch: list[tuple], newest: dict, stored: dict, registers) -> Counter[str]:
    """Accepted points and dead letters by reason, by the rules alone (a batch in (ts, seq)
    order, one source)."""
    out: Counter[str] = Counter()
    keep_first = registers is not None and registers.duplicates == "keep_first"
    for series, ts, _ in sorted(batch, key=lambda p: p[1]):  # stable: seq order among ties
        last = newest.get(series)
        times = stored.setdefault(series, set())
        if last is None or ts > last or (ts == last and not keep_first):
            newest[series] = ts
            times.add(ts)
            out["accepted"] += 1
        elif registers is None or last - ts > registers.allowed_lateness:
            out["too_late"] += 1
        elif ts in times and keep_first:
            out["duplicate"] += 1
        else:  # inserted late, or replacing the value at its time
            times.add(ts)
            out["accepted"] += 1
    return out


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(POINT, max_size=12), min_size=1, max_size=5), REGISTERS)
def test_every_point_is_accepted_or_a_dead_letter(batches, registers) -> None:
    rt = BatchedRuntime(1_000, 0.1, 0, registers=registers, max_future_ms=None)
    newest: dict = {}
    stored: dict = {}
    for batch in batches:
        rt.run_batch([("s", series, ts, float(v)) for series, ts, v in batch])
        counted: Counter[str] = Counter()
        for row in rt.last_outputs:
            if row["kind"] == "heartbeat":
                beat = row["payload"]
                counted["received"] += beat["received"]
                counted["accepted"] += beat["accepted"]
                assert beat["accepted"] >= beat["points"]
            elif row["kind"] == "dead":
                counted[row["payload"]["reason"]] += 1
        assert counted.pop("received", 0) == len(batch)
        assert +counted == +model(batch, newest, stored, registers)
