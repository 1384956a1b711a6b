"""The coordinator part of bounded aggregates: the filter coordinator at the job's time, with
queries over globs expanded as series appear (the time it runs at: :mod:`tsmon.kinds.bounded`)."""

from __future__ import annotations

import dataclasses
import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from tsmon.kinds.base import CoordinatorPart, Row
from tsmon.kinds.bounded.queries import to_query
from tsmon.protocols.filters.codec import from_dict, to_dict
from tsmon.protocols.filters.coordinator import Answer, Coordinator
from tsmon.protocols.filters.messages import StreamedUpdate, WidthMessage
from tsmon.protocols.filters.queries import Query, check_delta
from tsmon.query import AggregateDef, resolve_aggregate
from tsmon.query.patterns import series_matches

if TYPE_CHECKING:  # pragma: no cover - typing only
    from tsmon.engine.hub import CoordinatorNode
    from tsmon.engine.settings import HostSettings

__all__ = ["BoundedCoordinator"]

# Not state (a copy starts with none): what every step asks again, kept per part while the
# queries it comes from are the same objects (a query change replaces them), so that it does
# not cost every query each step.
_PINNED: weakref.WeakKeyDictionary[BoundedCoordinator, tuple[dict[str, Query], frozenset[str]]] = (
    weakref.WeakKeyDictionary()
)
_GROUPS: weakref.WeakKeyDictionary[
    BoundedCoordinator, dict[str, tuple[Query, tuple[tuple[str, ...], ...]]]
] = weakref.WeakKeyDictionary()


