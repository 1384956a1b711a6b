"""Window segments and their data ranges: the rows of a SWAT-ASR directory (Bulut & Singh, §3).

A *window segment* is a slot of the SWAT tree, ``(level, kind)`` with kind ``R``, ``S`` or
``L`` (Fig. 1b). Its positions back in time follow from the arrival count alone: level ``l``
was last updated ``o = count mod 2**l`` arrivals ago (§2.3), so slot ``j`` (R=0, S=1, L=2)
covers ``o + j 2**l .. o + j 2**l + 2**(l+1) - 1``. A slot's *content* changes when its level
is updated (Fig. 3a: ``L := S; S := R; R := DWT(...)``); its *data range* (Table 1) says where
every value of the current content lies, one ``[d_L, d_H]`` per block of the node's ``k``
blocks (``k = 1``: the single range of §3's simplification).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from tsmon.core.swat_nodes import Node

__all__ = ["SLOTS", "Approx", "Segment"]

SLOTS = ("R", "S", "L")  # Fig. 1(b), in the R -> S -> L order of Fig. 3(b)


class Segment(NamedTuple):
    """A window segment: the SWAT slot ``(level, kind)`` (§3, Table 1's first column).

    Examples
    --------
    >>> seg = Segment(2, "S")
    >>> seg.size, seg.positions(count=16), seg.positions(count=17)  # drifts until level 2 updates
    (8, (4, 11), (5, 12))
    """

    level: int
    kind: str

    @property
    def size(self) -> int:
        """Values in the segment: ``2**(level + 1)`` (§2.2)."""
        return 2 << self.level

    def start(self, count: int) -> int:
        """Position back in time (0 = most recent) of the segment's newest value at ``count``."""
        return (count & ((1 << self.level) - 1)) + (SLOTS.index(self.kind) << self.level)

    def positions(self, count: int) -> tuple[int, int]:
        """``(start, end)`` positions covered once ``count`` values have arrived (Table 1)."""
        start = self.start(count)
        return start, start + self.size - 1

    def order(self) -> tuple[int, int]:
        """Sort key: level, then ``R -> S -> L`` (Fig. 3b)."""
        return self.level, SLOTS.index(self.kind)


@dataclass(frozen=True)
class Approx:
    """The data range of a segment (Table 1's second column), one ``[lo, hi]`` per block.

    Block ``b`` covers the segment's values ``b * size/k .. (b + 1) * size/k - 1`` counted from
    its most recent value. A cached copy answers a value by its block's midpoint, off by at most
    the block's half width.

    Examples
    --------
    >>> a, b = Approx((30.0,), (40.0,)), Approx((32.0,), (38.0,))
    >>> a.encloses(b), b.encloses(a), a.half_widths().tolist(), a.entries
    (True, False, [5.0], 1)
    """

    lo: tuple[float, ...]
    hi: tuple[float, ...]

    @classmethod
    def of_node(cls, node: Node) -> Approx:
        """The ranges a SWAT node ships: its per-block min and max (§3)."""
        return cls(tuple(node.block_min.tolist()), tuple(node.block_max.tolist()))

    @property
    def entries(self) -> int:
        """Ranges carried: one per block."""
        return len(self.lo)

    def encloses(self, other: Approx) -> bool:
        """Fig. 8(a)'s test: every block range of ``other`` lies inside this one's."""
        if len(self.lo) != len(other.lo):
            return False
        pairs = zip(self.lo, self.hi, other.lo, other.hi, strict=True)
        return all(a <= c and d <= b for a, b, c, d in pairs)

    def midpoints(self) -> np.ndarray:
        """Per block, the value a copy answers with."""
        return (np.asarray(self.lo) + np.asarray(self.hi)) / 2

    def half_widths(self) -> np.ndarray:
        """Per block, the largest error of the midpoint."""
        return (np.asarray(self.hi) - np.asarray(self.lo)) / 2

    def widened(self, margin: float) -> Approx:
        """Every block ``margin`` wider on each side (a copy with slack).

        >>> Approx((30.0, 5.0), (40.0, 6.0)).widened(2.0)
        Approx(lo=(28.0, 3.0), hi=(42.0, 8.0))
        """
        lo, hi = np.asarray(self.lo) - margin, np.asarray(self.hi) + margin
        lo, hi = np.minimum(lo, self.lo), np.maximum(hi, self.hi)  # encloses, exactly
        return Approx(tuple(lo.tolist()), tuple(hi.tolist()))
