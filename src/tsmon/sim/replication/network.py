"""Simulated trees of sites for SWAT-ASR and its baselines, every message counted (§3-§5).

The source is site 0 at the root; ``parents`` maps each client to its parent. Messages travel
over an instant :class:`~tsmon.engine.transport.Link`, which counts them: a handler's messages
are delivered (FIFO) before the call returns, so between calls no message is in flight.
:class:`AsrNetwork` counts one message per link a SWAT-ASR message crosses (they only travel
between adjacent sites). :class:`ItemNetwork` runs a baseline (§4)
between each client and the source: a message counts once per link of the path between them
(``total``) and once end to end (``end_to_end``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tsmon.engine.transport import Link
from tsmon.protocols.replication.client import ClientSite
from tsmon.protocols.replication.directory import AsrSite, Reaction
from tsmon.protocols.replication.invariants import check_replication
from tsmon.protocols.replication.items import ItemClient, ItemServer
from tsmon.protocols.replication.messages import Answer, Message, MessageCounts
from tsmon.protocols.replication.policies import WidthPolicy
from tsmon.protocols.replication.source import SourceSite

__all__ = ["AsrNetwork", "ItemNetwork", "binary_tree", "depths"]


def binary_tree(clients: int) -> dict[int, int]:
    """Clients ``1..clients`` of a complete binary tree rooted at the source 0 (§5.3.1).

    Examples
    --------
    >>> binary_tree(6)  # S -> C1, C2; C1 -> C3, C4; C2 -> C5, C6
    {1: 0, 2: 0, 3: 1, 4: 1, 5: 2, 6: 2}
    """
    if clients < 1:
        raise ValueError(f"need at least one client, got {clients}")
    return {c: (c - 1) // 2 for c in range(1, clients + 1)}


def depths(parents: Mapping[int, int]) -> dict[int, int]:
    """Links between each client and the source.

    Examples
    --------
    >>> depths(binary_tree(6))
    {1: 1, 2: 1, 3: 2, 4: 2, 5: 2, 6: 2}
    """
    out: dict[int, int] = {}
    for c in parents:
        d, s = 0, c
        while s != 0:
            if s not in parents or d > len(parents):
                raise ValueError(f"client {c} has no path to the source 0 in {dict(parents)}")
            s, d = parents[s], d + 1
        out[c] = d
    return out


class _Tree:
    """A root site 0 and client sites joined by an instant link; ``counts`` takes each
    handler's messages at once."""

    root: SourceSite | ItemServer
    clients: Mapping[int, ClientSite] | Mapping[int, ItemClient]

    def __init__(self, parents: Mapping[int, int]) -> None:
        self.parents = dict(parents)
        self.depth = depths(self.parents)
        self.counts = MessageCounts()
        self.link: Link[Message] = Link(count=self._count)

    @property
    def count(self) -> int:
        """Values arrived at the root."""
        return self.root.count

    def site(self, s: int) -> AsrSite | ItemServer | ItemClient:
        return self.root if s == self.root.site else self.clients[s]

    def arrive(self, x: float, now_ms: int) -> None:
        """A value arrives at the source."""
        self._pump(self.root.on_value(x, now_ms), now_ms)

    def query(
        self,
        client: int,
        positions: Sequence[int],
        weights: Sequence[float],
        delta: float,
        now_ms: int,
    ) -> Answer:
        """``client`` poses ``(positions, weights, delta)``; returns the answer it gets."""
        r = self.clients[client].query(positions, weights, delta, self.count, now_ms)
        answers = self._pump(r, now_ms)
        assert len(answers) == 1 and answers[0].qid[0] == client, answers
        return answers[0]

    def _count(self, messages: Sequence[Message]) -> None:
        self.counts.add_all(messages, self._hops)

    def _hops(self, m: Message) -> int:
        return 1

    def _pump(self, reaction: Reaction, now_ms: int) -> list[Answer]:
        answers = list(reaction.answers)
        self.link.send(reaction.messages, now_ms)
        while self.link:
            m = self.link.pop()[1]
            r = self.site(m.receiver).on_message(m, now_ms)  # type: ignore[attr-defined]
            self.link.send(r.messages, now_ms)
            answers.extend(r.answers)
        return answers


