"""Random-walk objects with random step sizes: the synthetic data of §3.3 (Figures 3 and 4).

Every object lives on its own source and moves by ``±s_i`` once per time unit (App. E), so the
streamed update period of a bound of width ``W_i`` is about ``W_i² / (2 s_i)²`` and the
optimized static allocation of App. F applies with the known ``s_i``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from tsmon.protocols.filters.queries import Query
from tsmon.sim.filters.workload import Workload, grid_workload, random_avg_queries

#: Default range of the step sizes ``s_i`` (uniform); the paper does not give one.
STEP_RANGE = (0.1, 2.0)


def random_walks(
    n: int,
    steps: int,
    *,
    seed: int = 0,
    step_range: tuple[float, float] = STEP_RANGE,
    gaussian: bool = False,
    start: float = 0.0,
    time_unit_ms: int = 1_000,
    queries: Iterable[Query] = (),
) -> Workload:
    """``n`` random walks over ``steps`` time units, one object per source (§3.3, App. E).

    Object ``w{i}`` on source ``s{i}`` starts at ``start`` (time 0) and at every time unit
    ``1..steps`` moves by ``±s_i`` with a fair coin, or by ``N(0, s_i²)`` with ``gaussian``.
    The ``s_i`` are uniform in ``step_range`` and recorded in ``step_sizes``. Step sizes and
    moves come from independent streams of ``seed``.

    Examples
    --------
    >>> w = random_walks(3, 100, seed=1)
    >>> len(w), w.objects, w.source_of["w2"]
    (303, ('w0', 'w1', 'w2'), 's2')
    >>> bool(np.allclose(w.estimate_step_sizes(), w.step_sizes))   # |ΔV| = s_i every step
    True
    """
    if n < 1 or steps < 0:
        raise ValueError(f"need n >= 1 objects and steps >= 0, got n={n}, steps={steps}")
    lo, hi = step_range
    if not (math.isfinite(lo) and math.isfinite(hi) and 0 <= lo <= hi):
        raise ValueError(f"step_range must be finite with 0 <= low <= high, got {step_range}")
    size_rng, move_rng = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))
    s = size_rng.uniform(lo, hi, n)
    if gaussian:
        moves = move_rng.standard_normal((steps, n)) * s
    else:
        moves = np.where(move_rng.random((steps, n)) < 0.5, -s, s)  # App. E: ±s_i, fair coin
    grid = np.empty((steps + 1, n))
    grid[0] = start
    grid[1:] = start + np.cumsum(moves, axis=0)
    names = [f"w{i}" for i in range(n)]
    return grid_workload(
        names,
        {o: f"s{i}" for i, o in enumerate(names)},
        grid,
        time_unit_ms=time_unit_ms,
        queries=queries,
        step_sizes=s,
    )


def fig3_workload(
    delta: float,
    *,
    n: int = 10,
    steps: int = 10_000,
    seed: int = 0,
    step_range: tuple[float, float] = STEP_RANGE,
    gaussian: bool = False,
) -> Workload:
    """Figure 3 (§3.3): one AVG query with precision ``delta`` over ``n`` = 10 random walks.

    Examples
    --------
    >>> w = fig3_workload(2.0, steps=10)
    >>> [(q.name, len(q.weights), q.delta) for q in w.queries]
    [('avg', 10, 2.0)]
    """
    w = random_walks(n, steps, seed=seed, step_range=step_range, gaussian=gaussian)
    return w.with_queries([Query.avg("avg", w.objects, delta)])


def fig4_workload(
    delta_max: float,
    *,
    n: int = 10,
    n_queries: int = 5,
    sizes: tuple[int, int] = (2, 5),
    steps: int = 10_000,
    seed: int = 0,
    query_seed: int | None = None,
    step_range: tuple[float, float] = STEP_RANGE,
    gaussian: bool = False,
) -> Workload:
    """Figure 4 (§3.3): five AVG queries over random subsets of 10 random walks.

    Query set sizes are uniform in 2..5 and ``δ_j`` uniform in ``(0, delta_max]``. The query
    sets and the fractions ``δ_j / delta_max`` depend only on ``query_seed`` (default
    ``seed``), so a sweep over ``delta_max`` keeps the data and the query sets.

    Examples
    --------
    >>> a, b = fig4_workload(1.0, steps=5), fig4_workload(3.0, steps=5)
    >>> [len(q.weights) for q in a.queries] == [len(q.weights) for q in b.queries]
    True
    >>> all(abs(qb.delta - 3 * qa.delta) < 1e-12 for qa, qb in zip(a.queries, b.queries))
    True
    """
    w = random_walks(n, steps, seed=seed, step_range=step_range, gaussian=gaussian)
    rng = np.random.default_rng([seed if query_seed is None else query_seed, 4])
    return w.with_queries(random_avg_queries(w.objects, n_queries, sizes, delta_max, rng))


def mixed_workload(seed: int, steps: int) -> Workload:
    """20 walks under overlapping AVG, weighted SUM (negative weights), MIN, MAX and a
    single-object AVG: every kind of query and constraint at once (App. A, B)."""
    w = random_walks(20, steps, seed=seed)
    o = w.objects
    return w.with_queries([
        Query.avg("avg_a", o[:8], 2.0),
        Query.avg("avg_b", o[4:14], 3.0),
        Query.sum("wsum", {o[1]: 2.0, o[5]: -1.5, o[9]: 0.5, o[15]: -3.0}, 6.0),
        Query.min("min", o[10:16], 2.5),
        Query.max("max", [o[0], o[12], o[18]], 1.5),
        Query.avg("single", [o[19]], 0.8),
        Query.sum("sum_all", {x: (-1.0) ** i for i, x in enumerate(o)}, 25.0),
    ])  # fmt: skip