class BoundedCoordinator(CoordinatorPart):
    """The filter :class:`Coordinator` with latency ``λ = 0``, stepped at the job's time (see
    :mod:`tsmon.kinds.bounded`), with bounded aggregates over globs expanded as series appear."""

    row_kinds = ("msg",)

    def __init__(self, settings: HostSettings) -> None:
        self.coordinator = Coordinator(
            settings.period_ms,
            settings.shrink,
            np.random.default_rng(settings.seed),
            latency_ms=0,
            growth=settings.growth,
            backlog=settings.backlog,  # a source far ahead: docs/time.md
        )
        lag = settings.bounded_lag_ms
        if isinstance(lag, bool) or not isinstance(lag, int) or lag < 0:
            raise ValueError(f"bounded_lag_ms must be an int >= 0 (ms), got {lag!r}")
        self.lag_ms = lag  # the coordinator's time: the watermark minus this (kinds.bounded)
        self.globbed: dict[str, AggregateDef] = {}  # bounded queries over globs, by name
        self.dropped: dict[str, str] = {}  # glob queries that cannot be evaluated, and why
        self._globs_expanded_over = -1  # how many series the glob queries were expanded over
        self.outbox: list[WidthMessage] = []  # from query changes, out with the next step
        self.deferred: dict[str, Query] = {}  # queries waiting for a time, as changed since
        self.parked: list[WidthMessage] = []  # width messages waiting for their series' source
        self.updates: list[StreamedUpdate] = []
        self.waiting: dict[str, list[str]] = {}  # query -> idle sources its answer lacks

    @property
    def started(self) -> bool:
        """Whether the coordinator has a time (some source reported one)."""
        return self.coordinator.settled_ms is not None

    # -- queries ----------------------------------------------------------------------------

    def planned(self) -> dict[str, Query]:
        """The registered queries, those waiting for a time included."""
        return self.coordinator.queries | self.deferred

    def names(self) -> list[str]:
        return list(dict.fromkeys([*self.planned(), *self.globbed]))

    def pinned_series(self) -> set[str]:
        if self.deferred:
            return set().union(*(q.weights for q in self.planned().values()))
        queries = self.coordinator.queries  # replaced, never changed, by a query change
        last = _PINNED.get(self)
        if last is None or last[0] is not queries:
            last = _PINNED[self] = (
                queries,
                frozenset().union(*(q.weights for q in queries.values())),
            )
        return set(last[1])

    def reads(self, names: Iterable[str] | None = None) -> dict[str, tuple[tuple[str, ...], ...]]:
        """Each series of a query, or each term's glob of a query over globs (dropped ones
        are left out: they say why in ``droppedQueries``)."""
        planned, globbed = self.planned(), self.globbed
        memo = _GROUPS.setdefault(self, {})  # query -> (query object, groups), kept
        if len(memo) > 2 * len(planned) + 64:  # many removed since
            memo.clear()
        out = {}
        for name in [*planned, *globbed] if names is None else names:
            if name in globbed:
                out[name] = tuple((t.series,) for t in globbed[name].terms)
            elif name in planned:
                query, last = planned[name], memo.get(name)
                if last is None or last[0] is not query:  # ((object,), ...) in order
                    last = memo[name] = query, tuple(zip(query.weights))
                out[name] = last[1]
        return out

    def add_query(
        self, hub: CoordinatorNode, query: Query, source_of: Mapping[str, str] | None = None
    ) -> None:
        """Register ``query``; its width messages go out with the next step. ``source_of``
        names the source of series not seen in any row yet."""
        given = dict(source_of or {})
        wrong = [o for o in query.objects if o in given and given[o] != hub.located(o, given[o])]
        if wrong:
            raise ValueError(
                f"query {query.name!r}: series {wrong[0]!r} comes from source "
                f"{hub.located(wrong[0], '')!r}, not {given[wrong[0]]!r}; fix source_of"
            )
        hub.free(query.name)
        shared = sorted(hub.shared.intersection(query.objects))
        if shared:
            raise ValueError(
                f"query {query.name!r}: series {shared[0]!r} comes from several sources; a "
                "bounded query needs each of its series at one source"
            )
        if self.started:
            self.outbox += self.coordinator.add_query(query)
        else:
            self.deferred[query.name] = query
        hub.declare({o: given[o] for o in query.objects if o in given})

    def add_glob_query(self, hub: CoordinatorNode, statement: AggregateDef) -> None:
        """Register a bounded aggregate whose terms hold globs (``AVG(host*.cpu)``).

        A running job does not know its series in advance, so the query covers the matching
        series the rows have shown so far (or ``source_of`` declared): from the first step
        where every term matches, and replaced by the query over the larger set whenever a new
        matching series appears (:meth:`Coordinator.replace_query`, §3.4: the new series gets
        its share at once, the others keep their widths unless wider than their new share).
        """
        hub.free(statement.name)
        self.globbed[statement.name] = statement
        self._globs_expanded_over = -1  # expand at the next step

    def alter_precision(self, hub: CoordinatorNode, name: str, delta: float, now: bool) -> None:
        if name in self.globbed:
            check_delta(name, delta)
            self.globbed[name] = dataclasses.replace(self.globbed[name], delta=float(delta))
            if name not in self.coordinator.queries:
                return  # registered later, with the new δ
        query = self._known(name).with_delta(delta)  # refuses a bad δ now
        if self.started:
            self.outbox += self.coordinator.alter_query(name, delta, immediately=now)
        else:  # no width sent yet: it starts with the new δ
            self.deferred[name] = query

    def remove(self, hub: CoordinatorNode, name: str) -> None:
        if self.globbed.pop(name, None) is not None and name not in self.planned():
            return  # it matched no series yet
        self._known(name)
        if self.started:
            self.outbox += self.coordinator.remove_query(name)
        else:
            del self.deferred[name]

    def _known(self, name: str) -> Query:
        planned = self.planned()
        if name not in planned:
            raise KeyError(f"no query {name!r}; registered: {sorted(planned)!r}")
        return planned[name]

    # -- the step ---------------------------------------------------------------------------

    def parse_row(self, hub: CoordinatorNode, row: Mapping[str, Any], where: str) -> Any:
        try:
            update = from_dict(row["payload"])
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
        if not isinstance(update, StreamedUpdate):
            raise ValueError(f"{where}: sources send streamed updates, got {update}")
        hub.locate(update.object_id, row["source"], where, strict=True)
        return update

    def receive(self, hub: CoordinatorNode, rows: Sequence[Any]) -> None:
        self.updates = sorted(rows, key=lambda u: (u.ts_ms, u.object_id, u.seq))

    def control(self, hub: CoordinatorNode) -> dict[str, list[Row]]:
        coord, updates, self.updates = self.coordinator, self.updates, []
        fresh = [u.object_id for u in updates if u.object_id not in coord.cache.index]
        if fresh:
            coord.set_objects(dict.fromkeys(fresh))
        for u in updates:
            # late only if stamped before the coordinator's time (a source that joined late)
            arrival = u.ts_ms if coord.now_ms is None else max(u.ts_ms, coord.now_ms)
            coord.receive(u, arrival_ms=arrival)
            hub.counts.messages.add(u)
        out, self.outbox = self.outbox, []
        watermark = hub.watermark()
        if watermark is not None:
            horizon = watermark - self.lag_ms  # see tsmon.kinds.bounded
            if coord.settled_ms is not None:
                horizon = max(horizon, coord.settled_ms)
            out += coord.advance(horizon)
            out += self._run_deferred()
            out += self._expand_globs(hub)
        self.waiting = {}
        idle = set(hub.idle_sources())  # once, not per query: none idle (the usual case)
        if idle:
            waiting = {name: hub.idle_of(q.objects, idle) for name, q in coord.queries.items()}
            self.waiting = {name: sources for name, sources in waiting.items() if sources}
        decided = sorted(out, key=lambda m: m.seq)
        for m in decided:
            hub.counts.messages.add(m)  # counted once, when decided
        control: dict[str, list[Row]] = {}
        waiting, self.parked = self.parked + decided, []
        for m in waiting:
            source = hub.source_of(m.object_id)
            if source is None:  # no row has shown where this series lives yet
                self.parked.append(m)
                continue
            control.setdefault(source, []).append({"seq": m.seq, "payload": to_dict(m)})
        return control

    def _run_deferred(self) -> list[WidthMessage]:
        out: list[WidthMessage] = []
        for query in self.deferred.values():
            out += self.coordinator.add_query(query)
        self.deferred = {}
        return out

    def _expand_globs(self, hub: CoordinatorNode) -> list[WidthMessage]:
        """Register, or replace, each glob query whose matching series changed (at the
        current time)."""
        out: list[WidthMessage] = []
        known = sorted(set(hub.known_series()) - hub.shared)
        if len(known) == self._globs_expanded_over:
            return out  # no new series (the set only grows) and no new glob query since
        self._globs_expanded_over = len(known)
        for name, statement in list(self.globbed.items()):
            waiting = [
                t for t in statement.terms if not any(series_matches(k, [t.series]) for k in known)
            ]
            if waiting:  # a term matches no series yet
                continue
            try:
                query = to_query(resolve_aggregate(statement, known))
            except ValueError as e:  # it never will (weights summing to 0): drop it, say why
                del self.globbed[name]
                self.dropped[name] = str(e)
                if name in self.coordinator.queries:
                    out += self.coordinator.remove_query(name)
                continue
            old = self.coordinator.queries.get(name)
            if old is None:
                out += self.coordinator.add_query(query)
            elif old.objects != query.objects:
                out += self.coordinator.replace_query(query)
        return out

    # -- answers ----------------------------------------------------------------------------

    def answers(self) -> dict[str, Answer]:
        """Bounded answer of every query, as of the coordinator's time (``as_of_ms``)."""
        return self.coordinator.answers()

    def progress(self) -> dict[str, Any]:
        # event time up to which every source has reported: answers are exact as of it
        # waitingOn: the idle sources each answer holds at their newest time (docs/time.md)
        return {
            "watermark": self.coordinator.settled_ms,
            "droppedQueries": dict(self.dropped),
            "waitingOn": dict(self.waiting),
            # records of updates held for a time not every source has reached, and the folds
            # that keep them to the backlog per series (docs/time.md, "A source far ahead")
            "queuedRecords": len(self.coordinator.queue),
            "mergedUpdates": self.coordinator.queue.merged,
        }
