"""The coordinator's bound cache (§1.2.3, Figure 1; §4, Figure 5).

Per object it keeps the centre of the bound (the newest value received, by timestamp, as the
symmetric hash join of §4 keeps "only the most recent value") and the bound width the source
uses. Widths are kept **conservatively**: a width message that narrows a bound (a shrink) or
changes whether it shrinks every period is *pending* until the source's next update names it,
and until then the cache assumes the widest of the old and the new schedule. The coordinator's
view of a bound is therefore never narrower than the source's, whatever the message delays.

Widths are kept in closed form: each schedule is an *anchor* ``(W, k₀)`` — the width as of
adjustment period ``k₀`` — and its width in period ``k`` is :func:`shrunk` ``(W, 1−S, k − k₀)``,
the same expression the source evaluates, so a jump over any number of periods costs O(1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


def shrunk(width: float, factor: float, periods: int) -> float:
    """``W·(1−S)^k``: the width ``periods`` adjustment periods after it was ``width`` (§3.1).

    The one formula both ends use (the source and the coordinator's cache), so their widths
    agree to the bit; ``math.pow`` on purpose (numpy's vectorized power may round differently).

    Examples
    --------
    >>> shrunk(4.0, 0.5, 2), shrunk(4.0, 0.5, 10**12), shrunk(math.inf, 0.5, 0)
    (1.0, 0.0, inf)
    """
    return width * math.pow(factor, periods) if periods else width


@dataclass
class PendingWidth:
    """A width schedule sent to a source and not yet confirmed by it: ``width`` as of
    adjustment period ``anchor`` (shrinking every period after it when ``adaptive``)."""

    seq: int
    width: float
    adaptive: bool
    anchor: int = 0


class BoundCache:
    """Cached bound ``[centre − W/2, centre + W/2]`` of every object, mirroring its filter.

    Objects start with no value and ``W = inf`` (in no query). ``factor`` is ``1 − S``;
    :meth:`set_period` moves the cache to adjustment period ``k`` (the shrinks of §3.1).

    Examples
    --------
    >>> cache = BoundCache()
    >>> i = cache.add("a")
    >>> cache.confirm_width(i, 2.0, adaptive=True)
    >>> cache.recentre(i, 5.0, ts_ms=0)
    True
    >>> cache.bound("a")
    (4.0, 6.0)
    >>> cache.add_pending(i, seq=7, width=1.0, adaptive=True)   # a shrink in flight
    >>> cache.bound("a")                                        # still the wider bound
    (4.0, 6.0)
    >>> cache.confirm(i, width_seq=7)                           # the source applied it
    >>> cache.bound("a")
    (4.5, 5.5)
    """

    def __init__(self, factor: float = 1.0) -> None:
        self.factor = float(factor)
        self.period = 0  # the adjustment period k the widths are as of
        self.objects: list[str] = []
        self.index: dict[str, int] = {}
        self.centres = np.empty(0)
        self.value_ts = np.empty(0, dtype=np.int64)
        self.value_seq = np.empty(0, dtype=np.int64)
        self.spread = np.empty(0)  # how much a folded value span widens the bound (serializing)
        self.base = np.empty(0)  # confirmed schedule, as of period `anchor`: never narrower
        self.anchor = np.empty(0, dtype=np.int64)  # than the source's
        self.adaptive = np.empty(0, dtype=bool)
        self.pending: dict[int, list[PendingWidth]] = {}

    def __len__(self) -> int:
        return len(self.objects)

    def add(self, object_id: str) -> int:
        """Index of ``object_id``, adding it (no value, ``W = inf``) if new."""
        if object_id in self.index:
            return self.index[object_id]
        self.index[object_id] = len(self.objects)
        self.objects.append(object_id)
        self.centres = np.append(self.centres, np.nan)
        self.value_ts = np.append(self.value_ts, np.iinfo(np.int64).min)
        self.value_seq = np.append(self.value_seq, np.iinfo(np.int64).min)
        self.spread = np.append(self.spread, 0.0)
        self.base = np.append(self.base, np.inf)
        self.anchor = np.append(self.anchor, self.period)
        self.adaptive = np.append(self.adaptive, False)
        return self.index[object_id]

    def i(self, object_id: str) -> int:
        """Index of a known object."""
        try:
            return self.index[object_id]
        except KeyError:
            raise KeyError(
                f"unknown object {object_id!r}; known objects: {self.objects[:10]!r}"
            ) from None

    def has_value(self, object_id: str) -> bool:
        """Whether a value of ``object_id`` has been received."""
        return not math.isnan(self.centres[self.i(object_id)])

    def recentre(self, i: int, value: float, ts_ms: int, seq: int = 0, spread: float = 0.0) -> bool:
        """A streamed update: re-centre on ``value`` unless a newer one, by ``(ts_ms, seq)``,
        is cached (§4). ``spread`` widens the bound while it is the newest: the span of the
        values a queue folded into one record (:mod:`~tsmon.protocols.filters.serializing`)."""
        # §4: the join keeps the most recent value; the source's seq breaks ties of ts_ms
        if (ts_ms, seq) < (self.value_ts[i], self.value_seq[i]):
            return False
        self.centres[i] = value
        self.spread[i] = spread
        self.value_ts[i] = ts_ms
        self.value_seq[i] = seq
        return True

    def confirm_width(
        self, i: int, width: float, adaptive: bool, anchor: int | None = None
    ) -> None:
        """Set the width schedule known to be (or be wider than) the source's: ``width`` as
        of period ``anchor`` (default: the current one)."""
        self.base[i] = width
        self.anchor[i] = self.period if anchor is None else anchor
        self.adaptive[i] = adaptive

    def add_pending(self, i: int, seq: int, width: float, adaptive: bool) -> None:
        """A width message sent to ``i``'s source and not yet confirmed (width as of now)."""
        self.pending.setdefault(i, []).append(PendingWidth(seq, width, adaptive, self.period))

    def clear_pending(self, i: int) -> None:
        """Forget the messages in flight to ``i`` (a wider, confirmed schedule replaced them)."""
        self.pending.pop(i, None)

    def confirm(self, i: int, width_seq: int | None) -> None:
        """The source of ``i`` has applied every width message up to ``width_seq``."""
        entries = self.pending.get(i)
        if width_seq is None or not entries:
            return
        applied = [p for p in entries if p.seq <= width_seq]
        if not applied:
            return
        newest = max(applied, key=lambda p: p.seq)
        self.confirm_width(i, newest.width, newest.adaptive, newest.anchor)
        rest = [p for p in entries if p.seq > width_seq]
        if rest:
            self.pending[i] = rest
        else:
            del self.pending[i]

    def set_period(self, period: int) -> None:
        """Move to adjustment period ``period``: every adaptive schedule, confirmed or pending,
        has shrunk ``W := W·(1−S)`` once per period since its anchor (§3.1), in closed form."""
        self.period = int(period)

    def _now(self, width: float, adaptive: bool, anchor: int) -> float:
        return shrunk(width, self.factor, self.period - anchor) if adaptive else width

    @property
    def widths(self) -> np.ndarray:
        """Confirmed width of every object in the current period."""
        out = self.base.copy()
        live = np.flatnonzero(self.adaptive & (self.anchor != self.period))
        if len(live):
            # §3.1 in closed form: one math.pow per distinct age (see shrunk)
            ages, inverse = np.unique(self.period - self.anchor[live], return_inverse=True)
            powers = np.array([math.pow(self.factor, float(a)) for a in ages.tolist()])
            out[live] = self.base[live] * powers[inverse]
        return out

    def latest(self, i: int) -> tuple[float, bool]:
        """The width schedule the source will have once every message in flight arrives."""
        entries = self.pending.get(i)
        if not entries:
            return self._now(self.base[i], self.adaptive[i], self.anchor[i]), bool(self.adaptive[i])
        newest = max(entries, key=lambda p: p.seq)
        return self._now(newest.width, newest.adaptive, newest.anchor), newest.adaptive

    def latest_all(self) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`latest` of every object, as width and adaptivity arrays."""
        widths, adaptive = self.widths.copy(), self.adaptive.copy()
        for i in self.pending:
            widths[i], adaptive[i] = self.latest(i)
        return widths, adaptive

    def assumed(self) -> np.ndarray:
        """Width per object the answers use: the widest schedule the source may be on."""
        widths = self.widths.copy()
        for i, entries in self.pending.items():
            widths[i] = max(widths[i], *(self._now(p.width, p.adaptive, p.anchor) for p in entries))
        return widths

    def bound(self, object_id: str) -> tuple[float, float]:
        """Cached bound ``(L_i, H_i)``; ``(-inf, inf)`` before any value was received."""
        i = self.i(object_id)
        if math.isnan(self.centres[i]):
            return -math.inf, math.inf
        half = (self.assumed()[i] + self.spread[i]) / 2
        return float(self.centres[i] - half), float(self.centres[i] + half)
