"""Width allocation of the precision manager (Olston, Jiang, Widom 2003, §3.2, Appendices B–D).

The constraints are rows of a sparse matrix ``K`` (``|K_i,j|``, constraint × object) with
budgets ``β_j`` so that every query holds when ``K @ W ≤ β``. Every adjustment period ``T`` the
widths shrink by ``S`` and leftover width is grown greedily in decreasing deviation.

Everything that depends on ``K`` alone (the m×m system of App. B, its factorization, ``K^T``,
each object's constraints) lives in a :class:`PrecisionPlan`, built once per query-set change;
the functions below are thin wrappers that fetch the plan of their ``K`` from a small memo
(:func:`plan_for`), so one adjustment costs a few matrix-vector products and one short loop.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np
import scipy.sparse as sp

#: Leftover width below this fraction of a constraint's budget counts as none (float residue).
LEFTOVER_RTOL = 1e-12
#: Largest number of constraints ``m`` solved through a dense SVD of the App. B system; above
#: it the plan uses GMRES. The SVD is built once per query set and grows as m³: measured
#: 6–30 ms at m = 200 and 0.2–0.7 s at m = 1,000 (one BLAS thread, 2-core benchmark machine).
DENSE_MAX_CONSTRAINTS = 1_000
#: How many plans :func:`plan_for` remembers (each holds two m×m float arrays when dense).
PLAN_MEMO_SIZE = 4


class PrecisionPlan:
    """The constraint matrix ``K`` with everything an adjustment derives from it (§3.2, App. B).

    Built once per query-set change, then used every period ``T``. The App. B system
    ``A·T = K⁻ @ B`` (``A = K⁻ @ Kᵀ``, ``K⁻`` the entrywise reciprocal of ``K``) depends only on
    ``K``, so the plan factorizes ``A`` once and each :meth:`targets` is two m×m products.

    Solver choice (``solver="auto"``), measured with ``benchmarks/filters/bench_precision.py``
    (200 objects, 200 AVG queries over 25 % of them, the paper's Figure 2 setting, 2 cores):
    ``A`` then has condition ~1e11, sparse GMRES from zero does not converge in 1,000
    iterations and the LSQR fallback brings one solve to 2–4 s (the code before the plan);
    GMRES warm-started from last period's targets is no faster. A dense ``lstsq`` per
    adjustment takes 3–12 ms. Applying a precomputed SVD takes 0.02–0.1 ms and keeps the
    relative residual at lstsq's level (~1e-14; an explicit pseudo-inverse gives ~1e-7). So
    ``"svd"`` is used up to :data:`DENSE_MAX_CONSTRAINTS` constraints; above, ``"gmres"`` (the
    paper's iterative solver, warm-startable, LSQR fallback) saves the m³ build. Under
    ``"svd"`` a singular system (two queries over the same objects, or more queries than
    objects) gets the minimum-norm least-squares solution, as ``numpy.linalg.lstsq`` does.

    Parameters
    ----------
    k
        ``|K_i,j|`` as a sparse (or dense) constraint × object matrix, positive where stored.
    solver
        ``"auto"``, ``"svd"`` or ``"gmres"``.

    Examples
    --------
    >>> plan = PrecisionPlan(sp.csr_matrix(np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]])))
    >>> plan.solver, plan.overlap
    ('svd', True)
    >>> burdens = np.array([3.0, 4.0, 1.0])
    >>> targets = plan.targets(burdens)
    >>> targets.round(6).tolist()
    [3.0, 1.0]
    >>> plan.deviations(burdens, targets).round(6).tolist()
    [0.0, 0.0, 0.0]
    """

    def __init__(self, k: sp.spmatrix | np.ndarray, solver: str = "auto") -> None:
        if solver not in ("auto", "svd", "gmres"):
            raise ValueError(f"solver must be 'auto', 'svd' or 'gmres', got {solver!r}")
        k = sp.csr_matrix(k, dtype=float, copy=True)
        self._given = (k.shape, k.indptr.copy(), k.indices.copy(), k.data.copy())
        k.sum_duplicates()
        k.eliminate_zeros()
        self.k = k
        self.kt = k.T.tocsr()  # object × constraint, for deviations
        inv = k.copy()
        inv.data = 1.0 / inv.data
        self.inv = inv
        self.system = (inv @ k.T).tocsr()  # App. B: entry (j, k) = Σ_{i∈S_j} |K_i,k| / |K_i,j|
        self.diag = self.system.diagonal()  # = |S_j|
        self.overlap = bool(self.system.nnz != np.count_nonzero(self.diag))
        m = k.shape[0]
        if solver == "auto":
            solver = "svd" if m <= DENSE_MAX_CONSTRAINTS else "gmres"
        self.solver = solver
        self._svd = self._factorize() if solver == "svd" and self.overlap else None
        kc = k.tocsc()
        # per object: its (constraint j, |K_i,j|) pairs, as plain lists for the greedy loop
        self._entries_of = [
            list(zip(kc.indices[lo:hi].tolist(), kc.data[lo:hi].tolist(), strict=True))
            for lo, hi in zip(kc.indptr[:-1], kc.indptr[1:], strict=True)
        ]
        self._objects_of = [k.indices[k.indptr[j] : k.indptr[j + 1]].tolist() for j in range(m)]
        self._unconstrained = np.diff(kc.indptr) == 0

    def matches(self, k: sp.csr_matrix) -> bool:
        """Whether CSR ``k`` stores exactly what this plan was built from (shape, pattern,
        entries)."""
        shape, indptr, indices, data = self._given
        return (
            k.shape == shape
            and len(k.data) == len(data)
            and np.array_equal(k.indptr, indptr)
            and np.array_equal(k.indices, indices)
            and np.array_equal(k.data, data)
        )

    def _factorize(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(Vᵣ, 1/sᵣ, Uᵣᵀ)`` of the SVD of ``A``, truncated at lstsq's default rcond."""
        u, s, vt = np.linalg.svd(self.system.toarray())
        r = int(np.count_nonzero(s > np.finfo(float).eps * max(self.system.shape) * s[0]))
        return np.ascontiguousarray(vt[:r].T), 1.0 / s[:r], np.ascontiguousarray(u[:, :r].T)

    def targets(self, burdens: np.ndarray, x0: np.ndarray | None = None) -> np.ndarray:
        """Burden targets ``T_j`` (§3.2.1, App. B); ``x0`` warm-starts the ``"gmres"`` solver.

        A warm start (last period's targets) only changes the solution of a singular system
        under ``"gmres"``: it converges to *a* solution near ``x0``, not the minimum-norm one.
        """
        rhs = self.inv @ burdens  # App. B: Σ_{i∈S_j} B_i / |K_i,j|
        if not self.overlap or not rhs.any():
            return rhs / self.diag  # §3.2.1: no overlap, T_j = average burden
        if self._svd is not None:
            v, inv_s, ut = self._svd
            return v @ ((ut @ rhs) * inv_s)  # App. B system, min-norm least squares: A⁺·rhs
        from scipy.sparse.linalg import gmres, lsqr  # ~0.2 s to import: only when needed

        scale = float(np.abs(rhs).max())
        targets, info = gmres(self.system, rhs, x0=x0, rtol=1e-10, atol=1e-12 * scale, maxiter=1000)
        if info != 0 or np.linalg.norm(self.system @ targets - rhs) > 1e-8 * scale:
            targets = lsqr(self.system, rhs, atol=1e-12, btol=1e-12, iter_lim=10_000)[0]
        return np.asarray(targets, dtype=float)

    def deviations(self, burdens: np.ndarray, targets: np.ndarray) -> np.ndarray:
        """Deviations ``D_i = max{B_i − Σ_j |K_i,j|·T_j, 0}`` (§3.2, App. B); 0 where
        ``B_i = 0``: a solve gives targets like −3e-22 for constraints whose objects have no
        burden, and an object that sent nothing is never overburdened."""
        return np.where(burdens > 0, np.maximum(burdens - self.kt @ targets, 0.0), 0.0)

    def grow(
        self,
        budgets: np.ndarray,
        widths: np.ndarray,
        devs: np.ndarray,
        candidates: np.ndarray,
        rng: np.random.Generator,
        caps: np.ndarray | None = None,
        needs: np.ndarray | None = None,
    ) -> dict[int, float]:
        """Greedy growth (§3.2), the same as :func:`grow_greedily` with this plan's ``K``.

        Objects with a constraint at zero leftover cannot grow, so once a constraint fills up
        all its objects are marked and later skipped in O(1); only objects that do grow pay
        for a pass over their constraints. The arithmetic is the same, element by element.
        With ``caps`` (beyond the paper, see :func:`growth_caps`) a first pass grows each
        object by at most its cap, and the paper's pass then hands out what is left. With
        ``needs`` an object grows only by at least ``needs[i]`` (less would not help it).
        """
        leftover = budgets - self.k @ widths  # §3.2.2: leftover width of every constraint
        tiny = LEFTOVER_RTOL * budgets
        full = leftover <= tiny
        leftover[full] = 0.0
        shuffled = rng.permutation(candidates)
        order = shuffled[np.argsort(-devs[shuffled], kind="stable")].tolist()  # decreasing D_i
        blocked = (self._unconstrained | (self.kt @ full.astype(float) > 0)).tolist()
        left, width_l = leftover.tolist(), widths.tolist()
        grown: dict[int, float] = {}
        need = [0.0] * len(width_l) if needs is None else needs.tolist()
        if caps is not None:
            self._pass(order, left, tiny.tolist(), blocked, width_l, grown, caps.tolist(), need)
        self._pass(order, left, tiny.tolist(), blocked, width_l, grown, None, need)
        return grown

    def _pass(
        self,
        order: list[int],
        left: list[float],
        tiny: list[float],
        blocked: list[bool],
        width: list[float],
        grown: dict[int, float],
        caps: list[float] | None,
        need: list[float],
    ) -> None:
        """One greedy pass over ``order``, updating ``left``, ``blocked``, ``width``, ``grown``."""
        entries_of, objects_of = self._entries_of, self._objects_of
        for i in order:
            if blocked[i]:
                continue
            entries = entries_of[i]
            delta_w = min([left[r] / a for r, a in entries])  # App. B: min_j leftover_j/|K_i,j|
            if caps is not None:
                delta_w = min(delta_w, caps[i])
            if delta_w <= 0.0 or delta_w < need[i]:
                continue
            width[i] += delta_w
            grown[i] = width[i]
            for r, a in entries:
                rest = left[r] - a * delta_w
                if rest <= tiny[r]:
                    rest = 0.0
                    for o in objects_of[r]:  # constraint r is full: none of its objects grows
                        blocked[o] = True
                left[r] = rest


