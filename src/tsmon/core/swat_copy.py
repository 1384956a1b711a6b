"""A client's partial copy of a SWAT (Bulut & Singh 2003, §3): cached nodes, queried alike.

In SWAT-ASR the source ships node approximations to the clients that read them often; a client
answers a query from its cache when the cached nodes cover it within the precision, and
forwards it to its parent otherwise (Fig. 8a). :class:`SwatCopy` is that cache.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from numpy.typing import ArrayLike

from tsmon.core.swat_nodes import KINDS, Node, NodeTable
from tsmon.core.swat_query import (
    Entries,
    QueryResult,
    RangeResult,
    check_query,
    cover,
    range_answer,
    search,
    span,
)

__all__ = ["SwatCopy"]


class SwatCopy:
    """A client's partial copy of a SWAT (§3): the nodes shipped so far, queried like the tree.

    Nodes carry absolute arrival indices, so a cached node stays truthful as the stream moves
    on; only its position back in time changes. A query touching a position no cached node
    covers raises :class:`LookupError`: the client forwards it to its parent (Fig. 8a).

    Examples
    --------
    >>> from tsmon.core.swat import SWAT
    >>> tree = SWAT(window=8).extend(np.arange(17.0))
    >>> top = [n for n in tree.nodes() if n.level >= 1]  # ship the coarse levels only
    >>> copy = SwatCopy(top, count=tree.count, eps=tree.max_step)
    >>> r = copy.point(5)
    >>> r.value, r.bound, 16.0 - 5  # S_1 spans positions 3..6: values 13, 12, 11, 10
    (11.5, 1.0, 11.0)
    >>> copy.covers([0, 3, 7]).tolist()  # level 1 was last updated one arrival ago
    [False, True, True]
    """

    def __init__(
        self, nodes: Iterable[Node], count: int, eps: float | None = None, window: int | None = None
    ) -> None:
        self._nodes: dict[tuple[int, int, int], Node] = {}
        self.count = int(count)
        self.eps = eps
        self.window = window
        for node in nodes:
            self.put(node)

    def __repr__(self) -> str:
        return f"SwatCopy(nodes={len(self._nodes)}, count={self.count}, eps={self.eps})"

    def put(self, node: Node) -> None:
        """Cache ``node`` (replacing a cached node of the same level and segment)."""
        self._nodes[(node.level, node.newest, node.size)] = node

    def nodes(self) -> list[Node]:
        """The cached nodes, by level then kind."""
        return sorted(self._nodes.values(), key=lambda n: (n.level, KINDS.index(n.kind)))

    def _table(self) -> NodeTable:
        return NodeTable.from_nodes(self.nodes(), self.count)

    def covers(self, positions) -> np.ndarray:
        """Which ``positions`` (back in time from ``count``) some cached node covers."""
        p = np.atleast_1d(np.asarray(positions, dtype=np.int64))
        t = self._table()
        return ((t.start[:, None] <= p) & (p < (t.start + t.size)[:, None])).any(axis=0)

    def _available(self) -> int:
        return self.count if self.window is None else min(self.count, self.window)

    def _entries(self, table: NodeTable, idx: np.ndarray, level: int) -> Entries:
        entries, covered = cover(table, idx, level)
        if not covered.all():
            missing = idx[~covered][:8].tolist()
            raise LookupError(
                f"positions {missing} are not covered by the {len(self._nodes)} cached nodes; "
                "forward the query to the parent (Fig. 8a)"
            )
        return entries

    def inner_product(
        self, indices: ArrayLike, weights: ArrayLike, delta: float | None = None
    ) -> QueryResult:
        """Inner-product query ``(I, W, delta)`` from the cached nodes (see ``SWAT``)."""
        idx, w = check_query(indices, weights, self._available())
        table = self._table()
        levels = sorted(set(table.level[table.kind != KINDS.index("P")].tolist()))
        levels = levels or sorted(set(table.level.tolist())) or [0]  # P pieces only if needed
        return search(lambda s: self._entries(table, idx, s), levels, w, delta, self.eps)

    def point(self, position: int, delta: float | None = None) -> QueryResult:
        """Point query ``([position], [1], delta)`` (§2.1)."""
        return self.inner_product([position], [1.0], delta)

    def range_query(
        self, value: float, radius: float, start: int = 0, end: int | None = None
    ) -> RangeResult:
        """Range query (§2.4) over positions ``start..end`` from the cached nodes."""
        idx = span(start, end, self._available())
        table = self._table()
        tree = table.level[table.kind != KINDS.index("P")]
        level = int(tree.min()) if len(tree) else int(table.level.min(initial=0))
        return range_answer(self._entries(table, idx, level), idx, value, radius, self.eps)