class AsrNetwork(_Tree):
    """SWAT-ASR on a tree: a :class:`SourceSite` at 0 and a :class:`ClientSite` per client.

    Examples
    --------
    >>> net = AsrNetwork(binary_tree(3), window=8)
    >>> for t, x in enumerate([5.0, 6.0, 6.0, 7.0, 6.0, 5.0, 6.0, 6.0, 7.0]):
    ...     net.arrive(x, now_ms=t)
    >>> net.end_phase(now_ms=9)  # a new phase: counts reset
    >>> a = net.query(3, [0, 1], [1.0, 1.0], delta=1.0, now_ms=10)  # C3 -> C1 -> S and back
    >>> a.value, a.bound, a.site, net.counts.total  # exact: 7 + 6; R_0 and R_1 used
    (12.0, 1.0, 0, 4)
    >>> net.end_phase(now_ms=11)  # no writes, one read from C1: S inserts both into C1
    >>> net.counts.by_kind["inserts"], net.query(3, [0, 1], [1.0, 1.0], 1.0, now_ms=12).site
    (2, 1)
    """

    def __init__(
        self, parents: Mapping[int, int], window: int, k: int = 1, slack: float | None = None
    ) -> None:
        super().__init__(parents)
        self.source = self.root = SourceSite(window, k, slack=slack)
        self.clients = {c: ClientSite(c, p, slack) for c, p in sorted(self.parents.items())}
        self._bottom_up = sorted(self.clients, key=lambda c: (-self.depth[c], c))

    def end_phase(self, now_ms: int) -> None:
        """Fig. 8(b) at every site, deepest first (a contraction reaches the parent before its
        own tests), then the source."""
        for c in self._bottom_up:
            self._pump(self.clients[c].end_phase(now_ms), now_ms)
        self._pump(self.source.end_phase(now_ms), now_ms)

    def check(self, after_phase: bool = False) -> None:
        """Raise ``AssertionError`` if a §3 directory invariant is broken."""
        check_replication(self.source, self.clients, self.parents, after_phase)

    def replicas(self) -> dict[int, int]:
        """Segments replicated at each client."""
        return {c: len(site.directory) for c, site in self.clients.items()}


class ItemNetwork(_Tree):
    """A §4 baseline: :class:`ItemClient` per client against one :class:`ItemServer`.

    Examples
    --------
    >>> from tsmon.protocols.replication.policies import AdaptivePrecision
    >>> net = ItemNetwork(binary_tree(3), window=4, policy=AdaptivePrecision())
    >>> for t, x in enumerate([1.0, 2.0, 3.0, 4.0]):
    ...     net.arrive(x, now_ms=t)
    >>> net.query(3, [0], [1.0], delta=0.5, now_ms=4).value  # one request, one refresh, 2 links
    4.0
    >>> net.counts.total, net.counts.end_to_end
    (4, 2)
    """

    def __init__(self, parents: Mapping[int, int], window: int, policy: WidthPolicy) -> None:
        super().__init__(parents)
        self.server = self.root = ItemServer(sorted(self.parents), window, policy)
        self.clients = {c: ItemClient(c, window) for c in sorted(self.parents)}

    def _hops(self, m: Message) -> int:
        return self.depth[m.sender if m.receiver == self.server.site else m.receiver]

    def end_phase(self, now_ms: int) -> None:
        """The baselines have no phases."""

    def check(self, after_phase: bool = False) -> None:
        """The server's view of every client's intervals equals the client's cache."""
        for c, client in self.clients.items():
            same = (self.server.width[c] == client.width) & (
                (self.server.center[c] == client.center) | ~(client.width < float("inf"))
            )
            if not same.all():
                raise AssertionError(f"server and client {c} disagree on items {(~same).nonzero()}")

    def replicas(self) -> dict[int, int]:
        """Items cached (finite interval) at each client."""
        return {c: int((cl.width < float("inf")).sum()) for c, cl in self.clients.items()}
