"""A client site of SWAT-ASR (Bulut & Singh, §3): replicas of some segments, queries in and up.

A client answers a query (its own or a child's) from its replicas when their data ranges meet
the query's precision, and forwards it to its parent otherwise (Fig. 8a). It relays answers
back down, applies updates and inserts from its parent (passing on the ranges its own
subscribers need), and runs Fig. 8(b) at the end of each phase. Pure logic: no clock, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

from tsmon.protocols.replication.directory import AsrSite, Reaction
from tsmon.protocols.replication.messages import Answer, Decache, Insert, Message, Query, Update

__all__ = ["ClientSite"]


class ClientSite(AsrSite):
    """Client site ``site`` whose parent (towards the source ``S``) is ``parent``.

    Queries name positions back in time at an arrival ``count`` (0 = the ``count``-th value);
    the client maps its segments to positions with the same ``count``, as every site shares
    the arrival count.

    Examples
    --------
    >>> from tsmon.protocols.replication.segments import Approx, Segment
    >>> c1 = ClientSite(1, parent=0)
    >>> up = c1.query([3], [1.0], delta=8.0, count=16, now_ms=0).messages[0]  # nothing cached
    >>> type(up).__name__, up.receiver, up.route
    ('Query', 0, (1,))
    >>> _ = c1.on_message(Insert(0, 1, Segment(0, "L"), Approx((30.0,), (40.0,))), now_ms=0)
    >>> c1.query([3], [1.0], delta=8.0, count=16, now_ms=0).answers[0].value  # L_0: (2, 3)
    35.0
    """

    def __init__(self, site: int, parent: int, slack: float | None = None) -> None:
        super().__init__(site, parent, slack)
        self._seq = 0

    def query(
        self,
        positions: Sequence[int],
        weights: Sequence[float],
        delta: float,
        count: int,
        now_ms: int,
    ) -> Reaction:
        """Pose ``(positions, weights, delta)`` here: answered locally or sent to the parent."""
        qid = (self.site, self._seq)
        self._seq += 1
        d = self._serve(positions, weights, delta, count, child=None)
        if d.satisfied:
            return Reaction(
                answers=(Answer(self.site, self.site, qid, d.value, d.bound, self.site),)
            )
        assert self.parent is not None
        p, w = tuple(int(x) for x in positions), tuple(float(x) for x in weights)
        return Reaction(
            (Query(self.site, self.parent, qid, count, p, w, float(delta), (self.site,)),)
        )

    def on_message(self, m: Message, now_ms: int) -> Reaction:
        """Handle a child's query, an answer to relay or keep, or a replica message."""
        if isinstance(m, Query):
            d = self._serve(m.positions, m.weights, m.delta, m.count, child=m.sender)
            if d.satisfied:
                back = Answer(self.site, m.sender, m.qid, d.value, d.bound, self.site, m.route[:-1])
                return Reaction((back,))
            assert self.parent is not None
            up = Query(
                self.site,
                self.parent,
                m.qid,
                m.count,
                m.positions,
                m.weights,
                m.delta,
                (*m.route, self.site),
            )
            return Reaction((up,))
        if isinstance(m, Answer):
            if not m.route:  # this site asked
                return Reaction(answers=(m,))
            down = Answer(
                self.site, m.route[-1], m.qid, m.value, m.bound, m.site, m.route[:-1], m.exact
            )
            return Reaction((down,))
        if isinstance(m, Update | Insert):
            return Reaction(tuple(self._on_replica(m)))
        if isinstance(m, Decache):
            self._on_decache(m)
            return Reaction()
        raise TypeError(f"a client site cannot handle {type(m).__name__}")
