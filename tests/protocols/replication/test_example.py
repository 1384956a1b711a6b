"""§3's worked example (Table 1, Fig. 7), replayed message by message through the pure sites.

Topology of Fig. 7: ``S -> C1, C2``, ``C1 -> C3``. The source starts with Table 1's directory
at a count where levels 0-2 are aligned (``count = 16``): ``(0,1) = R_0``, ``(2,3) = L_0``,
``(4,7) = L_1``, ``(8,15) = L_2``. The paper compares a range's *width* with a query's
precision; these sites answer with the midpoint, off by at most the *half* width, so the
example's precisions 20 and 8 become 10 and 4 here (same outcomes).
"""

from __future__ import annotations

import numpy as np
import pytest

from tsmon.protocols.replication import (
    Answer,
    Approx,
    ClientSite,
    Decache,
    Insert,
    MessageCounts,
    Query,
    Reaction,
    Row,
    Segment,
    SourceSite,
    Update,
)

R = Segment(0, "R")
L0 = Segment(0, "L")
L1 = Segment(1, "L")
L2 = Segment(2, "L")


def rng(lo: float, hi: float) -> Approx:
    return Approx((lo,), (hi,))


class Fig7:
    """Sites of Fig. 7 with Table 1's directory at S, and a FIFO pump counting messages."""

    def __init__(self) -> None:
        self.s = SourceSite(window=16)
        for x in range(16):
            self.s.on_value(float(x), now_ms=0)
        self.s.directory = {
            R: Row(R, rng(25, 45), {1: rng(25, 45), 2: rng(25, 45)}),
            L0: Row(L0, rng(30, 40), {2: rng(30, 40)}),
            L1: Row(L1, rng(2, 7), {2: rng(2, 7)}),
            L2: Row(L2, rng(4, 10), {2: rng(4, 10)}),
        }
        self.c1, self.c3 = ClientSite(1, 0), ClientSite(3, 1)
        self.c2 = ClientSite(2, 0)
        for seg, row in self.s.directory.items():
            if 2 in row.subscribed:
                self.c2.directory[seg] = Row(seg, row.approx)
        self.c1.directory[R] = Row(R, rng(25, 45))
        self.sites = {0: self.s, 1: self.c1, 2: self.c2, 3: self.c3}
        self.counts = MessageCounts()
        self.log: list[object] = []

    def pump(self, reaction) -> list[Answer]:
        queue, answers = list(reaction.messages), list(reaction.answers)
        while queue:
            m = queue.pop(0)
            self.counts.add(m)
            self.log.append(m)
            r = self.sites[m.receiver].on_message(m, now_ms=0)
            queue += r.messages
            answers += r.answers
        return answers

    def ask(self, client: int, position: int, delta: float) -> Answer:
        site = self.sites[client]
        (answer,) = self.pump(site.query([position], [1.0], delta, count=16, now_ms=0))
        return answer

    def phase(self) -> None:
        for site in (self.c3, self.c2, self.c1, self.s):  # deepest first
            self.pump(site.end_phase(now_ms=0))


