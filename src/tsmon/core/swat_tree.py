"""The SWAT tree's nodes and their update (Bulut & Singh 2003, §2.2-2.3, §2.5, Fig. 3a).

Level ``l`` keeps three nodes ``R_l, S_l, L_l`` (Fig. 1b), each summarising ``2**(l + 1)``
consecutive values by ``k`` block averages (its first ``k`` Haar coefficients, §2.2) and, per
block, the min and max value (the ``[d_L, d_H]`` ranges of §3, which make the error bounds
guarantees). Level ``l`` is updated every ``2**l`` arrivals, by Fig. 3a:
``L := S; S := R; R := DWT(R_{l-1}, L_{l-1})``. The shift is a rotating pointer: ring slot
``(count >> l) % 3`` holds ``R_l``, the one before it ``S_l``, the one before that ``L_l``, so an
update writes one node and copies none. Amortised work is O(k) per value (§2.6).

Below the lowest kept level ``s`` (``s = 0``: the raw values ``d_0, d_1`` of Fig. 3a's
footnote; ``s > 0``: §2.5's reduced tree) an accumulator builds ``R_{s-1}, L_{s-1}``: the block
sums of the current and the previous ``2**s`` values, O(k) memory.

Which nodes hold known values is a function of the count alone: a level-``l`` node computed
when ``c0`` values had arrived spans real values iff ``c0 >= 2**(l+1)``.
"""

from __future__ import annotations

import math
from typing import NamedTuple, TypeVar

import numpy as np

from tsmon.core.swat_nodes import BASES, KINDS
from tsmon.core.wavelets import is_power_of_two

__all__ = ["RawNode", "SwatTree"]

T = TypeVar("T", bound="SwatTree")


class RawNode(NamedTuple):
    """A node's fields as stored: block averages ``avg`` and block ranges ``lo..hi``."""

    level: int
    kind: str
    newest: int  # absolute arrival index of the segment's most recent value
    size: int
    avg: np.ndarray
    lo: np.ndarray
    hi: np.ndarray


def _merge_stats(rec: np.ndarray, old: np.ndarray, k: int) -> np.ndarray:
    """``DWT(R, L)`` of Fig. 3a on stacked ``(avg, min, max)`` blocks: ``(3, ..., k)``."""
    out = np.concatenate([rec, old], axis=-1)
    while out.shape[-1] > k:
        a, b = out[..., 0::2], out[..., 1::2]
        out = np.stack([(a[0] + b[0]) * 0.5, np.minimum(a[1], b[1]), np.maximum(a[2], b[2])])
    return out


