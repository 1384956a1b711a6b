"""Choosing the adjustment period ``T`` online, from the updates the coordinator receives.

The paper sets ``T = 10`` time units and leaves setting it automatically to future work (§5).
A coordinator started without a period runs static (uniform widths, no shrinks, no growth)
while :class:`PeriodChooser` watches the streamed updates: the sampling interval of a series is
the smallest positive gap between two of its updates received, and once half the series that
would adapt have one (or some have and :data:`ENOUGH_UPDATES` per series were received: quiet
series may never send twice under uniform widths), ``T`` is twenty sampling intervals (twice
the paper's ten time units: no more messages than ten on any of the 15 NAB folder × δ
workloads of ``benchmarks/filters/bench_nab_folders.py`` and fewer on 8, and the random walks
of Fig. 3 favour longer periods too), lengthened if needed so that growth messages
(at most one per adapting series per period) stay within :data:`GROWTH_SHARE` of the
streamed updates counted so far.

:class:`SafetyNet` then compares the adaptive protocol's messages with what uniform static
widths would have cost, and falls back to those if adapting costs clearly more.
"""

from __future__ import annotations

import math

import numpy as np

#: Periods of twenty sampling intervals (§5 used T = 10 time units; 20 sent no more messages
#: on any NAB workload and fewer on 8 of 15, benchmarks/filters/README.md).
INTERVALS_PER_PERIOD = 20
#: Growth messages per period allowed, as a share of the streamed updates per period.
GROWTH_SHARE = 0.1
#: Streamed updates per adapting series after which one series with a gap is enough.
ENOUGH_UPDATES = 4


class PeriodChooser:
    """Per series: the last update time and the smallest positive gap seen; and the count.

    Examples
    --------
    >>> c = PeriodChooser()
    >>> for ts, i in [(0, 0), (0, 1), (300, 0), (600, 1), (900, 0)]:
    ...     c.see(i, ts)
    >>> c.choose([0, 1])                    # gaps 300 and 600: median 450, T = 20 intervals
    9000
    >>> PeriodChooser().choose([0, 1]) is None   # nothing seen yet
    True
    """

    def __init__(self) -> None:
        self.last: dict[int, int] = {}
        self.gap: dict[int, int] = {}
        self.first_ms: int | None = None
        self.latest_ms: int | None = None
        self.updates = 0

    def see(
        self, i: int, ts_ms: int, count: int = 1, gap: int = 0, last_ms: int | None = None
    ) -> None:
        """A streamed update of series ``i`` stamped ``ts_ms`` (not a forced reply); or
        ``count`` of them from ``ts_ms`` to ``last_ms``, the smallest positive gap between them
        ``gap`` (0: none), as a queue folded them (:mod:`.serializing`)."""
        last = ts_ms if last_ms is None else last_ms
        self.updates += count
        self.first_ms = ts_ms if self.first_ms is None else min(self.first_ms, ts_ms)
        self.latest_ms = last if self.latest_ms is None else max(self.latest_ms, last)
        for g in (abs(ts_ms - self.last.get(i, ts_ms)), gap):
            if g > 0:
                self.gap[i] = min(g, self.gap.get(i, g))
        self.last[i] = last

    def choose(self, adapting: list[int]) -> int | None:
        """``T`` in ms once enough of the ``adapting`` series have a gap (see above), else None."""
        gaps = [self.gap[i] for i in adapting if i in self.gap]
        half = len(gaps) >= math.ceil(len(adapting) / 2)
        if not gaps or not (half or self.updates >= ENOUGH_UPDATES * len(adapting)):
            return None
        interval = max(1, int(np.median(gaps)))
        assert self.first_ms is not None and self.latest_ms is not None
        span = max(self.latest_ms - self.first_ms, interval)
        rate = self.updates / span  # streamed updates per ms under the static widths
        # growth: at most one message per adapting series per period, <= GROWTH_SHARE·rate·T
        period = max(INTERVALS_PER_PERIOD * interval, len(adapting) / (GROWTH_SHARE * rate))
        return math.ceil(period / interval) * interval