def test_section3_example_step_by_step():
    net = Fig7()
    # Q0([3], [1], 20) at C3: nothing cached at C3 or C1 for (2, 3); S answers from [30, 40]
    a = net.ask(3, 3, delta=10.0)
    assert (a.value, a.bound, a.site) == (35.0, 5.0, 0)
    assert [type(m).__name__ for m in net.log] == ["Query", "Query", "Answer", "Answer"]
    assert net.s.directory[L0].interested == {1} and net.s.directory[L0].child_reads == {1: 1}
    net.phase()  # write_count 0 < read_count 1: S sends a copy of (2, 3) to C1
    assert net.log[-1] == Insert(0, 1, L0, rng(30, 40))
    assert set(net.s.directory[L0].subscribed) == {1, 2}

    # next phase: C3 asks Q0 three times, C1 answers; C1 expands to C3
    for _ in range(3):
        assert net.ask(3, 3, delta=10.0).site == 1
    assert net.c1.directory[L0].child_reads == {3: 3}
    net.phase()
    assert net.log[-1] == Insert(1, 3, L0, rng(30, 40))
    assert set(net.c1.directory[L0].subscribed) == {3}

    # next phase: data tightens (2, 3) to [32, 38] at S: enclosed, not propagated
    n = len(net.log)
    assert net.s.update(L0, rng(32, 38)) == [] and net.s.directory[L0].writes == 0
    for _ in range(4):  # Q1([3], [1], 8) at C1: [30, 40] is not precise enough
        assert net.ask(1, 3, delta=4.0).site == 0
    assert net.ask(3, 3, delta=10.0).site == 3  # Q0 at C3: satisfied locally
    assert net.s.directory[L0].child_reads == {1: 4}
    net.phase()  # S sends [32, 38] to subscribed C1; C1's old [30, 40] encloses it: no more
    assert [m for m in net.log[n:] if isinstance(m, Update)] == [Update(0, 1, L0, rng(32, 38))]
    assert net.s.directory[L0].approx == rng(32, 38)
    assert (net.c1.directory[L0].approx, net.c3.directory[L0].approx) == (rng(32, 38), rng(30, 40))

    # next phase: [34, 35] at S; nothing propagates; precision falls down the tree
    assert net.s.update(L0, rng(34, 35)) == []
    net.phase()
    rows = [
        (site.directory[L0].approx, set(site.directory[L0].subscribed))
        for site in (net.s, net.c1, net.c3)
    ]
    assert rows == [(rng(34, 35), {1, 2}), (rng(32, 38), {3}), (rng(30, 40), set())]


def test_an_update_not_enclosed_is_a_write_pushed_down_the_scheme():
    net = Fig7()
    net.c1.directory[L0] = Row(L0, rng(30, 40), {3: rng(30, 40)})
    net.s.directory[L0].subscribed[1] = rng(30, 40)
    net.c3.directory[L0] = Row(L0, rng(30, 40))
    net.pump(Reaction(tuple(net.s.update(L0, rng(39, 42)))))
    assert net.s.directory[L0].writes == 1 and net.c1.directory[L0].writes == 1
    assert net.c3.directory[L0].approx == rng(39, 42)
    assert net.counts.by_kind == {"updates": 3}  # S -> C1, S -> C2, C1 -> C3


def test_contraction_decaches_a_fringe_replica_and_tells_the_parent():
    net = Fig7()
    net.s.directory[L0].subscribed[1] = rng(30, 40)
    net.c1.directory[L0] = Row(L0, rng(30, 40), writes=2, reads=1)
    net.pump(net.c1.end_phase(0))
    assert L0 not in net.c1.directory
    assert net.log == [Decache(1, 0, L0)] and 1 not in net.s.directory[L0].subscribed
    # an update for a replica that was just dropped is stale and ignored
    assert net.c1.on_message(Update(0, 1, L0, rng(0, 1)), 0).messages == ()


def test_a_site_with_subscribers_is_not_fringe_and_keeps_its_replica():
    net = Fig7()
    net.c1.directory[L0] = Row(L0, rng(30, 40), {3: rng(30, 40)}, writes=5)
    net.pump(net.c1.end_phase(0))
    assert L0 in net.c1.directory and net.log == []


def test_queries_past_the_window_and_unknown_messages_are_refused():
    s = SourceSite(window=8)
    for x in np.arange(10.0):
        s.on_value(x, now_ms=0)
    late = Query(1, 0, (1, 0), count=5, positions=(4,), weights=(1.0,), delta=1.0, route=(1,))
    with pytest.raises(ValueError, match="reaches past the source's window"):
        s.on_message(late, now_ms=0)
    with pytest.raises(TypeError, match="the source takes Query and Decache"):
        s.on_message(Insert(1, 0, R, rng(0, 1)), now_ms=0)
    with pytest.raises(TypeError, match="cannot handle"):
        ClientSite(1, 0).on_message(object(), now_ms=0)  # type: ignore[arg-type]


def test_a_query_older_than_the_source_is_shifted_to_the_same_values():
    s = SourceSite(window=8)
    for x in np.arange(12.0):
        s.on_value(x, now_ms=0)
    q = Query(1, 0, (1, 0), count=11, positions=(0,), weights=(1.0,), delta=0.0, route=(1,))
    (a,) = s.on_message(q, now_ms=0).messages
    assert a.exact and a.value == 10.0  # the 11th value, one arrival ago
