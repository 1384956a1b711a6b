"""Top-k queries in the batch runtime: monitor nodes at the sources, one batch per hop.

The reference is exact: per source, the sum of each object's points over the source's window
(its own newest timestamp); the answer must be valid within ε whenever nothing is pending,
and once the stream stops every resolution completes (Appendix A's convergence).
"""

from __future__ import annotations

import math
import random
from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tsmon.engine.batched import BatchedRuntime
from tsmon.kinds.topk.node import MAX_VALUE, to_units, unusable
from tsmon.query import AlterTopK, parse_query


class Exact:
    """Each source's points per object; sums over the source's window at its own time."""

    def __init__(self, window_ms: int | None) -> None:
        self.window_ms = window_ms
        self.points: dict[str, list[tuple[int, str, float]]] = defaultdict(list)

    def add(self, source: str, ts: int, obj: str, value: float) -> None:
        self.points[source].append((ts, obj, value))

    def totals(self, now_of: dict[str, int | None]) -> dict[str, float]:
        out: dict[str, float] = defaultdict(float)
        for source, points in self.points.items():
            now = now_of[source]
            for ts, obj, value in points:
                if self.window_ms is None or ts > now - self.window_ms:
                    out[obj] += value
                else:
                    out.setdefault(obj, 0.0)
        return out


def valid(members: tuple[str, ...], totals: dict[str, float], k: int, eps: float, bottom: bool):
    if len(members) < k:
        return set(totals) <= set(members)
    inside = [totals.get(o, 0.0) for o in members]
    outside = [v for o, v in totals.items() if o not in members]
    if bottom:
        return not outside or max(inside) <= min(outside) + eps + 1e-9
    return min(inside) + eps + 1e-9 >= max([*outside, 0.0])


def quiet(rt: BatchedRuntime) -> bool:
    """No control on its way, no resolution under way, no node waiting for an answer."""
    if any(rt.control.values()):
        return False
    if any(not a.settled for a in rt.answers("topk").values()):
        return False
    return not any(
        q.node.awaiting or q.node.fresh
        for n in rt.nodes.values()
        for q in n.part("topk").topk.queries.values()
    )


@st.composite
def workloads(draw: st.DrawFn) -> dict:
    return {
        "sources": draw(st.integers(1, 4)),
        "objects": draw(st.integers(1, 12)),
        "k": draw(st.integers(1, 3)),
        "eps": draw(st.sampled_from([0, 0, 0.5, 2, 10])),
        "window": draw(st.sampled_from([None, 50, 200])),
        "bottom": draw(st.booleans()),
        "batches": draw(st.integers(1, 20)),
        "per_batch": draw(st.integers(0, 60)),
        "seed": draw(st.integers(0, 2**32 - 1)),
    }


def query_text(w: dict, k: int | None = None) -> str:
    word = "BOTTOM" if w["bottom"] else "TOP"
    over = f" OVER {w['window']}ms" if w["window"] else ""
    return f"QUERY q AS {word} {k or w['k']} OF doc* BY hits{over} WITHIN {w['eps']}"


@settings(max_examples=150, deadline=None)
@given(workloads())
def test_valid_when_quiet_and_converges(w: dict) -> None:
    rt = BatchedRuntime(1_000, 0.1, 0, queries=query_text(w))
    exact = Exact(w["window"])
    rng = random.Random(w["seed"])
    clock = dict.fromkeys((f"s{j}" for j in range(w["sources"])), 0)
    for _ in range(w["batches"]):
        points = []
        for _ in range(w["per_batch"]):
            source = rng.choice(sorted(clock))
            clock[source] += rng.randint(1, 20)  # increasing per source: nothing is stale
            obj = f"doc{min(int(rng.paretovariate(1.2)), w['objects'])}"
            value = rng.choice([0, 1, 1, 2, 3.5])
            points.append((source, f"{obj}.hits", clock[source], float(value)))
            exact.add(source, clock[source], obj, value)
        rt.run_batch(points)
        answer = rt.answers("topk")["q"]
        if answer.settled:  # the protocol's own criterion: nothing pending, in flight, awaited
            assert quiet(rt)
            now_of = {s: n.now_ms for s, n in rt.nodes.items()}
            assert valid(answer.members, exact.totals(now_of), w["k"], w["eps"], w["bottom"])
    for _ in range(100):  # no more data: every resolution completes
        if rt.answers("topk")["q"].settled:
            break
        rt.run_batch([])
    assert quiet(rt)
    now_of = {s: n.now_ms for s, n in rt.nodes.items()}
    answer = rt.answers("topk")["q"]
    assert valid(answer.members, exact.totals(now_of), w["k"], w["eps"], w["bottom"])
    assert answer.k == w["k"] and answer.eps == w["eps"] and answer.bottom == w["bottom"]


