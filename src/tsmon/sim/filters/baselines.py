"""Static baselines the adaptive filters are compared with (§1.2.1, §3.3, §5, App. C, E, F).

- *Not filtering* (§5.2): every update is streamed.
- *Uniform static allocation* (§1.2.1, §5): every query's budget shared uniformly among its
  objects, the narrowest width where queries overlap.
- *Optimized static allocation* (§3.3, App. F): with known random-walk step sizes ``s_i``,
  minimize ``Σ C_i (2 s_i)² / W_i²`` subject to every query's width constraint.

:mod:`~tsmon.sim.filters.static` replays a workload through fixed-width filters.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.optimize import minimize, nnls

from tsmon.protocols.filters.precision import initial_widths
from tsmon.protocols.filters.queries import Query
from tsmon.sim.filters.workload import Workload

#: Solver overshoot of a width budget tolerated (relative) before widths are scaled down.
FEASIBILITY_RTOL = 1e-9
#: Relative KKT residual under which the optimized static allocation counts as converged.
KKT_RTOL = 1e-4


class OptimizationWarning(RuntimeWarning):
    """The optimized static allocation did not converge; the widths are feasible but may not
    be optimal."""


def constraint_matrix(
    queries: Iterable[Query], objects: Sequence[str]
) -> tuple[sp.csr_matrix, np.ndarray]:
    """Sparse ``|K_i,j|`` (constraint × object) and budgets ``β_j`` from ``Query.constraints()``.

    The queries hold when ``K @ W <= β`` (App. B, D); MIN/MAX give one row per object (App. A).

    Examples
    --------
    >>> k, b = constraint_matrix([Query.avg("q", ["a", "c"], 2.0)], ["a", "b", "c"])
    >>> k.toarray().tolist(), b.tolist()
    ([[1.0, 0.0, 1.0]], [4.0])
    """
    index = {o: i for i, o in enumerate(objects)}
    rows: list[int] = []
    cols: list[int] = []
    data: list[float] = []
    budgets: list[float] = []
    for q in queries:
        for absk, budget in q.constraints():
            for obj, k in absk.items():
                if obj not in index:
                    raise ValueError(f"query {q.name!r} reads unknown object {obj!r}")
                rows.append(len(budgets))
                cols.append(index[obj])
                data.append(k)
            budgets.append(budget)
    k = sp.csr_matrix((data, (rows, cols)), shape=(len(budgets), len(index)), dtype=float)
    return k, np.array(budgets, dtype=float)


def _costs(workload: Workload, costs: Mapping[str, float] | np.ndarray | None) -> np.ndarray:
    n = len(workload.objects)
    if costs is None:
        return np.ones(n)
    if isinstance(costs, Mapping):
        out = np.ones(n)
        for obj, c in costs.items():
            if obj not in workload.index:
                raise ValueError(f"cost given for unknown object {obj!r}")
            out[workload.index[obj]] = c
    else:
        out = np.array(costs, dtype=float)
    if out.shape != (n,) or not np.all(np.isfinite(out) & (out > 0)):
        raise ValueError(f"costs C_i must be finite and > 0, one per object ({n}); got {out!r}")
    return out


def no_filtering_cost(workload: Workload, *, changes_only: bool = False) -> int:
    """Messages without filtering (§5.2): every update is streamed.

    The paper's "not filtering" sends every update, so by default every update counts, also
    one repeating its object's value. With ``changes_only`` an update counts only if it
    changes its object's value (an object's first update always counts) — the cost of a
    ``W = 0`` filter.

    Examples
    --------
    >>> w = Workload(("a",), {"a": "s"}, [0, 1, 2], [0, 0, 0], [1.0, 1.0, 2.0])
    >>> no_filtering_cost(w), no_filtering_cost(w, changes_only=True)
    (3, 2)
    """
    if not changes_only:
        return len(workload)
    return int(_changes(workload).sum())


def _changes(workload: Workload) -> np.ndarray:
    """Per update: whether it is its object's first or changes its value."""
    order = np.argsort(workload.obj, kind="stable")
    o, v = workload.obj[order], workload.values[order]
    first = np.ones(len(o), dtype=bool)
    first[1:] = o[1:] != o[:-1]
    changed = np.ones(len(o), dtype=bool)
    changed[1:] = v[1:] != v[:-1]
    out = np.empty(len(o), dtype=bool)
    out[order] = first | changed
    return out