_memo: OrderedDict[int, PrecisionPlan] = OrderedDict()
_memo_lock = threading.Lock()


def plan_for(k: sp.spmatrix) -> PrecisionPlan:
    """The :class:`PrecisionPlan` of ``k``, reused while ``k``'s entries are unchanged.

    Remembers the last :data:`PLAN_MEMO_SIZE` plans; a hit is checked entry by entry
    (:meth:`PrecisionPlan.matches`), so a matrix changed in place gets a new plan.

    Examples
    --------
    >>> k = sp.csr_matrix(np.array([[1.0, 1.0]]))
    >>> plan_for(k) is plan_for(k)
    True
    """
    if not (sp.issparse(k) and k.format == "csr"):
        k = sp.csr_matrix(k, dtype=float)
    with _memo_lock:
        for key, plan in _memo.items():
            if plan.matches(k):
                _memo.move_to_end(key)
                return plan
    plan = PrecisionPlan(k)
    with _memo_lock:
        _memo[id(plan)] = plan
        while len(_memo) > PLAN_MEMO_SIZE:
            _memo.popitem(last=False)
    return plan


def initial_widths(k: sp.csr_matrix, budgets: np.ndarray) -> np.ndarray:
    """Uniform allocation per constraint, the minimum where several apply (§3, App. B).

    Objects in no constraint get ``inf``.

    Examples
    --------
    >>> k = sp.csr_matrix(np.array([[1.0, 1.0, 0.0], [0.0, 2.0, 2.0]]))
    >>> initial_widths(k, np.array([2.0, 8.0])).tolist()
    [1.0, 1.0, 2.0]
    """
    share = budgets / np.asarray(k.sum(axis=1)).ravel()  # β_j shared: W = β_j / Σ_i |K_i,j|
    widths = np.full(k.shape[1], np.inf)
    coo = k.tocoo()
    np.minimum.at(widths, coo.col, share[coo.row])
    return widths


