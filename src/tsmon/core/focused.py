"""The focused histogram of a one-pass correlated aggregate (Gehrke, Korn & Srivastava 2001, §3.1).

Few buckets ``(v_j, f_j)``, each with a count and a y-sum, packed where a predicate boundary
lies and moved with it by *wholesale* or *piecemeal* reallocation (Fig. 3).
:class:`~tsmon.core.correlated.CorrelatedAggregate` decides where the focus is; this module
only keeps the buckets.
"""

from __future__ import annotations

import numpy as np

__all__ = ["FocusedHistogram"]


def _edges(lo: float, flo: float, inner: np.ndarray, fhi: float, hi: float) -> np.ndarray:
    """Sorted distinct edges; a single point becomes one zero-width bucket."""
    edges = np.unique(np.concatenate(([lo, flo], inner, [fhi, hi])))
    return np.repeat(edges, 2) if edges.size == 1 else edges


class FocusedHistogram:
    """Adjacent buckets ``(v_j, f_j)`` over ``[v_0, v_m]`` with a count and a y-sum each (§3.1).

    Within a bucket, tuples are assumed uniform (the paper's local uniformity); a zero-width
    bucket is a point mass. Reallocation moves the edges: *wholesale* spreads every old bucket
    over a fresh uniform partition by overlap (Fig. 3a); *piecemeal* keeps the old edges inside
    the focus, cuts only the buckets at its ends, then splits the widest / merges the narrowest
    adjacent focus buckets to keep their number (Fig. 3b, "split ... according to max widths").
    Buckets are ``[v_j, v_j+1)``, or ``(v_j, v_j+1]`` if ``right``: a MIN range ends on a
    closed upper edge, and tied values there must fall inside it.

    Examples
    --------
    >>> h = FocusedHistogram([0.0, 1.0, 2.0])
    >>> for v in (0.2, 0.4, 1.5): h.add(v, v)
    >>> h.estimate(0.5, 2.0)  # half of bucket [0, 1) plus all of [1, 2]
    (2.0, 1.8)
    """

    def __init__(
        self, edges: np.ndarray | list[float], counts=None, sums=None, right: bool = False
    ) -> None:
        self.edges, self.right = np.asarray(edges, dtype=np.float64), right
        m = self.edges.size - 1
        if m < 1 or np.any(np.diff(self.edges) < 0):
            raise ValueError(f"edges must be >= 2 nondecreasing values, got {self.edges}")
        self.counts = np.zeros(m) if counts is None else np.asarray(counts, dtype=np.float64)
        self.sums = np.zeros(m) if sums is None else np.asarray(sums, dtype=np.float64)

    def _locate(self, edges: np.ndarray, x: np.ndarray | float) -> np.ndarray:
        side = "left" if self.right else "right"
        return np.clip(np.searchsorted(edges, x, side) - 1, 0, edges.size - 2)

    def _bucket(self, x: float) -> int:
        return int(self._locate(self.edges, x))

    def add(self, x: float, y: float) -> None:
        """Count tuple ``(x, y)`` in the bucket holding ``x`` (the nearest end one outside)."""
        j = self._bucket(x)
        self.counts[j] += 1.0
        self.sums[j] += y

    def remove(self, x: float, y: float) -> None:
        """Take one tuple out at ``x``; what the bucket lacks comes from the nearest buckets."""
        j, need = self._bucket(x), 1.0
        order = sorted(range(self.counts.size), key=lambda i: abs(i - j))
        for i in order:
            take = min(need, self.counts[i])
            self.counts[i] -= take
            self.sums[i] -= take * y
            need -= take
            if need <= 1e-12:
                break

    def _overlaps(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Share of each bucket (rows) inside each interval ``[lo_k, hi_k]`` (columns), and a
        mask of the zero-width (point) buckets, whose rows the callers fill."""
        a, b = self.edges[:-1, None], self.edges[1:, None]
        width = b - a
        overlap = np.clip(np.minimum(b, hi) - np.maximum(a, lo), 0.0, None)
        frac = np.divide(overlap, width, out=np.zeros(overlap.shape), where=width > 0)
        return frac, width[:, 0] <= 0

    def estimate(self, lo: float, hi: float, open_lo: bool = False) -> tuple[float, float]:
        """``(count, sum)`` of the tuples with ``lo <= x <= hi``, interpolating cut buckets."""
        frac, point = self._overlaps(np.array([lo]), np.array([hi]))
        v = self.edges[:-1][point]
        frac[point, 0] = ((v > lo) if open_lo else (v >= lo)) & (v <= hi)
        return float(frac[:, 0] @ self.counts), float(frac[:, 0] @ self.sums)

    def rebin(self, edges: np.ndarray, fold: bool) -> None:
        """Move all mass onto ``edges`` by overlap; outside mass is dropped, or kept if ``fold``
        (then old buckets are first clipped to the new range: the tuples are known inside)."""
        old = self.edges if not fold else np.clip(self.edges, edges[0], edges[-1])
        frac, point = FocusedHistogram(old)._overlaps(edges[None, :-1], edges[None, 1:])
        v = old[:-1][point]
        k = self._locate(edges, v)
        rows = np.zeros((v.size, edges.size - 1))
        rows[np.arange(v.size), k] = (v >= edges[0]) & (v <= edges[-1])
        frac[point] = rows
        self.edges, self.counts, self.sums = edges, self.counts @ frac, self.sums @ frac

    def reallocate(
        self, strategy: str, bounds: tuple[float, ...], n_focus: int, fold: bool
    ) -> None:
        """New layout ``bounds = (lo, focus_lo, focus_hi, hi)``: ``n_focus`` buckets in the
        focus, one outer bucket on each side that has room (Fig. 3)."""
        if strategy == "wholesale":
            self.rebin(self.uniform(bounds, n_focus, self.right).edges, fold)
            return
        lo, flo, fhi, hi = bounds
        inner = self.edges[(self.edges > flo) & (self.edges < fhi)]  # piecemeal: these stay
        self.rebin(_edges(lo, flo, inner, fhi, hi), fold)
        self._balance(flo, fhi, n_focus)

    @classmethod
    def uniform(cls, bounds: tuple[float, ...], n_focus: int, right: bool) -> FocusedHistogram:
        """Empty histogram of layout ``bounds`` with ``n_focus`` equal-width focus buckets."""
        lo, flo, fhi, hi = bounds  # §3.1.2 PartitionHistogram: v_j = a + j (b - a) / m
        return cls(_edges(lo, flo, np.linspace(flo, fhi, n_focus + 1), fhi, hi), right=right)

    def _balance(self, flo: float, fhi: float, n_focus: int) -> None:
        while True:
            e = self.edges
            idx = np.flatnonzero((e[:-1] >= flo) & (e[1:] <= fhi) & (e[1:] > e[:-1]))
            widths = e[idx + 1] - e[idx]
            if 0 < idx.size < n_focus:  # §3.1.2 split: (v_j, f_j/2), (v_mid, f_j/2)
                j = int(idx[np.argmax(widths)])
                mid = (e[j] + e[j + 1]) / 2
                self.edges = np.insert(e, j + 1, mid)
                self.counts = np.insert(self.counts, j, self.counts[j] / 2)
                self.counts[j + 1] = self.counts[j]
                self.sums = np.insert(self.sums, j, self.sums[j] / 2)
                self.sums[j + 1] = self.sums[j]
            elif idx.size > n_focus:  # §3.1.2 merge: (v_j, f_j + f_{j+1})
                j = int(idx[np.argmin(widths[:-1] + widths[1:])])
                self.edges = np.delete(e, j + 1)
                self.counts[j] += self.counts[j + 1]
                self.counts = np.delete(self.counts, j + 1)
                self.sums[j] += self.sums[j + 1]
                self.sums = np.delete(self.sums, j + 1)
            else:
                return