class SwatTree:
    """State and updates of :class:`tsmon.core.swat.SWAT` (which documents the parameters)."""

    def __init__(
        self, window: int | None = 1024, k: int = 1, levels: int | None = None, basis: str = "haar"
    ) -> None:
        if window is not None and not (is_power_of_two(window) and window >= 4):
            raise ValueError(f"window must be a power of two >= 4, got {window}; or None")
        if not is_power_of_two(k):
            raise ValueError(f"k must be a power of two >= 1 (coefficients per node), got {k}")
        if basis not in BASES:
            raise ValueError(f"basis must be one of {BASES}, got {basis!r}")
        n = None if window is None else int(window).bit_length() - 1
        if levels is not None and (n is None or not 1 <= levels <= n):
            raise ValueError(
                f"levels must be in [1, log2(window)] = [1, {n}] with a window, got {levels}; "
                "the whole-stream mode (window=None) keeps every level"
            )
        self._window, self._k, self._basis = window, int(k), basis
        self._top = None if n is None else n - 1
        self._s = 0 if n is None else n - (levels or n)  # lowest level kept (§2.5)
        ks = min(self._k, 2 << self._s)
        self._h = max(ks, 2) // 2  # accumulator blocks per half of a level-s node
        self._g = (1 << self._s) // self._h  # values per accumulator block
        rows = 1 if n is None else n - self._s
        self._st = np.zeros((rows, 3, 3, self._k))  # row, ring slot, (avg, min, max), block
        self._count, self._last, self._max_step = 0, math.nan, 0.0
        self._psum, self._pmin, self._pmax, self._pn = 0.0, math.inf, -math.inf, 0
        self._cur, self._cur_n = np.zeros((3, self._h)), 0  # completed blocks of current half
        self._prev = np.zeros((3, self._h))  # the last completed half (R_{s-1}/L_{s-1})

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(window={self._window}, k={self._k}, levels={len(self.levels)}, "
            f"basis={self._basis!r}, count={self._count})"
        )

    # -- state -------------------------------------------------------------------------------
    @property
    def count(self) -> int:
        """Values seen so far."""
        return self._count

    @property
    def window(self) -> int | None:
        """``N``, or ``None`` in whole-stream mode."""
        return self._window

    @property
    def k(self) -> int:
        """Coefficients per node (at most ``2**(l+1)`` at level ``l``)."""
        return self._k

    @property
    def levels(self) -> range:
        """Levels currently kept."""
        return range(self._s, self._s + self._st.shape[0])

    @property
    def max_step(self) -> float:
        """Largest ``|d_{i+1} - d_i|`` seen: an ``eps`` for which the §2.6 model holds."""
        return self._max_step

    def _k_at(self, level: int) -> int:
        return min(self._k, 2 << level)

    @property
    def n_nodes(self) -> int:
        """Tree nodes maintained: ``3 log N - 2`` for a full window tree (§2.6)."""
        return sum(3 if self._has_sl(lv) else 1 for lv in self.levels)

    @property
    def n_coefficients(self) -> int:
        """Coefficients stored in maintained tree nodes, ``O(k log N)`` (§2.6)."""
        return sum((3 if self._has_sl(lv) else 1) * self._k_at(lv) for lv in self.levels)

    def _has_sl(self, level: int) -> bool:
        return self._top is None or level < self._top

    def _available(self) -> int:
        return self._count if self._window is None else min(self._count, self._window)

    # -- updates (Fig. 3a) -------------------------------------------------------------------
    def update(self: T, x: float) -> T:
        """Add one value (Fig. 3a); returns the tree.

        Examples
        --------
        >>> from tsmon.core.swat import SWAT
        >>> SWAT(window=4).update(1.0).update(3.0).point(0).value
        2.0
        """
        x = float(x)
        if not math.isfinite(x):
            raise ValueError(f"values must be finite, got {x}; drop or impute it first")
        if self._count and abs(x - self._last) > self._max_step:
            self._max_step = abs(x - self._last)
        self._last = x
        self._count += 1
        self._psum += x
        self._pmin, self._pmax = min(self._pmin, x), max(self._pmax, x)
        self._pn += 1
        if self._pn < self._g:
            return self
        i = self._h - 1 - self._cur_n  # blocks are stored most recent first
        self._cur[:, i] = (self._psum / self._g, self._pmin, self._pmax)
        self._psum, self._pmin, self._pmax, self._pn = 0.0, math.inf, -math.inf, 0
        self._cur_n += 1
        if self._cur_n == self._h:  # half complete: level s is due (footnote a of Fig. 3a)
            self._cur_n = 0
            self._prev, self._cur = self._cur, self._prev
            self._cascade(self._prev, self._cur)
        return self

    def _cascade(self, rec: np.ndarray, old: np.ndarray) -> None:
        """Update levels ``s, s+1, ...`` while due (level ``l`` every ``2**l`` arrivals)."""
        c, level, row, kc, k = self._count, self._s, 0, rec.shape[-1], self._k
        while True:
            kl = k if k <= 2 << level else 2 << level
            dst = self._st[row, (c >> level) % 3]  # the slot of the old L: L := S; S := R
            if kl == 2 * kc:
                dst[:, :kc], dst[:, kc:kl] = rec[:, :kc], old[:, :kc]
            elif kc == 1:  # scalars: avoid numpy call overhead on the per-value path
                (ra, rl, rh), (oa, ol, oh) = rec[:, 0].tolist(), old[:, 0].tolist()
                dst[0, 0], dst[1, 0], dst[2, 0] = (ra + oa) * 0.5, min(rl, ol), max(rh, oh)
            else:
                dst[:, :kl] = _merge_stats(rec[:, :kc], old[:, :kc], kl)
            if level == self._top or (c >> level) & 1:
                return
            if row + 1 == self._st.shape[0]:  # whole-stream mode: grow when first valid (§2.3)
                if c < 4 << level:
                    return
                self._st = np.concatenate([self._st, np.zeros((1, *self._st.shape[1:]))])
            st = self._st[row]
            rec, old = st[(c >> level) % 3], st[((c >> level) - 2) % 3]  # new R_l, new L_l
            level, row, kc = level + 1, row + 1, kl

    def extend(self: T, values: np.ndarray) -> T:
        """Add many values at once, level by level with numpy; same result as :meth:`update`.

        Examples
        --------
        >>> from tsmon.core.swat import SWAT
        >>> a = SWAT(window=8).extend(np.arange(20.0))
        >>> b = SWAT(window=8)
        >>> for x in np.arange(20.0):
        ...     _ = b.update(x)
        >>> bool(np.allclose(a.reconstruct(), b.reconstruct()))
        True
        """
        v = np.asarray(values, dtype=float).ravel()
        if not v.size:
            return self
        if not np.isfinite(v).all():
            raise ValueError(f"values must be finite, got {v[~np.isfinite(v)][:3]}; drop them")
        steps = np.abs(np.diff(v, prepend=self._last if self._count else v[0]))
        self._max_step = max(self._max_step, float(steps.max()))
        self._last = float(v[-1])
        c0, g, h = self._count, self._g, self._h
        self._count += v.size
        need = g - self._pn
        if v.size < need:
            self._psum += float(v.sum())
            self._pmin, self._pmax = min(self._pmin, v.min()), max(self._pmax, v.max())
            self._pn += v.size
            return self
        nb = (v.size - need) // g
        body, tail = v[need : need + nb * g].reshape(nb, g), v[need + nb * g :]
        head = v[:need]
        sub = np.empty((3, nb + 1))
        sub[:, 0] = (
            (self._psum + head.sum()) / g,
            min(self._pmin, head.min()),
            max(self._pmax, head.max()),
        )
        sub[0, 1:], sub[1, 1:], sub[2, 1:] = body.sum(1) / g, body.min(1), body.max(1)
        self._psum, self._pn = float(tail.sum()), tail.size
        self._pmin = float(tail.min()) if tail.size else math.inf
        self._pmax = float(tail.max()) if tail.size else -math.inf
        blocks = np.concatenate([self._cur[:, h - self._cur_n :][:, ::-1], sub], axis=1)
        nh = blocks.shape[1] // h
        left = blocks[:, nh * h :]
        self._cur = np.zeros((3, h))
        self._cur[:, h - left.shape[1] :] = left[:, ::-1]
        self._cur_n = left.shape[1]
        if not nh:
            return self
        halves = blocks[:, : nh * h].reshape(3, nh, h)[:, :, ::-1]  # most recent block first
        seq = np.concatenate([self._prev[:, None, :], halves], axis=1)
        self._prev = halves[:, -1, :].copy()
        t = (c0 // (1 << self._s) + 1 + np.arange(nh)) << self._s  # counts of level-s updates
        self._propagate(c0, t, seq[:, 1:], seq[:, :-1])
        return self

    def _propagate(self, c0: int, t: np.ndarray, rec: np.ndarray, old: np.ndarray) -> None:
        """Vectorised :meth:`_cascade` for the level-``s`` updates at counts ``t``."""
        level, row = self._s, 0
        while True:
            kl = self._k_at(level)
            new = _merge_stats(rec, old, kl)  # (3, len(t), kl)
            st = self._st[row]
            u0, u = c0 >> level, self._count >> level
            old3 = st[[(u0 - 2) % 3, (u0 - 1) % 3, u0 % 3], :, :kl].transpose(1, 0, 2)
            seq = np.concatenate([old3, new], axis=1)  # R_l over time: L, S, R, then new R's
            for j in range(3):
                st[(u - j) % 3, :, :kl] = seq[:, -1 - j]
            if level == self._top:
                return
            sel = np.flatnonzero(((t >> level) & 1) == 0)  # level l+1 is due at these
            if row + 1 == self._st.shape[0]:
                sel = sel[t[sel] >= 4 << level]
                if sel.size:
                    self._st = np.concatenate([self._st, np.zeros((1, *self._st.shape[1:]))])
            if not sel.size:
                return
            rec, old, t = seq[:, sel + 3], seq[:, sel + 1], t[sel]
            level, row = level + 1, row + 1

    def _raw_nodes(self, pending: bool = True) -> list[RawNode]:
        """Valid nodes, in Fig. 3b order (level, then R -> S -> L), then pending pieces."""
        c, out = self._count, []
        for row, level in enumerate(self.levels):
            o, kl = c & ((1 << level) - 1), self._k_at(level)
            for slot in range(3 if self._has_sl(level) else 1):
                born = c - o - (slot << level)  # count when this node was computed
                if born >= 2 << level:  # else it spans values before the stream began
                    st = self._st[row, ((c >> level) - slot) % 3, :, :kl]
                    out.append(RawNode(level, KINDS[slot], born - 1, 2 << level, *st))
        if pending:
            out.extend(self._raw_pending())
        return out

    def _raw_pending(self) -> list[RawNode]:
        """Accumulator pieces (kind P, level s-1): the values after the last level-s update."""
        c, g, lv, out = self._count, self._g, self._s - 1, []
        if self._pn:
            p = self._psum / self._pn
            stats = np.array([[p], [self._pmin], [self._pmax]])
            out.append(RawNode(lv, "P", c - 1, self._pn, *stats))
        newest = c - 1 - self._pn
        for j in range(self._cur_n):  # most recent completed block first
            stats = self._cur[:, self._h - self._cur_n + j, None]
            out.append(RawNode(lv, "P", newest - j * g, g, *stats))
        if c >= 1 << self._s:
            out.append(RawNode(lv, "P", newest - self._cur_n * g, g * self._h, *self._prev))
        return out
