"""Beyond the paper's algorithm: its three "future work" items, measured (Olston et al. 2003).

- **Source aggregation** (§5.2.1, App. G): :func:`aggregated_workload` replays a workload over
  the derived objects of :func:`~tsmon.protocols.filters.aggregation.aggregate_sources`, and
  :func:`choose_aggregation` picks the (source, group) pairs to aggregate from observed step
  sizes with the random-walk cost model (App. E: ``F ≈ (2s)²/W²``; App. G: variances add for
  sums) at the widths of the optimal static allocation (App. F), solved in closed form through
  its dual (:func:`model_min_cost`).
- **Batching** (§3, "batching stream updates from the same source is future work"):
  :func:`~tsmon.sim.filters.runner.run_adaptive` counts envelopes, one per (source, send time,
  direction), next to messages; :func:`batching_costs` lowers ``C_i`` (§3.2) of objects whose
  updates ride with others.
- **Automatic T and S** (§5, "setting these parameters automatically is future work"):
  :func:`calibrate` runs pilots of a small grid on a recorded prefix and keeps the cheapest.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import scipy.sparse as sp
from scipy.optimize import minimize

from tsmon.protocols.filters.aggregation import Aggregation, aggregate_sources, all_pairs
from tsmon.protocols.filters.precision import initial_widths
from tsmon.protocols.filters.queries import Query
from tsmon.sim.filters.baselines import constraint_matrix
from tsmon.sim.filters.runner import AdaptiveResult, run_adaptive
from tsmon.sim.filters.workload import Workload, grid_workload

__all__ = [
    "AggregationChoice",
    "Calibration",
    "aggregated_workload",
    "appendix_g_workload",
    "batching_costs",
    "calibrate",
    "choose_aggregation",
    "model_min_cost",
]

#: Paper settings of §5: ``T = 10`` time units, ``S = 5 %``.
PAPER_PERIOD_UNITS, PAPER_SHRINK = 10, 0.05


# ----------------------------------------------------------------- source aggregation


def aggregated_workload(
    workload: Workload, aggregation: Aggregation, *, coalesce: bool = True
) -> Workload:
    """``workload`` over the derived objects of ``aggregation`` (§5.2.1).

    Each raw update produces, with the same timestamp, an update of every derived object that
    reads it (once all of that object's inputs have a value) and, if some rewritten query still
    reads the raw object, the raw update itself. With ``coalesce`` a derived object takes only
    the last of its updates at one instant: a source computes its aggregates once per reading,
    not once per raw object. Raw objects that no rewritten query reads are dropped. Known step
    sizes carry over, ``s_d² = Σ K_i² s_i²`` for derived objects (App. G: variances add).

    Examples
    --------
    >>> w = Workload(("a", "b"), {"a": "s", "b": "s"}, [0, 0, 1000, 1000], [0, 1, 0, 1],
    ...              [1.0, 2.0, 3.0, 2.5], queries=(Query.avg("q", ["a", "b"], 1.0),))
    >>> aw = aggregated_workload(w, aggregate_sources(w.queries, w.source_of, {("s", 0)}))
    >>> aw.objects, aw.ts_ms.tolist(), aw.values.tolist(), aw.queries[0].divisor
    (('agg:s:q',), [0, 1000], [3.0, 5.5], 2)
    """
    raw = workload.objects
    kept = [o for o in raw if o not in aggregation.replaced]
    derived = list(aggregation.derivations)
    objects = kept + derived
    keys: list[np.ndarray] = []  # (position, rank) of every new update, for the merge
    ixs: list[np.ndarray] = []
    vals: list[np.ndarray] = []
    for new_i, o in enumerate(kept):
        pos = workload.object_updates(workload.index[o])
        keys.append(np.stack([pos, np.full(len(pos), new_i)], axis=1))
        ixs.append(np.full(len(pos), new_i))
        vals.append(workload.values[pos])
    for new_i, d in enumerate(derived, start=len(kept)):
        inputs = [workload.index[o] for o in aggregation.derivations[d]]
        pos = np.unique(np.concatenate([workload.object_updates(i) for i in inputs]))
        value = np.zeros(len(pos))
        for i, k in zip(inputs, aggregation.derivations[d].values(), strict=True):
            own = workload.object_updates(i)
            if len(own) == 0:
                value += np.nan
                continue
            last = np.searchsorted(own, pos, side="right") - 1
            seen = workload.values[own[np.maximum(last, 0)]]
            value += k * np.where(last >= 0, seen, np.nan)
        keep = ~np.isnan(value)
        if coalesce:  # the last update of each instant
            ts = workload.ts_ms[pos]
            keep &= np.append(ts[1:] != ts[:-1], True)
        pos, value = pos[keep], value[keep]
        keys.append(np.stack([pos, np.full(len(pos), new_i)], axis=1))
        ixs.append(np.full(len(pos), new_i))
        vals.append(value)
    key = np.concatenate(keys) if keys else np.zeros((0, 2), dtype=np.int64)
    order = np.lexsort((key[:, 1], key[:, 0]))
    steps = None
    if workload.step_sizes is not None:
        s = workload.step_sizes
        steps = [s[workload.index[o]] for o in kept] + [
            math.sqrt(sum(k * k * s[workload.index[o]] ** 2 for o, k in part.items()))
            for part in aggregation.derivations.values()
        ]
    source_of = {o: workload.source_of[o] for o in kept} | dict(aggregation.source_of)
    return Workload(
        tuple(objects),
        source_of,
        workload.ts_ms[key[order, 0]],
        np.concatenate(ixs)[order].astype(np.int64) if ixs else np.zeros(0, np.int64),
        np.concatenate(vals)[order] if vals else np.zeros(0),
        aggregation.queries,
        steps,
        workload.time_unit_ms,
    )


def model_min_cost(k: np.ndarray, budgets: np.ndarray, a: np.ndarray) -> tuple[float, np.ndarray]:
    """Minimum of App. F's ``Σ a_i / W_i²`` subject to ``K @ W <= β``, through its dual.

    With ``a_i = C_i (2 s_i)²`` (App. E). The Lagrange condition (App. C) gives
    ``W_i = (2 a_i / c_i)^(1/3)`` with ``c = Kᵀλ``, and the dual
    ``g(λ) = κ Σ a_i^(1/3) c_i^(2/3) − λ·β`` (``κ = 3·2^(−2/3)``) is concave in ``λ >= 0`` with
    ``m`` variables (a handful here), so it is maximised with L-BFGS in ``log λ``. The widths
    returned are scaled into the feasible set, so the cost returned is attained (an upper bound
    of the optimum, equal to it at convergence; never above the uniform allocation's).
    Objects with ``a_i = 0`` get width 0 and cost nothing.

    Examples
    --------
    >>> cost, w = model_min_cost(np.array([[1.0, 1.0]]), np.array([2.0]), np.array([1.0, 64.0]))
    >>> round(cost, 6), w.round(6).tolist()    # W ∝ a^(1/3): (0.4, 1.6)
    (31.25, [0.4, 1.6])
    """
    k = np.asarray(k, dtype=float)
    live = a > 0
    if not live.any():
        return 0.0, np.zeros(len(a))
    kl, al = k[:, live], a[live]
    rows = np.abs(kl).sum(axis=1) > 0
    kl, beta = kl[rows], budgets[rows]
    kappa = 3 * 2 ** (-2 / 3)
    cube = np.cbrt(al)

    def widths(lam: np.ndarray) -> np.ndarray:
        c = np.maximum(kl.T @ lam, 1e-300)
        return np.cbrt(2 * al / c)

    def neg_dual(mu: np.ndarray) -> tuple[float, np.ndarray]:
        lam = np.exp(np.clip(mu, -700, 700))
        c = np.maximum(kl.T @ lam, 1e-300)
        g = kappa * float(cube @ c ** (2 / 3)) - float(lam @ beta)
        grad = kl @ np.cbrt(2 * al / c) - beta  # ∂g/∂λ = K W(λ) − β
        return -g, -grad * lam

    # start at the multipliers of the uniform allocation (App. C: c_i = 2 a_i / W_i³)
    uniform = initial_widths(sp.csr_matrix(kl), beta)
    c_u = 2 * al / uniform**3
    lam0 = np.array([np.median(c_u[row != 0] / np.abs(row[row != 0])) for row in kl])
    lam0 /= np.maximum(np.abs(kl).sum(axis=0), 1.0).mean()
    res = minimize(neg_dual, np.log(lam0), jac=True, method="L-BFGS-B", options={"maxiter": 5_000})
    candidates = [uniform]
    if np.all(np.isfinite(res.x)):
        candidates.append(widths(np.exp(np.clip(res.x, -700, 700))))
    best_cost, w = math.inf, uniform
    for cand in candidates:
        cand = cand / max(float(np.max((kl @ cand) / beta)), 1.0)  # into the feasible set
        cost = float(np.sum(al / cand**2))
        if np.all(cand > 0) and cost < best_cost:
            best_cost, w = cost, cand
    out = np.zeros(len(a))
    out[live] = w
    return float(np.sum(al / w**2)), out


def _model_cost(workload: Workload, steps: np.ndarray, costs: np.ndarray | None) -> float:
    k, budgets = constraint_matrix(workload.queries, workload.objects)
    c = np.ones(len(steps)) if costs is None else costs
    return model_min_cost(k.toarray(), budgets, c * (2 * np.nan_to_num(steps)) ** 2)[0]


@dataclass(frozen=True)
class AggregationChoice:
    """Result of :func:`choose_aggregation`: pairs to aggregate and the model costs.

    ``model`` maps ``"none"``, ``"all"`` and ``"chosen"`` to App. F model costs (streamed updates
    per time unit at the optimal static widths); ``steps`` lists the greedy decisions
    ``(source, group, aggregate?, model cost after)``.
    """

    chosen: frozenset[tuple[str, int]]
    model: Mapping[str, float]
    steps: tuple[tuple[str, int, bool, float], ...]


def choose_aggregation(
    workload: Workload,
    *,
    prefix_ms: int | None = None,
    variances: Literal["additive", "observed"] = "additive",
    passes: int = 2,
) -> AggregationChoice:
    """Choose (source, group) pairs to aggregate, per source greedily (§5.2.1, App. G).

    Step sizes ``s_i`` are ``workload.step_sizes`` if known, else estimated on the first
    ``prefix_ms`` of the stream (:meth:`Workload.estimate_step_sizes`). A configuration's cost
    is the App. F optimum ``min Σ (2 s_i)²/W_i²`` over its objects (:func:`model_min_cost`); a
    derived object's step is ``sqrt(Σ K_i² s_i²)`` (``"additive"``, App. G) or estimated on the
    aggregated prefix (``"observed"``, which sees correlations). Starting from no aggregation,
    each pass visits the (source, group) pairs, most variance first, and flips a pair when the
    model cost drops; it stops after ``passes`` passes or a pass without a flip.
    """
    prefix = workload
    if prefix_ms is not None and len(workload):
        prefix = workload.slice_time(None, int(workload.ts_ms[0]) + prefix_ms)
    if workload.step_sizes is not None:
        base = prefix.with_step_sizes(workload.step_sizes)
    else:
        base = prefix.with_step_sizes(np.nan_to_num(prefix.estimate_step_sizes()))

    def cost(chosen: Collection[tuple[str, int]]) -> float:
        agg = aggregate_sources(workload.queries, workload.source_of, chosen)
        if variances == "observed" and workload.step_sizes is None:
            aw = aggregated_workload(prefix, agg)
            steps = np.nan_to_num(aw.estimate_step_sizes())
        else:
            aw = aggregated_workload(base.slice_time(0, 0), agg)  # objects and steps only
            assert aw.step_sizes is not None
            steps = aw.step_sizes
        return _model_cost(aw, steps, None)

    assert base.step_sizes is not None
    var_of: dict[tuple[str, int], float] = {}
    for pair in all_pairs(workload.queries, workload.source_of):
        objs = [o for o in workload.objects if workload.source_of[o] == pair[0]]
        var_of[pair] = float(sum(base.step_sizes[workload.index[o]] ** 2 for o in objs))
    order = sorted(var_of, key=lambda p: (-var_of[p], p))
    current: set[tuple[str, int]] = set()
    best = cost(current)
    none_cost = best
    steps_taken: list[tuple[str, int, bool, float]] = []
    for _ in range(passes):
        flipped = False
        for pair in order:
            trial = current ^ {pair}
            c = cost(trial)
            if c < best * (1 - 1e-9):
                current, best, flipped = trial, c, True
            steps_taken.append((pair[0], pair[1], pair in current, best))
        if not flipped:
            break
    model = {"none": none_cost, "all": cost(set(order)), "chosen": best}
    return AggregationChoice(frozenset(current), model, tuple(steps_taken))


def appendix_g_workload(
    kinds: Sequence[Literal["private", "shared"]],
    *,
    delta: float = 4.0,
    disparity: float = 1.0,
    steps: int = 3_000,
    step: float = 1.0,
    small: float = 0.05,
    seed: int = 0,
) -> Workload:
    """Random walks at several sources, two SUM queries over them: App. G's setting, scaled up.

    Source ``p`` has ``v0`` read by both Q1 and Q2, ``v1`` read by Q1 and ``v2`` by Q2. For a
    ``"private"`` source all three move by ``±step``; for a ``"shared"`` source only ``v0``
    does, ``v1``, ``v2`` move by ``±small`` (nearly every update is to an object in both
    queries: the case against aggregation, §5.2.1). ``δ_1 = delta``, ``δ_2 = disparity·delta``
    (a large disparity is the case for aggregation).

    Examples
    --------
    >>> w = appendix_g_workload(["private", "shared"], steps=5)
    >>> len(w.objects), [len(q.weights) for q in w.queries], w.step_sizes.tolist()[3:]
    (6, [4, 4], [1.0, 0.05, 0.05])
    """
    rng = np.random.default_rng(seed)
    names, source_of, s = [], {}, []
    for p, kind in enumerate(kinds):
        for v in ("v0", "v1", "v2"):
            names.append(f"p{p}.{v}")
            source_of[f"p{p}.{v}"] = f"p{p}"
            s.append(step if kind == "private" or v == "v0" else small)
    sizes = np.array(s)
    moves = np.where(rng.random((steps, len(names))) < 0.5, -sizes, sizes)  # App. E walks
    grid = np.vstack([np.zeros(len(names)), np.cumsum(moves, axis=0)])
    q1 = Query.sum("Q1", [o for o in names if not o.endswith("v2")], delta)
    q2 = Query.sum("Q2", [o for o in names if not o.endswith("v1")], delta * disparity)
    return grid_workload(names, source_of, grid, queries=(q1, q2), step_sizes=sizes)


# ----------------------------------------------------------------- batching


def batching_costs(pilot: AdaptiveResult, *, floor: float = 0.1) -> dict[str, float]:
    """Marginal message costs ``C_i`` (§3.2) for a batched network, from a pilot run.

    ``C_i`` is the fraction of ``O_i``'s streamed updates that travelled alone (an update that
    joins an envelope its source sends anyway costs nothing), at least ``floor`` so that burden
    scores never vanish; objects the pilot never streamed keep ``C_i = 1``.

    Examples
    --------
    >>> from tsmon.protocols.filters.messages import MessageCounts
    >>> r = AdaptiveResult(MessageCounts(), 1.0, 0, 0, alone={"a": 1, "b": 0},
    ...                    streamed_of={"a": 2, "b": 5})
    >>> batching_costs(r)
    {'a': 0.5, 'b': 0.1}
    """
    return {o: max(floor, pilot.alone.get(o, 0) / n) for o, n in pilot.streamed_of.items() if n > 0}


# ----------------------------------------------------------------- automatic T and S


@dataclass(frozen=True)
class Calibration:
    """Result of :func:`calibrate`: the chosen ``T`` (ms) and ``S``, and every pilot's cost."""

    period_ms: int
    shrink: float
    pilots: Mapping[tuple[int, float], float]


def calibrate(
    workload: Workload,
    *,
    pilot_ms: int,
    periods: Sequence[float] = (5, 10, 20, 40),
    shrinks: Sequence[float] = (0.02, 0.05, 0.1, 0.2),
    seed: int = 0,
    warmup_fraction: float = 0.25,
) -> Calibration:
    """Pick ``T`` and ``S`` by pilot runs of a small grid on the first ``pilot_ms`` (§5).

    ``periods`` are in time units. Each pilot is the adaptive protocol on the prefix; its cost
    is messages per time unit after the first ``warmup_fraction`` of the prefix. Ties go to the
    paper's setting, then to the earlier grid point. The prefix must have been recorded (a
    trace, or one streamed unfiltered at the cost of one message per update); afterwards the
    protocol runs unchanged with the chosen constants.
    """
    if len(workload) == 0:
        raise ValueError("cannot calibrate on an empty workload; pass one with updates")
    start = int(workload.ts_ms[0])
    prefix = workload.slice_time(None, start + pilot_ms)
    unit = workload.time_unit_ms
    pilots: dict[tuple[int, float], float] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for t in periods:
            for s in shrinks:
                r = run_adaptive(
                    prefix,
                    period_ms=round(t * unit),
                    shrink=s,
                    seed=seed,
                    warmup_ms=int(pilot_ms * warmup_fraction),
                    check=False,
                )
                pilots[(round(t * unit), s)] = r.per_time_unit
    paper = (PAPER_PERIOD_UNITS * unit, PAPER_SHRINK)
    best = min(pilots, key=lambda key: (pilots[key], key != paper))
    return Calibration(best[0], best[1], pilots)
