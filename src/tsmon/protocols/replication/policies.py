"""Width policies of the item-caching baselines (Bulut & Singh, §4).

Both cache one interval ``value ± width/2`` per (client, window position) and differ in how the
source picks the width it sends:

* :class:`DivergenceCaching` (§4.1, after [11]): the width ``k`` is a "refresh rate"; the source
  picks the ``k`` of least expected cost per unit time from the rates of writes and of reads of
  each tolerance seen in a window of the last 23 events.
* :class:`AdaptivePrecision` (§4.2, after [15]): the width grows by ``1 + alpha`` on a
  value-initiated refresh and shrinks by it on a query-initiated one, with thresholds ``tau_0``
  (below: exact) and ``tau_inf`` (above: not cached).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from typing import Protocol

import numpy as np

__all__ = ["AdaptivePrecision", "DivergenceCaching", "WidthPolicy", "dc_costs"]


class WidthPolicy(Protocol):
    """How the source sets the width of the interval it sends for ``item`` to ``client``.

    ``domain``: ``(low, high)`` of all values, or ``None``; an interval as wide as the domain
    is sent as the domain itself (not centred on the value).
    """

    domain: tuple[float, float] | None

    def on_write(self, now_ms: int) -> None:
        """A value arrived: every window position was written."""

    def on_reads(self, client: int, item: int, reads: Sequence[tuple[int, float]]) -> None:
        """Read tolerances ``(time_ms, width)`` a client reported for ``item``."""

    def read_width(self, client: int, item: int, width: float, now_ms: int) -> float:
        """New width after a read miss (query-initiated refresh); ``width`` is the old one."""
        ...

    def value_width(self, client: int, item: int, width: float, now_ms: int) -> float:
        """New width when the value left the cached interval (value-initiated refresh)."""
        ...


class AdaptivePrecision:
    """Adaptive Precision Setting (§4.2) with ``alpha``, ``tau_inf``, ``tau_0`` and ``p``.

    Value-initiated refresh: ``W' = W (1 + alpha)`` with probability ``min(p, 1)``;
    query-initiated: ``W' = W / (1 + alpha)`` with probability ``min(1/p, 1)``. Then ``W' <
    tau_0`` gives ``[d, d]`` and ``W' > tau_inf`` gives ``(-inf, inf)``. An exact copy (``W =
    0``) grows to ``tau_0``, and a first read caches with ``tau_0`` (growth by a factor from 0
    or shrinkage from ``inf`` would never leave them).

    Examples
    --------
    >>> aps = AdaptivePrecision()  # alpha=1, tau_inf=inf, tau_0=2, p=1 (§4.2)
    >>> aps.value_width(1, 0, 4.0, 0), aps.read_width(1, 0, 4.0, 0), aps.read_width(1, 0, 3.0, 0)
    (8.0, 2.0, 0.0)
    >>> aps.value_width(1, 0, 0.0, 0), aps.read_width(1, 0, math.inf, 0)
    (2.0, 2.0)
    """

    def __init__(
        self,
        alpha: float = 1.0,
        tau_inf: float = math.inf,
        tau_0: float = 2.0,
        p: float = 1.0,
        seed: int = 0,
    ) -> None:
        if not (alpha > 0 and p > 0 and 0 <= tau_0 <= tau_inf):
            raise ValueError(
                f"need alpha > 0, p > 0 and 0 <= tau_0 <= tau_inf, got alpha={alpha}, p={p}, "
                f"tau_0={tau_0}, tau_inf={tau_inf}"
            )
        self.alpha, self.tau_inf, self.tau_0, self.p = alpha, tau_inf, tau_0, p
        self.domain: tuple[float, float] | None = None
        self._rng = np.random.default_rng(seed)

    def _clamp(self, w: float) -> float:
        if w > self.tau_inf:
            return math.inf
        return 0.0 if w < self.tau_0 else w

    def _chance(self, prob: float) -> bool:
        return prob >= 1 or self._rng.random() < prob

    def on_write(self, now_ms: int) -> None:
        """No statistics needed."""

    def on_reads(self, client: int, item: int, reads: Sequence[tuple[int, float]]) -> None:
        """No statistics needed."""

    def read_width(self, client: int, item: int, width: float, now_ms: int) -> float:
        if math.isinf(width):
            return self._clamp(self.tau_0)
        shrunk = width / (1 + self.alpha) if self._chance(1 / self.p) else width
        return self._clamp(shrunk)

    def value_width(self, client: int, item: int, width: float, now_ms: int) -> float:
        if width == 0:
            return self._clamp(self.tau_0)
        grown = width * (1 + self.alpha) if self._chance(self.p) else width
        return self._clamp(grown)


def dc_costs(write_rate: float, read_rates: np.ndarray, w: float = 1.0) -> np.ndarray:
    """§4.1: expected cost per unit time of each refresh rate (width) ``k = 0 .. M``.

    ``read_rates[t]`` is the rate of reads of tolerance ``t`` (``t = M``: any width will do).
    ``k = 0``: ``lambda_w``; ``0 < k < M``: ``r(k)(1 + w) + lambda_w (M - k) / M``;
    ``k = M``: ``r(M)(1 + w)``, with ``r(k)`` the rate of reads of tolerance ``< k``. (§4.1
    prints ``(M - k)/M (lambda_w + r(k))`` for the middle case; its own cost bullets, "for a
    relevant request that is a write, we pay with probability (M - k)/M", give ``lambda_w``.)

    Examples
    --------
    >>> dc_costs(1.0, np.array([0.0, 0.0, 0.0, 0.0, 2.0])).tolist()  # M = 4, loose reads
    [1.0, 0.75, 0.5, 0.25, 0.0]
    >>> dc_costs(0.5, np.array([3.0, 0.0, 0.0, 0.0, 0.0])).tolist()  # exact reads: cache exact
    [0.5, 6.375, 6.25, 6.125, 6.0]
    """
    m = len(read_rates) - 1
    r = np.concatenate([[0.0], np.cumsum(read_rates[:m])])
    k = np.arange(m + 1)
    return r * (1 + w) + write_rate * (m - k) / m


class DivergenceCaching:
    """Divergence Caching adapted to approximations (§4.1): width = the refresh rate ``k``.

    Widths are multiples of ``unit`` from 0 to ``M = ceil(max_range / unit)``; a read of
    tolerance ``t`` (the widest interval it accepts, in units, floored) misses when ``t < k``.
    Each transmission picks the ``k`` of least :func:`dc_costs` (ties: the widest) from the
    last ``window`` events (writes, and reads the client reported) of that item at that client.
    ``k = M``, where §4.1 pays for reads of tolerance ``< M`` and for no write, is the whole
    value domain ``[low, low + M unit]`` when ``low`` is given (:attr:`domain`; no value leaves
    it), and "not cached" (width ``inf``) otherwise.

    Examples
    --------
    >>> dc = DivergenceCaching(max_range=8.0)
    >>> for t in range(0, 10_000, 1000):  # one write per second ...
    ...     dc.on_write(t)
    >>> dc.on_reads(1, 3, [(t, 0.0) for t in range(500, 10_000, 500)])  # ... two exact reads
    >>> dc.read_width(1, 3, math.inf, now_ms=10_000)  # reads outnumber writes: cache exact
    0.0
    >>> dc.read_width(1, 4, math.inf, now_ms=10_000)  # no reads reported: not cached
    inf
    >>> DivergenceCaching(max_range=8.0, low=60.0).read_width(1, 4, math.inf, 0)  # the domain
    8.0
    """

    def __init__(
        self,
        max_range: float,
        unit: float = 1.0,
        w: float = 1.0,
        window: int = 23,
        low: float | None = None,
    ) -> None:
        if not (max_range > 0 and unit > 0 and window >= 1):
            raise ValueError(
                f"need max_range > 0, unit > 0 and window >= 1, got {max_range}, {unit}, {window}"
            )
        self.m = max(1, math.ceil(max_range / unit))
        self.unit, self.w, self.window = unit, w, window
        self.domain = None if low is None else (low, low + self.m * unit)
        self._writes: deque[int] = deque(maxlen=window)  # every position is written per arrival
        self._reads: dict[tuple[int, int], deque[tuple[int, float]]] = {}

    def on_write(self, now_ms: int) -> None:
        self._writes.append(now_ms)

    def on_reads(self, client: int, item: int, reads: Sequence[tuple[int, float]]) -> None:
        if reads:
            log = self._reads.setdefault((client, item), deque(maxlen=self.window))
            log.extend(reads)

    def width(self, client: int, item: int, now_ms: int) -> float:
        """The least-cost width from the last ``window`` events of ``item`` at ``client``."""
        reads = self._reads.get((client, item), ())
        events = sorted([(t, -1.0) for t in self._writes] + list(reads))[-self.window :]
        if not events:
            return self._widest()
        span = max(now_ms - events[0][0], 1)
        tol = np.array([x for _, x in events if x >= 0])
        hist = np.bincount(
            np.clip(np.floor(tol / self.unit + 1e-9), 0, self.m).astype(int), minlength=self.m + 1
        )
        n_writes = sum(1 for _, x in events if x < 0)
        cost = dc_costs(n_writes / span, hist / span, self.w)
        k = self.m - int(np.argmin(cost[::-1]))  # ties: the widest
        return self._widest() if k == self.m else k * self.unit

    def _widest(self) -> float:
        return math.inf if self.domain is None else self.m * self.unit

    def read_width(self, client: int, item: int, width: float, now_ms: int) -> float:
        return self.width(client, item, now_ms)

    def value_width(self, client: int, item: int, width: float, now_ms: int) -> float:
        return self.width(client, item, now_ms)