def uniform_static_widths(workload: Workload) -> np.ndarray:
    """Uniform allocation per query, the narrowest width on shared objects (§1.2.1, §5.2).

    Reuses :func:`tsmon.protocols.filters.precision.initial_widths`; objects in no query get
    ``inf``.

    Examples
    --------
    >>> w = Workload(("a", "b", "c"), dict.fromkeys("abc", "s"), [], [], [],
    ...              queries=(Query.avg("q1", ["a", "b"], 1.0), Query.sum("q2", ["b"], 0.5)))
    >>> uniform_static_widths(w).tolist()
    [1.0, 0.5, inf]
    """
    k, budgets = constraint_matrix(workload.queries, workload.objects)
    return initial_widths(k, budgets)


def model_cost(
    widths: np.ndarray, step_sizes: np.ndarray, costs: np.ndarray | None = None
) -> float:
    """Random-walk model cost ``Σ C_i (2 s_i)² / W_i²`` per time unit (App. C, E, F).

    Infinite widths and zero steps cost nothing; a zero width with ``s_i > 0`` costs ``inf``.

    Examples
    --------
    >>> model_cost(np.array([2.0, np.inf, 1.0]), np.array([1.0, 5.0, 0.0]))
    1.0
    """
    w = np.asarray(widths, dtype=float)
    s = np.asarray(step_sizes, dtype=float)
    c = np.ones(len(w)) if costs is None else np.asarray(costs, dtype=float)
    a = c * (2 * s) ** 2  # App. E: 1/P_i(W_i) ≈ (2 s_i)² / W_i²
    live = (a > 0) & ~np.isinf(w)
    if np.any(w[live] == 0):
        return math.inf
    return float(np.sum(a[live] / w[live] ** 2))  # App. F objective


@dataclass(frozen=True, eq=False)
class OptimizedWidths:
    """Result of :func:`optimized_static_widths`.

    ``widths`` are feasible (``K @ W <= β``, after scaling down by ``scale`` if the solver
    overshot by round-off). ``model_cost`` is the App. F objective at ``widths``.
    ``converged`` means the KKT conditions hold to :data:`KKT_RTOL` (:func:`kkt_residual`),
    whatever the solver's own status, quoted in ``message``.
    """

    widths: np.ndarray
    model_cost: float
    converged: bool
    iterations: int
    message: str
    scale: float
    kkt_residual: float


def optimized_static_widths(
    workload: Workload,
    costs: Mapping[str, float] | np.ndarray | None = None,
    *,
    maxiter: int = 1_000,
    ftol: float = 1e-12,
) -> OptimizedWidths:
    """Optimized static allocation of App. F, solved with SLSQP in log-widths.

    Minimizes ``Σ C_i (2 s_i)² / W_i²`` subject to ``Σ_i |K_i,j| W_i <= β_j`` for every query
    constraint (App. B weights), using ``workload.step_sizes``. In ``x = log W`` the problem
    is convex, so the KKT point SLSQP finds (from the uniform allocation) is the optimum.
    Objects in no query get ``inf``; objects with ``C_i s_i² = 0`` get what the others leave
    of their budgets (uniformly, :func:`initial_widths`). Warns with
    :class:`OptimizationWarning` if the solver did not converge.

    For a single AVG query, the Lagrange condition (App. C) gives ``W_i ∝ (C_i s_i²)^(1/3)``.

    Examples
    --------
    >>> w = Workload(("a", "b"), {"a": "s", "b": "t"}, [], [], [],
    ...              queries=(Query.avg("q", ["a", "b"], 1.0),), step_sizes=[1.0, 8.0])
    >>> r = optimized_static_widths(w)
    >>> r.widths.round(6).tolist(), r.converged   # ∝ (1, 64)^(1/3) = (1, 4), Σ W = 2
    ([0.4, 1.6], True)
    """
    if workload.step_sizes is None:
        raise ValueError(
            "optimized static allocation needs the random-walk step sizes s_i (App. F); "
            "use a workload with step_sizes, or workload.with_step_sizes(...estimate...)"
        )
    c = _costs(workload, costs)
    k, budgets = constraint_matrix(workload.queries, workload.objects)
    n = len(workload.objects)
    widths = np.full(n, np.inf)
    queried = np.asarray(abs(k).sum(axis=0)).ravel() > 0
    a = c * (2 * workload.step_sizes) ** 2  # App. F: C_i·(2 s_i)²
    var = np.flatnonzero(queried & (a > 0))
    converged, iterations, message, scale, kkt = True, 0, "nothing to optimize", 1.0, 0.0
    if len(var):
        kv = k[:, var].toarray() / budgets[:, None]  # rows scaled: Σ_i K_ji W_i / β_j <= 1
        kv = kv[np.abs(kv).sum(axis=1) > 0]
        x0 = np.log(initial_widths(k, budgets)[var])
        wv, iterations, message = _solve_log_widths(a[var], kv, x0, maxiter, ftol)
        usage = float((kv @ wv).max())
        if usage > 1.0:
            scale = 1.0 / usage  # round-off overshoot: scale down into the feasible set
            wv = wv * scale
            if usage > 1.0 + 1e-6:
                message += f"; budgets overshot by {usage - 1:.2e} (relative), scaled down"
        kkt = kkt_residual(a[var], kv, wv)
        converged = kkt <= KKT_RTOL and usage <= 1.0 + 1e-6
        message += f"; KKT residual {kkt:.1e}"
        widths[var] = wv
    rest = np.flatnonzero(queried & ~(a > 0))
    if len(rest):  # free objects share what is left of their constraints' budgets
        leftover = np.maximum(budgets - k @ np.where(np.isinf(widths), 0.0, widths), 0.0)
        sub = k[:, rest].tocsr()
        rows = np.flatnonzero(np.diff(sub.indptr) > 0)
        widths[rest] = initial_widths(sub[rows], leftover[rows])
    _check_feasible(k, budgets, widths)
    if not converged:
        warnings.warn(
            f"optimized static allocation did not converge after {iterations} iterations: "
            f"{message}; the widths are feasible but may not be optimal",
            OptimizationWarning,
            stacklevel=2,
        )
    cost = model_cost(widths, workload.step_sizes, c)
    return OptimizedWidths(widths, cost, converged, iterations, message, scale, kkt)


