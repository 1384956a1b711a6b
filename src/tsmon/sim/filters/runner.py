"""Replay a :class:`Workload` through the adaptive protocol, checking every answer on the way.

The check is the exact oracle of the issue: after every update, every query's bounded answer
must contain the exact aggregate of the objects' values and be at most ``δ`` wide. Costs are
counted after an optional warm-up, as the paper measures "after an initial warm-up period"
(§5.1).

- :func:`run_adaptive`: zero latency (§3); the answer must hold the *current* exact value.
- :func:`run_with_latency`: message delays and a latency tolerance ``λ`` (§4), with serializing
  queues or padded bounds (§4.1); the answer must hold the exact value as of its ``as_of_ms``.

The oracle (:mod:`~tsmon.sim.filters.oracle`) is vectorized: the replay records the answers and
the exact aggregates are computed afterwards for every update. With zero latency the answers
only change when a message is sent (and, being instant, processed) or a period boundary passes,
so :func:`run_adaptive` records them only then; ``exhaustive=True`` records them after every
update instead (slower, the same verdicts; the tests compare both).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from tsmon.engine.transport import Delay
from tsmon.protocols.filters.messages import EnvelopeCounts, MessageCounts, StreamedUpdate
from tsmon.sim.filters.network import FilterNetwork
from tsmon.sim.filters.oracle import RTOL, CheckResult, check_answers
from tsmon.sim.filters.workload import Workload

__all__ = ["RTOL", "AdaptiveResult", "LatencyResult", "run_adaptive", "run_with_latency"]


@dataclass(frozen=True)
class AdaptiveResult:
    """Messages of one adaptive run, and what the oracle found.

    ``violations`` counts (update, query) pairs whose answer missed the exact value or was wider
    than ``δ``; ``checked`` is how many pairs were checked (``updates_checked`` how many
    updates). ``counts``, ``envelopes`` (the same messages once per source, send time and
    direction: the cost if a source batched them) and ``time_units`` cover the time after the
    warm-up, as do ``alone`` / ``streamed_of``: per object, the streamed updates that travelled
    alone in their envelope, and all of its streamed updates (for
    :func:`~tsmon.sim.filters.beyond.batching_costs`).
    """

    counts: MessageCounts
    time_units: float
    checked: int
    violations: int
    updates_checked: int = 0
    envelopes: EnvelopeCounts = field(default_factory=EnvelopeCounts)
    alone: Mapping[str, int] = field(default_factory=dict)
    streamed_of: Mapping[str, int] = field(default_factory=dict)

    @property
    def per_time_unit(self) -> float:
        """All messages (streamed, growth, shrink) per paper time unit."""
        return self.counts.total / self.time_units if self.time_units else float("nan")

    @property
    def streamed_per_time_unit(self) -> float:
        """Streamed updates per time unit: the "idealized" cost of §3.3 (width messages free)."""
        return self.counts.streamed / self.time_units if self.time_units else float("nan")

    @property
    def envelopes_per_time_unit(self) -> float:
        """Envelopes per time unit: the cost when one source's messages of an instant batch."""
        return self.envelopes.total / self.time_units if self.time_units else float("nan")


@dataclass(frozen=True)
class LatencyResult:
    """One run with message delays (:func:`run_with_latency`).

    ``late`` of ``released`` streamed updates reached the coordinator more than ``λ`` after
    their timestamp (§4, :class:`~tsmon.protocols.filters.SerializingQueue`), over the whole
    run. ``check`` is the oracle's verdict on the answers sampled after every update past the
    warm-up, each against the exact values as of its ``as_of_ms``. ``lag_ms`` is the mean of
    ``now − as_of_ms`` over those answers (λ when serializing, 0 when padding).
    """

    counts: MessageCounts
    time_units: float
    late: int
    released: int
    check: CheckResult
    lag_ms: float

    @property
    def late_fraction(self) -> float:
        """Fraction of streamed updates later than ``λ`` (the y-axis of Figure 9, from 1)."""
        return self.late / self.released if self.released else float("nan")

    @property
    def fidelity(self) -> float:
        """Fraction of checked answers holding the exact value as of their time, within δ."""
        return self.check.fidelity

    @property
    def per_time_unit(self) -> float:
        """All messages per time unit after the warm-up."""
        return self.counts.total / self.time_units if self.time_units else float("nan")


def _minus(a: MessageCounts, b: MessageCounts) -> MessageCounts:
    return MessageCounts(*(getattr(a, f.name) - getattr(b, f.name) for f in dataclasses.fields(a)))


