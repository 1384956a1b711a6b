"""SWAT nodes as shippable records (Bulut & Singh 2003, §2.2 and §3), and their query table.

A :class:`Node` is what a replication protocol (SWAT-ASR, §3) sends to a client: the node's
level and kind (``L``/``S``/``R`` of Fig. 1b, or ``P`` for a pending piece of the §2.5
accumulator), its segment as *absolute* arrival indices (so it stays valid as time moves on),
its ``k`` wavelet coefficients, and per block the value range ``[d_L, d_H]`` of Table 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tsmon.core.wavelets import haar_forward, haar_inverse, is_power_of_two

__all__ = ["BASES", "KINDS", "Node", "NodeTable"]

KINDS = ("R", "S", "L", "P")  # Fig. 3b visits R -> S -> L; P: pending accumulator pieces
BASES = ("haar", "box")  # first k Haar coefficients, or the k block averages themselves


def to_coefficients(blocks: np.ndarray, basis: str) -> np.ndarray:
    """Block averages to the shipped coefficients of ``basis`` (``box``: unchanged)."""
    if basis == "haar" and is_power_of_two(blocks.shape[-1]):
        return haar_forward(blocks)
    return np.array(blocks, dtype=float)


@dataclass(frozen=True, eq=False)
class Node:
    """One SWAT node: a segment of ``size`` consecutive values summarised by ``k`` blocks.

    Parameters
    ----------
    level : int
        Tree level ``l`` (a level-``l`` node spans ``2**(l + 1)`` values).
    kind : {"R", "S", "L", "P"}
        Right/Shift/Left node of Fig. 1(b), or a pending accumulator piece (§2.5).
    newest : int
        Absolute arrival index (0 = first value of the stream) of the segment's most recent
        value; the segment is ``newest - size + 1 .. newest``.
    size : int
        Number of values in the segment.
    coefficients : np.ndarray
        The ``k`` coefficients in ``basis``: Haar ``[average, details coarse to fine]``.
    block_min, block_max : np.ndarray
        Minimum and maximum value of each of the ``k`` blocks (most recent block first).
    basis : {"haar", "box"}
        How ``coefficients`` encode the block averages.

    Examples
    --------
    >>> n = Node(1, "R", newest=9, size=4, coefficients=np.array([5.5, 1.5]),
    ...          block_min=np.array([4.0, 2.0]), block_max=np.array([10.0, 6.0]))
    >>> n.segment(count=12), n.blocks(), (n.lower, n.upper)
    ((2, 5), array([7., 4.]), (2.0, 10.0))
    """

    level: int
    kind: str
    newest: int
    size: int
    coefficients: np.ndarray
    block_min: np.ndarray
    block_max: np.ndarray
    basis: str = "haar"

    def segment(self, count: int) -> tuple[int, int]:
        """Positions back in time ``(start, end)`` covered once ``count`` values have arrived."""
        start = count - 1 - self.newest
        return start, start + self.size - 1

    @property
    def lower(self) -> float:
        """``d_L`` of §3: no value of the segment is below it."""
        return float(np.min(self.block_min))

    @property
    def upper(self) -> float:
        """``d_H`` of §3: no value of the segment is above it."""
        return float(np.max(self.block_max))

    def blocks(self) -> np.ndarray:
        """The ``k`` block averages, most recent first (inverse transform, Fig. 3b)."""
        if self.basis == "haar" and is_power_of_two(len(self.coefficients)):
            return haar_inverse(self.coefficients)
        return np.asarray(self.coefficients, dtype=float)

    def values(self) -> np.ndarray:
        """Approximate values of the whole segment, most recent first (Fig. 3b)."""
        b = self.blocks()
        return np.repeat(b, self.size // len(b))


@dataclass(frozen=True)
class NodeTable:
    """Nodes as parallel arrays for vectorised covering (blocks padded to a common width)."""

    level: np.ndarray
    kind: np.ndarray
    start: np.ndarray
    size: np.ndarray
    bsize: np.ndarray
    avg: np.ndarray
    lo: np.ndarray
    hi: np.ndarray

    @classmethod
    def from_nodes(cls, nodes: Sequence[Node], count: int) -> NodeTable:
        """Table of ``nodes`` with segments as positions back in time at ``count``."""
        width = max((len(n.coefficients) for n in nodes), default=1)
        avg, lo, hi = (np.zeros((len(nodes), width)) for _ in range(3))
        for i, n in enumerate(nodes):
            k = len(n.coefficients)
            avg[i, :k], lo[i, :k], hi[i, :k] = n.blocks(), n.block_min, n.block_max
        ints = [
            np.array(v, dtype=np.int64).reshape(len(nodes))
            for v in (
                [n.level for n in nodes],
                [KINDS.index(n.kind) for n in nodes],
                [count - 1 - n.newest for n in nodes],
                [n.size for n in nodes],
                [n.size // len(n.coefficients) for n in nodes],
            )
        ]
        return cls(*ints, avg, lo, hi)