def _solve_log_widths(
    a: np.ndarray, kv: np.ndarray, x0: np.ndarray, maxiter: int, ftol: float
) -> tuple[np.ndarray, int, str]:
    """SLSQP on ``min Σ a_i e^(−2 x_i)`` s.t. ``kv @ e^x <= 1``, restarted while it stalls."""
    f0 = float(np.sum(a * np.exp(-2 * x0)))

    def objective(x: np.ndarray) -> tuple[float, np.ndarray]:
        terms = a * np.exp(-2 * x) / f0  # App. F objective in x = log W, 1 at the start
        return float(terms.sum()), -2 * terms

    constraint = {
        "type": "ineq",
        "fun": lambda x: 1.0 - kv @ np.exp(x),
        "jac": lambda x: -kv * np.exp(x),
    }
    x, used, message = x0, 0, ""
    for _ in range(3):  # SLSQP may stop on a line search near the optimum: restart from there
        result = minimize(
            objective,
            x,
            jac=True,
            method="SLSQP",
            constraints=[constraint],
            options={"maxiter": max(1, maxiter - used), "ftol": ftol},
        )
        used += int(result.nit)
        message = str(result.message)
        if np.all(np.isfinite(result.x)) and objective(result.x)[0] <= objective(x)[0]:
            x = result.x
        if result.success or used >= maxiter:
            break
    return np.exp(x), used, message


def kkt_residual(a: np.ndarray, kv: np.ndarray, widths: np.ndarray) -> float:
    """Relative KKT residual of App. F's problem at ``widths`` (all ``> 0``, ``a_i > 0``).

    With the tight constraints (``kv @ W >= 1 − 1e-6``), finds multipliers ``λ >= 0``
    minimizing ``‖2 a_i/W_i² − Σ_j λ_j kv_ji W_i‖`` (stationarity in ``log W``) and returns
    that norm over ``‖2 a_i/W_i²‖``: 0 at the optimum of the convex problem.

    Examples
    --------
    >>> a, kv = np.array([1.0, 8.0]), np.array([[0.5, 0.5]])   # W_a + W_b <= 2
    >>> round(kkt_residual(a, kv, np.array([2 / 3, 4 / 3])), 12)   # W ∝ a^(1/3)
    0.0
    >>> kkt_residual(a, kv, np.array([1.0, 1.0])) > 0.1
    True
    """
    grad = 2 * a / widths**2
    tight = kv @ widths >= 1 - 1e-6
    if not tight.any():
        return 1.0
    _, residual = nnls((kv[tight] * widths).T, grad)
    return float(residual / np.linalg.norm(grad))


def _check_feasible(k: sp.csr_matrix, budgets: np.ndarray, widths: np.ndarray) -> None:
    finite = np.where(np.isinf(widths), 0.0, widths)
    if np.any(np.isinf(widths) & (np.asarray(abs(k).sum(axis=0)).ravel() > 0)):
        raise AssertionError("an object in a query got an infinite width")
    over = k @ finite - budgets * (1 + FEASIBILITY_RTOL)
    if np.any(over > 0):
        j = int(np.argmax(over))
        raise AssertionError(f"constraint {j} exceeded: {k[j] @ finite} > {budgets[j]}")