def burden_scores(
    counts: np.ndarray, widths: np.ndarray, costs: np.ndarray, period_ms: int
) -> np.ndarray:
    """Burden scores ``B_i = C_i/(P_i·W_i)`` with ``P_i = T/N_i`` (§3.2); 0 when ``N_i = 0``.

    A width shrunk to 0 gives ``inf``; :func:`finite_burdens` makes the scores solvable.

    Examples
    --------
    >>> burden_scores(np.array([4, 0]), np.array([2.0, 1.0]), np.ones(2), 10).tolist()
    [0.2, 0.0]
    """
    b = np.zeros(len(widths))
    sent = counts > 0
    periods = period_ms / counts[sent]  # §3.2: P_i = T / N_i
    with np.errstate(divide="ignore", over="ignore"):  # W_i = 0 (shrunk away): B_i = inf
        b[sent] = costs[sent] / (periods * widths[sent])  # §3.2: B_i = C_i / (P_i·W_i)
    return b


def finite_burdens(burdens: np.ndarray) -> np.ndarray:
    """Burden scores scaled to a largest finite score of 1, ``inf`` (``W_i = 0``) as 10^6.

    Targets, deviations and growth caps only compare burdens with each other (App. B is
    linear, the caps use ratios), so the scale changes no decision; it keeps the solve from
    overflowing when a width has shrunk to 0 or near it.

    Examples
    --------
    >>> finite_burdens(np.array([0.0, 4.0, np.inf, 2.0])).tolist()
    [0.0, 1.0, 1000000.0, 0.5]
    """
    finite = np.isfinite(burdens)
    top = float(burdens[finite].max()) if finite.any() else 0.0
    scaled = burdens[finite] / top if top > 0 else burdens[finite]
    out = np.full(len(burdens), 1e6)
    out[finite] = scaled
    return out


