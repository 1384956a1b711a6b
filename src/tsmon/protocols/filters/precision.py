"""Width allocation of the precision manager (Olston, Jiang, Widom 2003, §3.2, Appendices B–D).

The constraints are rows of a sparse matrix ``K`` (``|K_i,j|``, constraint × object) with
budgets ``β_j`` so that every query holds when ``K @ W ≤ β``. Every adjustment period ``T`` the
widths shrink by ``S`` and leftover width is grown greedily in decreasing deviation.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import gmres, lsqr

#: Leftover width below this fraction of a constraint's budget counts as none (float residue).
LEFTOVER_RTOL = 1e-12


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

    Examples
    --------
    >>> burden_scores(np.array([4, 0]), np.array([2.0, 1.0]), np.ones(2), 10).tolist()
    [0.2, 0.0]
    """
    b = np.zeros(len(widths))
    sent = counts > 0
    periods = period_ms / counts[sent]  # §3.2: P_i = T / N_i
    b[sent] = costs[sent] / (periods * widths[sent])  # §3.2: B_i = C_i / (P_i·W_i)
    return b


def burden_targets(k: sp.csr_matrix, burdens: np.ndarray) -> np.ndarray:
    """Burden targets ``T_j`` of every constraint (§3.2.1, weighted form of Appendix B).

    Solves ``|S_j|·T_j + Σ_{k≠j} (Σ_{i∈S_j} |K_i,k|/|K_i,j|)·T_k = Σ_{i∈S_j} B_i/|K_i,j|``,
    the m×m system of App. B, with an iterative sparse solver (GMRES, then LSQR for a singular
    system such as two queries over the same objects). A constraint overlapping no other gets
    the average of ``B_i/|K_i,j|``.

    Examples
    --------
    >>> k = sp.csr_matrix(np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]]))
    >>> burden_targets(k, np.array([3.0, 4.0, 1.0])).round(6).tolist()
    [3.0, 1.0]
    """
    k = sp.csr_matrix(k, dtype=float)
    inv = k.copy()
    inv.data = 1.0 / inv.data
    system = (inv @ k.T).tocsr()  # App. B: entry (j, k) = Σ_{i∈S_j} |K_i,k| / |K_i,j|
    rhs = inv @ burdens  # App. B: Σ_{i∈S_j} B_i / |K_i,j|
    diag = system.diagonal()  # = |S_j|
    if system.nnz == np.count_nonzero(diag) or not rhs.any():
        return rhs / diag  # §3.2.1: no overlap, T_j = average burden
    scale = float(np.abs(rhs).max())
    targets, info = gmres(system, rhs, rtol=1e-10, atol=1e-12 * scale, maxiter=1000)
    if info != 0 or np.linalg.norm(system @ targets - rhs) > 1e-8 * scale:
        targets = lsqr(system, rhs, atol=1e-12, btol=1e-12, iter_lim=10_000)[0]
    return np.asarray(targets, dtype=float)


def deviations(k: sp.csr_matrix, burdens: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Deviations ``D_i = max{B_i − Σ_j |K_i,j|·T_j, 0}`` (§3.2, App. B).

    Examples
    --------
    >>> k = sp.csr_matrix(np.array([[1.0, 1.0]]))
    >>> deviations(k, np.array([3.0, 1.0]), np.array([2.0])).tolist()
    [1.0, 0.0]
    """
    return np.maximum(burdens - k.T @ targets, 0.0)


def grow_greedily(
    k: sp.csr_matrix,
    budgets: np.ndarray,
    widths: np.ndarray,
    devs: np.ndarray,
    candidates: np.ndarray,
    rng: np.random.Generator,
) -> dict[int, float]:
    """Grow ``candidates`` in decreasing deviation, random tie-break (§3.2).

    Each object takes ``ΔW_i = min_j leftover_j/|K_i,j|`` over its constraints (App. B), the
    largest growth that violates none. Returns ``{object index: new absolute width}``.

    Examples
    --------
    >>> k = sp.csr_matrix(np.array([[1.0, 1.0]]))
    >>> rng = np.random.default_rng(0)
    >>> grow_greedily(k, np.array([4.0]), np.array([1.0, 1.0]), np.array([0.5, 0.0]),
    ...               np.array([0, 1]), rng)
    {0: 3.0}
    """
    kc = k.tocsc()
    leftover = budgets - k @ widths  # §3.2.2: leftover width of every constraint
    tiny = LEFTOVER_RTOL * budgets
    leftover[leftover <= tiny] = 0.0
    shuffled = rng.permutation(candidates)
    order = shuffled[np.argsort(-devs[shuffled], kind="stable")]  # decreasing D_i, ties random
    grown: dict[int, float] = {}
    for i in order:
        rows = kc.indices[kc.indptr[i] : kc.indptr[i + 1]]
        absk = kc.data[kc.indptr[i] : kc.indptr[i + 1]]
        if len(rows) == 0:
            continue
        delta_w = float(np.min(leftover[rows] / absk))  # App. B: ΔW_i = min_j leftover_j/|K_i,j|
        if delta_w <= 0.0:
            continue
        grown[int(i)] = float(widths[i] + delta_w)
        leftover[rows] -= absk * delta_w
        leftover[rows[leftover[rows] <= tiny[rows]]] = 0.0
    return grown