#: Adaptive may cost this share more than the uniform estimate before the net trips ...
MARGIN = 0.05
#: ... plus this many standard deviations of a Poisson count of the uniform estimate ...
NOISE_SIGMAS = 3.0
#: ... plus the messages of switching back, per adapting series.
SWITCH_MESSAGES = 2
#: Periods after choosing T that the comparison ignores (the widths are still settling):
#: 200 sampling intervals at the default T of 20 intervals.
SETTLING_PERIODS = 10


class SafetyNet:
    """Adaptive filters never cost more than uniform static ones, beyond noise (beyond §3).

    Once ``T`` is chosen, every source is told its uniform static width and counts the updates
    a static filter of that width would send (``StreamedUpdate.shadow``, carried by the
    updates it streams anyway: no extra message). The coordinator counts every message of the
    adaptive protocol from :data:`SETTLING_PERIODS` periods on. When they exceed the uniform
    estimate over the same time by more than
    :data:`MARGIN`, :data:`NOISE_SIGMAS` Poisson deviations and the switching messages, the
    coordinator falls back to uniform static widths for good (each series static at once, no
    wider than it is; then widened to its uniform width once every narrowing is confirmed,
    ``PrecisionManager._widen_to_uniform``). A source's count is as of its
    last update, so each is extrapolated at its rate to the boundary (a series the adaptive
    widths silence would otherwise look free under uniform widths too).

    Examples
    --------
    >>> net = SafetyNet()
    >>> net.see(0, 7, ts_ms=0)
    >>> for k in range(SETTLING_PERIODS):   # settling: counts start afresh each period
    ...     net.spend(50)
    ...     assert not net.tripped(k, adapting=2)
    >>> net.see(0, 27, ts_ms=19)     # 20 in 10 ms since the last settling boundary: 40 by 29 ms
    >>> net.see(1, 60, ts_ms=29)
    >>> net.spend(135)
    >>> net.tripped(29, adapting=2)          # 135 <= 1.05·100 + 3·√100 + 2·2
    False
    >>> net.spend(10)
    >>> net.tripped(29, adapting=2)
    True
    """

    def __init__(self) -> None:
        self.spent = 0
        self.shadow: dict[int, tuple[int, int]] = {}  # series -> (count, as of ts_ms)
        self.base: dict[int, int] = {}  # shadow counts when the comparison started
        self.since_ms = 0
        self.periods = 0

    def spend(self, messages: int = 1) -> None:
        """Messages of the adaptive protocol (streamed, growth, shrink)."""
        self.spent += messages

    def see(self, i: int, shadow: int | None, ts_ms: int) -> None:
        """Series ``i``'s count of would-be uniform sends, as of its update at ``ts_ms``."""
        if shadow is not None and shadow >= self.shadow.get(i, (0, 0))[0]:
            self.shadow[i] = (shadow, ts_ms)

    def tripped(self, now_ms: int, adapting: int) -> bool:
        """At the boundary ``now_ms``: whether adaptive has cost clearly more than uniform
        static since the settling periods."""
        self.periods += 1
        if self.periods <= SETTLING_PERIODS:
            self.spent, self.since_ms = 0, now_ms
            self.base = {i: n for i, (n, _) in self.shadow.items()}
            return False
        uniform = 0.0
        for i, (n, ts) in self.shadow.items():
            counted = n - self.base.get(i, 0)
            if ts > self.since_ms and now_ms > ts:  # extrapolate at its rate since the start
                counted *= (now_ms - self.since_ms) / (ts - self.since_ms)
            uniform += counted
        allowed = (1 + MARGIN) * uniform + NOISE_SIGMAS * math.sqrt(uniform)
        return self.spent > allowed + SWITCH_MESSAGES * adapting
