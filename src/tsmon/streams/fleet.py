"""Synthetic but realistic metric streams: random walks with daily cycles and bursts.

Used by ``tsmon demo``, the tests and the benchmarks; :class:`FleetStream` is the Spark job's
``generator`` input (one continuous walk across micro-batches). Deterministic for a given seed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pragma: no cover - typing only
    import pandas as pd

# pandas is imported where a frame is built: Spark's Python processes that load the job's
# generator (its creation, read planning, streaming reader) import this module but build none
# (only the fallback reader for a pyspark before 4.2 does, tsmon.spark.pysources)

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
        import pandas as pd

        return pd.DataFrame(
            {
                "series": np.tile(np.array(names, dtype=object), steps),
                "ts": np.repeat(ts, k),
                "value": values.reshape(-1),
            }
        )


def _decay(impulses: np.ndarray, factor: float, carry: np.ndarray | None = None) -> np.ndarray:
    """Let each impulse fade geometrically over the following steps (a burst, or with a factor
    near 1 a mean-reverting walk); ``carry`` is the height before the first step (0 if None)."""
    out = np.empty_like(impulses)
    carry = np.zeros(impulses.shape[1]) if carry is None else carry
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
    import pandas as pd

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


#: Start of :class:`FleetStream` event time: 2024-01-01T00:00:00Z, in epoch ms.
STREAM_START_MS = 1_704_067_200_000

#: The metrics of :class:`FleetStream`, in series order. Each turns a host's base level (about
#: 0..1: a per-series level, a daily cycle, a random walk and decaying bursts) into a value of
#: its own unit as ``offset + scale * max(base, 0) ** power``; cpu and mem are fractions in
#: [0, 1] as in :class:`Fleet`.
STREAM_METRICS: dict[str, tuple[float, float, float]] = {
    "cpu": (0.0, 1.0, 1.0),
    "mem": (0.3, 0.5, 1.0),
    "latency_ms": (20.0, 80.0, 2.0),
    "disk": (5.0, 60.0, 1.0),
    "net_in": (1e4, 2e6, 1.0),
    "net_out": (1e4, 8e5, 1.0),
    "load": (0.0, 4.0, 1.0),
    "iops": (10.0, 900.0, 1.5),
    "swap": (0.0, 0.2, 2.0),
    "threads": (150.0, 200.0, 1.0),
    "errors": (0.0, 10.0, 3.0),
    "requests": (50.0, 1500.0, 1.0),
    "queue": (0.0, 40.0, 3.0),
    "temp_c": (35.0, 30.0, 1.0),
    "conns": (20.0, 300.0, 1.0),
}

_WALK_SD = 0.005  # per tick
_WALK_KEEP = 1 - 1 / 2_000  # the walk reverts slowly to 0: it stays realistic for days
_BURST_P = 0.002  # chance of a burst per series and tick
_BURST_DECAY = 0.8  # a burst keeps this fraction of its height per tick
_ADVANCE_TICKS = 512  # ticks per chunk when catching up to a later start tick


class FleetStream:
    """An endless fleet: ``hosts`` × ``metrics`` series, one point each per tick of ``step_ms``.

    Unlike :meth:`Fleet.points`, whose walk restarts at every call, the walk here is one
    continuous path (slowly mean-reverting, so that it stays in range for days): tick ``t``'s
    increments and burst impulses come from ``np.random.default_rng([seed, t])`` and the
    running position is carried from tick to tick with the same floating-point operations
    however the ticks are requested. So ``values(a, b)`` is bit-identical whatever earlier
    calls split the range into — what a streaming source needs when Spark replays a batch,
    possibly in another process. The position after the last call is cached; a call for an
    earlier range recomputes from tick 0 (vectorised over series, one small step per tick).

    Examples
    --------
    >>> f = FleetStream(hosts=2, metrics=3, seed=1)
    >>> f.series()[:4]
    ['host000.cpu', 'host000.mem', 'host000.latency_ms', 'host001.cpu']
    >>> f.sources()[:4]
    ['host000', 'host000', 'host000', 'host001']
    >>> whole = f.values(0, 5)
    >>> again = FleetStream(hosts=2, metrics=3, seed=1)
    >>> bool((np.vstack([again.values(0, 2), again.values(2, 5)]) == whole).all())
    True
    """

    def __init__(
        self,
        hosts: int = 200,
        metrics: int = 15,
        step_ms: int = 10_000,
        start_ms: int = STREAM_START_MS,
        seed: int = 7,
    ) -> None:
        if not 1 <= metrics <= len(STREAM_METRICS):
            raise ValueError(f"metrics must be in 1..{len(STREAM_METRICS)}, got {metrics}")
        if hosts < 1 or step_ms < 1 or seed < 0:
            raise ValueError(
                f"need hosts >= 1, step_ms >= 1, seed >= 0; got {hosts, step_ms, seed}"
            )
        self.hosts = hosts
        self.step_ms = step_ms
        self.start_ms = start_ms
        self.seed = seed
        self.metrics = list(STREAM_METRICS)[:metrics]
        k = hosts * metrics
        self._level = np.random.default_rng(seed).uniform(0.2, 0.6, k)
        shapes = np.array([STREAM_METRICS[m] for m in self.metrics] * hosts)
        self._offset, self._scale, self._power = shapes.T
        kinds = np.array(self.metrics * hosts)
        self._clip = np.isin(kinds, ("cpu", "mem"))
        self._state = self._origin()  # (tick, walk position, burst height) before that tick

    def _origin(self) -> tuple[int, np.ndarray, np.ndarray]:
        k = self._level.size
        return 0, np.zeros(k), np.zeros(k)

    def series(self) -> list[str]:
        """Series names in value-column order: ``host007.cpu`` and so on."""
        return [f"host{h:03d}.{m}" for h in range(self.hosts) for m in self.metrics]

    def sources(self) -> list[str]:
        """The source (host) of each series, in the order of :meth:`series`."""
        return [f"host{h:03d}" for h in range(self.hosts) for _ in self.metrics]

    def ts(self, a: int, b: int) -> np.ndarray:
        """Event time (epoch ms) of ticks ``[a, b)``."""
        return self.start_ms + np.arange(a, b, dtype=np.int64) * self.step_ms

    def position(self, tick: int) -> tuple[np.ndarray, np.ndarray]:
        """The walk positions and burst heights before ``tick`` (one per series): what
        :meth:`resume` takes to compute ticks from ``tick`` on in another process."""
        if tick < 0:
            raise ValueError(f"need tick >= 0, got {tick}")
        at, walk, burst = self._state
        if tick < at:
            at, walk, burst = self._origin()
        while at < tick:  # catch up in chunks (memory stays bounded)
            end = min(tick, at + _ADVANCE_TICKS)
            walks, bursts = self._run(at, end, walk, burst)
            at, walk, burst = end, walks[-1], bursts[-1]
        self._state = (at, walk, burst)
        return walk, burst

    def resume(self, tick: int, walk: np.ndarray, burst: np.ndarray) -> None:
        """Continue from :meth:`position` ``(tick)`` of a stream with the same parameters:
        ``values(tick, b)`` then needs no catching up from tick 0."""
        self._state = (tick, walk, burst)

    def values(self, a: int, b: int) -> np.ndarray:
        """Values of ticks ``[a, b)``: an array of shape ``(b - a, len(series()))``."""
        if not 0 <= a <= b:
            raise ValueError(f"need 0 <= a <= b, got a={a}, b={b}")
        walks, bursts = self._run(a, b, *self.position(a))
        if b > a:
            self._state = (b, walks[-1], bursts[-1])
        phase = 2 * np.pi * (self.ts(a, b) % _DAY_MS) / _DAY_MS
        daily = 0.5 - 0.5 * np.cos(phase)  # 0 at midnight, 1 at noon
        base = self._level + 0.25 * daily[:, None] + walks + bursts
        shaped = self._offset + self._scale * np.maximum(base, 0.0) ** self._power
        return np.where(self._clip, np.clip(shaped, 0.0, 1.0), shaped)

    def _run(
        self, a: int, b: int, walk: np.ndarray, burst: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Walk positions and burst heights at ticks ``[a, b)``, from those before tick ``a``."""
        k = walk.size
        steps = np.empty((b - a, k))
        impulses = np.empty((b - a, k))
        for i, t in enumerate(range(a, b)):
            rng = np.random.default_rng([self.seed, t])
            steps[i] = rng.normal(0.0, _WALK_SD, k)
            impulses[i] = (rng.random(k) < _BURST_P) * rng.uniform(0.2, 0.5, k)
        # one recurrence per tick, as in a single run from tick 0: the same operations
        return _decay(steps, _WALK_KEEP, walk), _decay(impulses, _BURST_DECAY, burst)

    def points(self, a: int, b: int) -> pd.DataFrame:
        """Ticks ``[a, b)`` as rows (source, series, ts, value), by tick then series."""
        n = b - a
        import pandas as pd

        return pd.DataFrame(
            {
                "source": np.tile(np.array(self.sources(), dtype=object), n),
                "series": np.tile(np.array(self.series(), dtype=object), n),
                "ts": np.repeat(self.ts(a, b), len(self.series())),
                "value": self.values(a, b).reshape(-1),
            }
        )
