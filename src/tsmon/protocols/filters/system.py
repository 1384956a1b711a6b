"""The width constraints of the registered queries, as the coordinator uses them (App. A–D).

Every query becomes rows ``Σ_i |K_i,j|·W_i ≤ β_j`` of one sparse matrix; :func:`build_system`
derives what the coordinator needs from it once per query-set change: which objects adapt,
their caps, the growth rows, the padding ``φ`` (§4.1) and the uniform static widths.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from tsmon.protocols.filters.bounds import BoundCache
from tsmon.protocols.filters.precision import initial_widths
from tsmon.protocols.filters.queries import Query


@dataclass(frozen=True)
class System:
    """The width constraints of all queries: ``K @ W ≤ budgets`` (App. B), and derived facts."""

    k: sp.csr_matrix
    budgets: np.ndarray
    rows_of: dict[str, np.ndarray]
    adaptive: np.ndarray
    cap: np.ndarray
    queried: np.ndarray
    multi: np.ndarray  # in some multi-object constraint: adaptive once T is known
    uniform: np.ndarray  # uniform static widths (§1.2.1), for the safety net
    growth_rows: np.ndarray
    phi: np.ndarray
    index_of: dict[str, np.ndarray]  # per query, its objects' cache indices


def build_system(
    queries: Mapping[str, Query],
    cache: BoundCache,
    adapting: bool,
    max_rates: Mapping[str, float] | None,
    latency_ms: int,
) -> System:
    """The :class:`System` of ``queries`` over the objects of ``cache``.

    ``adapting``: objects in multi-object constraints shrink and grow (else all are static).
    ``max_rates``: pad bounds by ``φ_i = 2·R_i·λ`` (§4.1), one rate per queried object.

    Examples
    --------
    >>> cache = BoundCache()
    >>> _ = [cache.add(o) for o in "abc"]
    >>> s = build_system({"q": Query.avg("q", ["a", "b"], 1.0)}, cache, True, None, 0)
    >>> s.adaptive.tolist(), s.uniform.tolist()
    ([True, True, False], [1.0, 1.0, inf])
    """
    rows, cols, data, budgets, owners = [], [], [], [], []
    rows_of: dict[str, np.ndarray] = {}
    for q in queries.values():
        first = len(budgets)
        for absk, budget in q.constraints():
            for obj, k in absk.items():
                rows.append(len(budgets))
                cols.append(cache.i(obj))
                data.append(k)
            budgets.append(budget)
            owners.append(q.name)
        rows_of[q.name] = np.arange(first, len(budgets))
    n = len(cache)
    k = sp.csr_matrix((data, (rows, cols)), shape=(len(budgets), n), dtype=float)
    phi = _padding(queries, cache, max_rates, latency_ms)
    budget_arr = np.array(budgets, dtype=float) - k @ phi  # §4.1: δ′ leaves room for φ
    bad = np.flatnonzero(budget_arr <= 0)
    if len(bad):
        raise ValueError(
            f"query {owners[bad[0]]!r}: padding φ = 2·R·λ (§4.1) uses all of δ; "
            "raise δ, lower λ or the objects' max change rates"
        )
    sizes = np.diff(k.indptr)
    multi = np.asarray((k[sizes > 1] != 0).sum(axis=0)).ravel() > 0
    adaptive = multi & adapting
    # §3: an object only in single-object queries keeps W = min δ; in no query, W = inf
    cap = np.full(n, np.inf)
    single = k[sizes == 1].tocoo()
    np.minimum.at(cap, single.col, budget_arr[sizes == 1][single.row] / single.data)
    queried = np.asarray((k != 0).sum(axis=0)).ravel() > 0
    growth_rows = np.flatnonzero(np.asarray((k[:, adaptive] != 0).sum(axis=1)).ravel() > 0)
    index_of = {q.name: np.array([cache.i(o) for o in q.objects]) for q in queries.values()}
    uniform = initial_widths(k, budget_arr) if k.shape[0] else np.full(n, np.inf)
    return System(
        k, budget_arr, rows_of, adaptive, cap, queried, multi, uniform, growth_rows, phi, index_of
    )


def _padding(
    queries: Mapping[str, Query],
    cache: BoundCache,
    max_rates: Mapping[str, float] | None,
    latency_ms: int,
) -> np.ndarray:
    phi = np.zeros(len(cache))
    if max_rates is None:
        return phi
    for q in queries.values():
        for obj in q.objects:
            if obj not in max_rates:
                raise ValueError(
                    f"query {q.name!r}: object {obj!r} has no max change rate; padding "
                    "(§4.1) needs one per queried object"
                )
            # §4.1: φ_i = 2·R_i·λ, with R_i per second and λ in ms
            phi[cache.i(obj)] = 2 * max_rates[obj] * latency_ms / 1000
    return phi