@pytest.mark.parametrize("busy", ["a", "z"])
def test_no_source_starves(busy: str) -> None:
    """One source sees a new object in every batch (a Phase 3 each time, as |T| < k); the other
    source's object must still get in, within a few batches, whichever name sorts first."""
    other = "m"
    rt = BatchedRuntime(1_000, 0.1, 0, queries="QUERY q AS TOP 50 OF doc* BY hits WITHIN 0")
    late = None
    for t in range(1, 40):
        points = [(busy, f"doc{t}.hits", t, 1.0)]
        if t == 3:
            points.append((other, "docbig.hits", t, 100.0))
        rt.run_batch(points)
        if t >= 3 and "docbig" in rt.answers("topk")["q"].members:
            late = t - 3
            break
    assert late == 3  # whichever name sorts first


def control_batches(rt: BatchedRuntime, limit: int = 100) -> int:
    """Empty batches (control only) run until the answer says settled."""
    for n in range(limit):
        if rt.answers("topk")["q"].settled:
            return n
        rt.run_batch([])
    raise AssertionError(f"not settled after {limit} control batches")


@pytest.mark.parametrize("n", [20, 100])
def test_start_up_requests_fold_into_one_resolution(n: int) -> None:
    """Issue 17: ``n`` sources each see a new object in the first batch. Their requests (after
    the join installs made the first ones stale) fold into one Phase 3: 3 control batches and
    6 messages per source, not a Phase 3 each (2n batches, ~3.5n² messages before)."""
    rt = BatchedRuntime(1_000, 0.1, 0, queries="QUERY q AS TOP 10 OF doc* BY hits WITHIN 0")
    exact = Exact(None)
    points = [(f"s{j:03d}", f"doc{j}.hits", 1, float(j % 37)) for j in range(n)]
    for source, series, ts, value in points:
        exact.add(source, ts, series.split(".")[0], value)
    rt.run_batch(points)
    assert control_batches(rt) == 3
    answer = rt.answers("topk")["q"]
    assert quiet(rt) and answer.messages == 6 * n and answer.nodes == n
    phases = next(iter(rt.coordinator.part("topk").topk.running.values())).resolver
    assert phases.coordinator.phases == {"phase2": 0, "probe": 0, "phase3": 1, "refresh": 0}
    now_of = {s: node.now_ms for s, node in rt.nodes.items()}
    assert valid(answer.members, exact.totals(now_of), 10, 0, False)


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 40),
    per_source=st.integers(1, 3),
    objects=st.integers(1, 60),
    k=st.integers(1, 4),
    eps=st.sampled_from([0, 0, 1, 5]),
    bottom=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_start_up_settles_in_a_few_batches_whatever_the_sources(
    n: int, per_source: int, objects: int, k: int, eps: float, bottom: bool, seed: int
) -> None:
    """Any number of sources, each with a few points of any objects (shared or not, ties
    allowed) in the first batch: settled within 3 control batches, ε-valid against the exact
    sums."""
    w = {"bottom": bottom, "window": None, "k": k, "eps": eps}
    rt = BatchedRuntime(1_000, 0.1, 0, queries=query_text(w))
    exact = Exact(None)
    rng = random.Random(seed)
    points = []
    for j in range(n):
        for i in range(per_source):
            obj, value = f"doc{rng.randrange(objects)}", float(rng.randint(0, 9))
            points.append((f"s{j:03d}", f"{obj}.hits", 1 + i, value))
            exact.add(f"s{j:03d}", 1 + i, obj, value)
    rt.run_batch(points)
    assert control_batches(rt) <= 3
    assert quiet(rt)
    now_of = {s: node.now_ms for s, node in rt.nodes.items()}
    assert valid(rt.answers("topk")["q"].members, exact.totals(now_of), k, eps, bottom)


def test_settled_waits_for_installs_in_flight() -> None:
    rt = BatchedRuntime(1_000, 0.1, 0, queries="QUERY q AS TOP 1 OF doc* BY hits WITHIN 0")
    rt.run_batch([("s1", "doc1.hits", 1, 5.0)])  # join: the install is on its way
    assert not rt.answers("topk")["q"].settled
    settle(rt)
    rt.run_batch([("s1", "doc1.hits", 2, 1.0)])  # no constraint breaks: nothing is sent
    assert rt.answers("topk")["q"].settled and quiet(rt)


def settle(rt: BatchedRuntime) -> None:
    for _ in range(50):
        if quiet(rt):
            return
        rt.run_batch([])
    raise AssertionError("did not settle")


def test_add_alter_remove_while_running() -> None:
    rt = BatchedRuntime(1_000, 0.1, 0)
    rt.coordinator.add(parse_query("QUERY hot AS TOP 1 OF doc* BY hits WITHIN 0"))
    rt.run_batch([("s1", "doc1.hits", 1, 5.0), ("s2", "doc2.hits", 1, 3.0)])  # log goes out
    rt.run_batch([("s1", "doc1.hits", 2, 1.0), ("s2", "doc2.hits", 2, 4.0)])  # counted from here
    settle(rt)
    assert rt.answers("topk")["hot"].members == ("doc2",)  # 4 > 1: the first batch predates it
    rt.coordinator.alter(AlterTopK("HOT", False, 2, 1.5))
    settle(rt)
    answer = rt.answers("topk")["hot"]
    assert answer.members == ("doc1", "doc2") and answer.k == 2 and answer.eps == 1.5
    rt.coordinator.alter_precision("hot", 0.5)  # ALTER QUERY hot WITHIN 0.5
    settle(rt)
    assert rt.answers("topk")["hot"].eps == 0.5
    with pytest.raises(ValueError, match="remove and add"):
        rt.coordinator.alter(AlterTopK("hot", True, 2, None))
    with pytest.raises(ValueError, match="exists"):
        rt.coordinator.add(parse_query("QUERY Hot AS TOP 1 OF doc* BY hits WITHIN 0"))
    rt.coordinator.remove_query("hot")
    assert rt.answers("topk") == {}
    rt.run_batch([("s1", "doc1.hits", 3, 1.0)])  # the removal goes out
    rt.run_batch([("s1", "doc1.hits", 4, 1.0)])  # and is applied
    assert all(not n.part("topk").topk.queries for n in rt.nodes.values())


