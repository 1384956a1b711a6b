"""Synthetic but realistic metric streams: random walks with daily cycles and bursts.

Used by ``tsmon demo``, the tests and the benchmarks. Deterministic for a given seed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

_DAY_MS = 86_400_000
METRICS = ("cpu", "mem", "latency_ms")


@dataclass(frozen=True)
class Fleet:
    """A fleet of hosts, each reporting every metric in ``METRICS`` at a fixed step."""

    hosts: int = 100
    step_ms: int = 60_000
    start_ms: int = 1_700_000_000_000
    seed: int = 7

    def series(self) -> list[str]:
        """Series names: ``host007.cpu`` and so on."""
        return [f"host{h:03d}.{m}" for h in range(self.hosts) for m in METRICS]

    def points(self, steps: int, offset: int = 0) -> pd.DataFrame:
        """``steps`` time steps (from step ``offset``) of every series as (series, ts, value).

        Rows are ordered by time, then series, as a collector would deliver them.
        """
        names = self.series()
        rng = np.random.default_rng([self.seed, offset])
        k = len(names)
        ts = self.start_ms + (offset + np.arange(steps)) * self.step_ms
        phase = 2 * np.pi * (ts % _DAY_MS) / _DAY_MS
        daily = 0.5 - 0.5 * np.cos(phase)  # 0 at midnight, 1 at noon
        host_rng = np.random.default_rng(self.seed)
        level = host_rng.uniform(0.2, 0.6, k)
        walk = np.cumsum(rng.normal(0.0, 0.01, (steps, k)), axis=0)
        bursts = (rng.random((steps, k)) < 0.002) * rng.uniform(0.2, 0.5, (steps, k))
        bursts = _decay(bursts, 0.8)
        base = level + 0.25 * daily[:, None] + walk + bursts
        kinds = np.array([names[i].rsplit(".", 1)[1] for i in range(k)])
        values = np.where(kinds == "cpu", np.clip(base, 0, 1), base)
        values = np.where(kinds == "mem", np.clip(0.5 * base + 0.3, 0, 1), values)
        values = np.where(kinds == "latency_ms", 20 + 80 * np.maximum(base, 0) ** 2, values)
        return pd.DataFrame(
            {
                "series": np.tile(np.array(names, dtype=object), steps),
                "ts": np.repeat(ts, k),
                "value": values.reshape(-1),
            }
        )


def _decay(impulses: np.ndarray, factor: float) -> np.ndarray:
    """Let each impulse fade geometrically over the following steps (a burst)."""
    out = np.empty_like(impulses)
    carry = np.zeros(impulses.shape[1])
    for i, row in enumerate(impulses):
        carry = carry * factor + row
        out[i] = carry
    return out


def random_walks(n_series: int, n_points: int, seed: int = 0, step_ms: int = 1_000) -> pd.DataFrame:
    """Independent Gaussian random walks with jittered timestamps, interleaved by time.

    Examples
    --------
    >>> frame = random_walks(3, 4)
    >>> len(frame), sorted(frame["series"].unique())
    (12, ['rw0', 'rw1', 'rw2'])
    """
    rng = np.random.default_rng(seed)
    steps = rng.integers(step_ms // 2, step_ms * 3 // 2 + 1, (n_points, n_series))
    ts = 1_700_000_000_000 + np.cumsum(steps, axis=0)
    values = 100.0 + np.cumsum(rng.normal(0.0, 1.0, (n_points, n_series)), axis=0)
    frame = pd.DataFrame(
        {
            "series": np.tile(
                np.array([f"rw{i}" for i in range(n_series)], dtype=object), n_points
            ),
            "ts": ts.reshape(-1),
            "value": values.reshape(-1),
        }
    )
    return frame.sort_values("ts", kind="stable", ignore_index=True)
