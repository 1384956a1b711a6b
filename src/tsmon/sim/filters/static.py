"""A workload replayed through fixed-width bound filters, counting the streamed updates: how
the static baselines (:mod:`~tsmon.sim.filters.baselines`) are scored (§5)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from tsmon.sim.filters.baselines import constraint_matrix
from tsmon.sim.filters.workload import Workload

__all__ = ["StaticResult", "filter_scan", "run_static"]


@dataclass(frozen=True, eq=False)
class StaticResult:
    """Replay of a workload through fixed-width filters (:func:`run_static`).

    Attributes
    ----------
    streamed
        Updates sent to the coordinator.
    per_object
        Updates sent, per object.
    sent
        Per update: whether it was sent.
    max_violation
        Largest ``max(L_i − V_i, V_i − H_i)`` over all updates after an object's first send:
        how far an exact value lay outside its cached bound ``[L_i, H_i]``. ``<= 0`` means
        every cached bound held its value, so every AVG/SUM/MIN/MAX answer held the exact
        aggregate (App. A, D); ``-inf`` if nothing was sent.
    width_excess
        Per query, ``max_j (K @ W)_j / β_j − 1`` over its constraints: ``> 0`` means the
        widths break its precision constraint δ.
    time_units
        Length of the workload in time units, for costs per time unit.
    """

    streamed: int
    per_object: np.ndarray
    sent: np.ndarray
    max_violation: float
    width_excess: Mapping[str, float]
    time_units: float

    @property
    def per_time_unit(self) -> float:
        """Streamed updates per time unit (the y-axis of Figures 3, 4, 7, 8)."""
        return self.streamed / self.time_units if self.time_units else math.nan


def filter_scan(values: np.ndarray, width: float) -> np.ndarray:
    """Which of one object's successive values a bound filter of fixed ``width`` sends (§1.2).

    The first value is sent (unless ``width`` is ``inf``: the object is in no query); later a
    value is sent when it leaves ``[c − W/2, c + W/2]`` around the last value sent ``c``, which
    then becomes the centre. The same float comparisons as
    :class:`tsmon.protocols.filters.SourceFilter`. Looks ahead with numpy in growing chunks,
    so the Python work is per sent value, not per update.

    Examples
    --------
    >>> filter_scan(np.array([10.0, 10.9, 11.0, 11.2, 9.0]), 2.0).tolist()
    [True, False, False, True, True]
    """
    v = np.asarray(values, dtype=float)
    n = len(v)
    sent = np.zeros(n, dtype=bool)
    if n == 0 or math.isinf(width):
        return sent
    if width == 0:
        sent[0] = True
        sent[1:] = v[1:] != v[:-1]  # W = 0: the centre is always the last value
        return sent
    half = width / 2
    p, chunk = 0, 64
    sent[0] = True
    centre = float(v[0])
    while True:
        lo, hi = centre - half, centre + half  # §1.2: L = V − W/2, H = V + W/2
        q = -1
        start = p + 1
        while start < n:
            stop = min(n, start + chunk)
            seg = v[start:stop]
            out = (seg < lo) | (seg > hi)
            if out.any():
                q = start + int(np.argmax(out))
                break
            start = stop
            chunk = min(chunk * 2, 1 << 16)
        if q < 0:
            return sent
        chunk = max(16, min(chunk, 4 * (q - p)))
        sent[q] = True
        centre = float(v[q])  # §1.2: recentre on the value sent
        p = q


def run_static(workload: Workload, widths: np.ndarray | Mapping[str, float]) -> StaticResult:
    """Replay ``workload`` through bound filters of fixed ``widths`` (no shrink, no growth).

    Examples
    --------
    >>> from tsmon.protocols.filters.queries import Query
    >>> from tsmon.sim.filters.baselines import uniform_static_widths
    >>> w = Workload(("a", "b"), {"a": "s", "b": "t"}, [0, 0, 1, 1, 2, 2], [0, 1, 0, 1, 0, 1],
    ...              [0.0, 5.0, 0.4, 5.0, 1.2, 9.0], queries=(Query.avg("q", ["a", "b"], 1.0),))
    >>> r = run_static(w, uniform_static_widths(w))
    >>> r.streamed, r.per_object.tolist(), r.max_violation <= 0, dict(r.width_excess)
    (4, [2, 2], True, {'q': 0.0})
    """
    n = len(workload.objects)
    if isinstance(widths, Mapping):
        missing = [o for o in workload.objects if o not in widths]
        if missing:
            raise ValueError(f"widths missing for objects {missing[:10]!r}")
        w = np.array([widths[o] for o in workload.objects], dtype=float)
    else:
        w = np.array(widths, dtype=float)
    if w.shape != (n,) or np.any(np.isnan(w) | (w < 0)):
        raise ValueError(f"need one width W_i >= 0 per object ({n}), got {w!r}")
    sent = np.zeros(len(workload), dtype=bool)
    violation = -math.inf
    for i in range(n):
        pos = workload.object_updates(i)
        if len(pos) == 0:
            continue
        v = workload.values[pos]
        mask = filter_scan(v, float(w[i]))
        sent[pos] = mask
        if mask.any() and not math.isinf(w[i]):
            first = int(np.argmax(mask))
            centres = v[mask][np.cumsum(mask)[first:] - 1]  # the last value sent so far
            lo, hi = centres - w[i] / 2, centres + w[i] / 2  # §1.2, as the filter computes them
            outside = np.maximum(lo - v[first:], v[first:] - hi)
            violation = max(violation, float(outside.max()))
    k, budgets = constraint_matrix(workload.queries, workload.objects)
    usage = np.asarray(k @ np.where(np.isinf(w), 0.0, w)).ravel() / budgets
    usage[np.asarray(k @ np.isinf(w).astype(float)).ravel() > 0] = np.inf
    excess: dict[str, float] = {}
    row = 0
    for q in workload.queries:
        rows = len(q.constraints())
        excess[q.name] = float(np.max(usage[row : row + rows]) - 1.0)
        row += rows
    per_object = np.bincount(workload.obj[sent], minlength=n)
    return StaticResult(int(sent.sum()), per_object, sent, violation, excess, workload.time_units)
