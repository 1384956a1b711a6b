"""The width constraints of the registered queries, as the coordinator uses them (App. A–D).

Every query becomes rows ``Σ_i |K_i,j|·W_i ≤ β_j`` of one sparse matrix; :func:`build_system`
derives what the coordinator needs from it once per query-set change: which objects adapt,
their caps, the growth rows, the padding ``φ`` (§4.1) and the uniform static widths.
"""

from __future__ import annotations

import weakref
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
    built = _entries(list(queries.values()), cache)
    cols, data, rows, budgets = built.cols, built.data, built.rows, built.budgets
    n = len(cache)
    k = sp.csr_matrix((data, (rows, cols)), shape=(len(budgets), n), dtype=float)
    phi = _padding(queries, cache, max_rates, latency_ms)
    budget_arr = budgets - k @ phi  # §4.1: δ′ leaves room for φ
    bad = np.flatnonzero(budget_arr <= 0)
    if len(bad):
        owner = list(queries)[int(np.searchsorted(built.ends, bad[0], side="right"))]
        raise ValueError(
            f"query {owner!r}: padding φ = 2·R·λ (§4.1) uses all of δ; "
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
    uniform = initial_widths(k, budget_arr) if k.shape[0] else np.full(n, np.inf)
    return System(
        k,
        budget_arr,
        built.rows_of,
        adaptive,
        cap,
        queried,
        multi,
        uniform,
        growth_rows,
        phi,
        built.index_of,
    )


@dataclass(frozen=True)
class _Entries:
    """The entries of ``K`` for some queries, in order: each entry's column (the cache index of
    its object), ``|K|`` and row; each row's budget; where each query's rows end; and per
    query its rows and its objects' cache indices (in the order of :attr:`Query.objects`)."""

    ids: list[int]  # the queries' ids (the memo holds the queries, so the ids stay theirs)
    queries: list[Query]
    cols: np.ndarray
    data: np.ndarray
    rows: np.ndarray
    budgets: np.ndarray
    ends: np.ndarray
    rows_of: dict[str, np.ndarray]
    index_of: dict[str, np.ndarray]


_NONE = _Entries(
    [], [], *(np.empty(0, dtype=t) for t in (np.int64, float, np.int64, float, np.int64)), {}, {}
)

_MEMO: weakref.WeakKeyDictionary[BoundCache, _Entries] = weakref.WeakKeyDictionary()
"""Per bound cache, the entries of the last query set built over it. Queries are immutable and
a cache's indices never change, so when the queries are those of the last build followed by
new ones (queries added), only the new ones' entries are computed and appended: a build after an
add costs the add, not a loop over every query. Not state: a copy of the cache starts over."""


def _entries(queries: list[Query], cache: BoundCache) -> _Entries:
    ids = list(map(id, queries))
    last = _MEMO.get(cache, _NONE)
    if ids[: len(last.ids)] != last.ids:  # not the last build's queries followed by others
        last = _NONE
    new = queries[len(last.ids) :]
    cols: list[int] = []
    data: list[float] = []
    rows: list[int] = []
    budgets: list[float] = []
    ends: list[int] = []
    rows_of, index_of = dict(last.rows_of), dict(last.index_of)
    first = len(last.budgets)
    for q in new:
        start, first_row = len(cols), first + len(budgets)
        for absk, budget in q.constraints():
            row = first + len(budgets)
            for obj, k in absk.items():
                rows.append(row)
                cols.append(cache.i(obj))
                data.append(k)
            budgets.append(budget)
        ends.append(first + len(budgets))
        rows_of[q.name] = np.arange(first_row, first + len(budgets))
        index_of[q.name] = np.array(cols[start:], dtype=np.int64)
    entries = _Entries(
        last.ids + ids[len(last.ids) :],
        last.queries + new,
        np.concatenate([last.cols, np.array(cols, dtype=np.int64)]),
        np.concatenate([last.data, np.array(data, dtype=float)]),
        np.concatenate([last.rows, np.array(rows, dtype=np.int64)]),
        np.concatenate([last.budgets, np.array(budgets, dtype=float)]),
        np.concatenate([last.ends, np.array(ends, dtype=np.int64)]),
        rows_of,
        index_of,
    )
    _MEMO[cache] = entries
    return entries


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
