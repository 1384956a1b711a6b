"""Message delays for the latency experiments (Olston, Jiang, Widom 2003, §4, §5.3, Figure 9).

The paper measures streamed-update latency on a local area network: λ = 0.4 s keeps 99.8 % of
the updates on time (§5.3). :class:`LanLatency` is a seeded stand-in with that shape: most
messages take a few milliseconds (a shifted log-normal), and a small fraction is held up much
longer (retransmissions, queueing at a busy host; a second, slower log-normal).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from tsmon.protocols.filters.messages import Message


@dataclass
class LanLatency:
    """Delay in whole ms of each message: ``base + LogNormal`` and, rarely, a slow extra.

    With probability ``1 − spike_prob`` a message takes ``base_ms + X`` with ``X`` log-normal of
    median ``median_ms`` and log-sd ``sigma``; otherwise it also waits ``Y``, log-normal of
    median ``spike_median_ms`` and log-sd ``spike_sigma``. Delays are rounded up to whole ms
    (the network's clock). Draws come from one generator seeded with ``seed``, in the order the
    network asks, so a replay is deterministic. Use one instance per run.

    Examples
    --------
    >>> lan = LanLatency(seed=1)
    >>> d = lan.sample(100_000)
    >>> bool(np.median(d) < 10), round(float(np.mean(d > 400)), 3)   # §5.3: ~0.2 % late at 0.4 s
    (True, 0.002)
    >>> lan(None, 0) >= 1
    True
    """

    base_ms: float = 0.5
    median_ms: float = 2.0
    sigma: float = 0.8
    spike_prob: float = 0.01
    spike_median_ms: float = 150.0
    spike_sigma: float = 1.0
    seed: int = 0
    rng: np.random.Generator = field(init=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("base_ms", "median_ms", "spike_median_ms"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v >= 0):
                raise ValueError(f"{name} must be finite and >= 0 ms, got {v}")
        if not 0 <= self.spike_prob <= 1:
            raise ValueError(f"spike_prob must be in [0, 1], got {self.spike_prob}")
        self.rng = np.random.default_rng([self.seed, 9])

    def sample(self, n: int) -> np.ndarray:
        """``n`` delays in ms (int64), from this instance's generator."""
        d = self.base_ms + self.rng.lognormal(math.log(max(self.median_ms, 1e-9)), self.sigma, n)
        spikes = self.rng.random(n) < self.spike_prob
        d[spikes] += self.rng.lognormal(
            math.log(max(self.spike_median_ms, 1e-9)), self.spike_sigma, int(spikes.sum())
        )
        return np.ceil(d).astype(np.int64)

    def __call__(self, message: Message | None, sent_ms: int) -> int:
        """Delay of one message (the :data:`tsmon.engine.transport.Delay` signature)."""
        return int(self.sample(1)[0])


@dataclass
class UniformDelay:
    """Delays uniform in ``[low_ms, high_ms]`` whole ms, seeded; ``high_ms ≤ λ`` means none late.

    Examples
    --------
    >>> d = UniformDelay(0, 5, seed=2)
    >>> sorted({d(None, 0) for _ in range(200)})
    [0, 1, 2, 3, 4, 5]
    """

    low_ms: int
    high_ms: int
    seed: int = 0
    rng: np.random.Generator = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not 0 <= self.low_ms <= self.high_ms:
            raise ValueError(
                f"need 0 <= low_ms <= high_ms, got {self.low_ms} ms and {self.high_ms} ms"
            )
        self.rng = np.random.default_rng([self.seed, 10])

    def __call__(self, message: Message | None, sent_ms: int) -> int:
        """Delay of one message."""
        return int(self.rng.integers(self.low_ms, self.high_ms, endpoint=True))
