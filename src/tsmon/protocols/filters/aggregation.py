"""Source aggregation (Olston, Jiang, Widom 2003, §5.2.1, Appendix G) as a pure query rewrite.

A source may stream, instead of its objects, one *derived* object per query: the weighted sum
of its objects that the query reads. The choice is made per source and per *group* of
overlapping queries (a connected component of the query-overlap graph, §5.2.1): within a group
every query must be rewritten for the source, otherwise a raw object would stay read by one
query and be copied into another. Across groups no object is shared, so groups are independent.

For a chosen (source ``s``, group ``g``) and every AVG/SUM query ``Q_j`` of ``g``, the objects of
``s`` in ``S_j`` are replaced by one derived object ``agg:s:j`` with weight 1 whose value is
``Σ_{i at s, i ∈ S_j} K_i,j·V_i`` (Appendix B weights); the AVG divisor ``|S_j|`` is kept
(``Query(..., size=)``), so the exact answer is unchanged. Two queries of a group that read the
same objects of ``s`` with the same weights share one derived object (it is the same value, so
one bound serves both). MIN/MAX queries (Appendix A) are never rewritten.

Examples
--------
>>> from tsmon.protocols.filters.queries import Query
>>> qs = [Query.sum("q1", ["v0", "v1"], 1.0), Query.sum("q2", ["v0", "v2"], 4.0)]
>>> agg = aggregate_sources(qs, {"v0": "s", "v1": "s", "v2": "s"}, {("s", 0)})
>>> [dict(q.weights) for q in agg.queries]          # App. G: one bound per query
[{'agg:s:q1': 1.0}, {'agg:s:q2': 1.0}]
>>> agg.derive({"v0": 1.0, "v1": 2.0, "v2": 5.0})
{'agg:s:q1': 3.0, 'agg:s:q2': 6.0}
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from tsmon.protocols.filters.queries import Aggregate, Query

__all__ = ["Aggregation", "aggregate_sources", "all_pairs", "query_groups"]


def query_groups(queries: Sequence[Query]) -> tuple[tuple[str, ...], ...]:
    """Connected components of the query-overlap graph (§5.2.1), as tuples of query names.

    Two queries are linked when they read a common object. Groups come in the order of their
    first query; group ``g`` of :func:`aggregate_sources` is index ``g`` here.

    Examples
    --------
    >>> qs = [Query.avg("a", ["x", "y"], 1.0), Query.avg("b", ["z"], 1.0),
    ...       Query.avg("c", ["y", "w"], 1.0)]
    >>> query_groups(qs)
    (('a', 'c'), ('b',))
    """
    parent = list(range(len(queries)))

    def root(j: int) -> int:
        while parent[j] != j:
            parent[j] = parent[parent[j]]
            j = parent[j]
        return j

    owner: dict[str, int] = {}
    for j, q in enumerate(queries):
        for obj in q.weights:
            if obj in owner:
                a, b = root(owner[obj]), root(j)
                parent[max(a, b)] = min(a, b)
            else:
                owner[obj] = j
    groups: dict[int, list[str]] = {}
    for j, q in enumerate(queries):
        groups.setdefault(root(j), []).append(q.name)
    return tuple(tuple(g) for g in groups.values())


@dataclass(frozen=True, eq=False)
class Aggregation:
    """Result of :func:`aggregate_sources`: rewritten queries and what sources compute.

    Attributes
    ----------
    queries
        The rewritten queries, in the original order and with the original names.
    derivations
        Derived object → ``{raw object: weight K_i,j}``; its value is ``Σ K_i,j·V_i``.
    source_of
        Source of every derived object.
    readers
        Raw object → the derived objects whose value it enters (a source re-evaluates them on
        each update of the raw object).
    replaced
        Raw objects no rewritten query reads any more (they need no filter).
    chosen
        The (source, group index) pairs aggregated.
    """

    queries: tuple[Query, ...]
    derivations: Mapping[str, Mapping[str, float]]
    source_of: Mapping[str, str]
    readers: Mapping[str, tuple[str, ...]]
    replaced: frozenset[str]
    chosen: frozenset[tuple[str, int]]

    def derive(self, values: Mapping[str, float]) -> dict[str, float]:
        """Value of every derived object from the raw ``values`` (each must be present)."""
        return {
            d: sum(k * values[o] for o, k in weights.items())
            for d, weights in self.derivations.items()
        }


def aggregate_sources(
    queries: Sequence[Query],
    source_of: Mapping[str, str],
    chosen: Collection[tuple[str, int]],
    *,
    share: bool = True,
) -> Aggregation:
    """Rewrite ``queries`` so that every (source, group) in ``chosen`` is source-aggregated.

    Parameters
    ----------
    queries
        The registered queries (AVG/SUM are rewritten, MIN/MAX kept as they are).
    source_of
        Source of every object the queries read.
    chosen
        ``(source, g)`` pairs, ``g`` an index into :func:`query_groups` ``(queries)``.
    share
        Let queries of a group whose derivations at a source are identical share one derived
        object (exactly the same value, so the same bound may serve both, App. B).

    The rewritten constraint of ``Q_j`` (Appendix B) is
    ``Σ_{s chosen} W_agg:s:j + Σ_{i kept} |K_i,j|·W_i ≤ δ_j·|S_j|``; any widths meeting it give
    answers within ``δ_j`` of the original query, since ``|Σ K_i,j·(V_i − c_i)| ≤ W/2`` per
    derived bound (App. D).
    """
    groups = query_groups(queries)
    group_of = {name: g for g, names in enumerate(groups) for name in names}
    for s, g in chosen:
        if not 0 <= g < len(groups):
            raise ValueError(
                f"group index {g} for source {s!r} out of range: {len(groups)} groups "
                f"{groups!r}; pass an index into query_groups(queries)"
            )
    chosen_set = frozenset((str(s), int(g)) for s, g in chosen)
    derivations: dict[str, dict[str, float]] = {}
    source_of_derived: dict[str, str] = {}
    by_key: dict[tuple[str, frozenset[tuple[str, float]]], str] = {}
    out: list[Query] = []
    for q in queries:
        g = group_of[q.name]
        if q.aggregate not in (Aggregate.AVG, Aggregate.SUM):
            out.append(q)
            continue
        weights: dict[str, float] = {}
        parts: dict[str, dict[str, float]] = {}
        for obj, k in q.weights.items():
            try:
                s = str(source_of[obj])
            except KeyError:
                raise ValueError(
                    f"query {q.name!r} reads {obj!r}, which has no source in source_of"
                ) from None
            if (s, g) in chosen_set:
                parts.setdefault(s, {})[obj] = k
            else:
                weights[obj] = k
        for s, part in parts.items():
            key = (s, frozenset(part.items()))
            name = by_key.get(key) if share else None
            if name is None:
                name = f"agg:{s}:{q.name}"
                by_key[key] = name
                derivations[name] = part
                source_of_derived[name] = s
            weights[name] = 1.0
        if not parts:
            out.append(q)
            continue
        size = q.divisor if q.aggregate is Aggregate.AVG else None  # |S_j| unchanged (§5.2.1)
        out.append(Query(q.name, q.aggregate, weights, q.delta, size))
    readers: dict[str, list[str]] = {}
    for d, part in derivations.items():
        for obj in part:
            readers.setdefault(obj, []).append(d)
    still_read = {o for q in out for o in q.weights}
    replaced = frozenset(o for o in readers if o not in still_read)
    return Aggregation(
        tuple(out),
        MappingProxyType({d: MappingProxyType(p) for d, p in derivations.items()}),
        MappingProxyType(source_of_derived),
        MappingProxyType({o: tuple(ds) for o, ds in readers.items()}),
        replaced,
        chosen_set,
    )


def all_pairs(queries: Sequence[Query], source_of: Mapping[str, str]) -> set[tuple[str, int]]:
    """Every (source, group) pair some query reads: the "aggregate everything" choice.

    Examples
    --------
    >>> sorted(all_pairs([Query.avg("q", ["a", "b"], 1.0)], {"a": "s", "b": "t"}))
    [('s', 0), ('t', 0)]
    """
    out: set[tuple[str, int]] = set()
    for g, names in enumerate(query_groups(queries)):
        wanted = set(names)
        for q in queries:
            if q.name in wanted:
                out.update((str(source_of[o]), g) for o in q.weights)
    return out
