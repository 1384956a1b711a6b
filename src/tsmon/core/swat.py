"""SWAT: Stream summarization by a Wavelet-based Approximation Tree (Bulut & Singh 2003, §2).

:class:`SWAT` answers point, range and inner-product queries (§2.4, Fig. 3b) over the last
``N`` values (or the whole stream) from the tree of :mod:`tsmon.core.swat_tree`, with the §2.6
error bounds, and exports its nodes for a replication protocol (§3). The query arithmetic and
bounds are in :mod:`tsmon.core.swat_query`, shared with a client's partial copy
(:class:`tsmon.core.swat_copy.SwatCopy`).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from tsmon.core.swat_copy import SwatCopy
from tsmon.core.swat_nodes import KINDS, Node, NodeTable, to_coefficients
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
from tsmon.core.swat_tree import SwatTree

__all__ = ["SWAT"]

_SLOT_OF_Q = np.array([0, 0, 1, 2])  # quarter of a level's span -> first covering node, R->S->L


class SWAT(SwatTree):
    """Stream summary by a Wavelet-based Approximation Tree over the last ``window`` values.

    Parameters
    ----------
    window : int or None
        ``N``, a power of two ``>= 4``: levels ``0 .. log2(N) - 1``, the top one holding only
        its ``R`` node. ``None`` summarises the whole stream, adding levels as it grows (§2.3).
    k : int
        Haar coefficients per node, a power of two (level ``l`` keeps ``min(k, 2**(l+1))``).
    levels : int or None
        §2.5: keep only the top ``levels`` levels (``None``: all). The levels below are replaced
        by an O(k) accumulator of the last ``2**(l+1)`` values' block sums (window mode only).
    basis : {"haar", "box"}
        What :meth:`nodes` ship: Haar coefficients, or the ``k`` block averages themselves.

    Examples
    --------
    >>> tree = SWAT(window=16)
    >>> for x in [14, 4, 6, 2, 10, 4]:
    ...     _ = tree.update(x)
    >>> tree.point(0).value  # R_0 = (4 + 10) / 2, as in Fig. 2(f)
    7.0
    >>> r = tree.inner_product([0, 1, 2, 3], [8, 4, 2, 1])
    >>> exact = np.dot([4, 10, 2, 6], [8, 4, 2, 1])
    >>> bool(r.lower <= exact <= r.upper), r.nodes
    (True, ((0, 'R'), (0, 'S'), (0, 'L')))

    The §2.4 example: at Fig. 2(d)'s phase (3 arrivals after a multiple of 4), the query
    ``([0, 3, 8, 13], [10, 8, 4, 1])`` is answered by ``V = {R_0, L_0, L_1, S_2}``:

    >>> tree = SWAT(window=16).extend(np.arange(35.0))
    >>> tree.inner_product([0, 3, 8, 13], [10, 8, 4, 1]).nodes
    ((0, 'R'), (0, 'L'), (1, 'L'), (2, 'S'))
    """

    def nodes(self, level: int | None = None, pending: bool = False) -> list[Node]:
        """Valid nodes (all levels, or one), by level then ``R -> S -> L``; for shipping (§3).

        ``pending=True`` adds the accumulator pieces (kind ``P``) that cover the values since
        the lowest kept level's last update (§2.5) or the start of the stream.
        """
        return [
            Node(
                r.level,
                r.kind,
                r.newest,
                r.size,
                to_coefficients(r.avg, self._basis),
                r.lo.copy(),
                r.hi.copy(),
                self._basis,
            )
            for r in self._raw_nodes(pending)
            if level is None or r.level == level
        ]

    def snapshot(self) -> SwatCopy:
        """A full copy as a client would hold it after receiving every node (§3)."""
        return SwatCopy(self.nodes(pending=True), self._count, self._max_step, self._window)

    def _table(self) -> NodeTable:
        """Every valid node and pending piece as a table, for the general cover of Fig. 3b."""
        raw = self._raw_nodes()
        width = max(len(r.avg) for r in raw)
        avg, lo, hi = (np.zeros((len(raw), width)) for _ in range(3))
        for i, r in enumerate(raw):
            k = len(r.avg)
            avg[i, :k], lo[i, :k], hi[i, :k] = r.avg, r.lo, r.hi
        level, kind, newest, size, nblk = np.array(
            [(r.level, KINDS.index(r.kind), r.newest, r.size, len(r.avg)) for r in raw],
            dtype=np.int64,
        ).T
        return NodeTable(level, kind, self._count - 1 - newest, size, size // nblk, avg, lo, hi)

    # -- queries (§2.4, Fig. 3b) ---------------------------------------------------------------
    def _locate(self, idx: np.ndarray) -> tuple:
        """Per position, the finest (``b``) and coarsest (``a``) level whose nodes reach it: at
        level ``l`` the nodes start at ``o_l = count mod 2**l`` and end by ``o_l + 2**(l+2) - 1``,
        both growing with ``l``, so the levels covering ``p`` are the rows ``b..a``."""
        lev = np.arange(self._s, self._s + self._st.shape[0], dtype=np.int64)
        o = self._count & ((1 << lev) - 1)
        e = o + (4 << lev) - 1  # last position covered by L_l
        if self._top is not None:
            e[-1] = o[-1] + (2 << lev[-1]) - 1  # the top level keeps only R
        b = np.searchsorted(e, idx)
        a = np.searchsorted(o, idx, side="right") - 1
        return idx, b, a, lev, o

    def _entries(self, loc: tuple, start_level) -> Entries | None:
        """Fig. 3b cover from ``start_level`` up, in O(M + log N), from :meth:`_locate`.

        An array of start levels gives 2-d entries (one row each), or None when some position
        needs the general cover (warm-up, pending pieces)."""
        many = isinstance(start_level, np.ndarray)
        if not many and start_level not in self.levels:
            raise ValueError(
                f"start_level must be a kept level {list(self.levels)}, got {start_level}"
            )
        idx, b, a, lev, o = loc
        c, k = self._count, self._k
        r0 = start_level[:, None] - self._s if many else start_level - self._s
        row = np.minimum(np.maximum(b, np.minimum(r0, a)), len(lev) - 1)
        lv = lev[row]
        rel = idx - o[row]
        slot = _SLOT_OF_Q[(rel >> lv) & 3]
        rel -= slot << lv  # offset inside the chosen node
        bs = ((2 << lev) // np.minimum(k, 2 << lev))[row]
        fi = (row * 3 + ((c >> lv) - slot) % 3) * (3 * k) + ((rel // bs) & (k - 1))
        flat = self._st.reshape(-1)
        e_fast = Entries(flat[fi], flat[fi + k], flat[fi + 2 * k], bs, rel % bs, 4 * lv + slot)
        ok = (b <= a) & (c - idx + rel >= 2 << lv)  # covered by a node of known values only
        if ok.all() or many:
            return e_fast if ok.all() else None
        fix, covered = cover(self._table(), idx[~ok], start_level)
        assert covered.all(), "every seen position is covered by a node or pending piece"
        fields = {}
        for name in e_fast.__dataclass_fields__:
            arr = getattr(e_fast, name).copy()
            arr[~ok] = getattr(fix, name)
            fields[name] = arr
        return Entries(**fields)

    def inner_product(
        self,
        indices: ArrayLike,
        weights: ArrayLike,
        delta: float | None = None,
        eps: float | None = None,
    ) -> QueryResult:
        """Inner-product query ``(I, W, delta)`` (§2.1): ``sum_i W[i] d_{I[i]}``.

        Answered from the coarsest start level whose guaranteed bound is ``<= delta`` (finest,
        Fig. 3b, when ``delta`` is None). Bounds follow §2.6 with ``eps`` (default
        :attr:`max_step`, which makes ``eps_bound`` a guarantee too).

        Examples
        --------
        >>> tree = SWAT(window=64).extend(np.sin(np.arange(200) / 10))
        >>> w = 0.5 ** np.arange(16)  # an exponential query (§2.1)
        >>> r = tree.inner_product(np.arange(16), w)
        >>> exact = w @ np.sin(np.arange(199, 183, -1) / 10)
        >>> bool(abs(r.value - exact) <= r.bound), bool(r.lower <= exact <= r.upper)
        (True, True)
        >>> tree.inner_product(np.arange(16), w, delta=1.0).start_level > 0  # coarser suffices
        True
        """
        idx, w = check_query(indices, weights, self._available())
        eps = self._max_step if eps is None else float(eps)
        loc = self._locate(idx)
        at = self._entries
        return search(lambda lv: at(loc, lv), self.levels, w, delta, eps, lambda lv: at(loc, lv))

    def point(
        self, position: int, delta: float | None = None, eps: float | None = None
    ) -> QueryResult:
        """Point query ``([position], [1], delta)``: the value ``position`` steps back in time."""
        return self.inner_product([position], [1.0], delta, eps)

    def range_query(
        self,
        value: float,
        radius: float,
        start: int = 0,
        end: int | None = None,
        eps: float | None = None,
    ) -> RangeResult:
        """Range query (§2.4): positions ``start..end`` whose value is within ``value ± radius``.

        Examples
        --------
        >>> tree = SWAT(window=8).extend([5.0, 5.0, 1.0, 1.0, 9.0, 9.0, 9.0, 9.0])
        >>> tree.range_query(9.0, 0.5).certain.tolist()  # the four most recent values
        [0, 1, 2, 3]
        """
        idx = span(start, end, self._available())
        eps = self._max_step if eps is None else float(eps)
        return range_answer(self._entries(self._locate(idx), self._s), idx, value, radius, eps)

    def reconstruct(self, start_level: int | None = None) -> np.ndarray:
        """Approximate last ``min(count, N)`` values, most recent first (Fig. 3b inverse DWT).

        Examples
        --------
        >>> SWAT(window=4, k=4).extend([1.0, 2.0, 3.0, 4.0, 5.0]).reconstruct()
        array([5., 4., 3., 2.])
        """
        idx = np.arange(self._available())
        level = self._s if start_level is None else start_level
        return self._entries(self._locate(idx), level).avg
