"""Streams and query schedules for the replication experiments (Bulut & Singh, §5).

The source gets one value every ``data_period_ms`` (``T_d``); every client asks a random linear
inner-product query every ``query_period_ms`` (``T_q``), "random query mode": the size and the
first position are uniform, the weights decrease linearly (§2.1). A client's precision is
``delta = tol_c * sum(W)``: its answers may be off by ``tol_c`` per unit of weight. Clients ask
with independent precisions ``tol_c`` spread geometrically over ``[tol / spread, tol * spread]``.

Data sets: the paper's *real* data, 8 years of Santa Barbara daily maximum temperatures, is not
available offline; :func:`weather_like` is a stand-in with its character (integer °F, a yearly
cycle, day-to-day persistence). :func:`uniform_noise` is the paper's *synthetic* data.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

__all__ = ["Event", "ReplicationWorkload", "uniform_noise", "weather_like"]


def weather_like(n: int, seed: int = 0) -> np.ndarray:
    """Daily maximum temperatures in integer °F: a yearly cycle plus AR(1) weather.

    Examples
    --------
    >>> x = weather_like(3000, seed=1)
    >>> bool(40 < x.min() and x.max() < 100), float(np.median(np.abs(np.diff(x)))) <= 3
    (True, True)
    """
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    season = 68 + 8 * np.sin(2 * np.pi * t / 365.25 + rng.uniform(0, 2 * np.pi))
    e = np.empty(n)
    shocks = rng.normal(0.0, 3.0, n)
    prev = 0.0
    for i in range(n):
        prev = 0.7 * prev + shocks[i]
        e[i] = prev
    return np.round(season + e)


def uniform_noise(n: int, seed: int = 0) -> np.ndarray:
    """The paper's synthetic data: independent values uniform in ``[0, 100]`` (§2.7).

    Examples
    --------
    >>> x = uniform_noise(1000)
    >>> bool(0 <= x.min() and x.max() <= 100)
    True
    """
    return np.random.default_rng(seed).uniform(0.0, 100.0, n)


class Event(NamedTuple):
    """One scheduled event: a value (``client = -1``), a query or a phase end (``client = 0``)."""

    time_ms: int
    kind: str  # "value", "query" or "phase"
    client: int
    positions: tuple[int, ...] = ()
    weights: tuple[float, ...] = ()
    delta: float = 0.0


_ORDER = {"value": 0, "query": 1, "phase": 2}


@dataclass(frozen=True)
class ReplicationWorkload:
    """A stream, a tree of clients and their query schedule (see the module docstring).

    Examples
    --------
    >>> wl = ReplicationWorkload(np.arange(40.0), {1: 0}, window=8, data_period_ms=1000,
    ...                          query_period_ms=2000, tolerance=1.0, phase_ms=10_000)
    >>> [e.kind for e in wl.events()][8:12]
    ['value', 'query', 'value', 'phase']
    >>> q = next(e for e in wl.events() if e.kind == "query")
    >>> q.positions[0] + len(q.positions) <= 8, q.delta == sum(q.weights)
    (True, True)
    """

    values: np.ndarray
    parents: Mapping[int, int]
    window: int
    data_period_ms: int
    query_period_ms: int
    tolerance: float
    phase_ms: int
    warmup_ms: int = 0
    spread: float = 2.0
    seed: int = 0
    max_range: float = field(default=0.0)

    def __post_init__(self) -> None:
        if self.data_period_ms <= 0 or self.query_period_ms <= 0 or self.phase_ms <= 0:
            raise ValueError(
                "data_period_ms, query_period_ms and phase_ms must be > 0 ms, got "
                f"{self.data_period_ms}, {self.query_period_ms}, {self.phase_ms}"
            )
        if not self.max_range:
            spread = float(np.ptp(self.values)) if len(self.values) else 1.0
            object.__setattr__(self, "max_range", max(1.0, math.ceil(spread)))

    @property
    def end_ms(self) -> int:
        """Time of the last value."""
        return len(self.values) * self.data_period_ms

    def tolerances(self) -> dict[int, float]:
        """Each client's per-unit-weight precision ``tol_c``."""
        cs = sorted(self.parents)
        if len(cs) == 1:
            return {cs[0]: self.tolerance}
        exps = np.linspace(-1.0, 1.0, len(cs))
        rng = np.random.default_rng(self.seed + 7)
        rng.shuffle(exps)
        return {c: float(self.tolerance * self.spread**e) for c, e in zip(cs, exps, strict=True)}

    def events(self) -> Iterator[Event]:
        """Values, queries and phase ends in time order (values first at equal times)."""
        n, tq = len(self.values), self.query_period_ms
        events = [Event((i + 1) * self.data_period_ms, "value", -1) for i in range(n)]
        first = self.window * self.data_period_ms  # queries start once the window is full
        tol = self.tolerances()
        for c in sorted(self.parents):
            rng = np.random.default_rng([self.seed, c])
            t = first + int(rng.integers(0, tq))
            while t <= self.end_ms:
                m = int(rng.integers(1, self.window + 1))
                a = int(rng.integers(0, self.window - m + 1))
                w = (m - np.arange(m)) / m  # linear weights (§2.1)
                positions = tuple(range(a, a + m))
                events.append(
                    Event(t, "query", c, positions, tuple(w.tolist()), tol[c] * float(w.sum()))
                )
                t += tq
        events += [
            Event(t, "phase", 0) for t in range(self.phase_ms, self.end_ms + 1, self.phase_ms)
        ]
        events.sort(key=lambda e: (e.time_ms, _ORDER[e.kind], e.client))
        yield from events
