"""Replay a :class:`Workload` through the adaptive protocol, checking every answer on the way.

The check is the exact oracle of the issue: after every update, every query's bounded answer
must contain the exact aggregate of the objects' current values and be at most ``δ`` wide
(zero latency). Costs are counted after an optional warm-up, as the paper measures "after an
initial warm-up period" (§5.1).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from tsmon.protocols.filters.messages import MessageCounts
from tsmon.protocols.filters.network import FilterNetwork
from tsmon.sim.filters.workload import Workload

#: Relative slack of the oracle for float rounding of the answers.
RTOL = 1e-9


@dataclass(frozen=True)
class AdaptiveResult:
    """Messages of one adaptive run, and what the oracle found.

    ``violations`` counts (update, query) pairs whose answer missed the exact value or was wider
    than ``δ``; ``checked`` is how many pairs were checked.
    """

    counts: MessageCounts
    time_units: float
    checked: int
    violations: int

    @property
    def per_time_unit(self) -> float:
        """All messages (streamed, growth, shrink) per paper time unit."""
        return self.counts.total / self.time_units if self.time_units else float("nan")


def run_adaptive(
    workload: Workload,
    *,
    period_ms: int,
    shrink: float,
    seed: int = 0,
    warmup_ms: int = 0,
    check: bool = True,
    costs: Mapping[str, float] | None = None,
) -> AdaptiveResult:
    """Run the adaptive filters with zero latency over ``workload``.

    Parameters
    ----------
    workload
        Updates and queries.
    period_ms, shrink
        The algorithm parameters ``T`` and ``S`` (§3.1).
    seed
        Seed of the growth tie-break.
    warmup_ms
        Messages before ``ts_ms[0] + warmup_ms`` are not counted.
    check
        Check every answer after every update against the exact oracle.
    costs
        Message cost ``C_i`` per object.

    Examples
    --------
    >>> from tsmon.sim.filters.walks import fig3_workload
    >>> r = run_adaptive(fig3_workload(4.0, steps=300), period_ms=10_000, shrink=0.05)
    >>> r.violations, r.checked, r.counts.streamed < 3_000
    (0, 3001, True)
    """
    start = int(workload.ts_ms[0]) if len(workload) else 0
    net = FilterNetwork(
        workload.objects,
        list(workload.queries),
        period_ms,
        shrink,
        np.random.default_rng(seed),
        start_ms=start,
        costs=costs,
    )
    oracle = _Oracle(workload) if check else None
    warm_at = start + max(warmup_ms, 0)
    before, warm = MessageCounts(), warmup_ms <= 0
    objects = workload.objects
    updates = zip(
        workload.ts_ms.tolist(), workload.obj.tolist(), workload.values.tolist(), strict=True
    )
    for ts, i, v in updates:
        if not warm and ts >= warm_at:
            before, warm = dataclasses.replace(net.counts), True
        net.update(ts, objects[i], v)
        if oracle is not None:
            oracle.check(net, i, v)
    span = int(workload.ts_ms[-1]) - warm_at if len(workload) else 0
    return AdaptiveResult(
        _minus(net.counts, before),
        max(span, 0) / workload.time_unit_ms,
        oracle.checked if oracle else 0,
        oracle.violations if oracle else 0,
    )


def _minus(a: MessageCounts, b: MessageCounts) -> MessageCounts:
    return MessageCounts(*(getattr(a, f.name) - getattr(b, f.name) for f in dataclasses.fields(a)))


class _Oracle:
    """Exact current values, and the per-update answer check."""

    def __init__(self, workload: Workload) -> None:
        self.queries = list(workload.queries)
        self.values = np.full(len(workload.objects), np.nan)
        self.index = [np.array([workload.index[o] for o in q.objects]) for q in self.queries]
        self.checked = 0
        self.violations = 0

    def check(self, net: FilterNetwork, i: int, v: float) -> None:
        self.values[i] = v
        answers = net.answers()
        for q, idx in zip(self.queries, self.index, strict=True):
            vals = self.values[idx]
            if np.isnan(vals).any():
                continue  # not every object has a value yet
            exact = q.exact(dict(zip(q.objects, vals.tolist(), strict=True)))
            a = answers[q.name]
            tol = RTOL * (1.0 + float(np.abs(vals).max()))
            self.checked += 1
            if not (a.lo - tol <= exact <= a.hi + tol and a.width <= q.delta * (1 + RTOL)):
                self.violations += 1