def burden_targets(k: sp.csr_matrix, burdens: np.ndarray) -> np.ndarray:
    """Burden targets ``T_j`` of every constraint (§3.2.1, weighted form of Appendix B).

    Solves ``|S_j|·T_j + Σ_{k≠j} (Σ_{i∈S_j} |K_i,k|/|K_i,j|)·T_k = Σ_{i∈S_j} B_i/|K_i,j|``,
    the m×m system of App. B, through the plan of ``k`` (:func:`plan_for`): a precomputed SVD
    up to :data:`DENSE_MAX_CONSTRAINTS` constraints, GMRES then LSQR above. A singular system
    (e.g. two queries over the same objects) gets the minimum-norm least-squares solution. A
    constraint overlapping no other gets the average of ``B_i/|K_i,j|``.

    Examples
    --------
    >>> k = sp.csr_matrix(np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]]))
    >>> burden_targets(k, np.array([3.0, 4.0, 1.0])).round(6).tolist()
    [3.0, 1.0]
    """
    return plan_for(k).targets(burdens)


def deviations(k: sp.csr_matrix, burdens: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Deviations ``D_i = max{B_i − Σ_j |K_i,j|·T_j, 0}`` (§3.2, App. B).

    Examples
    --------
    >>> k = sp.csr_matrix(np.array([[1.0, 1.0]]))
    >>> deviations(k, np.array([3.0, 1.0]), np.array([2.0])).tolist()
    [1.0, 0.0]
    """
    return plan_for(k).deviations(burdens, targets)


def growth_caps(
    burdens: np.ndarray, devs: np.ndarray, widths: np.ndarray, exponent: float = 2.0
) -> np.ndarray:
    """Growth that would bring each object's burden score down to its target (beyond §3.2).

    Under Appendix C's model ``P_i = Z_i·W_i^p`` the burden ``B = C/(P·W)`` falls as
    ``W^-(p+1)``, so an object with deviation ``D_i > 0`` (target ``B_i − D_i``) reaches its
    target at ``W_i·(B_i/(B_i − D_i))^(1/(p+1))``; ``p = 2`` for random walks (App. E). The
    paper hands an object *all* the leftover it can take, so with one query over many objects
    a single object grows per period while every other shrinks; capping the first pass
    spreads the growth over every overburdened object. Objects not overburdened get 0; a
    target ``≤ 0`` puts no cap.

    Examples
    --------
    >>> growth_caps(np.array([8.0, 1.0, 3.0]), np.array([7.0, 0.0, 3.0]), np.ones(3)).tolist()
    [1.0, 0.0, inf]
    """
    aim = burdens - devs
    with np.errstate(divide="ignore", invalid="ignore"):
        reach = widths * ((burdens / aim) ** (1.0 / (exponent + 1.0)) - 1.0)
    return np.where(devs > 0, np.where(aim > 0, reach, np.inf), 0.0)


def grow_greedily(
    k: sp.csr_matrix,
    budgets: np.ndarray,
    widths: np.ndarray,
    devs: np.ndarray,
    candidates: np.ndarray,
    rng: np.random.Generator,
    caps: np.ndarray | None = None,
    needs: np.ndarray | None = None,
) -> dict[int, float]:
    """Grow ``candidates`` in decreasing deviation, random tie-break (§3.2).

    Each object takes ``ΔW_i = min_j leftover_j/|K_i,j|`` over its constraints (App. B), the
    largest growth that violates none. Returns ``{object index: new absolute width}``. Beyond
    the paper, ``caps`` bound a first pass (:func:`growth_caps`) and an object grows only by
    at least ``needs[i]``, the growth that would have kept its nearest escape this period.

    Examples
    --------
    >>> k = sp.csr_matrix(np.array([[1.0, 1.0]]))
    >>> rng = np.random.default_rng(0)
    >>> grow_greedily(k, np.array([4.0]), np.array([1.0, 1.0]), np.array([0.5, 0.0]),
    ...               np.array([0, 1]), rng)
    {0: 3.0}
    """
    return plan_for(k).grow(budgets, widths, devs, candidates, rng, caps, needs)