def _network(
    workload: Workload, period_ms: int | None, shrink: float, seed: int, **kwargs: object
) -> FilterNetwork:
    return FilterNetwork(
        workload.objects,
        list(workload.queries),
        period_ms,
        shrink,
        np.random.default_rng(seed),
        start_ms=int(workload.ts_ms[0]) if len(workload) else 0,
        source_of=workload.source_of,
        **kwargs,  # type: ignore[arg-type]
    )


class _Meter:
    """Messages and envelopes of ``net`` from the first update at or past the warm-up on."""

    def __init__(self, net: FilterNetwork, workload: Workload, warmup_ms: int) -> None:
        self.net = net
        start = int(workload.ts_ms[0]) if len(workload) else 0
        self.warm_at = start + max(warmup_ms, 0)
        self.warm = warmup_ms <= 0
        self._counts, self._envelopes = MessageCounts(), EnvelopeCounts()
        span = int(workload.ts_ms[-1]) - self.warm_at if len(workload) else 0
        self.time_units = max(span, 0) / workload.time_unit_ms

    def see(self, ts_ms: int) -> None:
        """Call before feeding the update at ``ts_ms``: the first one past the warm-up counts."""
        if not self.warm and ts_ms >= self.warm_at:
            self._counts = dataclasses.replace(self.net.counts)
            self._envelopes = EnvelopeCounts(self.net.envelopes.up, self.net.envelopes.down)
            self.warm = True

    def counted(self) -> tuple[MessageCounts, EnvelopeCounts]:
        """Messages and envelopes since the warm-up (none if it outlasted the workload)."""
        net = self.net
        if not self.warm:
            return _minus(net.counts, net.counts), EnvelopeCounts()
        envelopes = EnvelopeCounts(
            net.envelopes.up - self._envelopes.up, net.envelopes.down - self._envelopes.down
        )
        return _minus(net.counts, self._counts), envelopes


def _updates(workload: Workload) -> enumerate[tuple[int, int, float]]:
    """``(k, (ts_ms, object index, value))`` of every update, as Python scalars."""
    ts, obj, values = workload.ts_ms.tolist(), workload.obj.tolist(), workload.values.tolist()
    return enumerate(zip(ts, obj, values, strict=True))


def run_adaptive(
    workload: Workload,
    *,
    period_ms: int | None,
    shrink: float,
    seed: int = 0,
    warmup_ms: int = 0,
    check: bool = True,
    costs: Mapping[str, float] | None = None,
    exhaustive: bool = False,
    growth: str = "paper",
) -> AdaptiveResult:
    """Run the adaptive filters with zero latency over ``workload``.

    Parameters
    ----------
    workload
        Updates and queries.
    period_ms, shrink
        The algorithm parameters ``T`` and ``S`` (§3.1); ``period_ms=None`` lets the
        coordinator choose ``T`` online (:mod:`tsmon.protocols.filters.tuning`).
    seed
        Seed of the growth tie-break.
    warmup_ms
        Messages before ``ts_ms[0] + warmup_ms`` are not counted (answers are all checked).
    check
        Check every answer after every update against the exact oracle.
    costs
        Message cost ``C_i`` per object.
    exhaustive
        Record the answers after every update, not only when they may have changed.
    growth
        ``"paper"`` or ``"capped"`` growth (see :class:`~tsmon.protocols.filters.Coordinator`).

    Examples
    --------
    >>> from tsmon.sim.filters.walks import fig3_workload
    >>> r = run_adaptive(fig3_workload(4.0, steps=300), period_ms=10_000, shrink=0.05)
    >>> r.violations, r.checked, r.counts.streamed < 3_000
    (0, 3001, True)
    """
    net = _network(workload, period_ms, shrink, seed, costs=costs, growth=growth)
    meter = _Meter(net, workload, warmup_ms)
    objects, names = workload.objects, [q.name for q in workload.queries]
    los: list[list[float]] = []
    his: list[list[float]] = []
    record_at: list[int] = []
    last_total, last_period = -1, None
    by_key: dict[tuple[str, int], list[str]] = {}  # streamed updates per (source, ts_ms)
    for k, (ts, i, v) in _updates(workload):
        meter.see(ts)
        sent = net.update(ts, objects[i], v)
        if meter.warm:
            for m in sent:
                if isinstance(m, StreamedUpdate):
                    key = (workload.source_of[m.object_id], m.ts_ms)
                    by_key.setdefault(key, []).append(m.object_id)
        if not check:
            continue
        chosen = net.period_ms
        period = ts // chosen if chosen else None
        total = net.counts.total
        if exhaustive or total != last_total or period != last_period:
            answers = net.answers()  # changed only by a message or a boundary (zero latency)
            los.append([answers[n].lo for n in names])
            his.append([answers[n].hi for n in names])
            record_at.append(k)
            last_total, last_period = total, period
    alone: dict[str, int] = {}
    streamed: dict[str, int] = {}
    for members in by_key.values():
        for o in members:
            streamed[o] = streamed.get(o, 0) + 1
            alone[o] = alone.get(o, 0) + (len(members) == 1)
    counts, envelopes = meter.counted()
    checks = (0, 0, 0)
    if check and len(workload) and names:
        samples = np.arange(len(workload))
        record_of = np.searchsorted(np.array(record_at), samples, side="right") - 1
        result = check_answers(
            workload, np.array(los, dtype=float), np.array(his, dtype=float), record_of, samples
        )
        checks = (result.checked, result.violations, result.samples_checked)
    return AdaptiveResult(counts, meter.time_units, *checks, envelopes, alone, streamed)


