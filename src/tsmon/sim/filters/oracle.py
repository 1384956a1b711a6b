"""The exact oracle of the adaptive-filter experiments, vectorized over a whole replay.

A replay records bounded answers ``(lo, hi)`` (one row per *record*, one column per query) and,
for every *sample* it wants checked, which record applies and which exact state the answer must
contain: the objects' values just after update ``state[s]`` of the workload. The exact
aggregates of every state are computed afterwards in chunks (forward-filled value matrices),
with the same formulas as :meth:`Query.exact`, so the check stays exact while the replay loop
only pays for recording answers when they can change.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tsmon.protocols.filters.queries import Aggregate, Query
from tsmon.sim.filters.workload import Workload

#: Relative slack of the oracle for float rounding of the answers.
RTOL = 1e-9
#: Updates per chunk of the forward-filled value matrix (chunk × objects floats).
CHUNK = 4_096


@dataclass(frozen=True)
class CheckResult:
    """Outcome of :func:`check_answers`.

    ``checked`` counts (sample, query) pairs whose query had a value for every object;
    ``missed`` those whose answer did not contain the exact value, ``too_wide`` those wider
    than ``δ``; ``violations`` those with either fault. ``samples_checked`` counts samples with
    at least one pair checked.
    """

    checked: int
    violations: int
    missed: int
    too_wide: int
    samples_checked: int
    first_violation: int | None  # index of the first failing sample

    @property
    def fidelity(self) -> float:
        """Fraction of checked pairs whose answer held the exact value within ``δ``."""
        return 1.0 - self.violations / self.checked if self.checked else float("nan")


def exact_aggregates(
    workload: Workload, queries: Sequence[Query] | None = None, chunk: int = CHUNK
) -> tuple[np.ndarray, np.ndarray]:
    """Exact aggregate of every query just after every update, and its rounding scale.

    Returns ``(exact, scale)`` of shape ``(updates, queries)``: ``exact`` is NaN while some
    object of the query has no value yet; ``scale`` is ``1 + max |V_i|`` over the query's
    objects, the unit of the oracle's relative tolerance.

    Examples
    --------
    >>> w = Workload(("a", "b"), {"a": "s", "b": "s"}, [0, 1, 2], [0, 1, 0], [1.0, 2.0, -3.0],
    ...              queries=(Query.sum("s", {"a": 2.0, "b": -1.0}, 1.0),
    ...                       Query.min("m", ["a", "b"], 1.0)))
    >>> exact, scale = exact_aggregates(w)
    >>> exact.tolist()
    [[nan, nan], [0.0, 1.0], [-8.0, -3.0]]
    """
    queries = list(workload.queries if queries is None else queries)
    n_upd, n_obj = len(workload), len(workload.objects)
    exact = np.full((n_upd, len(queries)), np.nan)
    scale = np.ones((n_upd, len(queries)))
    index = [np.array([workload.index[o] for o in q.objects]) for q in queries]
    weights = [np.fromiter(q.weights.values(), dtype=float) for q in queries]
    state = np.full(n_obj, np.nan)
    for a in range(0, n_upd, chunk):
        b = min(n_upd, a + chunk)
        rows = np.arange(b - a)
        last = np.full((b - a, n_obj), -1, dtype=np.int64)
        last[rows, workload.obj[a:b]] = rows
        np.maximum.accumulate(last, axis=0, out=last)
        vals = np.where(last >= 0, workload.values[a:b][np.maximum(last, 0)], state)
        state = vals[-1].copy()
        for j, (q, idx, k) in enumerate(zip(queries, index, weights, strict=True)):
            v = vals[:, idx]
            if q.aggregate is Aggregate.MIN:
                e = v.min(axis=1)
            elif q.aggregate is Aggregate.MAX:
                e = v.max(axis=1)
            else:
                e = (v @ k) / q.divisor  # Query.exact: float(k @ v) / divisor
            exact[a:b, j] = e  # NaN propagates while an object has no value
            scale[a:b, j] = 1.0 + np.abs(v).max(axis=1)
    return exact, scale


def check_answers(
    workload: Workload,
    lo: np.ndarray,
    hi: np.ndarray,
    record_of: np.ndarray,
    state_of: np.ndarray,
    exact: tuple[np.ndarray, np.ndarray] | None = None,
) -> CheckResult:
    """Check recorded answers against the exact values.

    Parameters
    ----------
    workload
        The replayed workload; its queries, in order, are the columns of ``lo`` and ``hi``.
    lo, hi
        Recorded answers, shape ``(records, queries)``.
    record_of
        Per sample, the row of ``lo``/``hi`` in force.
    state_of
        Per sample, the update after which the exact values are taken; ``-1`` means before any
        update (nothing to check).
    exact
        Precomputed :func:`exact_aggregates` of ``workload`` (computed if ``None``).

    Examples
    --------
    >>> w = Workload(("a",), {"a": "s"}, [0, 1], [0, 0], [1.0, 2.0],
    ...              queries=(Query.avg("q", ["a"], 1.0),))
    >>> lo, hi = np.array([[0.5], [0.5]]), np.array([[1.5], [1.5]])
    >>> r = check_answers(w, lo, hi, np.array([0, 1]), np.array([0, 1]))
    >>> r.checked, r.violations, r.first_violation          # 2.0 is outside [0.5, 1.5]
    (2, 1, 1)
    """
    queries = list(workload.queries)
    values, scale = exact if exact is not None else exact_aggregates(workload)
    record_of = np.asarray(record_of, dtype=np.int64)
    state_of = np.asarray(state_of, dtype=np.int64)
    have = state_of >= 0
    e = np.full((len(state_of), len(queries)), np.nan)
    tol = np.ones_like(e)
    e[have], tol[have] = values[state_of[have]], scale[state_of[have]] * RTOL
    a_lo, a_hi = lo[record_of], hi[record_of]
    delta = np.array([q.delta for q in queries])
    ready = ~np.isnan(e)
    missed = ready & ~((a_lo - tol <= e) & (e <= a_hi + tol))
    too_wide = ready & ~(a_hi - a_lo <= delta * (1 + RTOL))
    bad = missed | too_wide
    failing = np.flatnonzero(bad.any(axis=1))
    return CheckResult(
        int(ready.sum()),
        int(bad.sum()),
        int(missed.sum()),
        int(too_wide.sum()),
        int(ready.any(axis=1).sum()),
        int(failing[0]) if len(failing) else None,
    )