def test_unusable_values_are_ignored_and_counted_with_the_reason() -> None:
    """Issue 16: 1.8e302 (× 10⁶ overflows) or −1e308 once raised OverflowError in every replay."""
    rt = BatchedRuntime(1_000, 0.1, 0, queries="QUERY q AS TOP 1 OF doc* BY hits WITHIN 0")
    edge = MAX_VALUE  # the largest accepted magnitude: exact micro-units
    points = [("s1", "doc1.hits", 1, 2.0), ("s1", "doc2.hits", 2, -5.0)]
    points += [("s1", "doc3.hits", 3, 1.8e302), ("s2", "doc4.hits", 3, -1e308)]
    points += [("s2", "doc5.hits", 4, math.nextafter(edge, math.inf))]
    rt.run_batch(points)
    # beyond MAX_ABS_VALUE (1e140): dead letters at the node, as Spark's input stage makes them
    dead = [
        (r["payload"]["value"], r["payload"]["reason"])
        for r in rt.last_outputs
        if r["kind"] == "dead"
    ]
    assert sorted(dead) == [(-1e308, "value_out_of_range"), (1.8e302, "value_out_of_range")]
    settle(rt)
    answer = rt.answers("topk")["q"]
    assert answer.members == ("doc1",) and answer.ignored == 2
    assert answer.ignored_why == "negative: 1, too large: 1"
    rt.run_batch([("s2", "doc5.hits", 5, edge)])  # at the limit: counted, exactly
    settle(rt)
    assert rt.answers("topk")["q"].members == ("doc5",)
    assert to_units(edge) == 2**53 and unusable(edge) is None
    with pytest.raises(ValueError, match="too large"):
        to_units(1.8e302)
    with pytest.raises(ValueError, match="not finite"):
        to_units(math.inf)
    assert unusable(math.nan) == "not finite"
    with pytest.raises(ValueError, match="too large"):  # refused at once, not in a later step
        rt.coordinator.alter_precision("q", 1e300)
    with pytest.raises(ValueError, match="too large"):
        rt.coordinator.add(parse_query("QUERY r AS TOP 1 OF doc* BY hits WITHIN 1e300"))
    rt.run_batch([])
    assert rt.answers("topk")["q"].eps == 0 and list(rt.answers("topk")) == ["q"]
    assert len(rt.coordinator.part("topk").topk.log) == 1  # only q was ever logged


def test_a_series_may_come_from_many_sources() -> None:
    rt = BatchedRuntime(1_000, 0.1, 0, queries="QUERY q AS TOP 1 OF doc* BY hits WITHIN 0")
    points = [(f"s{j}", "doc1.hits", 1, 1.0) for j in range(5)] + [("s0", "doc2.hits", 1, 4.0)]
    rt.run_batch(points)
    settle(rt)
    answer = rt.answers("topk")["q"]
    assert answer.members == ("doc1",) and answer.nodes == 5  # 5 > 4, summed over sources


def test_a_monitor_answers_topk_queries_as_the_settled_batch_runtime() -> None:
    """A Monitor runs a top-k query in the batch host with an instant transport: after each
    ingest its answer is the one the batch runtime reaches once it settles."""
    from tsmon.engine.monitor import Monitor

    monitor = Monitor(["doc*"])
    text = "QUERY t AS TOP 2 OF doc* BY hits WITHIN 0"
    monitor.add_query(text)
    rt = BatchedRuntime(1_000, 0.1, 0, queries=text)  # every node starts with it
    rng = np.random.default_rng(7)
    for t in range(1, 30):
        docs = rng.choice(6, 3, replace=False)
        points = [(f"doc{d}.hits", t, float(rng.integers(0, 20))) for d in docs]
        monitor.ingest([p[0] for p in points], [p[1] for p in points], [p[2] for p in points])
        rt.run_batch([("monitor", *p) for p in points])
        settle(rt)
        want, got = rt.answers("topk")["t"], monitor.answers("topk")["t"]
        assert got.settled and got.members == want.members
    with pytest.raises(ValueError, match="ALTER QUERY changes"):
        monitor.add_query("ALTER QUERY t TOP 4")
    monitor.alter_query("ALTER QUERY t TOP 1")
    assert len(monitor.answers("topk")["t"].members) == 1
    monitor.remove_query("T")
    assert monitor.answers("topk") == {} and monitor.queries() == {}