def run_with_latency(
    workload: Workload,
    *,
    period_ms: int,
    shrink: float,
    latency_ms: int,
    delay: Delay,
    seed: int = 0,
    warmup_ms: int = 0,
    max_rates: Mapping[str, float] | None = None,
    check: bool = True,
    sample_ms: int | None = None,
) -> LatencyResult:
    """Run the adaptive filters with per-message delays and latency tolerance ``λ``.

    Every message takes ``delay(message, sent_ms)`` ms. Without ``max_rates`` the coordinator
    serializes updates and answers as of ``now − λ`` (§4); with them it pads the bounds by
    ``φ_i = 2·R_i·λ`` and answers as of ``now`` (§4.1). After every update past the warm-up the
    answers are checked against the exact values as of their ``as_of_ms`` (the last update at or
    before it; never one the replay has not fed yet). With ``sample_ms`` the answers are sampled
    instead at every multiple of ``sample_ms`` (the network advanced there, between updates), so
    the fidelity is a fraction of *time*, as in §5.3.

    Examples
    --------
    >>> from tsmon.sim.filters.latency import UniformDelay
    >>> from tsmon.sim.filters.walks import fig3_workload
    >>> w = fig3_workload(4.0, steps=300)
    >>> r = run_with_latency(w, period_ms=10_000, shrink=0.05, latency_ms=50,
    ...                      delay=UniformDelay(0, 50), warmup_ms=5_000)
    >>> r.late, r.check.violations, r.lag_ms
    (0, 0, 50.0)
    """
    net = _network(
        workload, period_ms, shrink, seed, delay=delay, latency_ms=latency_ms, max_rates=max_rates
    )
    meter = _Meter(net, workload, warmup_ms)
    objects, names = workload.objects, [q.name for q in workload.queries]
    los: list[list[float]] = []
    his: list[list[float]] = []
    sample_k: list[int] = []
    as_of: list[int] = []
    lags: list[int] = []

    def sample(k: int, now_ms: int) -> None:
        answers = net.answers()
        los.append([answers[n].lo for n in names])
        his.append([answers[n].hi for n in names])
        a = answers[names[0]].as_of_ms
        as_of.append(now_ms if a is None else int(a))
        lags.append(now_ms - as_of[-1])
        sample_k.append(k)

    grid = sample_ms is not None and sample_ms > 0
    next_sample = (meter.warm_at // sample_ms + 1) * sample_ms if grid else 0
    for k, (ts, i, v) in _updates(workload):
        if grid and check and names:
            while next_sample < ts:  # sample between updates: k − 1 is the last update fed
                net.advance(next_sample)
                if next_sample >= meter.warm_at:
                    sample(k - 1, next_sample)
                next_sample += sample_ms
        meter.see(ts)
        net.update(ts, objects[i], v)
        if check and meter.warm and names and not grid:
            sample(k, ts)
    counts, _ = meter.counted()
    time_units = meter.time_units
    queue = net.coordinator.queue
    if not sample_k:
        empty = CheckResult(0, 0, 0, 0, 0, None)
        return LatencyResult(counts, time_units, queue.late, queue.released, empty, float("nan"))
    fed = np.array(sample_k)
    # the exact state as of as_of: after the last update with ts <= as_of, but not past k
    state = np.searchsorted(workload.ts_ms, np.array(as_of), side="right") - 1
    state = np.minimum(state, fed)
    result = check_answers(
        workload,
        np.array(los, dtype=float),
        np.array(his, dtype=float),
        np.arange(len(fed)),
        state,
    )
    return LatencyResult(
        counts, time_units, queue.late, queue.released, result, float(np.mean(lags))
    )
